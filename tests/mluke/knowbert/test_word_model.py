"""Probing a KnowBert folder in word mode: with the knowledge layer off it is the bare encoder's word probe, score
for score; with it on the scores change, the prompt's mentions get their kb candidates and the [Y] masks only the
[MASK] entity (no candidate leaks the answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import kb
import mluke
from mluke.knowbert import EntityTable, KnowBertModel
from mluke.knowbert.pieces import candidates_from_inputs, piece_span
from mluke.knowbert.word_model import open_knowbert_words
from mluke.models.tokenizer import MlukeTokenizer
from tests.conftest import write_tiny_db
from tests.mluke.knowbert.test_training import KEYS, LAYER

TEMPLATE = "The capital of [X] is [Y]."


@pytest.fixture(scope="module")
def tiny_db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_db(tmp_path_factory.mktemp("kbfeat") / "tiny.sqlite")


@pytest.fixture(scope="module")
def knowbert_dir(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Path) -> Path:
    """A KnowBert folder as ``mluke knowbert train`` exports it (model files and ``tokenizer/``), on the tiny
    mLUKE checkpoint; the layer's weights scaled up so that its effect shows in the scores."""
    torch.manual_seed(0)
    table = EntityTable.from_vectors(torch.randn(len(KEYS), 16, generator=torch.Generator().manual_seed(1)), KEYS)
    model = KnowBertModel.from_encoder(tiny_checkpoint, entities=table, config=LAYER)
    with torch.no_grad():
        for p in model.kar_parameters():
            p.mul_(5)
    out = tmp_path_factory.mktemp("kbfeat") / "knowbert"
    model.save_pretrained(out)
    MlukeTokenizer.from_pretrained(tiny_checkpoint).save_pretrained(out / "tokenizer")
    return out


def scores(result: mluke.ProbeResult) -> list[list[tuple[str, float]]]:
    return [[(p.key, p.score) for p in row.predictions] for row in result.rows]


def test_layer_off_is_the_bare_encoders_word_probe(knowbert_dir: Path, tiny_checkpoint: Path, tiny_db_path: Path):
    asked = {"lang": "en", "db": tiny_db_path, "mode": "word", "top_k": 3}
    bare = mluke.probe(TEMPLATE, model=tiny_checkpoint, **asked)  # type: ignore[arg-type]
    off = mluke.probe(TEMPLATE, model=knowbert_dir, knowledge=False, **asked)  # type: ignore[arg-type]
    on = mluke.probe(TEMPLATE, model=knowbert_dir, **asked)  # type: ignore[arg-type]
    assert bare.rows and scores(off) == scores(bare)  # exactly: the same pieces through the same encoder
    assert off.mode == on.mode == "word"
    assert scores(on) != scores(off)  # the layer changes the words' vectors


def test_prompt_spans_get_candidates_and_the_mask_gets_the_mask_row(knowbert_dir: Path, tiny_db_path: Path):
    bundle = open_knowbert_words(knowbert_dir, db=tiny_db_path)
    tok, model = bundle.tokenizer, bundle.model
    text = "Tokyo is the capital of <mask><mask>."
    enc = tok([text], lang="en")
    cands = candidates_from_inputs(enc)
    assert cands is not None
    ids = enc["input_ids"][0].tolist()
    masks = [i for i, p in enumerate(ids) if p == tok.mask_id]
    spans = [
        (int(s), int(e), [int(r) for r, ok in zip(rows, keep) if ok])
        for s, e, m, rows, keep in zip(
            cands.span_start[0], cands.span_end[0], cands.span_mask[0], cands.entity_ids[0], cands.candidate_mask[0]
        )
        if m
    ]
    table = model.knowbert.entities
    assert (masks[0], masks[-1], [table.mask_row]) in spans  # the [Y] masks: the [MASK] entity alone
    tokyo = next(r for s, e, r in spans if (s, e) != (masks[0], masks[-1]))
    assert tokyo[0] == table.key_to_row["Q1490"] and table.mask_row not in tokyo  # best prior first
    # off: no spans in the encoding at all
    tok.knowledge = False
    assert candidates_from_inputs(tok([text], lang="en")) is None


def test_a_mention_over_a_masked_piece_gets_only_the_mask_row(knowbert_dir: Path, tiny_db_path: Path) -> None:
    bundle = open_knowbert_words(knowbert_dir, db=kb.EntityDB(tiny_db_path))
    spans = bundle.tokenizer.spans()
    text = "Tokyo is big."
    ids = [0, 10, 11, 12, 13, 2]
    offsets = [(0, 0), (0, 5), (5, 8), (8, 12), (12, 13), (0, 0)]
    win = spans.window(text, "en", ids, offsets, masked=[(1, 1)])  # "Tokyo"'s piece is masked
    assert win.spans == [(1, 1)] and win.entity_ids == [[spans.mask_row]]
    open_ = spans.window(text, "en", ids, offsets)
    assert open_.spans == [(1, 1)] and spans.mask_row not in open_.entity_ids[0]


