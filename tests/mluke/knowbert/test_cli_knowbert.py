"""``mluke knowbert train``: help a newcomer can read, a run on the demo world's documents with the tiny demo
model, a run stopped by --max-steps and continued to the same model, and bad options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from kb.errors import MlukeError
from tests.conftest import Cli
from tests.kb_builds import tree_bytes


@pytest.fixture
def train(cli: Cli, tiny_demo: Path, embedded_db_path: Path) -> Cli:
    """The command with the tiny demo model, the embedded kb and a few small steps (en and ja documents)."""
    return cli.bind(
        "knowbert",
        "train",
        model=tiny_demo,
        db=embedded_db_path,
        languages="en,ja",
        stage1_steps=2,
        stage2_steps=2,
        batch_size=2,
        save_every=1,
        device="cpu",
        no_progress=True,
    )


def test_help_names_what_a_newcomer_needs(cli: Cli) -> None:
    result = cli("knowbert", "train", "--help")
    assert result.exit_code == 0
    for flag in ("--model", "--documents", "--db", "--entities", "--stage", "--stage1-steps", "--output", "--resume"):
        assert flag in result.output
    assert "linker alone" in result.output and "demo" in result.output


def test_train_both_stages_then_stop_and_continue(train: Cli, tmp_path: Path) -> None:
    from mluke.knowbert import KnowBertModel

    result = train(output=tmp_path / "a")
    assert result.exit_code == 0, result.output
    model_dir = tmp_path / "a" / "model"
    assert result.output.strip() == f"done: {model_dir}"
    model = KnowBertModel.from_pretrained(model_dir)
    assert (model_dir / "tokenizer" / "tokenizer_config.json").is_file()
    log = [json.loads(line) for line in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in log][-1] == "joint" and len(model.entities) > 10
    stats = json.loads((tmp_path / "a" / "selection.json").read_text())
    assert stats["hyperlinks"] > 0 and stats["gold_found"] > 0
    # stopped after 3 steps, then continued: the same model, byte for byte
    first = train(output=tmp_path / "b", max_steps=3)
    assert first.exit_code == 0 and first.output.strip() == f"done: {tmp_path / 'b'}"
    assert not (tmp_path / "b" / "model").exists()
    refused = train(output=tmp_path / "b", no_resume=True)
    assert isinstance(refused.exception, MlukeError) and "--resume" in refused.exception.for_cli()
    second = train(output=tmp_path / "b")
    assert second.exit_code == 0, second.output
    assert same_files(tmp_path / "b" / "model", model_dir)


def test_ctrl_c_says_which_checkpoint_is_kept_and_exits_130(
    train: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C before the first checkpoint says the next run starts over; after one, names it and says the next run
    resumes from it; both end with exit code 130 (the shell's for Ctrl-C), no traceback."""
    from mluke.knowbert.training import KnowBertTrainer

    step = KnowBertTrainer.train_step
    stop_at: list[int] = []

    def ctrl_c(self: KnowBertTrainer) -> dict[str, Any]:
        if self.step == stop_at[-1]:
            raise KeyboardInterrupt
        return step(self)

    monkeypatch.setattr(KnowBertTrainer, "train_step", ctrl_c)
    out = tmp_path / "run"
    stop_at.append(1)
    early = train(output=out, save_every=2)
    assert early.exit_code == 130, early.output
    assert (
        "Interrupted at step 1 of 4, before the first checkpoint (every 2 steps); the next run starts from the "
        "beginning." in early.output
    )
    stop_at.append(3)
    later = train(output=out, save_every=2)
    assert later.exit_code == 130, later.output
    kept = out / "checkpoints" / "step-00000002"
    assert (
        f"Interrupted at step 3 of 4; the checkpoint of step 2 is kept in {kept} and the next run with the same "
        "options resumes from it." in later.output
    )
    assert kept.is_dir() and "Traceback" not in later.output


def same_files(a: Path, b: Path) -> bool:
    """The same files with the same bytes, but safetensors files compared by tensors and metadata (the order of
    a safetensors header's metadata varies from one write to the next)."""
    from safetensors import safe_open

    files_a, files_b = tree_bytes(a), tree_bytes(b)
    if files_a.keys() != files_b.keys():
        return False
    for name in files_a:
        if not name.endswith(".safetensors"):
            if files_a[name] != files_b[name]:
                return False
            continue
        with safe_open(str(a / name), "pt") as fa, safe_open(str(b / name), "pt") as fb:
            if fa.metadata() != fb.metadata() or sorted(fa.keys()) != sorted(fb.keys()):
                return False
            if not all(torch.equal(fa.get_tensor(k), fb.get_tensor(k)) for k in fa.keys()):  # noqa: SIM118
                return False
    return True


def test_bad_stage_is_refused(train: Cli, tmp_path: Path) -> None:
    result = train(output=tmp_path / "run", stage="3")
    assert (
        isinstance(result.exception, MlukeError)
        and result.exception.for_cli() == "--stage 3: expected one of 1, 2, both"
    )
    assert not (tmp_path / "run").exists()


def test_documents_must_be_demo_or_a_page_corpus(train: Cli, tmp_path: Path) -> None:
    result = train(output=tmp_path / "run", documents=tmp_path / "missing")
    assert isinstance(result.exception, MlukeError)
    assert result.exception.for_cli().startswith(
        f"--documents {tmp_path / 'missing'}: expected 'demo' or the page-text"
    )
