"""Extractive QA: input windows and answer positions, span decoding, entity-linked input and its cache, the
miniature sets, and whole runs (Python and CLI) with the G-XLT matrix."""

import csv
import json

import pytest
import torch

import mluke
from kb.mentions import MentionIndex
from mluke.finetuning import FineTuneConfig, load_transfer
from mluke.finetuning.qa import best_spans, collate_qa, qa_rows
from probes.transfer import evaluate_qa, finetune_qa, read_mlqa, read_squad, read_xquad
from probes.transfer.miniature.qa import generate_qa, load_questions, write_qa_miniature
from probes.transfer.readers.qa import QaExample, write_squad
from probes.transfer.runs import qa_linking
from probes.transfer.runs.qa_linking import cached_links, link_examples

FAST = FineTuneConfig(learning_rate=1e-3, batch_size=8, epochs=2)


@pytest.fixture(scope="module")
def tokenizer(tiny_demo):
    return mluke.load(tiny_demo).tokenizer


def _answer_text(row, context):
    return context[row.offsets[row.start][0] : row.offsets[row.end][1]]


def test_windows_overlap_and_keep_an_answer_at_the_very_end(tokenizer):
    context = " ".join(f"Sentence {i} names the city of Lyon." for i in range(40)) + " The answer is Valparaíso"
    answer = (context.index("Valparaíso"), len(context))
    rows = qa_rows(
        tokenizer,
        ["Which city ends the text?"],
        [context],
        features="word",
        answers=[answer],
        max_length=64,
        doc_stride=24,
    )
    assert len(rows) > 5 and all(len(r.ids) <= 64 for r in rows)
    holding = [r for r in rows if r.start]
    assert holding and all(_answer_text(r, context) == "Valparaíso" for r in holding)
    assert rows[-1] in holding  # the last window ends with the passage's last piece
    assert all(r.start == r.end == 0 for r in rows if r not in holding)  # SQuAD 1.1: outside -> <s>
    firsts = [next(o for o in r.offsets if o is not None)[0] for r in rows]
    lasts = [[o for o in r.offsets if o is not None][-1][1] for r in rows]
    assert all(b < a2 for a2, b in zip(lasts, firsts[1:]))  # consecutive windows overlap
    assert firsts[0] == 0 and lasts[-1] == len(context)
    q_len = len(tokenizer.encode_words(["Which city ends the text?"])[0])
    assert rows[0].ids[: q_len + 3] == [
        tokenizer.bos_id,
        *rows[0].ids[1 : q_len + 1],
        tokenizer.eos_id,
        tokenizer.eos_id,
    ]


def test_entity_tokens_cover_the_linked_names_in_both_texts(tokenizer):
    question, context = "Where is Kyoto?", "Kyoto is a city in Japan. 京都は日本の都市です。"
    q_names = [(9, 14, 5)]
    c_names = [(0, 5, 5), (19, 24, 7), (26, 28, 5), (29, 31, 7)]
    (row,) = qa_rows(
        tokenizer,
        [question],
        [context],
        features="entity",
        question_names=[q_names],
        context_names=[c_names],
        answers=[(19, 24)],
    )
    assert row.entity_ids == [5, 5, 7, 5, 7] and _answer_text(row, context) == "Japan"
    q_end = row.ids.index(tokenizer.eos_id)
    assert 1 <= row.slots[0][0] < row.slots[0][1] <= q_end  # the question's name, inside the question
    covered = [context[row.offsets[s][0] : row.offsets[e - 1][1]].strip() for s, e in row.slots[1:]]
    assert covered == ["Kyoto", "Japan", "京都", "日本"]
    (word_row,) = qa_rows(
        tokenizer, [question], [context], features="word", question_names=[q_names], context_names=[c_names]
    )
    assert word_row.slots == [] and word_row.ids == row.ids  # the same pieces, no entity tokens
    batch = collate_qa([row, word_row], pad_id=tokenizer.pad_id)
    assert batch["entity_ids"].shape == (2, 5) and batch["context_mask"][0].sum() == len([o for o in row.offsets if o])
    assert batch["start_positions"].tolist() == [row.start, 0]


def test_best_spans_respect_order_length_and_context():
    start = torch.tensor([[9.0, 0.0, 1.0, 5.0, 0.0]])
    end = torch.tensor([[9.0, 4.0, 0.0, 0.0, 3.0]])
    context = torch.tensor([[False, True, True, True, True]])  # position 0 (<s>) cannot answer
    s, e, score = best_spans(start, end, context, max_answer_length=2)
    assert (s.item(), e.item(), score.item()) == (3, 4, 8.0)  # 3..1 would score 9 but ends before it starts
    s, e, _ = best_spans(start, end, context, max_answer_length=1)
    assert (s.item(), e.item()) == (3, 3)  # single pieces: 5 + 0 beats 0 + 4


