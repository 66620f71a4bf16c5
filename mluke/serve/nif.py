"""NIF 2.0 in Turtle, the format GERBIL talks: read documents and their phrases, write linked phrases back.

Usable outside the service (evaluating a NIF corpus, :mod:`probes.nif_eval`): :func:`read_nif` gives
:class:`NifDocument` objects (each ``nif:Context``'s text and its ``nif:Phrase`` or ``nif:String`` mentions, with
their ``itsrdf:taIdentRef`` IRIs and the ``owl:sameAs`` IRIs the file gives for those), :func:`write_nif` writes
documents with the entities found for their phrases. Offsets are those of the file
(``nif:beginIndex`` / ``nif:endIndex`` relative to the context's text, in characters). Parsing and writing go
through rdflib.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kb.errors import InputFormatError, MlukeError

NIF = "http://persistence.uni-leipzig.org/nlp2rdf/ontologies/nif-core#"
ITSRDF = "http://www.w3.org/2005/11/its/rdf#"
OWL = "http://www.w3.org/2002/07/owl#"
#: Where an entity key that is a Wikidata QID points.
WIKIDATA = "http://www.wikidata.org/entity/"
#: GERBIL's IRI space for an entity outside the kb (a NIL mention).
NOT_IN_WIKI = "http://aksw.org/notInWiki/"


@dataclass
class NifPhrase:
    """A mention of a document: its offsets in the context's text, its surface and its entity IRI (``None``:
    none given, or NIL)."""

    start: int
    end: int
    surface: str
    entity: str | None = None  #: the first of ``entities`` when read from a file
    uri: str | None = None  #: the phrase's own IRI in the file it came from
    entities: tuple[str, ...] = ()  #: every ``itsrdf:taIdentRef`` of the phrase in the file, sorted
    same_as: tuple[str, ...] = ()  #: the IRIs the file says are ``owl:sameAs`` one of ``entities``, sorted


@dataclass
class NifDocument:
    """A ``nif:Context``: its IRI, its text and its phrases (in order of offsets)."""

    uri: str
    text: str
    phrases: list[NifPhrase] = field(default_factory=list)


def read_nif(data: str | bytes, *, skipped: list[str] | None = None) -> list[NifDocument]:
    """The documents of a NIF 2.0 Turtle text, in order of their IRIs.

    Args:
        data: the Turtle text.
        skipped: when given, a context or phrase that breaks the rules below is left out and a line saying why is
            appended here, instead of raising.

    Raises:
        InputFormatError: not Turtle, a context without ``nif:isString``, a phrase whose offsets fall outside its
            context or whose ``nif:anchorOf`` differs from the text at its offsets.
        MlukeError: rdflib is not installed.
    """
    try:
        from rdflib import Graph, Literal, Namespace, URIRef
        from rdflib.namespace import RDF
    except ImportError:
        raise MlukeError("reading NIF needs the 'rdflib' package: pip install 'mluke[serve]'") from None

    nif, its, owl = Namespace(NIF), Namespace(ITSRDF), Namespace(OWL)
    graph = Graph()
    try:
        graph.parse(data=data, format="turtle")
    except Exception as exc:  # rdflib raises its parser's own exception types
        raise InputFormatError(f"NIF: not valid Turtle ({' '.join(str(exc).split())[:300]})") from None

    def bad(message: str) -> None:
        if skipped is None:
            raise InputFormatError(f"NIF: {message}")
        skipped.append(message)

    def iris(nodes: Iterable[Any]) -> list[str]:
        return sorted({str(n) for n in nodes if isinstance(n, URIRef)})

    docs: dict[str, NifDocument] = {}
    for context in graph.subjects(RDF.type, nif.Context):
        text = graph.value(context, nif.isString)
        if not isinstance(text, Literal):
            bad(f"the context {context} has no nif:isString")
            continue
        docs[str(context)] = NifDocument(str(context), str(text))
    for phrase in sorted(set(graph.subjects(nif.referenceContext, None)), key=str):
        if str(phrase) in docs:
            continue  # a context that names itself as its reference context
        target = graph.value(phrase, nif.referenceContext)
        doc = docs.get(str(target))
        if doc is None:
            bad(f"the phrase {phrase} refers to {target}, which is no nif:Context here")
            continue
        try:
            start = int(str(graph.value(phrase, nif.beginIndex)))
            end = int(str(graph.value(phrase, nif.endIndex)))
        except ValueError:
            bad(f"the phrase {phrase} has no whole-number nif:beginIndex and nif:endIndex")
            continue
        if not 0 <= start < end <= len(doc.text):
            bad(f"the phrase {phrase} ({start}, {end}) is outside its context's text")
            continue
        anchor = graph.value(phrase, nif.anchorOf)
        surface = doc.text[start:end]
        if anchor is not None and str(anchor) != surface:
            bad(f"the phrase {phrase}: nif:anchorOf {str(anchor)!r} but the text has {surface!r}")
            continue
        refs = iris(graph.objects(phrase, its.taIdentRef))
        same: set[str] = set()
        for ref in refs:
            node = URIRef(ref)
            same.update(iris(graph.objects(node, owl.sameAs)) + iris(graph.subjects(owl.sameAs, node)))
        doc.phrases.append(
            NifPhrase(
                start,
                end,
                surface,
                refs[0] if refs else None,
                str(phrase),
                tuple(refs),
                tuple(sorted(same - set(refs))),
            )
        )
    for doc in docs.values():
        doc.phrases.sort(key=lambda p: (p.start, p.end))
    return [docs[k] for k in sorted(docs)]


def entity_iri(key: str | None, surface: str) -> str:
    """The IRI of an entity key: Wikidata's for a QID, GERBIL's ``notInWiki`` space for NIL (``None``), else the
    key under ``http://mluke.invalid/entity/``."""
    from urllib.parse import quote

    if key is None:
        return NOT_IN_WIKI + quote(surface.replace(" ", "_"), safe="")
    if key[:1] == "Q" and key[1:].isdigit():
        return WIKIDATA + key
    return "http://mluke.invalid/entity/" + quote(key, safe="")


