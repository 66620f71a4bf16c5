"""NIF documents in the layout of GERBIL's own example data (its OKE challenge files): entity descriptions
between the phrases, language-tagged strings, offsets typed ``xsd:int`` as well as ``xsd:nonNegativeInteger``,
entities named by IRIs outside Wikidata (the sentences are ours)."""

import pytest

pytest.importorskip("rdflib")

OKE_LAYOUT = """\
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix nif: <http://persistence.uni-leipzig.org/nlp2rdf/ontologies/nif-core#> .
@prefix dul: <http://www.ontologydesignpatterns.org/ont/dul/DUL.owl#> .
@prefix ex: <http://example.org/task-1/> .
@prefix dbpedia: <http://dbpedia.org/resource/> .
@prefix itsrdf: <http://www.w3.org/2005/11/its/rdf#> .

<http://example.org/task-1/sentence-1#char=0,37>
        a                     nif:RFC5147String , nif:String , nif:Context ;
        nif:beginIndex        "0"^^xsd:nonNegativeInteger ;
        nif:endIndex          "37"^^xsd:nonNegativeInteger ;
        nif:isString          "Ada Lovelace was born in London, 1815."@en .

ex:Ada_Lovelace
     a                        owl:Individual, dul:Person ;
     rdfs:label               "Ada Lovelace"@en ;
     owl:sameAs               dbpedia:Ada_Lovelace .

<http://example.org/task-1/sentence-1#char=0,12>
        a                     nif:RFC5147String , nif:String ;
        nif:anchorOf          "Ada Lovelace"@en ;
        nif:beginIndex        "0"^^xsd:nonNegativeInteger ;
        nif:endIndex          "12"^^xsd:nonNegativeInteger ;
        nif:referenceContext  <http://example.org/task-1/sentence-1#char=0,37> ;
        itsrdf:taIdentRef     ex:Ada_Lovelace .

<http://example.org/task-1/sentence-1#char=25,31>
        a                     nif:RFC5147String , nif:String ;
        nif:anchorOf          "London"@en ;
        nif:beginIndex        "25"^^xsd:nonNegativeInteger ;
        nif:endIndex          "31"^^xsd:nonNegativeInteger ;
        nif:referenceContext  <http://example.org/task-1/sentence-1#char=0,37> ;
        itsrdf:taIdentRef     dbpedia:London .

<http://example.org/task-1/sentence-2#char=0,30>
        a                     nif:String , nif:RFC5147String , nif:Context ;
        nif:beginIndex        "0"^^xsd:int ;
        nif:endIndex          "30"^^xsd:int ;
        nif:isString          "The poet visited Paris twice."@en .

<http://example.org/task-1/sentence-2#char=17,22>
        a                     nif:String , nif:RFC5147String ;
        nif:anchorOf          "Paris"@en ;
        nif:beginIndex        "17"^^xsd:int ;
        nif:endIndex          "22"^^xsd:int ;
        nif:referenceContext  <http://example.org/task-1/sentence-2#char=0,30> ;
        itsrdf:taIdentRef     ex:Paris .
"""


def test_the_layout_of_gerbils_example_data_reads_and_round_trips():
    from mluke.serve.nif import read_nif, write_nif

    one, two = read_nif(OKE_LAYOUT)
    assert one.text == "Ada Lovelace was born in London, 1815."
    assert [(p.start, p.end, p.surface, p.entity) for p in one.phrases] == [
        (0, 12, "Ada Lovelace", "http://example.org/task-1/Ada_Lovelace"),
        (25, 31, "London", "http://dbpedia.org/resource/London"),
    ]
    assert [(p.start, p.end, p.surface) for p in two.phrases] == [(17, 22, "Paris")]
    again = read_nif(write_nif([one, two]))
    assert [(d.text, [(p.start, p.end, p.surface, p.entity) for p in d.phrases]) for d in again] == [
        (d.text, [(p.start, p.end, p.surface, p.entity) for p in d.phrases]) for d in (one, two)
    ]
