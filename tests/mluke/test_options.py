"""LinkOptions / ProbeOptions: checked when made, the same as their keyword arguments, and the ``kb=`` spelling
of the entity database still working (with a DeprecationWarning) for each public function family."""

import dataclasses
import math
import typing

import pytest

import kb
import mluke
from mluke import LinkOptions, ProbeOptions
from mluke.options import LinkKeywords, ProbeKeywords, merge_options

TEXT = "Paris is the capital of France. Tokyo is in Japan."


def test_options_are_checked_when_made():
    with pytest.raises(
        kb.OptionError, match=r"method='best': expected one of combined, prior, model, global, knowbert"
    ):
        LinkOptions(method="best")  # type: ignore[arg-type]
    with pytest.raises(kb.OptionError, match=r"nil_threshold=1.5: expected a confidence between 0 and 1"):
        LinkOptions(nil_threshold=1.5)
    with pytest.raises(kb.OptionError, match="batch_size=0: expected a whole number of at least 1"):
        LinkOptions(batch_size=0)
    with pytest.raises(kb.MlukeError, match=r"mode='words': expected 'entity', 'word' or 'both'"):
        ProbeOptions(mode="words")  # type: ignore[arg-type]
    with pytest.raises(kb.MlukeError, match=r"top_k=0: expected a whole number from 1 to 100,000"):
        ProbeOptions(top_k=0)
    with pytest.raises(kb.MlukeError, match=r"normalize='all': expected 'candidates' or 'vocabulary'"):
        ProbeOptions(normalize="all")  # type: ignore[arg-type]
    with pytest.raises(kb.MlukeError, match=r"threshold=0: expected a probability in \(0, 1\]"):
        ProbeOptions(threshold=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        LinkOptions().method = "prior"  # type: ignore[misc]


@pytest.mark.parametrize(
    "kind, field, value, message",
    [
        (LinkOptions, "prior_weight", math.nan, "prior_weight=nan: expected a finite number of at least 0"),
        (LinkOptions, "prior_weight", math.inf, "prior_weight=inf: expected a finite number"),
        (LinkOptions, "prior_weight", -3.0, "prior_weight=-3.0: expected a finite number of at least 0"),
        (LinkOptions, "prior_weight", "1", "prior_weight='1': expected a finite number"),
        (LinkOptions, "nil_threshold", math.nan, "nil_threshold=nan: expected a confidence between 0 and 1"),
        (LinkOptions, "window_chars", 2.5, "window_chars=2.5: expected a whole number of at least 1"),
        (LinkOptions, "chunk_texts", True, "chunk_texts=True: expected a whole number"),
        (ProbeOptions, "top_k", 99_999_999_999, "top_k=99999999999: expected a whole number from 1 to 100,000"),
        (ProbeOptions, "top_k", 2.0, "top_k=2.0: expected a whole number"),
        (ProbeOptions, "batch_size", 0, "batch_size=0: expected a whole number of at least 1"),
        (ProbeOptions, "max_pieces", 1000, "max_pieces=1000: expected a whole number from 1 to 64"),
        (ProbeOptions, "beam", 0, "beam=0: expected a whole number from 1 to 1,000"),
        (ProbeOptions, "threshold", math.nan, r"threshold=nan: expected a probability in \(0, 1\]"),
    ],
)
def test_numbers_that_cannot_mean_anything_are_refused(kind, field, value, message):
    with pytest.raises(kb.OptionError if kind is LinkOptions or field != "threshold" else kb.MlukeError, match=message):
        kind(**{field: value})


def test_keyword_lists_are_the_fields():
    for options, keywords in ((LinkOptions, LinkKeywords), (ProbeOptions, ProbeKeywords)):
        assert [f.name for f in dataclasses.fields(options)] == list(typing.get_type_hints(keywords))


def test_options_and_keywords_merge_or_clash():
    assert merge_options(LinkOptions, None, {"method": "prior"}, "link") == LinkOptions(method="prior")
    given = LinkOptions(method="prior", batch_size=4)
    assert merge_options(LinkOptions, given, {}, "link") is given
    assert merge_options(LinkOptions, given, {"method": "prior"}, "link") is given  # agrees: fine
    with pytest.raises(TypeError, match=r"link\(\) got options= and method='model'"):
        merge_options(LinkOptions, given, {"method": "model"}, "link")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) 'methods'"):
        merge_options(LinkOptions, None, {"methods": "prior"}, "link")
    with pytest.raises(TypeError, match="expected a ProbeOptions, got LinkOptions"):
        merge_options(ProbeOptions, given, {}, "probe")  # type: ignore[type-var]


def test_link_family_options_keywords_and_old_kb_spelling(tiny_demo, embedded_db, tmp_path):
    def keys(found):
        return [(m.start, m.end, m.key, m.nil) for m in found]

    by_keywords = mluke.link(TEXT, "en", model=tiny_demo, db=embedded_db, method="prior", nil_threshold=0.0)
    options = LinkOptions(method="prior", nil_threshold=0.0)
    assert keys(mluke.link(TEXT, "en", model=tiny_demo, db=embedded_db, options=options)) == keys(by_keywords)
    with pytest.warns(DeprecationWarning, match=r"link\(kb=...\) is deprecated; use db="):
        old = mluke.link(TEXT, "en", model=tiny_demo, kb=embedded_db, options=options)
    assert keys(old) == keys(by_keywords) and any(m.key for m in old)
    with pytest.raises(TypeError, match="got options= and method='model'"):
        mluke.link(TEXT, "en", model=tiny_demo, db=embedded_db, options=options, method="model")
    with pytest.warns(DeprecationWarning, match=r"Linker.__init__\(kb=...\)"):
        linker = mluke.Linker(tiny_demo, kb=embedded_db, languages=["en"])
    assert keys(linker.link(TEXT, "en", options=options)) == keys(by_keywords)
    source = tmp_path / "texts.txt"
    source.write_text(TEXT + "\n", encoding="utf-8")
    with pytest.warns(DeprecationWarning, match=r"link_file\(kb=...\)"):
        linked = mluke.link_file(source, "en", model=tiny_demo, kb=embedded_db, options=options, progress=False)
    assert keys(linked.mentions[0]) == keys(by_keywords) and linked.method == "prior"


def test_probe_and_load_old_kb_spelling(tiny_demo, embedded_db):
    bundle = mluke.load(tiny_demo)
    with pytest.warns(DeprecationWarning, match=r"load\(kb=...\)"):
        assert mluke.load(tiny_demo, kb=embedded_db).entity_vocab is not None
    ask = {"subjects": ["Japan", "France"], "model": bundle}
    by_keywords = mluke.probe("[X] is the capital of [Y].", "en", db=embedded_db, top_k=2, **ask)
    options = ProbeOptions(top_k=2)
    with pytest.warns(DeprecationWarning, match=r"probe\(kb=...\) is deprecated; use db="):
        old = mluke.probe("[X] is the capital of [Y].", "en", kb=embedded_db, options=options, **ask)
    assert old.to_dict() == by_keywords.to_dict()
    assert [len(r.predictions) for r in old.rows] == [2, 2]
    with pytest.raises(TypeError, match="got options= and top_k=3"):
        mluke.probe("[X] is the capital of [Y].", "en", db=embedded_db, options=options, top_k=3, **ask)