def _base(uri: str) -> str:
    return uri.split("#", 1)[0]


def write_nif(documents: Iterable[NifDocument]) -> str:
    """The documents as NIF 2.0 Turtle: each context (``nif:isString``, offsets) and each phrase as a
    ``nif:Phrase`` with ``nif:anchorOf``, offsets, ``nif:referenceContext`` and ``itsrdf:taIdentRef`` (when it has
    an entity); a phrase without an IRI of its own gets ``<document>#char=start,end``."""
    from rdflib import Graph, Literal, Namespace, URIRef
    from rdflib.namespace import RDF, XSD

    nif, its = Namespace(NIF), Namespace(ITSRDF)
    graph = Graph()
    graph.bind("nif", nif)
    graph.bind("itsrdf", its)
    graph.bind("xsd", XSD)
    for doc in documents:
        context = URIRef(doc.uri)
        graph.add((context, RDF.type, nif.Context))
        graph.add((context, RDF.type, nif.OffsetBasedString))
        graph.add((context, nif.isString, Literal(doc.text)))
        graph.add((context, nif.beginIndex, Literal(0, datatype=XSD.nonNegativeInteger)))
        graph.add((context, nif.endIndex, Literal(len(doc.text), datatype=XSD.nonNegativeInteger)))
        for p in doc.phrases:
            node = URIRef(p.uri or f"{_base(doc.uri)}#char={p.start},{p.end}")
            graph.add((node, RDF.type, nif.Phrase))
            graph.add((node, RDF.type, nif.OffsetBasedString))
            graph.add((node, nif.anchorOf, Literal(p.surface)))
            graph.add((node, nif.beginIndex, Literal(p.start, datatype=XSD.nonNegativeInteger)))
            graph.add((node, nif.endIndex, Literal(p.end, datatype=XSD.nonNegativeInteger)))
            graph.add((node, nif.referenceContext, context))
            if p.entity is not None:
                graph.add((node, its.taIdentRef, URIRef(p.entity)))
    return graph.serialize(format="turtle")