def test_piece_span_takes_every_overlapping_piece() -> None:
    offsets = [(0, 0), (0, 3), (3, 5), (6, 9), (0, 0)]
    assert piece_span(offsets, 1, 4) == (1, 2)
    assert piece_span(offsets, 6, 9) == (3, 3)
    assert piece_span(offsets, 20, 25) is None


def test_cli_probe_with_and_without_the_knowledge_layer(cli, knowbert_dir: Path, tiny_db_path: Path, tmp_path: Path):
    probe = cli.bind("probe", TEMPLATE, lang="en", model=knowbert_dir, db=tiny_db_path, top_k="2")
    res_on = probe(json=tmp_path / "on.json")
    res_off = probe("--no-knowledge", json=tmp_path / "off.json")
    assert res_on.exit_code == 0 and res_off.exit_code == 0, res_on.output + res_off.output
    on, off = (json.loads((tmp_path / f"{n}.json").read_text(encoding="utf-8")) for n in ("on", "off"))
    assert on["mode"] == off["mode"] == "word"
    assert on["rows"] != off["rows"]  # the layer changes the scores


def test_open_vocabulary_answers_need_the_layer_off(knowbert_dir: Path, tiny_db_path: Path) -> None:
    from kb.db.templates import parse_template
    from mluke.options import ProbeOptions
    from mluke.probing.runs import run_open

    bundle = open_knowbert_words(knowbert_dir, db=tiny_db_path)
    template, subjects = parse_template("[X] was founded in [Y]."), [(None, "Acme")]
    ask = {"mode": "word", "max_pieces": 1, "beam": 1}
    with pytest.raises(mluke.MlukeError, match="open-vocabulary") as err:
        run_open(template, "en", subjects, {}, model=bundle, options=ProbeOptions(**ask))  # type: ignore[arg-type]
    assert "--no-knowledge" in err.value.for_cli()
    off = run_open(template, "en", subjects, {}, model=bundle, options=ProbeOptions(knowledge=False, **ask))  # type: ignore[arg-type]
    assert off.open_vocabulary and off.rows[0].predictions


def test_a_model_with_two_knowledge_bases_probes_with_both(knowbert_dir: Path, tiny_db_path: Path, tmp_path):
    """Word-mode probing gives every knowledge base its own spans and candidates; a second knowledge base without a
    recorded kb needs one given."""
    import shutil

    from kb.errors import MlukeError

    one = KnowBertModel.from_pretrained(knowbert_dir)
    second = EntityTable.from_vectors(torch.randn(3, 8, generator=torch.Generator().manual_seed(2)), KEYS[:3])
    two = KnowBertModel(one.encoder, {"kb": one.entities, "geo": second}, {"kb": one.config, "geo": one.config})
    two.kar.load_state_dict(one.kar.state_dict())
    with torch.no_grad():
        for p in two.knowledge_layer("geo").parameters():
            p.mul_(5)
    folder = two.save_pretrained(tmp_path / "two")  # no kb recorded
    shutil.copytree(knowbert_dir / "tokenizer", folder / "tokenizer")
    asked = {"lang": "en", "db": tiny_db_path, "mode": "word", "top_k": 3}
    with pytest.raises(MlukeError, match=r"two/knowbert\.json: the knowledge base 'geo' records no kb"):
        mluke.probe(TEMPLATE, model=folder, **asked)  # type: ignore[arg-type]
    bundle = open_knowbert_words(folder, db=tiny_db_path, kbs={"geo": tiny_db_path})
    enc = bundle.tokenizer(["Tokyo is the capital of <mask>."], lang="en")
    cands = candidates_from_inputs(enc, ["kb", "geo"])
    assert isinstance(cands, dict) and set(cands) == {"kb", "geo"}
    geo = cands["geo"]
    found = {int(r) for r, ok in zip(geo.entity_ids[0].flatten(), geo.candidate_mask[0].flatten()) if ok}
    rows = second.key_to_row
    assert rows["Q1490"] in found and second.mask_row in found and found <= set(rows.values()) | {second.mask_row}
    with pytest.raises(ValueError, match=r"knowledge base\(s\) \['geo'\]"):
        candidates_from_inputs(enc)
    both = mluke.probe(TEMPLATE, model=folder, kbs={"geo": tiny_db_path}, **asked)  # type: ignore[arg-type]
    first_only = mluke.probe(TEMPLATE, model=knowbert_dir, **asked)  # type: ignore[arg-type]
    assert scores(both) != scores(first_only)  # the geo layer ran on its candidates
