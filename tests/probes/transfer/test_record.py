"""ReCoRD on the evaluation side: the reader (original JSON and SuperGLUE JSON lines, inclusive ends) and writer, the
official scorer's rules checked by hand, whole runs and the CLI."""

import json

import pytest

import mluke
from mluke.finetuning import FineTuneConfig, load_transfer
from probes.transfer import (
    RecordExample,
    evaluate_record,
    finetune_record,
    read_record,
    record_scores,
    write_record,
)
from probes.transfer.runs.record import gold_labels


def _passage(ident, text, names, queries):
    """A passage record with an entity for every occurrence of ``names`` (inclusive ends, as distributed)."""
    entities = []
    for name in names:
        at = text.find(name)
        while at >= 0:
            entities.append({"start": at, "end": at + len(name) - 1})
            at = text.find(name, at + 1)
    qas = []
    for qid, query, answer in queries:
        at = text.find(answer)
        qas.append({"id": qid, "query": query, "answers": [{"start": at, "end": at + len(answer) - 1, "text": answer}]})
    return {"id": ident, "source": "test", "passage": {"text": text, "entities": entities}, "qas": qas}


PASSAGES = [
    _passage(
        "p1",
        "Paris is the capital of France. Berlin is the capital of Germany.",
        ["Paris", "France", "Berlin", "Germany"],
        [("q1", "@placeholder is the capital of France.", "Paris"), ("q2", "Berlin is in @placeholder.", "Germany")],
    ),
    _passage(
        "p2",
        "Rome is the capital of Italy. Madrid is the capital of Spain.",
        ["Rome", "Italy", "Madrid", "Spain"],
        [("q3", "@placeholder is the capital of Spain.", "Madrid")],
    ),
]


def _original(path, passages):
    path.write_text(json.dumps({"version": "v1.0", "data": passages}, indent=1), encoding="utf-8")
    return path


