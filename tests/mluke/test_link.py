import json
import math

import pytest
from typer.testing import CliRunner

import mluke
from mluke.cli import app
from mluke.linking import Linker, _windows

PARIS, FRANCE, TOKYO, JAPAN = "geonames:2988507", "geonames:3017382", "geonames:1850147", "geonames:1861060"


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory, embedded_db):
    from mluke.demo import train_demo

    return train_demo(tmp_path_factory.mktemp("demo") / "tiny", preset="tiny", db=embedded_db, progress=False)


@pytest.fixture(scope="session")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en", "ja"])


def test_links_mentions_to_entities(linker):
    text = "Paris is the capital of France."
    found = linker.link(text, "en")
    by_surface = {m.surface: m for m in found}
    assert by_surface["Paris"].key == PARIS and by_surface["France"].key == FRANCE
    for m in found:
        assert text[m.start:m.end] == m.surface and not m.nil
    assert by_surface["France"].title_en == "France"
    ja = {m.surface: m for m in linker.link("東京は日本の首都です。", "ja")}
    assert ja["東京"].key == TOKYO and ja["日本"].key == JAPAN and ja["日本"].title == "日本" and ja["日本"].title_en == "Japan"


def test_methods_and_candidates(linker):
    text = "Valencia and London are big cities, Paris too."
    combined = linker.link(text, "en", candidates=True)
    prior = linker.link(text, "en", method="prior", candidates=True)
    model = linker.link(text, "en", method="model", candidates=True)
    for c, p, m in zip(combined, prior, model):
        assert c.surface == p.surface == m.surface
        for row in c.candidates:
            if row["model"] is not None:
                assert row["score"] == pytest.approx(row["model"] + math.log(row["prior"]))
        assert p.score == pytest.approx(math.log(p.prior))
    valencia = next(m for m in combined if m.surface == "Valencia")
    assert len(valencia.candidates) >= 2 and valencia.candidates[0]["score"] >= valencia.candidates[-1]["score"]
    assert all(m.nil for m in linker.link(text, "en", nil_threshold=1.0))


def test_batches_empty_long_and_bad_input(linker):
    texts = ["Paris is in France.", "", "Tokyo is in Japan."]
    batch = linker.link(texts, "en")
    assert batch[1] == [] and [m.key for m in batch[0]] == [m.key for m in linker.link(texts[0], "en")]
    long_text = "Paris is in France. " * 5000  # 100,000 characters: windows, not refused
    found = linker.link(long_text, "en")
    assert len(found) == 10_000 and all(m.key in (PARIS, FRANCE) for m in found)
    mixed = linker.link("東京 and Paris", "ja")
    assert {m.surface for m in mixed} >= {"東京"}
    with pytest.raises(mluke.MlukeError, match="unknown language 'xx'"):
        linker.link("Paris", "xx")
    with pytest.raises(mluke.MlukeError, match="method='best'"):
        linker.link("Paris", "en", method="best")
    spans = _windows("a. " * 1000, 100)
    assert spans[0][0] == 0 and spans[-1][1] == 3000 and all(b - a <= 100 for a, b in spans)


def test_link_cli(tiny_demo, embedded_db_path, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("東京は日本の首都です。\n\nパリはフランスの首都です。\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, ["link", str(src), "--lang", "ja", "--model", str(tiny_demo), "--db", str(embedded_db_path),
                                   "--jsonl", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3] and rows[1]["mentions"] == []
    assert {m["key"] for m in rows[0]["mentions"]} == {TOKYO, JAPAN}
    res = CliRunner().invoke(app, ["link", "-", "--lang", "en", "--model", str(tiny_demo), "--db", str(embedded_db_path)],
                             input="Paris is the capital of France.\n")
    assert res.exit_code == 0 and "Paris" in res.output and PARIS in res.output


def test_public_api_names_are_functions_after_submodule_imports():
    import mluke.cloze  # noqa: F401
    import mluke.linking  # noqa: F401

    assert callable(mluke.probe) and mluke.probe.__module__ == "mluke.cloze"
    assert callable(mluke.link) and mluke.link.__module__ == "mluke.linking"