def test_linking_ignores_ambiguous_names_unless_the_english_source_decides(tiny_db):
    index = MentionIndex.build(tiny_db, keep_unscored=True)  # names without link counts too
    example = QaExample(
        "q1", "Where is Tokyo?", "Tokyo is the capital of Japan, not of Denmark.", ((0, "Tokyo"),), lang="en"
    )
    plain = link_examples([example], index, lang="en")["q1"]
    assert plain["question"] == []  # "Tokyo": Q1490 or Q1748
    assert plain["context"] == [(24, 29, "Q17"), (38, 45, "Q35")]
    source = {"q1": QaExample("q1", "Which capital?", "Japan has a capital.", ((0, "Japan"),), lang="en")}
    linked = link_examples([example], index, lang="en", english=source)["q1"]
    assert linked["context"] == [(24, 29, "Q17")]  # Denmark is not among the source's entities
    decided = qa_linking.link_texts(index, ["Tokyo is big."], "en", allowed=[frozenset({"Q1490", "Q17"})])
    assert decided == [[(0, 5, "Q1490")]]  # one of its candidates is in the source: that one


def test_links_are_cached_per_file(tiny_db, tmp_path, monkeypatch):
    path = tmp_path / "train.json"
    examples = [QaExample("a", "Where is Japan?", "Japan is in Asia.", ((12, "Asia"),), lang="en")]
    write_squad(examples, path)
    index = MentionIndex.build(tiny_db, keep_unscored=True)  # names without link counts too
    first = cached_links(path, examples, index, lang="en")
    assert first["a"]["question"] == [(9, 14, "Q17")]

    def fail(*args, **kwargs):
        raise AssertionError("linked again")

    monkeypatch.setattr(qa_linking, "link_examples", fail)
    assert cached_links(path, examples, index, lang="en") == first
    with pytest.raises(AssertionError, match="linked again"):
        cached_links(path, examples, index, lang="ja")  # another language is another cache entry
    with pytest.raises(mluke.MlukeError, match="English version"):
        cached_links(path, examples, index, lang="en", source="english")


def test_miniature_is_parallel_and_holds_its_patterns_out(embedded_db):
    sets = generate_qa(embedded_db, ["en", "de", "ja", "ar"], train_size=40, dev_size=10, test_size=30, sentences=3)
    test = sets["test"]
    assert [e.id for e in test["en"]] == [e.id for e in test["ja"]] == [e.id for e in test["ar"]]
    for examples in test.values():
        for e in examples:
            ((start, text),) = e.answers
            assert e.context[start : start + len(text)] == text and text not in e.question
    questions = load_questions()["questions"]["en"]
    train_q = {q.split("{")[0] for group in questions.values() for q in group[:1]}
    assert all(any(e.question.startswith(p) for p in train_q) for e in sets["train"]["en"])
    test_q = {q.split("{")[0] for group in questions.values() for q in group[1:]}
    assert all(any(e.question.startswith(p) for p in test_q) for e in test["en"])
    assert not any("One of the cities of" in e.context for e in test["en"])  # relation pattern 1: training only
    assert not any("There is a land border between" in e.context for e in sets["train"]["en"])  # pattern 2: test only


