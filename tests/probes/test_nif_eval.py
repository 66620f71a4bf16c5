"""NIF corpora in the layout of GERBIL's datasets: the reader, entity IRIs to kb keys (redirects, Wikidata, other
languages' DBpedia, owl:sameAs, notInWiki as NIL), the AIDA scorer by hand and ``mluke eval-nif``."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kb.errors import InputFormatError, MlukeError, OptionError
from probes.nif_eval import EntityTarget, entity_target, eval_nif, gold_keys, read_nif_corpus

pytest.importorskip("rdflib")

DATA = Path(__file__).parent / "data" / "nif_sample.ttl"

HEAD = """\
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix nif: <http://persistence.uni-leipzig.org/nlp2rdf/ontologies/nif-core#> .
@prefix itsrdf: <http://www.w3.org/2005/11/its/rdf#> .
"""


def _context(doc: str, text: str) -> str:
    return f'<{doc}#char=0,{len(text)}> a nif:Context , nif:String ; nif:isString "{text}" .\n'


def _phrase(doc: str, text: str, start: int, end: int, iri: str, anchor: str | None = None) -> str:
    anchor = text[start:end] if anchor is None else anchor
    return (
        f'<{doc}#char={start},{end}> a nif:Phrase ; nif:anchorOf "{anchor}" ; '
        f'nif:beginIndex "{start}"^^xsd:nonNegativeInteger ; nif:endIndex "{end}"^^xsd:nonNegativeInteger ; '
        f"nif:referenceContext <{doc}#char=0,{len(text)}> ; itsrdf:taIdentRef <{iri}> .\n"
    )


def test_reads_contexts_phrases_and_leaves_out_phrases_without_an_entity():
    corpus = read_nif_corpus(DATA)
    assert [d.id.split("/")[-1] for d in corpus] == ["doc-1#char=0,57", "doc-2#char=0,44", "doc-3#char=0,20"]
    one, two, three = corpus.documents
    assert one.text == "Nippon sent Tokyo's envoy to Copenhagen and met Jane Roe."
    assert [(m.start, m.end, m.surface) for m in one.mentions] == [
        (0, 6, "Nippon"),
        (12, 17, "Tokyo"),
        (29, 39, "Copenhagen"),
        (48, 56, "Jane Roe"),
    ]
    assert [m.nil for m in one.mentions] == [False, False, False, True]
    # "played" has no itsrdf:taIdentRef: a bare span, no annotation; "the capital" brings its owl:sameAs along
    assert [m.surface for m in two.mentions] == ["Denmark", "日本", "Al Ain", "the capital"]
    assert two.mentions[3].iris == (
        "http://example.org/nif-sample/entity/The_Capital",
        "http://dbpedia.org/resource/Tokyo",
    )
    assert three.mentions == [] and corpus.skipped == {"phrase without itsrdf:taIdentRef": 1}


def test_entity_iris_name_titles_qids_or_nothing():
    assert entity_target("http://dbpedia.org/resource/Al_Ain") == EntityTarget("en", "Al Ain")
    assert entity_target("http://de.dbpedia.org/resource/K%C3%B6ln") == EntityTarget("de", "Köln")
    assert entity_target("https://en.wikipedia.org/wiki/S%C3%A3o_Paulo#History") == EntityTarget("en", "São Paulo")
    assert entity_target("http://www.wikidata.org/entity/Q42") == EntityTarget(None, "Q42")
    for outside in ("http://aksw.org/notInWiki/Jane_Roe", "http://example.org/x/Tokyo", "http://dbpedia.org/resource/"):
        assert entity_target(outside) is None


def test_gold_entities_become_kb_keys_and_unknown_languages_are_refused(tiny_db, tmp_path):
    keys = gold_keys(read_nif_corpus(DATA).documents, tiny_db)
    # Nippon: a redirect of Japan; Q1490 as it is; Copenhagen from Wikipedia; notInWiki: NIL
    assert keys[0] == ["Q17", "Q1490", "Q1748", None]
    # ja DBpedia, a title the kb lacks (a gold no linker can get), owl:sameAs dbpedia:Tokyo
    assert keys[1] == ["Q35", "Q17", "iri:http://dbpedia.org/resource/Al_Ain", "Q1490"]
    assert keys[2] == []
    doc, text = "http://example.org/de", "Köln liegt am Rhein."
    path = tmp_path / "de.ttl"
    path.write_text(HEAD + _context(doc, text) + _phrase(doc, text, 0, 4, "http://de.dbpedia.org/resource/Köln"))
    with pytest.raises(OptionError, match="no titles in de"):
        gold_keys(read_nif_corpus(path).documents, tiny_db)


def test_eval_nif_scores_with_the_aida_scorer_by_hand(tiny_db):
    calls = []
    end_to_end = {
        # right; wrong entity (a false positive and a false negative); on the NIL span: left out
        "Nippon": [(0, 6, "Q17", False), (12, 17, "Q1748", False), (48, 56, "Q35", False), (29, 39, None, True)],
        # three right, one wrong on the span of a gold the kb lacks
        "Denmark": [(0, 7, "Q35", False), (12, 14, "Q17", False), (22, 28, "Q1748", False), (32, 43, "Q1490", False)],
        "Nothing": [],
    }
    given = {"Nippon": ["Q17", "Q1490", None, "Q35"], "Denmark": ["Q35", "Q1490", "Q1748", "Q1490"], "Nothing": []}

    def linker(texts, spans):
        calls.append(spans)
        out = []
        for i, text in enumerate(texts):
            first = text.split()[0]
            if spans is None:
                out.append([SimpleNamespace(start=s, end=e, key=k, nil=n) for s, e, k, n in end_to_end[first]])
            else:
                out.append(
                    [SimpleNamespace(start=s, end=e, key=k, nil=k is None) for (s, e), k in zip(spans[i], given[first])]
                )
        return out

    scores = eval_nif(DATA, db=tiny_db, linker=linker)
    assert calls[0] is None and [len(s) for s in calls[1]] == [4, 4, 0]
    assert scores.counts == {
        "true_positives": 4,
        "false_positives": 2,
        "false_negatives": 3,  # Tokyo, Copenhagen, Al Ain
        "gold_nil": 1,
        "gold_not_in_kb": 1,
        "in_kb_mentions": 6,
    }
    assert scores.micro["precision"] == pytest.approx(4 / 6) and scores.micro["recall"] == pytest.approx(4 / 7)
    # per document: 1/2 and 1/3, 3/4 and 3/4, and 1/1/1 for the document with nothing gold and nothing found
    assert scores.macro["precision"] == pytest.approx((1 / 2 + 3 / 4 + 1) / 3)
    assert scores.macro["recall"] == pytest.approx((1 / 3 + 3 / 4 + 1) / 3)
    f1 = 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3)
    assert scores.macro["f1"] == pytest.approx((f1 + 3 / 4 + 1) / 3)
    # D2KB: Nippon, Tokyo right, Copenhagen NIL; Denmark, the capital right, 日本 wrong (Al Ain not in the kb)
    assert scores.in_kb_accuracy == pytest.approx(4 / 6) and scores.documents == 3
    assert scores.notes[0].startswith("left out: 1 phrase without itsrdf:taIdentRef")
    assert any("1 gold entities are not in the kb" in n for n in scores.notes)
    assert eval_nif(DATA, db=tiny_db, linker=linker, limit=1).documents == 1
    with pytest.raises(OptionError, match="--limit 0"):
        eval_nif(DATA, db=tiny_db, linker=linker, limit=0)


def test_malformed_files_are_errors_that_name_the_file(tmp_path):
    bad = tmp_path / "broken.ttl"
    bad.write_text(HEAD + "<http://example.org/d> a nif:Context ; nif:isString .\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"broken\.ttl: NIF: not valid Turtle"):
        read_nif_corpus(bad)
    empty = tmp_path / "empty.ttl"
    empty.write_text(HEAD, encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"empty\.ttl: no NIF document"):
        read_nif_corpus(empty)
    with pytest.raises(InputFormatError, match="missing.ttl"):
        read_nif_corpus(tmp_path / "missing.ttl")
    # a phrase whose anchor disagrees with the text is skipped and counted, the rest is read
    doc, text = "http://example.org/d", "Tokyo is big."
    off = tmp_path / "off.ttl"
    off.write_text(
        HEAD
        + _context(doc, text)
        + _phrase(doc, text, 0, 5, "http://dbpedia.org/resource/Tokyo")
        + _phrase(doc, text, 9, 12, "http://dbpedia.org/resource/Big", anchor="bag"),
        encoding="utf-8",
    )
    corpus = read_nif_corpus(off)
    assert [m.surface for m in corpus.documents[0].mentions] == ["Tokyo"]
    assert corpus.skipped == {"bad context or phrase": 1} and "off.ttl" in corpus.examples_skipped[0]
    assert "nif:anchorOf 'bag'" in corpus.examples_skipped[0]


def test_eval_nif_command_links_through_mluke_link(cli, tmp_path, monkeypatch):
    import mluke
    from tests.conftest import write_tiny_db

    db = write_tiny_db(tmp_path / "tiny.sqlite")
    doc, text = "http://example.org/cli", "Tokyo is the capital of Nippon, said Jane Roe."
    path = tmp_path / "corpus.ttl"
    path.write_text(
        HEAD
        + _context(doc, text)
        + _phrase(doc, text, 0, 5, "http://dbpedia.org/resource/Tokyo")
        + _phrase(doc, text, 24, 30, "http://dbpedia.org/resource/Nippon")
        + _phrase(doc, text, 37, 45, "http://aksw.org/notInWiki/Jane_Roe"),
        encoding="utf-8",
    )
    calls = []

    def link(texts, lang, *, db, model, spans, **options):
        calls.append((lang, spans, options))
        if spans is None:  # finds "Tokyo" and links it
            return [[SimpleNamespace(start=0, end=5, key=db.resolve_title("en", "Tokyo"), nil=False)] for _ in texts]
        return [[SimpleNamespace(start=s, end=e, key="Q17", nil=False) for s, e in ss] for ss in spans]

    monkeypatch.setattr(mluke, "link", link)
    out = tmp_path / "scores.json"
    result = cli("eval-nif", path, db=db, method="prior", json=out)
    assert result.exit_code == 0, result.output
    assert calls == [("en", None, {"method": "prior"}), ("en", [[(0, 5), (24, 30), (37, 45)]], {"method": "prior"})]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["documents"] == 1 and data["counts"]["gold_nil"] == 1 and data["counts"]["true_positives"] == 1
    assert data["a2kb_micro"]["recall"] == 0.5 and data["d2kb_in_kb_accuracy"] == 0.5
    result = cli("eval-nif", path, db=db)
    assert result.exit_code == 0 and "corpus.ttl, 1 documents" in result.output and "A2KB macro" in result.output
    for args, message in [
        ((tmp_path / "missing.ttl",), "FILE"),
        ((path, "--lang", "xx"), "--lang xx"),
        ((path, "--method", "guess"), "--method"),
        ((path, "--limit", "-1"), "--limit"),
    ]:
        result = cli("eval-nif", *args, db=db)
        assert isinstance(result.exception, MlukeError), result.output
        assert message in result.exception.for_cli()
    broken = tmp_path / "broken.ttl"
    broken.write_text("not turtle at all", encoding="utf-8")
    result = cli("eval-nif", broken, db=db)
    assert isinstance(result.exception, MlukeError) and "broken.ttl" in result.exception.for_cli()
