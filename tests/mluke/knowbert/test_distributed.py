"""KnowBert training under ``torchrun`` (gloo on the CPU, two processes): the same parameters as one process,
a one-process run continued by two processes, a batch that does not split, and (with two GPUs) NCCL.

Tolerance: two processes compute the same global gradient, but each rank pads its half of the batch to its
own longest window and gloo sums the two halves' gradients in another order than one process sums the
whole batch, so float32 results differ in the last bits; after a few AdamW steps (whose update divides by
sqrt of the second moment, which magnifies tiny differences of tiny gradients) that stays below 1e-5, as in
our pretraining's test. A real fault (a rank's share counted twice, a loss weighted per rank instead of per
span, a gradient left unaveraged) moves parameters by about the learning rate, 1e-3: a hundred times more.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kb.errors import MlukeError
from mluke.knowbert import EntityTable, KnowBertConfig, KnowBertModel
from mluke.knowbert.candidates import Window
from mluke.knowbert.run import train_knowbert
from mluke.models.tokenizer import MlukeTokenizer
from tests.jobs import torchrun
from tests.mluke.knowbert.test_candidates import kb_index, tok  # noqa: F401  (fixtures)
from tests.mluke.knowbert.test_training import trainer, windows  # noqa: F401  (windows: a fixture)
from tests.ranks import first_collective_device, step_collectives

#: stage 1: steps 0-1; stage 2: steps 2-4, with seed 8 a masked-LM batch then two linking batches (their
#: kinds are drawn per step), so both of DDP's cases of parameters without a gradient are crossed
SETTINGS: dict[str, object] = {"stage1_steps": 2, "stage2_steps": 3, "batch_size": 4, "seed": 8}
SETTINGS |= {"learning_rate": 1e-3, "save_every": 1, "log_every": 1}
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def start(tiny_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new knowledge layer on the tiny demo model, saved as a KnowBert folder, without dropout anywhere
    (dropout masks are drawn per process: with them, runs with different numbers of processes differ)."""
    from mluke.opening import open_model

    bundle = open_model(tiny_demo, word_models=True)
    encoder_config = bundle.model.config
    encoder_config.hidden_dropout_prob = encoder_config.attention_probs_dropout_prob = 0.0
    torch.manual_seed(0)
    layer = KnowBertConfig(span_ffn=32, word_ffn=32, mlp_hidden=16, dropout=0.0)
    model = KnowBertModel.from_encoder(bundle, config=layer)
    out = tmp_path_factory.mktemp("knowbert") / "start"
    model.save_pretrained(out)
    bundle.tokenizer.save_pretrained(out / "tokenizer")
    return out


def _args(start: Path, db: Path, out: Path, **settings: object) -> list[str]:
    args = ["knowbert", "train", "-o", str(out), "--model", str(start), "--db", str(db), "--languages", "en,ja"]
    for key, value in {**SETTINGS, **settings}.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return [*args, "--device", "cpu", "--no-progress"]


