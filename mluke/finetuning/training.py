"""Fine-tuning loop: AdamW (weight decay 0.01, none on biases and LayerNorm; torch's fused kernel where it
has one), linear warm-up over the first 6% of the steps then linear decay, dev evaluation after every
epoch, the best epoch's weights kept; seeded, deterministic on CPU, and resumable exactly.

Resuming: a work folder holds the run's settings and, every ``save_every`` steps and after every epoch,
the model, optimizer, scheduler and random-number states with the position in the data (the order of
each epoch is a permutation seeded by ``(seed, epoch)``). Re-running the same run continues from there and
ends with the same weights, bit for bit, as a run that was never interrupted. Every file of the work
folder is written under a temporary name and renamed when complete, so a run may be killed at any moment
(a work folder that holds nothing else than temporary files is that of a run killed as it started).
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from kb.errors import InputFormatError, Option, OptionError, flag, option
from kb.files import atomic_path, atomic_text
from mluke.finetuning.inputs import Row, batches, collate
from mluke.finetuning.models import TransferModel
from mluke.models.devices import model_device, to_device
from mluke.options import check_count
from mluke.pretraining.run_folder import interrupted_note


@dataclass
class FineTuneConfig:
    """Training settings; the defaults are the mLUKE paper's (batch sizes 4, 8 or 16 were searched)."""

    learning_rate: float = 2e-5
    batch_size: int = 16
    epochs: int = 5
    weight_decay: float = 0.01
    warmup: float = 0.06  #: share of the steps with a linearly rising learning rate
    dropout: float = 0.1
    seed: int = 0
    save_every: int = 200  #: steps between resumable checkpoints (there is one after every epoch too)
    max_span_pieces: int = 16  #: NER: longest span, in word pieces
    max_entities: int = 128  #: NER with entity features: span [MASK]s per pass

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> FineTuneConfig:
        """Itself, or an :class:`OptionError` (a ``ValueError``) naming the first meaningless setting: a learning
        rate that is not a finite number above 0, a negative or infinite weight decay, a warmup or dropout outside
        [0, 1), a count (batch size, epochs, ...) that is not a whole number of at least 1."""
        _check_number("learning_rate", self.learning_rate, "a finite number above 0", lambda v: 0 < v < math.inf)
        _check_number("weight_decay", self.weight_decay, "a finite number of at least 0", lambda v: 0 <= v < math.inf)
        for name in ("warmup", "dropout"):
            _check_number(name, getattr(self, name), "a number from 0 to 1 (1 excluded)", lambda v: 0 <= v < 1)
        for name in ("batch_size", "epochs", "save_every", "max_span_pieces", "max_entities"):
            check_count(name, getattr(self, name))
        return self