def test_finetune_and_evaluate_with_gxlt(tiny_demo, embedded_db, tmp_path):
    data = write_qa_miniature(
        embedded_db, tmp_path / "qa", ["en", "de", "ja"], train_size=40, dev_size=10, test_size=12, sentences=2
    )
    assert sorted(p.name for p in (data / "mlqa").iterdir()) == [
        f"test-context-{c}-question-{q}.json" for c in ("de", "en") for q in ("de", "en")
    ]
    assert read_mlqa(data / "mlqa", "de", "en", split="test").examples[0].question_lang == "en"
    out = tmp_path / "qa-e"
    report = finetune_qa(
        data / "train.en.json",
        data / "dev.en.json",
        output=out,
        model=tiny_demo,
        db=embedded_db,
        config=FAST,
        progress=False,
    )
    assert [h["epoch"] for h in report.history] == [0, 1] and report.names_per_question > 1
    model, tok = load_transfer(out)
    assert model.task == "qa" and model.features == "entity" and tok.entity_vocab is not None
    assert model.luke.config.entity_vocab_size == len(tok.entity_vocab)
    result = evaluate_qa(
        out, xquad=data / "xquad", mlqa=data / "mlqa", split="test", gxlt=True, db=embedded_db, progress=False
    )
    assert {(r["dataset"], r["lang"], r["question_lang"]) for r in result.rows} >= {
        ("xquad", "ja", "ja"),
        ("mlqa", "de", "en"),
    }
    assert all(0 <= r["f1"] <= 1 and r["questions"] == 12 for r in result.rows)
    # each data set's official scorer by default: SQuAD v1.1 for XQuAD (ja too), MLQA's for MLQA
    assert {r["scorer"] for r in result.rows if r["dataset"] == "xquad"} == {"squad"}
    assert {r["scorer"] for r in result.rows if r["dataset"] == "mlqa"} == {"mlqa"}
    assert result.table()[0][-1] == "scorer"
    columns, rows = result.gxlt_table()
    assert columns[1:] == ["en", "de"] and [r[0] for r in rows] == ["en", "de", "average"]
    english = evaluate_qa(out, xquad=data / "xquad", link_source="english", db=embedded_db, progress=False)
    assert len(english.rows) == 3
    with pytest.warns(DeprecationWarning, match=r"evaluate_qa\(kb=\.\.\.\) is deprecated; use db="):  # the old name
        old_name = evaluate_qa(out, xquad=data / "xquad", link_source="english", kb=embedded_db, progress=False)
    assert old_name.rows == english.rows
    with pytest.raises(mluke.MlukeError, match="nothing to evaluate"):
        evaluate_qa(out)
    with pytest.raises(mluke.MlukeError, match="'ja'.*use scorer 'squad'"):  # MLQA's rules know no Japanese
        evaluate_qa(out, xquad=data / "xquad", scorer="mlqa", db=embedded_db, progress=False)


def test_kb_keyword_is_a_deprecated_spelling_of_db(tmp_path):
    with pytest.warns(DeprecationWarning, match=r"finetune_qa\(kb=\.\.\.\) is deprecated; use db="):
        with pytest.raises(mluke.MlukeError, match="unknown QA settings"):  # reached: kb= was accepted
            finetune_qa(
                tmp_path / "t.json", tmp_path / "d.json", output=tmp_path / "o", kb="embedded", settings={"x": 1}
            )
    with pytest.raises(TypeError, match="both kb= and db="):
        finetune_qa(tmp_path / "t.json", tmp_path / "d.json", output=tmp_path / "o", kb="embedded", db="embedded")
    with pytest.raises(TypeError, match="both kb= and db="):
        evaluate_qa(tmp_path, kb="embedded", db="embedded")


def test_evaluate_qa_checks_the_scorer_before_loading_the_model(tmp_path):
    (tmp_path / "xquad").mkdir()
    (tmp_path / "xquad" / "xquad.th.json").write_text("{}", encoding="utf-8")
    with pytest.raises(mluke.MlukeError, match="unknown QA scorer 'official'"):
        evaluate_qa(tmp_path / "no-model", xquad=tmp_path / "xquad", scorer="official")  # type: ignore[arg-type]
    with pytest.raises(mluke.MlukeError, match="'th'"):
        evaluate_qa(tmp_path / "no-model", xquad=tmp_path / "xquad", scorer="mlqa-fixed")


def test_cli_finetune_and_evaluate_qa(finetune_cli, cli, embedded_db, embedded_db_path, tmp_path):
    data = write_qa_miniature(
        embedded_db, tmp_path / "qa", ["en", "de"], train_size=24, dev_size=8, test_size=8, sentences=2
    )
    out = tmp_path / "qa-w"
    res = finetune_cli(
        "qa", "-o", out, train=data / "train.en.json", dev=data / "dev.en.json", db=embedded_db_path, batch_size="8"
    )
    assert res.exit_code == 0, res.output
    assert "dev F1" in res.output and "kept epoch 1" in res.output
    res = cli(
        "evaluate",
        "qa",
        out,
        xquad=data / "xquad",
        mlqa=data / "mlqa",
        split="test",
        gxlt=True,
        db=embedded_db_path,
        gxlt_csv=tmp_path / "g.csv",
        json=tmp_path / "r.json",
        no_progress=True,
        scorer="mlqa-fixed",
    )
    assert res.exit_code == 0, res.output
    assert "G-XLT" in res.output and "average" in res.output
    matrix = list(csv.reader((tmp_path / "g.csv").open(encoding="utf-8")))
    assert matrix[0][1:] == ["en", "de"] and len(matrix) == 4
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["features"] == "word" and set(saved["gxlt"]["f1"]) == {"en/en", "en/de", "de/en", "de/de"}
    assert {row["scorer"] for row in saved["languages"]} == {"mlqa-fixed"}
    assert read_squad(data / "dev.en.json").examples and read_xquad(data / "xquad", ["de"])["de"].examples