def _one_process(start: Path, db: Path, out: Path, **settings: object) -> Path:
    return train_knowbert(
        out, model=start, db=db, languages=["en", "ja"], device="cpu", progress=False, **{**SETTINGS, **settings}
    )


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _furthest(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def _log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def straight(start: Path, embedded_db_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-process run the others are compared with."""
    out = tmp_path_factory.mktemp("one") / "run"
    _one_process(start, embedded_db_path, out)
    return out


def test_two_processes_with_torchrun_equal_one_process(
    start: Path, straight: Path, embedded_db_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "two"
    result = torchrun(_args(start, embedded_db_path, out))
    assert result.stdout.count(f"done: {out / 'model'}") == 2  # every rank returns once the model is written
    two, one = _weights(out / "model"), _weights(straight / "model")
    moved = _furthest(one, _weights(start))
    assert moved > 100 * TOLERANCE  # training did move the parameters, by far more than the tolerance
    assert _furthest(one, two) < TOLERANCE
    log1, log2 = _log(straight), _log(out)
    assert [r["kind"] for r in log2] == [r["kind"] for r in log1] == ["linking", "linking", "lm", "linking", "linking"]
    for r1, r2 in zip(log1, log2):  # the logged losses are the global batch's, not rank 0's half
        assert r2["loss"] == pytest.approx(r1["loss"], rel=1e-5)
        assert r2.keys() == r1.keys()
    state = json.loads(sorted((out / "checkpoints").glob("step-*"))[-1].joinpath("trainer_state.json").read_text())
    assert state["world_size"] == 2 and state["step"] == 5
    assert (out / "selection.json").read_text() == (straight / "selection.json").read_text()


def test_a_one_process_run_continued_by_two_processes(
    start: Path, straight: Path, embedded_db_path: Path, tmp_path: Path
) -> None:
    """Three steps in one process (into stage 2), then two processes under torchrun finish the run: the
    parameters of the one-process run (the global batch and its masks do not depend on the process count)."""
    out = tmp_path / "resumed"
    assert _one_process(start, embedded_db_path, out, max_steps=3) == out
    torchrun(_args(start, embedded_db_path, out))
    assert _furthest(_weights(straight / "model"), _weights(out / "model")) < TOLERANCE
    assert [r["step"] for r in _log(out)] == [1, 2, 3, 4, 5]


def test_a_batch_that_does_not_split_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import mluke.pretraining.schedule as schedule

    monkeypatch.setattr(schedule, "dist_info", lambda device="auto": (0, 2, torch.device("cpu")))  # 2 processes
    with pytest.raises(MlukeError, match="batch_size 3 must split evenly into the 2 processes"):
        train_knowbert(tmp_path / "run", batch_size=3, stage1_steps=1, stage2_steps=0, progress=False)
    assert not (tmp_path / "run").exists()  # refused before anything is read or written


def test_every_collective_gets_a_tensor_on_the_model_device(
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    windows: list[Window],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NCCL refuses CPU tensors: a collective built without the model's device would crash on GPUs. The
    "meta" device stands in for a GPU here: a tensor left on the CPU is caught."""
    t = trainer(tiny_checkpoint, tok, windows, tmp_path / "run")
    # the first collective: the global numbers of supervised spans and masked pieces
    assert first_collective_device(t, monkeypatch) == [torch.device("meta")]
    calls, record = step_collectives(t, monkeypatch)  # rank 0 of 2: its 2 windows of the 4
    assert calls == [torch.device("cpu")] * 2  # one step: the counts, then the loss sums; nothing else
    assert record["step"] == 1 and record["linking_loss"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason="two-process NCCL needs two GPUs (NCCL refuses two ranks on one GPU)"
)
def test_two_gpus_with_torchrun_equal_one_process(start: Path, embedded_db_path: Path, tmp_path: Path) -> None:
    one = train_knowbert(
        tmp_path / "one", model=start, db=embedded_db_path, languages=["en", "ja"], device="cuda", progress=False,
        **SETTINGS,
    )  # fmt: skip
    args = _args(start, embedded_db_path, tmp_path / "two")
    torchrun([*args[:-3], "--device", "auto", "--no-progress"])  # NCCL: each rank takes GPU LOCAL_RANK
    assert _furthest(_weights(one), _weights(tmp_path / "two" / "model")) < 1e-4


def test_two_knowledge_bases_under_torchrun_equal_one_process(
    tiny_demo: Path, embedded_db_path: Path, tmp_path: Path
) -> None:
    """Each knowledge base's linking loss is a mean over its own supervised spans: with two, every rank weights
    each by its share of that knowledge base's spans in the global batch (one weight for the summed loss would
    not give the one-process gradient; the second table holds half the entities, so the two counts differ)."""
    from mluke.opening import open_model

    bundle = open_model(tiny_demo, word_models=True)
    bundle.model.config.hidden_dropout_prob = bundle.model.config.attention_probs_dropout_prob = 0.0
    torch.manual_seed(0)
    layer = KnowBertConfig(span_ffn=32, word_ffn=32, mlp_hidden=16, dropout=0.0)
    full = EntityTable.from_checkpoint(bundle)
    half = [k for i, k in enumerate(full.keys) if k in ("[PAD]", "[MASK]") or i % 2]  # half: other gold spans
    EntityTable(full.vectors[[full.key_to_row[k] for k in half]], half).save(tmp_path / "geo.safetensors")
    tables = {"wiki": None, "geo": str(tmp_path / "geo.safetensors")}
    model = KnowBertModel.from_encoder(bundle, tables, {"wiki": layer, "geo": layer})
    start = tmp_path / "start"
    model.save_pretrained(start)
    bundle.tokenizer.save_pretrained(start / "tokenizer")
    kbs = [f"wiki={embedded_db_path}", f"geo={embedded_db_path}"]
    one = train_knowbert(
        tmp_path / "one", model=start, knowledge_bases=kbs, languages=["en", "ja"], device="cpu", progress=False,
        **SETTINGS,
    )  # fmt: skip
    args = _args(start, embedded_db_path, tmp_path / "two")
    at = args.index("--db")
    torchrun([*args[:at], "--kb", kbs[0], "--kb", kbs[1], *args[at + 2 :]])
    assert _furthest(_weights(one), _weights(start)) > 100 * TOLERANCE
    assert _furthest(_weights(one), _weights(tmp_path / "two" / "model")) < TOLERANCE
    log1, log2 = _log(tmp_path / "one"), _log(tmp_path / "two")
    for r1, r2 in zip(log1, log2, strict=True):  # the global batch's per-knowledge-base losses
        assert r1.keys() == r2.keys() and {"linking_loss_wiki", "linking_loss_geo"} <= r1.keys()
        for key in ("loss", "linking_loss_wiki", "linking_loss_geo"):
            assert r2[key] == pytest.approx(r1[key], rel=1e-5)