def _check_number(name: str, value: object, expected: str, ok: Callable[[float], bool]) -> None:
    """An :class:`OptionError` naming the setting ``name`` unless ``value`` is a number (not a bool) that ``ok``
    accepts (nan fails every comparison, so a range check refuses it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not ok(value):
        raise OptionError(f"{{{name}}}: expected {expected}", options={name: option(name, value)})


def _optimizer(model: TransferModel, config: FineTuneConfig) -> torch.optim.AdamW:
    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (plain if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    try:  # the fused kernel (CPU since torch 2.4) steps the 192M-parameter word table ~5x faster
        return torch.optim.AdamW(groups, lr=config.learning_rate, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=config.learning_rate)


def _schedule(optimizer: torch.optim.Optimizer, total: int, warmup: float) -> torch.optim.lr_scheduler.LambdaLR:
    ramp = max(1, int(total * warmup))

    def factor(step: int) -> float:
        if step < ramp:
            return (step + 1) / ramp
        return max(0.0, (total - step) / max(1, total - ramp))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class FineTuner:
    """One fine-tuning run of ``model`` on ``rows`` (see the module docs).

    Args:
        model: the model to train (in place).
        rows: the training rows.
        config: the run's settings.
        work: the run's work folder (resumable state).
        evaluate: ``evaluate(model) -> float`` scores the model on dev data after each epoch (higher is better).
        pad_id: the tokenizer's padding id.
        identity: what the run is (data, model, settings): a work folder of another run is not continued.
        restart: start over instead of continuing.
        collate_fn: turns a list of rows into tensors (QA rows need :func:`mluke.finetuning.qa.collate_qa`).

    Raises:
        OptionError: a tokenizer without a padding id, or a work folder of a run with other settings (without
            ``restart``).
    """

    def __init__(
        self,
        model: TransferModel,
        rows: Sequence[Row],
        *,
        config: FineTuneConfig,
        work: Path,
        evaluate: Callable[[TransferModel], float],
        pad_id: int | None,
        identity: dict[str, Any],
        restart: bool = False,
        collate_fn: Callable[..., dict[str, torch.Tensor]] = collate,
    ) -> None:
        self.model, self.rows, self.config = model, list(rows), config.check()
        self.collate = collate_fn
        if pad_id is None:
            raise OptionError("the tokenizer has no padding token: fine-tuning pads its batches with it")
        self.evaluate, self.pad_id, self.work = evaluate, pad_id, Path(work)
        self.steps_per_epoch = math.ceil(len(self.rows) / config.batch_size)
        self.total = self.steps_per_epoch * config.epochs
        self.optimizer = _optimizer(model, config)
        self.scheduler = _schedule(self.optimizer, self.total, config.warmup)
        self.epoch = self.step_in_epoch = 0
        self.history: list[dict[str, Any]] = []
        self.best: tuple[float, int] | None = None  # (dev score, epoch)
        self.rng_state = None
        self.resumed = False  #: continued an interrupted run (:meth:`train` says so)
        self.saved_step = 0  #: the step of the checkpoint in ``work`` (a rerun continues from it)
        self._start(identity, restart)

    def _start(self, identity: dict[str, Any], restart: bool) -> None:
        stamp = self.work / "run.json"
        text = json.dumps({"identity": identity, "config": asdict(self.config)}, sort_keys=True, ensure_ascii=False)
        killed_at_start = self.work.is_dir() and all(".partial-" in p.name for p in self.work.iterdir())
        if self.work.exists() and (restart or killed_at_start):  # (a folder of temporary files only)
            import shutil

            shutil.rmtree(self.work)
        if self.work.exists():
            if not stamp.is_file() or stamp.read_text(encoding="utf-8") != text:
                changed, options = _changes(stamp, json.loads(text))
                raise InputFormatError(
                    f"{self.work}: holds an interrupted fine-tuning run with other data or settings"
                    f"{changed}; re-run it with the same ones to continue, or pass {{restart}} to "
                    "start over",
                    options={**options, "restart": flag("restart")},
                )
            if (self.work / "state.pt").is_file():
                self._load()
                self.resumed = True
        else:
            self.work.mkdir(parents=True)
            with atomic_text(stamp) as f:
                f.write(text)

    # -- resumable state -----------------------------------------------------------------------------
    def _save(self) -> None:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": torch.get_rng_state(),
            "epoch": self.epoch,
            "step_in_epoch": self.step_in_epoch,
            "history": self.history,
            "best": self.best,
        }
        with atomic_path(self.work / "state.pt", overwrite=True) as tmp:
            torch.save(state, tmp)
        self.saved_step = self.step

    @property
    def step(self) -> int:
        """Steps done, over all epochs."""
        return self.epoch * self.steps_per_epoch + self.step_in_epoch

    def _load(self) -> None:
        state = torch.load(self.work / "state.pt", weights_only=True, map_location=model_device(self.model))
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.rng_state = state["rng"]
        self.epoch, self.step_in_epoch = state["epoch"], state["step_in_epoch"]
        self.history, self.best = state["history"], state["best"]
        self.saved_step = self.step

    def _order(self, epoch: int) -> list[int]:
        order = list(range(len(self.rows)))
        random.Random(self.config.seed * 1_000_003 + epoch).shuffle(order)
        return order

    # -- training ---------------------------------------------------------------------------------
    def train(self, *, progress: bool = True, on_step: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
        """Train to the end (or continue a saved run); returns the history (loss and dev score per epoch).

        The best epoch's weights are in ``work/best.pt`` and loaded into the model at the end.
        ``on_step(global_step)`` is called after every step (tests interrupt runs with it).
        """
        if self.resumed and self.epoch < self.config.epochs:
            done = self.epoch * self.steps_per_epoch + self.step_in_epoch
            print(
                f"Resuming the interrupted fine-tuning run in {self.work} at step {done:,} of {self.total:,} "
                f"(epoch {self.epoch + 1} of {self.config.epochs}).",
                file=sys.stderr,
                flush=True,
            )
        with torch.random.fork_rng():
            torch.manual_seed(self.config.seed)
            if self.rng_state is not None:
                torch.set_rng_state(self.rng_state)
            bar = tqdm(
                total=self.total,
                initial=self.epoch * self.steps_per_epoch + self.step_in_epoch,
                desc="fine-tune",
                unit="step",
                disable=not progress,
                mininterval=0.5,
                dynamic_ncols=True,
            )
            try:
                with bar:
                    while self.epoch < self.config.epochs:
                        self._epoch(bar, on_step)
            except KeyboardInterrupt:
                print(f"\n{self.interrupted_note()}", file=sys.stderr, flush=True)
                raise
        if (self.work / "best.pt").is_file():
            self.model.load_state_dict(
                torch.load(self.work / "best.pt", weights_only=True, map_location=model_device(self.model))
            )
        return self.history

    def interrupted_note(self) -> str:
        """What an interruption (Ctrl-C) keeps, and how to continue: printed when :meth:`train` is interrupted."""
        return interrupted_note(
            self.step,
            self.total,
            kept=self.saved_step,
            folder=self.work,
            saved=f"every {self.config.save_every:,} steps and at each epoch's end",
            resume="the next run with the same data and settings resumes from it (--restart, restart=True in "
            "Python, starts over)",
        )

    def _epoch(self, bar: Any, on_step: Callable[[int], None] | None) -> None:
        self.model.train()
        order = self._order(self.epoch)
        losses = self.history[-1]["losses"] if self.history and self.history[-1]["epoch"] == self.epoch else []
        if not losses:
            self.history.append({"epoch": self.epoch, "losses": losses})
        skip = self.step_in_epoch * self.config.batch_size
        for part in batches(self.rows, self.config.batch_size, order=order[skip:]):
            loss = self.model.loss(to_device(self.collate(part, pad_id=self.pad_id), model_device(self.model)))
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            self.step_in_epoch += 1
            bar.update(1)
            bar.set_postfix(epoch=self.epoch + 1, loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
            if self.step_in_epoch % self.config.save_every == 0 and self.step_in_epoch < self.steps_per_epoch:
                self._save()
            if on_step is not None:
                on_step(self.epoch * self.steps_per_epoch + self.step_in_epoch)
        self.model.eval()
        score = float(self.evaluate(self.model))
        record = self.history[-1]
        record.update({"loss": sum(losses) / max(1, len(losses)), "dev": score})
        del record["losses"]
        if self.best is None or score > self.best[0]:
            self.best = (score, self.epoch)
            with atomic_path(self.work / "best.pt", overwrite=True) as tmp:
                torch.save(self.model.state_dict(), tmp)
        self.epoch += 1
        self.step_in_epoch = 0
        self._save()


def _changes(stamp: Path, now: dict[str, Any]) -> tuple[str, dict[str, Option]]:
    """What differs between the interrupted run's ``run.json`` and this one: a phrase for the error
    (`` (changed: --epochs was 5, the --train file was modified)``) and the options it names."""
    try:
        before = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return " (its run.json is missing or unreadable)", {}
    parts, options = [], {}
    flat_before = {
        **before.get("identity", {}),
        **before.get("identity", {}).get("settings", {}),
        **before.get("config", {}),
    }
    flat_now = {**now["identity"], **now["identity"].get("settings", {}), **now["config"]}
    for key in [k for k in flat_now if k != "settings"] + [k for k in flat_before if k not in flat_now]:
        old, new = flat_before.get(key), flat_now.get(key)
        if old == new:
            continue
        options[key] = Option(key, "--" + key.replace("_", "-"))
        if isinstance(old, dict) and isinstance(new, dict) and old.get("path") == new.get("path"):
            parts.append(f"the {{{key}}} file {new.get('path')} was modified since")
        elif isinstance(old, dict) and "path" in old:
            parts.append(f"{{{key}}} was {old['path']}")
        elif key in ("task", "labels"):
            del options[key]
            parts.append(f"the {key} {'were' if key == 'labels' else 'was'} {old}")
        else:
            parts.append(f"{{{key}}} was {old}")
    return (f" (changed: {', '.join(parts)})" if parts else ""), options
