"""KnowBert training: stage 1 trains the linker alone (encoder unchanged, linking loss falls), stage 2 gives the
encoder's lower layers the smaller learning rate and mixes masked-LM and linking batches, and a run stopped
anywhere resumes to the same parameters bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kb.errors import MlukeError
from kb.mentions import MentionIndex
from mluke.knowbert import EntityTable, KnowBertConfig, KnowBertModel
from mluke.knowbert.batch import IGNORE
from mluke.knowbert.candidates import CandidateSelector, Window, collate
from mluke.knowbert.training import KnowBertTrainConfig, KnowBertTrainer
from mluke.models.tokenizer import MlukeTokenizer
from mluke.pretraining.corpus import Document
from tests.mluke.knowbert.test_candidates import kb_index, tok  # noqa: F401  (fixtures)

KEYS = ["Q17", "Q1490", "Q1748", "Q35", "Q5287"]
LAYER = KnowBertConfig(span_ffn=32, word_ffn=32, mlp_hidden=16, dropout=0.1)
DOCS = [
    Document("en", "Tokyo is the capital of Japan.", [(0, 5, "Q1490"), (24, 29, "Q17")]),
    Document("en", "Copenhagen is the capital of Denmark.", [(0, 10, "Q1748"), (29, 36, "Q35")]),
    Document("en", "Tokyo, the city in Denmark, is small.", [(0, 5, "Q1748"), (19, 26, "Q35")]),
    Document("en", "People in Japan speak Japanese.", [(10, 15, "Q17"), (22, 30, "Q5287")]),
    Document("ja", "東京都は日本の首都です。", [(0, 3, "Q1490"), (4, 6, "Q17")]),
    Document("ja", "日本では日本語を話す。", [(0, 2, "Q17"), (4, 7, "Q5287")]),
]


def new_model(checkpoint: Path) -> KnowBertModel:
    torch.manual_seed(0)
    table = EntityTable.from_vectors(torch.randn(len(KEYS), 16, generator=torch.Generator().manual_seed(1)), KEYS)
    return KnowBertModel.from_encoder(checkpoint, entities=table, config=LAYER)


@pytest.fixture
def windows(tok: MlukeTokenizer, kb_index: MentionIndex, tiny_checkpoint: Path) -> list[Window]:  # noqa: F811
    rows = new_model(tiny_checkpoint).entities.key_to_row
    return CandidateSelector(tok, kb_index, rows).documents(DOCS)


#: the settings of the test runs (a test overrides some)
DEFAULTS: dict[str, object] = {"stage1_steps": 3, "stage2_steps": 4, "batch_size": 4, "learning_rate": 1e-3}
DEFAULTS |= {"log_every": 1}


def trainer(
    checkpoint: Path,
    tokenizer: MlukeTokenizer,
    windows: list[Window],
    out: Path,
    **settings: object,
) -> KnowBertTrainer:
    config = KnowBertTrainConfig(output=str(out), device="cpu", **{**DEFAULTS, **settings})  # type: ignore[arg-type]
    return KnowBertTrainer(new_model(checkpoint), tokenizer, windows, config)


def linking_loss(model: KnowBertModel, windows: list[Window], pad_id: int) -> float:
    model.eval()
    with torch.no_grad():
        ids, mask, cands = collate(windows, pad_id)
        out = model(ids, mask, cands)
    assert out.linking_loss is not None
    return float(out.linking_loss)


def params(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_the_tiny_set_has_supervision_in_both_languages(windows: list[Window]) -> None:
    supervised = {w.lang for w in windows if any(g != IGNORE for g in (w.gold or []))}
    assert supervised == {"en", "ja"}


@pytest.mark.learned
def test_stage1_trains_the_linker_alone_and_its_loss_falls(
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    windows: list[Window],
    tmp_path: Path,
) -> None:
    t = trainer(tiny_checkpoint, tok, windows, tmp_path / "run", stage1_steps=40, stage2_steps=0, learning_rate=1e-2)
    before_loss = linking_loss(t.model, windows, tok.pad_id)
    encoder, kar = params(t.model.encoder), params(t.model.kar)
    t.train(progress=False)
    after_loss = linking_loss(t.model, windows, tok.pad_id)
    assert after_loss < 0.5 * before_loss, (before_loss, after_loss)
    assert all(torch.equal(v, t.model.encoder.state_dict()[k]) for k, v in encoder.items())  # encoder unchanged
    assert any(not torch.equal(v, t.model.kar.state_dict()[k]) for k, v in kar.items())
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in log} == {"linking"} and "mlm_loss" not in log[0]
    exported = t.export()
    again = KnowBertModel.from_pretrained(exported)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in t.model.state_dict().items())
    assert MlukeTokenizer.from_pretrained(exported / "tokenizer").encode_words(["Tokyo"]) == tok.encode_words(["Tokyo"])


def test_stage2_rates_lower_layers_and_mixes_batches(
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    windows: list[Window],
    tmp_path: Path,
) -> None:
    t = trainer(tiny_checkpoint, tok, windows, tmp_path / "run", stage1_steps=1, stage2_steps=8, lm_share=0.5)
    groups = t.parameter_groups(1)
    rate = {g["part"]: g["lr"] for g in groups}
    assert rate == {"kar": 1e-3, "below": 0.25e-3, "above": 0.5e-3}
    ids: dict[str, set[int]] = {"kar": set(), "below": set(), "above": set()}
    for g in groups:
        ids[g["part"]] |= {id(p) for p in g["params"]}
    encoder = t.model.encoder
    assert id(encoder.luke.embeddings.word_embeddings.weight) in ids["below"]
    assert all(id(p) in ids["below"] for p in encoder.luke.encoder.layer[0].parameters())  # KAR after layer 1
    assert all(id(p) in ids["above"] for p in encoder.luke.encoder.layer[1].parameters())
    assert not any(id(p) in ids["kar"] for p in encoder.parameters())
    assert {g["part"] for g in t.parameter_groups(0)} == {"kar"}
    before = params(encoder.luke.encoder.layer[0])
    t.train(progress=False)
    assert t.optimizer is not None
    now = {g["part"]: g["lr"] for g in t.optimizer.param_groups}
    assert now["below"] == pytest.approx(0.25 * now["kar"]) and now["above"] == pytest.approx(0.5 * now["kar"])
    assert any(not torch.equal(v, encoder.luke.encoder.layer[0].state_dict()[k]) for k, v in before.items())
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    kinds = [r["kind"] for r in log if r["stage"] == "joint"]
    assert set(kinds) == {"lm", "linking"}
    assert all("mlm_loss" in r for r in log if r["kind"] == "lm")


def test_resume_after_a_kill_is_bit_identical(
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    windows: list[Window],
    tmp_path: Path,
) -> None:
    settings = {"stage1_steps": 4, "stage2_steps": 4, "save_every": 2, "lm_share": 0.5}
    straight = trainer(tiny_checkpoint, tok, windows, tmp_path / "a", **settings)
    straight.train(progress=False)

    class Killed(Exception):
        pass

    def kill_at(step: int):
        def on_step(done: int) -> None:
            if done == step:
                raise Killed  # no checkpoint at the kill: the run restarts from the last one written

        return on_step

    out = tmp_path / "b"
    for stop in (5, 7):  # resumes at the stage boundary (step 4), then inside stage 2 (step 6)
        with pytest.raises(Killed):
            t = trainer(tiny_checkpoint, tok, windows, out, **settings)
            t.resume()
            t.train(progress=False, on_step=kill_at(stop))
    (out / "checkpoints" / "step-00000008.partial-999").mkdir()  # a checkpoint half written by a killed run
    resumed = trainer(tiny_checkpoint, tok, windows, out, **settings)
    assert resumed.resume() and resumed.step == 6
    resumed.train(progress=False)
    a, b = params(straight.model), params(resumed.model)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-00000006", "step-00000008"]

    def log(folder: Path) -> list[dict]:
        rows = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
        return [{k: v for k, v in r.items() if k != "step_s"} for r in rows]

    assert log(out) == log(tmp_path / "a") and len(log(out)) == 8


def test_resume_refuses_other_settings(
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    windows: list[Window],
    tmp_path: Path,
) -> None:
    trainer(tiny_checkpoint, tok, windows, tmp_path / "run", stage1_steps=1, stage2_steps=0).train(progress=False)
    other = trainer(tiny_checkpoint, tok, windows, tmp_path / "run", stage1_steps=1, stage2_steps=0, seed=3)
    with pytest.raises(MlukeError, match="seed"):
        other.resume()


def test_bad_settings_and_no_supervision(tiny_checkpoint: Path, tok: MlukeTokenizer, tmp_path: Path) -> None:  # noqa: F811
    with pytest.raises(MlukeError, match="nothing to train"):
        KnowBertTrainConfig(output=str(tmp_path), stage1_steps=0, stage2_steps=0)
    unsupervised = [Window("en", [0, 5, 2], [(0, 0)] * 3, [(1, 1)], [[2]], [[0.0]], gold=[IGNORE])]
    with pytest.raises(MlukeError, match="no training window has a supervised span"):
        trainer(tiny_checkpoint, tok, unsupervised, tmp_path / "run")
