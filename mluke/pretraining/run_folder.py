"""The run folder of a training run, shared by our trainers (pretraining, KnowBert): finished checkpoints
``checkpoints/step-N`` (written under a temporary name and renamed), the pruning of old ones, the removal of
what killed runs left half written, torch's random-number states, the cutting of the step log on resume
and the note an interrupted run prints (fine-tuning's too)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from kb.errors import MlukeError
from kb.files import atomic_text, remove, temporary_name


def finished_checkpoints(out: Path) -> list[Path]:
    """The finished checkpoints ``checkpoints/step-N`` of run folder ``out``, oldest first (a half-written
    one, under a temporary name, is not one)."""
    done = [p for p in (out / "checkpoints").glob("step-*") if p.name[5:].isdigit()]
    return sorted(done, key=lambda p: int(p.name[5:]))


def prune_checkpoints(out: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints of ``out``, each renamed away first: never a
    half-deleted checkpoint under its name."""
    for old in finished_checkpoints(out)[:-keep]:
        trash = temporary_name(old, "old")
        old.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)


def remove_leftovers(out: Path) -> None:
    """Remove what runs killed while writing left in run folder ``out``: half-written (or half-deleted)
    checkpoints and exported models, under temporary names (one run per folder at a time)."""
    for path in [*(out / "checkpoints").glob("step-*.*-*"), *out.glob("model.*-*")]:
        tag, _, pid = path.name.rpartition(".")[2].rpartition("-")
        if tag in ("partial", "old") and pid.isdigit():
            remove(path)


def rng_states() -> dict[str, Any]:
    """torch's random-number states (CPU and every GPU), for a checkpoint."""
    return {
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng_states(state: dict[str, Any]) -> None:
    """Set torch's random-number states back to those :func:`rng_states` saved."""
    torch.set_rng_state(state["torch_rng"])
    if torch.cuda.is_available() and state["cuda_rng"]:
        torch.cuda.set_rng_state_all(state["cuda_rng"])


def cut_log(path: Path, step: int) -> None:
    """Keep the log records of the steps up to ``step`` (a run that starts there does the later ones again)."""
    if not path.is_file():
        return
    keep = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            if not line.endswith("\n") or json.loads(line)["step"] > step:  # (a line cut short by a kill)
                break
        except (ValueError, KeyError, TypeError):
            break
        keep.append(line)
    with atomic_text(path, overwrite=True) as f:
        f.write("".join(keep))


def interrupted_note(step: int, total: int, *, kept: int, folder: Path, saved: str, resume: str) -> str:
    """What an interrupted training run (Ctrl-C) keeps and how to continue it, for the message our trainers
    (pretraining, KnowBert, fine-tuning) print before they end: ``kept`` is the step of the checkpoint left in
    ``folder`` (0: none yet), ``saved`` says when checkpoints are written, ``resume`` how a rerun continues."""
    done = f"Interrupted at step {step:,} of {total:,}"
    if not kept:
        return f"{done}, before the first checkpoint ({saved}); the next run starts from the beginning."
    return f"{done}; the checkpoint of step {kept:,} is kept in {folder} and {resume}."


def require_tensorboard() -> None:
    """``run.tensorboard = true`` writes TensorBoard logs through ``torch.utils.tensorboard``, which needs the
    optional ``tensorboard`` package: say so before training starts rather than at the first log step."""
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        raise MlukeError(
            "run.tensorboard = true needs the 'tensorboard' package: pip install 'mluke[tensorboard]' "
            "(or set run.tensorboard = false; the log is in log.jsonl either way)"
        )