def _superglue(path, passages):
    lines = []
    for n, p in enumerate(passages):
        qas = [
            {k: v for k, v in q.items() if k != "id"} | ({"idx": 10 * n + k} if "id" in q else {})
            for k, q in enumerate(p["qas"])
        ]
        lines.append(json.dumps({"idx": n, "source": p["source"], "passage": p["passage"], "qas": qas}) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_reads_the_original_layout_with_inclusive_ends(tmp_path):
    data = read_record(_original(tmp_path / "dev.json", PASSAGES), lang="en")
    assert len(data) == 3 and data.passages == 2 and not data.skipped
    q1 = data.examples[0]
    assert (q1.id, q1.passage_id, q1.lang, q1.answers) == ("q1", "p1", "en", ("Paris",))
    assert [q1.text[s:e] for s, e in q1.entities] == ["Paris", "France", "Berlin", "Germany"]
    assert q1.answer_spans == ((0, 5),) and q1.query[slice(*q1.placeholder)] == "@placeholder"
    assert list(q1.candidates()) == ["paris", "france", "berlin", "germany"]
    assert gold_labels(q1) == [1, 0, 0, 0] and gold_labels(data.examples[1]) == [0, 0, 0, 1]


def test_reads_superglue_json_lines_and_queries_without_answers(tmp_path):
    passages = [*PASSAGES, _passage("p3", "Oslo is in Norway.", ["Oslo", "Norway"], [])]
    passages[2]["qas"] = [{"query": "@placeholder is in Norway."}]  # a test query: no answers, no id
    data = read_record(_superglue(tmp_path / "val.jsonl", passages))
    assert [e.id for e in data] == ["0", "1", "10", "2-0"] and [e.passage_id for e in data] == ["0", "0", "1", "2"]
    assert (
        data.examples[3].answers == ()
        and data.examples[2].entities == read_record(_original(tmp_path / "o.json", PASSAGES)).examples[2].entities
    )


def test_bad_records_are_counted_and_named_with_their_line(tmp_path):
    good = json.dumps(_superglue(tmp_path / "x.jsonl", PASSAGES[:1]).read_text().strip())
    records = [
        json.loads(json.loads(good)),
        {"passage": {"text": "Oslo.", "entities": []}},  # no qas
        {"passage": {"text": "Oslo.", "entities": [{"start": 0, "end": 5}]}, "qas": []},  # end 5 is past the text
        {
            "passage": {"text": "Oslo is cold.", "entities": [{"start": 0, "end": 3}]},
            "qas": [
                {"query": "Oslo is cold."},  # no placeholder: this query only
                {"query": "@placeholder is cold.", "answers": [{"start": 0, "end": 3, "text": "Oslo"}]},
            ],
        },
        [1, 2],
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n", encoding="utf-8")
    data = read_record(path)
    assert len(data) == 3 and data.passages == 2
    assert data.skipped == {
        "missing field": 1,
        "entity span outside the passage": 1,
        "query without exactly one @placeholder": 1,
        "not a JSON object": 1,
        "not JSON": 1,
    }
    named = "\n".join(data.examples_skipped)
    for line, reason in [
        (2, "missing field"),
        (3, "entity span"),
        (4, "query without"),
        (5, "not a JSON"),
        (6, "not JSON"),
    ]:
        assert f"{path}:{line}: {reason}" in named
    assert "skipped 5 records" in repr(data)


def test_a_broken_passage_in_the_original_layout_skips_that_passage_only(tmp_path):
    text = json.dumps({"version": "v1.0", "data": PASSAGES}, indent=1)
    cut = text.index('"qas"')  # the first passage loses its end: reading goes on at the second passage
    broken = text[:cut] + text[text.rindex("{", 0, text.index('"id": "p2"')) :]
    path = tmp_path / "broken.json"
    path.write_text(broken, encoding="utf-8")
    data = read_record(path)
    assert [e.id for e in data] == ["q3"] and data.skipped == {"not JSON": 1}
    assert data.examples_skipped[0].startswith(f"{path}:4: not JSON")  # where the passage starts


def test_missing_empty_and_non_utf8_files(tmp_path):
    with pytest.raises(mluke.errors.InputFormatError, match=r"nope\.json: no such file"):
        read_record(tmp_path / "nope.json")
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(mluke.errors.InputFormatError, match="no ReCoRD query found"):
        read_record(tmp_path / "empty.jsonl")
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"version": "v1.0", "data": [\n{"passage": {"text": "caf\xe9"}}]}')
    with pytest.raises(mluke.errors.InputFormatError, match=r"latin\.json:2: bytes that are not UTF-8"):
        read_record(path)


def test_write_record_round_trip(tmp_path):
    data = read_record(_original(tmp_path / "a.json", PASSAGES))
    again = read_record(write_record(data.examples, tmp_path / "b.json"))
    assert again.examples == data.examples and again.passages == 2
    bad = RecordExample("q", "p", "Oslo.", ((0, 4),), "no placeholder")
    with pytest.raises(mluke.MlukeError, match="exactly one @placeholder"):
        write_record([bad], tmp_path / "c.json")


def test_scores_follow_the_official_script_by_hand():
    golds = {
        "q1": ["Eiffel Tower"],
        "q2": ["Barack Obama", "Obama"],  # the prediction matches the second gold
        "q3": ["Barack Obama", "Obama"],
        "q4": ["US"],
        "q5": ["Paris"],  # no prediction: 0
        "q6": [],  # no gold answer (a test query): not scored
    }
    predictions = {"q1": "the Eiffel Tower!", "q2": "obama", "q3": "President Obama", "q4": "U.S.", "q9": "x"}
    # q1: "eiffel tower" both; q3: EM 0, F1 max(2*(1/2*1/2)/(1), 2*(1/2*1)/(3/2)) = max(0.5, 2/3); q4: "us" == "us"
    scores = record_scores(predictions, golds)
    assert scores["exact_match"] == pytest.approx((1 + 1 + 0 + 1 + 0) / 5)
    assert scores["f1"] == pytest.approx((1 + 1 + 2 / 3 + 1 + 0) / 5)
    assert (scores["queries"], scores["missing"], scores["unscored"]) == (5, 1, 1)
    assert record_scores({"a": "An apple"}, {"a": ["apple pie", "green apple"]})["f1"] == pytest.approx(2 / 3)
    with pytest.raises(mluke.MlukeError, match="no ReCoRD query with a gold answer"):
        record_scores({}, {"q": []})


FAST = FineTuneConfig(learning_rate=3e-3, batch_size=2, epochs=2, warmup=0.0)


def test_finetune_then_evaluate_record(tiny_demo, tmp_path):
    train = _original(tmp_path / "train.json", PASSAGES)
    out = tmp_path / "record-e"
    report = finetune_record(train, train, output=out, model=tiny_demo, config=FAST, progress=False)
    assert report.task == "record" and report.train_size == 3 and report.dev_size == 3
    assert all(0 <= h["dev"] <= 1 for h in report.history) and not (tmp_path / "record-e.work").exists()
    model, _ = load_transfer(out)
    assert model.task == "record" and model.settings["max_length"] == 512
    result = evaluate_record(out, [("en", train), ("de", _superglue(tmp_path / "de.jsonl", PASSAGES))], progress=False)
    assert [r["lang"] for r in result.rows] == ["en", "de"] and result.rows[0]["queries"] == 3
    assert result.rows[0]["exact_match"] == result.rows[1]["exact_match"]  # same queries in both layouts
    columns, rows = result.table()
    assert columns[:4] == ["lang", "queries", "exact_match", "f1"] and rows[-1][0] == "average"
    short = finetune_record(
        train,
        train,
        output=tmp_path / "short",
        model=tiny_demo,
        config=FAST,
        progress=False,
        settings={"max_length": 32},
    )
    assert short.skipped["train: mentions dropped by the input sizes"] > 0
    with pytest.raises(mluke.MlukeError, match="unknown ReCoRD settings"):
        finetune_record(train, train, output=tmp_path / "x", model=tiny_demo, settings={"stride": 3})


def test_cli_finetune_and_evaluate_record(finetune_cli, cli, tmp_path):
    train = _superglue(tmp_path / "train.jsonl", PASSAGES)
    out = tmp_path / "record-w"
    res = finetune_cli("record", "-o", out, train=train, dev=train, batch_size="2")
    assert res.exit_code == 0, res.output
    assert "fine-tuned record (word features)" in res.output and "dev F1" in res.output
    res = cli("evaluate", "record", out, test=[f"en:{train}"], json=tmp_path / "r.json", csv=tmp_path / "r.csv")
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["task"] == "record" and saved["languages"][0]["queries"] == 3 and "f1" in saved["average"]
    assert (tmp_path / "r.csv").read_text().startswith("lang,queries,exact_match,f1")
    res = cli("evaluate", "record", out)
    assert res.exit_code == 1 and "--test" in str(res.exception)
    res = cli("finetune", "--help")
    assert res.exit_code == 0 and "record" in res.output and "@placeholder" in res.output
