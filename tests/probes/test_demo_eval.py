import json

import pytest
from typer.testing import CliRunner

from mluke.cli import app
from mluke.demo.data import PRESETS, ambiguous_cities, demo_documents
from probes.demo_eval import demo_linking_docs, evaluate_demo_linking

pytestmark = pytest.mark.learned  # asserts the tiny demo's evaluation: held by construction, rerun by CI at 1 thread


def test_ambiguous_cities_share_a_name_across_countries(embedded_db):
    amb = ambiguous_cities(embedded_db, ["en", "ja"])
    country = {f.subject: f.object for f in embedded_db.facts(property="P17")}
    hyderabad = [k for k in amb if embedded_db.label(k, "en") == "Hyderabad"]
    assert len(hyderabad) == 2 and len({country[k] for k in hyderabad}) == 2  # India and Pakistan
    for key, langs in list(amb.items())[:200]:
        for lang in langs:
            name = embedded_db.label(key, lang)
            same = [k for k in amb if lang in amb[k] and embedded_db.label(k, lang) == name]
            assert len(same) >= 2 and len({country[k] for k in same}) == len(same)


def test_linking_set_is_held_out_from_training(embedded_db):
    data = demo_documents(embedded_db, PRESETS["tiny"])
    assert data.linking
    trained = {(f["subject"], f["lang"]) for f in data.train if f["property"] == "P17"}
    texts = {d.text for d in data.docs}
    amb = ambiguous_cities(embedded_db, PRESETS["tiny"].languages)
    for item in data.linking:
        (cs, ce, city), (ys, ye, country) = item["mentions"]
        assert (city, item["lang"]) not in trained and item["text"] not in texts
        assert item["lang"] in amb[city]
        assert item["text"][cs:ce] == embedded_db.label(city, item["lang"])
        assert item["text"][ys:ye] == embedded_db.label(country, item["lang"])
        assert any(f.object == country for f in embedded_db.facts(subject=city, property="P17"))


def test_demo_linking_evaluation(tiny_demo, embedded_db):
    docs = demo_linking_docs(tiny_demo)
    info = json.loads((tiny_demo / "demo.json").read_text(encoding="utf-8"))
    assert len(docs) == len(info["linking"]) and all(len(d.mentions) == 2 for d in docs)
    report = evaluate_demo_linking(tiny_demo, db=embedded_db, progress=False)
    total = report.row("all", "prior")
    assert total["mentions"] == total["in_kb"] == 2 * len(docs)
    assert 1 <= total["ambiguous"] <= total["mentions"]  # the cities at least
    for method in ("prior", "model", "combined", "global"):
        row = report.row("all", method)
        assert 0.0 <= row["ambiguous_accuracy"] <= 1.0 and row["precision"] is None  # gold mentions only


def test_eval_demo_cli_reports_probing_and_linking(tiny_demo, tmp_path):
    out = CliRunner().invoke(
        app,
        [
            "eval-demo",
            "--model",
            str(tiny_demo),
            "--no-progress",
            "--train-sample",
            "1",
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert out.exit_code == 0, out.output
    summary = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "all" in summary["by_relation"] and summary["by_relation"]["all"]["held-out"]["pairs"] > 0
    methods = {r["method"] for r in summary["linking"]["rows"] if r["lang"] == "all"}
    assert methods == {"prior", "model", "combined", "global"}
    assert "| all | held-out |" in out.output and "| all | global |" in out.output


def test_demo_probing_of_a_knowbert_folder_with_the_layer_on_and_off(tiny_demo, embedded_db, tmp_path):
    """A KnowBert folder made from the demo model probes the demo's pairs in word mode: with its layer off it
    answers as the demo model's own word mode, pair for pair; the summary holds only the modes asked."""
    import torch

    from mluke.knowbert import KnowBertModel
    from mluke.models.tokenizer import MlukeTokenizer
    from probes.demo_eval import evaluate_demo, to_markdown

    torch.manual_seed(0)
    folder = tmp_path / "knowbert"
    KnowBertModel.from_encoder(tiny_demo).save_pretrained(folder)
    MlukeTokenizer.from_pretrained(tiny_demo).save_pretrained(folder / "tokenizer")
    asked = {"db": embedded_db, "max_train_per_cell": 1, "progress": False, "modes": ["word"]}
    bare: list = []
    off: list = []
    on: list = []
    summary = evaluate_demo(tiny_demo, outcomes=bare, **asked)
    evaluate_demo(tiny_demo, outcomes=off, probe_model=folder, knowledge=False, **asked)
    evaluate_demo(tiny_demo, outcomes=on, probe_model=folder, **asked)
    assert bare and {o.mode for o in bare} == {"word"}
    key = lambda o: (o.relation, o.lang, o.subject, o.split, o.prediction, o.correct)  # noqa: E731
    assert [key(o) for o in off] == [key(o) for o in bare]
    assert [key(o)[:4] for o in on] == [key(o)[:4] for o in bare]  # the same pairs, the layer on
    row = summary["by_relation"]["all"]["held-out"]
    assert set(row) == {"word", "pairs", "random", "most common"}
    assert "entity" not in to_markdown(summary) and "| word | random |" in to_markdown(summary)
    with pytest.raises(ValueError, match="unknown demo probing modes"):
        evaluate_demo(tiny_demo, db=embedded_db, modes=["words"], progress=False)
