"""``mluke knowbert train`` killed with SIGKILL (after a checkpoint, and while one is being written) and started
again ends with the model of a run never interrupted, and never leaves a half-written checkpoint under its name."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.jobs import start_forked, wait_for
from tests.mluke.knowbert.test_cli_knowbert import same_files


def _args(model: Path, db: Path, out: Path) -> list[str]:
    return [
        "knowbert", "train", "-o", str(out), "--model", str(model), "--db", str(db), "--languages", "en,ja",
        "--stage1-steps", "3", "--stage2-steps", "3", "--batch-size", "2", "--save-every", "1",
        "--device", "cpu", "--no-progress",
    ]  # fmt: skip


def _finished(out: Path) -> list[Path]:
    return sorted(p for p in (out / "checkpoints").glob("step-*") if p.name[5:].isdigit())


def test_killed_runs_resume_to_the_same_model(tmp_path: Path, tiny_demo: Path, embedded_db_path: Path) -> None:
    logs = iter(tmp_path / f"run-{n}.log" for n in range(10))
    ref, out = tmp_path / "ref", tmp_path / "chain"
    start_forked(_args(tiny_demo, embedded_db_path, ref), log=next(logs)).check()

    kills = []
    for moment in ("checkpoint", "partial"):
        job = start_forked(_args(tiny_demo, embedded_db_path, out), log=next(logs))
        done_before = len(_finished(out))
        if moment == "checkpoint":  # right after a new checkpoint is complete
            seen = wait_for(lambda: len(_finished(out)) > done_before, job)
        else:  # while a checkpoint is being written under its temporary name
            seen = wait_for(lambda: any((out / "checkpoints").glob("step-*.partial-*")), job)
        kills.append((moment, seen and job.kill()))
        for ckpt in _finished(out):  # what carries a final name is complete
            assert torch.load(ckpt / "state.pt", weights_only=True)["model"]
            assert (ckpt / "trainer_state.json").is_file()
    start_forked(_args(tiny_demo, embedded_db_path, out), log=next(logs)).check()
    print(kills)
    assert any(killed for _, killed in kills), kills  # at least one kill interrupted the run
    assert not list((out / "checkpoints").glob("*.partial-*"))
    assert same_files(out / "model", ref / "model")
    assert [p.name for p in _finished(out)] == [p.name for p in _finished(ref)]
