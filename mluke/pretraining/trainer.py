"""The mLUKE pretraining loop: MLM + MEP, two stages, gradient accumulation, DDP, exact resume.

Run it with ``pretrain(config)`` (or ``mluke pretrain --config run.toml``); for
several processes or GPUs start the same command under ``torchrun``: ranks
read ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, use NCCL on GPUs (process
``LOCAL_RANK`` of a node drives GPU ``LOCAL_RANK``) and gloo on CPUs. Every
collective gets tensors on the model's device (NCCL takes no CPU tensors).
Mixed precision on GPUs: bf16 autocast (``run.bf16``), or fp16 autocast with a
gradient scaler (``run.fp16``).

Exactness: every optimizer step consumes one global batch of
``optim.batch_size`` sequences drawn by :class:`LanguageSampler`; rank r takes
its contiguous share, split into micro-batches; each example's masks come
from its own generator seeded by (seed, step, example index). Losses are sums
divided by the global numbers of masked words and entities, so the gradient is
the same whatever the number of processes or accumulation steps. Checkpoints
hold the model, optimizer, scheduler, sampler position and torch RNG states;
resuming gives the same parameters as never having stopped.

Interruptions (``kill -9`` included): a checkpoint is written under a temporary
name and renamed when complete, and an old one is renamed away before it is
deleted, so ``checkpoints/step-N`` is always complete; training drops the log
records of the steps after the one it starts from (they are done again) and
removes what killed runs left half written.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.distributed as dist

from kb.errors import MlukeError
from kb.files import atomic_path
from mluke.models.masked_lm import MlukeForMaskedLM
from mluke.pretraining.batching import Vocabulary, collate, mask_example
from mluke.pretraining.config import TrainConfig
from mluke.pretraining.corpus_reader import Corpus
from mluke.pretraining.init import init_from_xlmr
from mluke.pretraining.run_folder import (
    cut_log,
    finished_checkpoints,
    interrupted_note,
    prune_checkpoints,
    remove_leftovers,
    require_tensorboard,
    restore_rng_states,
    rng_states,
)
from mluke.pretraining.sampler import LanguageSampler
from mluke.pretraining.schedule import dist_info, lr_factor, make_optimizer, stage_at

STATE_FILE = "trainer_state.json"


class Trainer:
    """One pretraining run in ``config.run.output`` (see module docs)."""

    def __init__(self, config: TrainConfig, *, model: MlukeForMaskedLM | None = None, progress: bool = True) -> None:
        self.config = config
        self.rank, self.world, self.device = dist_info(config.run.device)
        #: a process group runs (torchrun, even with one process): DDP and the collectives are on
        self.distributed = dist.is_initialized()
        self.out = Path(config.run.output)
        self.progress = progress and self.rank == 0
        self.corpus = Corpus(config.data.corpus)
        self.tokenizer = self.corpus.tokenizer()
        self.vocab = Vocabulary.from_tokenizer(self.tokenizer)
        sizes = self.corpus.sizes()
        if config.data.languages:
            sizes = {l: n for l, n in sizes.items() if l in config.data.languages}
        self.sampler = LanguageSampler(sizes, config.data.alpha, config.run.seed)
        o = config.optim
        per_rank = o.batch_size // self.world
        if o.batch_size % self.world or per_rank % o.micro_batch_size:
            raise MlukeError(
                f"batch_size {o.batch_size} must split into {self.world} process(es) x micro-batches of "
                f"{o.micro_batch_size}"
            )
        self.accumulation = per_rank // o.micro_batch_size
        self.model = model if model is not None else self._new_model()
        self.model.to(self.device)  # type: ignore[arg-type]  # transformers types .to as @wraps(nn.Module.to)
        self.step = 0
        self.stage_index = -1
        self.optimizer: torch.optim.AdamW | None = None
        self.scheduler: torch.optim.lr_scheduler.LambdaLR | None = None
        self.ddp: torch.nn.Module = _LossModule(self.model)
        self._tb: Any = None  # a tensorboard SummaryWriter when run.tensorboard
        if config.run.tensorboard and self.rank == 0:
            require_tensorboard()
        fp16 = config.run.fp16 and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=fp16)
        self.autocast_dtype = torch.float16 if fp16 else torch.bfloat16
        self.autocast = fp16 or (self.device.type == "cuda" and config.run.bf16 != "off")

    # -- construction and checkpoints -----------------------------------------------------
    def _new_model(self) -> MlukeForMaskedLM:
        m = self.config.model
        return init_from_xlmr(
            m.xlmr,
            entity_vocab_size=self.corpus.meta["entity_vocab_size"],
            entity_emb_size=m.entity_emb_size,
            use_entity_aware_attention=m.use_entity_aware_attention,
            dropout=self.config.optim.dropout,
            seed=self.config.run.seed,
        )

    def _enter_stage(self, index: int, step_in_stage: int) -> None:
        stage = self.config.stages[index]
        self.stage_index = index
        self.optimizer = make_optimizer(self.model, self.config, stage)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: lr_factor(stage, s))
        if step_in_stage:
            self.scheduler.last_epoch = step_in_stage - 1
            self.scheduler.step()
        self.ddp = _LossModule(self.model)
        if self.distributed:
            from torch.nn.parallel import DistributedDataParallel

            self.ddp = DistributedDataParallel(
                self.ddp, device_ids=[self.device.index] if self.device.type == "cuda" else None
            )

    def _optimizer(self) -> torch.optim.AdamW:
        """The current stage's optimizer (a stage is entered before any step)."""
        if self.optimizer is None:
            raise MlukeError("no training stage entered yet")
        return self.optimizer

    def _scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        """The current stage's learning-rate schedule."""
        if self.scheduler is None:
            raise MlukeError("no training stage entered yet")
        return self.scheduler

    def checkpoints(self) -> list[Path]:
        """Finished checkpoints, oldest first (a half-written one, under a temporary name, is not one)."""
        return finished_checkpoints(self.out)

    def save_checkpoint(self) -> Path | None:
        """Write ``checkpoints/step-N`` atomically (rank 0); keep the newest ``keep_checkpoints``."""
        if self.rank != 0:
            return None
        from safetensors.torch import save_file

        final = self.out / "checkpoints" / f"step-{self.step:08d}"
        with atomic_path(final, overwrite=True) as tmp:
            tmp.mkdir()
            state = {k: v.detach().contiguous().cpu().clone() for k, v in self.model.state_dict().items()}
            save_file(state, str(tmp / "model.safetensors"))
            torch.save(
                {
                    "optimizer": self._optimizer().state_dict(),
                    "scheduler": self._scheduler().state_dict(),
                    "scaler": self.scaler.state_dict(),
                    **rng_states(),
                },
                tmp / "optimizer.pt",
            )
            (tmp / STATE_FILE).write_text(
                json.dumps(
                    {
                        "step": self.step,
                        "stage": self.stage_index,
                        "sampler": self.sampler.state_dict(),
                        "config": self.config.to_dict(),
                        "world_size": self.world,
                        "backend": dist.get_backend() if self.distributed else None,
                    },
                    indent=1,
                )
            )
        prune_checkpoints(self.out, self.config.run.keep_checkpoints)
        return final

    def resume(self) -> bool:
        """Continue from the newest checkpoint in the run folder, if there is one."""
        ckpts = self.checkpoints()
        if not ckpts:
            return False
        from safetensors.torch import load_file

        last = ckpts[-1]
        state = json.loads((last / STATE_FILE).read_text())
        weights = load_file(str(last / "model.safetensors"))
        missing, unexpected = self.model.load_state_dict(weights, strict=False)
        tied = {"lm_head.decoder.weight", "entity_predictions.decoder.weight"}
        if set(missing) - tied or unexpected:
            raise MlukeError(
                f"{last}: checkpoint does not match the model (missing {missing}, unexpected {unexpected})"
            )
        self.step = int(state["step"])
        self.sampler.load_state_dict(state["sampler"])
        index, _, _in_stage = stage_at(self.config.stages, self.step)
        self._enter_stage(index, 0)
        extra = torch.load(
            last / "optimizer.pt", weights_only=True, map_location="cpu"
        )  # any device, any process count
        if state["stage"] == index:
            self._optimizer().load_state_dict(extra["optimizer"])
            self._scheduler().load_state_dict(extra["scheduler"])
        if extra.get("scaler"):
            self.scaler.load_state_dict(extra["scaler"])
        restore_rng_states(extra)
        return True

    # -- one step -----------------------------------------------------------------------------
    def _global_batch(self) -> list[list[Any]]:
        """This rank's micro-batches of masked examples for the next step."""
        picks = self.sampler.next_batch(self.config.optim.batch_size)
        per_rank = len(picks) // self.world
        mine = range(self.rank * per_rank, (self.rank + 1) * per_rank)
        examples = []
        for g in mine:
            lang, idx = picks[g]
            rng = np.random.default_rng([self.config.run.seed, self.step, g, 11])
            examples.append(mask_example(self.corpus[lang][idx], rng, self.config.masking, self.vocab))
        mb = self.config.optim.micro_batch_size
        return [examples[i : i + mb] for i in range(0, len(examples), mb)]

    def train_step(self) -> dict[str, float]:
        index, stage, in_stage = stage_at(self.config.stages, self.step)
        if index != self.stage_index:
            self._enter_stage(index, in_stage)
        t0 = time.perf_counter()
        micro = [collate(m, self.vocab, self.config.model.max_mention_length) for m in self._global_batch()]
        data_s = time.perf_counter() - t0
        counts = self._all_reduce(
            [
                sum(int((b["labels"] != -100).sum()) for b in micro),
                sum(int((b["entity_labels"] != -100).sum()) for b in micro),
            ]
        )
        n_words, n_ents = max(1.0, counts[0]), max(1.0, counts[1])
        self.ddp.train()
        sums = torch.zeros(2, dtype=torch.float64, device=self.device)
        for i, batch in enumerate(micro):
            batch = {k: v.to(self.device) for k, v in batch.items()}
            sync = i == len(micro) - 1 or not self.distributed
            ddp: Any = self.ddp  # DistributedDataParallel whenever a process group runs
            ctx = ddp.no_sync() if (self.distributed and not sync) else nullcontext()
            with ctx:
                with torch.autocast(self.device.type, dtype=self.autocast_dtype, enabled=self.autocast):
                    mlm, mep = self._losses(batch)
                    loss = (mlm / n_words + mep / n_ents) * self.world
                self.scaler.scale(loss).backward()
            sums += torch.stack([mlm.detach(), mep.detach()]).to(torch.float64)
        optimizer = self._optimizer()
        if self.config.optim.max_grad_norm > 0:
            self.scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.optim.max_grad_norm)
        lr = optimizer.param_groups[0]["lr"]
        self.scaler.step(optimizer)
        self.scaler.update()
        self._scheduler().step()
        optimizer.zero_grad(set_to_none=True)
        totals = self._all_reduce(sums)
        self.step += 1
        step_s = time.perf_counter() - t0
        tokens = sum(int(b["attention_mask"].sum()) for b in micro) * self.world
        return {
            "step": self.step,
            "stage": stage.name,
            "lr": lr,
            "mlm_loss": totals[0] / n_words,
            "mep_loss": totals[1] / n_ents,
            "loss": totals[0] / n_words + totals[1] / n_ents,
            "tokens_per_s": tokens / step_s,
            "data_wait_share": data_s / step_s,
        }

    def _all_reduce(self, values: list[float] | torch.Tensor) -> list[float]:
        """The sums over all processes of ``values``, as floats; the one place collectives run, always with a
        tensor on the model's device (NCCL refuses CPU tensors)."""
        tensor = torch.as_tensor(values, dtype=torch.float64).to(self.device)
        if self.distributed:
            dist.all_reduce(tensor)
        return [float(v) for v in tensor.tolist()]

    def _losses(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        labels, ent_labels = batch.pop("labels"), batch.pop("entity_labels")
        return cast("tuple[torch.Tensor, torch.Tensor]", self.ddp(batch, labels, ent_labels))

    # -- the loop -------------------------------------------------------------------------------
    def train(self, max_steps: int | None = None) -> Path:
        """Train until the end of the last stage (or ``max_steps`` more steps); returns the run folder."""
        from tqdm import tqdm

        total = self.config.total_steps
        stop = total if max_steps is None else min(total, self.step + max_steps)
        if self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            remove_leftovers(self.out)
            cut_log(self.out / "log.jsonl", self.step)  # records of steps this run does (again)
        log = (self.out / "log.jsonl").open("a") if self.rank == 0 else None
        if self.rank == 0:
            (self.out / "config.toml").write_text(self.config.to_toml())
            if self.config.run.tensorboard and self._tb is None:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.out / "tensorboard"))
        bar = tqdm(total=stop, initial=self.step, desc="pretrain", unit="step", disable=not self.progress)
        try:
            while self.step < stop:
                record = self.train_step()
                bar.update(1)
                bar.set_postfix(loss=f"{record['loss']:.3f}", stage=record["stage"])
                if log and (self.step % self.config.run.log_every == 0 or self.step == stop):
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                    if self._tb:
                        for k in ("loss", "mlm_loss", "mep_loss", "lr"):
                            self._tb.add_scalar(k, record[k], self.step)
                if self.step % self.config.run.save_every == 0 or self.step == stop:
                    self.save_checkpoint()
        except KeyboardInterrupt:
            self.save_checkpoint()
            raise
        finally:
            bar.close()
            if log:
                log.close()
        return self.out

    def interrupted_note(self) -> str:
        """What an interruption (Ctrl-C) keeps (:meth:`train` writes a checkpoint as it stops), and how to continue:
        :func:`pretrain` prints it."""
        kept = self.checkpoints()
        return interrupted_note(
            self.step,
            self.config.total_steps,
            kept=int(kept[-1].name[5:]) if kept else 0,
            folder=kept[-1] if kept else self.out,
            saved=f"every {self.config.run.save_every:,} steps and when stopped",
            resume="the next run with the same configuration resumes from it (--no-resume, resume=False in "
            "Python, starts over)",
        )

    def export(self, directory: str | Path | None = None, *, overwrite: bool = True) -> Path:
        """Save the model in the studio-ousia layout that :func:`mluke.load` reads (rank 0)."""
        from mluke.models.checkpoint import save

        directory = Path(directory) if directory is not None else self.out / "model"
        if self.rank == 0:
            cast(torch.nn.Module, self.model).eval()  # the same call, through nn.Module's annotated signature
            save((self.model.cpu(), self.tokenizer, self.tokenizer.entity_vocab), directory, overwrite=overwrite)
            self.model.to(self.device)  # type: ignore[arg-type]  # transformers types .to as @wraps(nn.Module.to)
        return directory


class _LossModule(torch.nn.Module):
    """Summed MLM and MEP cross-entropies with the heads applied at labelled positions only
    (the same loss as ``LukeForMaskedLM`` at a fraction of the cost); what DDP wraps."""

    def __init__(self, model: MlukeForMaskedLM) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, batch: dict[str, torch.Tensor], labels: torch.Tensor, ent_labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        words, ents = self.model.encode(**batch)
        if ents is None:
            raise MlukeError("a pretraining batch without entity inputs")
        keep, ekeep = labels != -100, ent_labels != -100
        ce = torch.nn.functional.cross_entropy
        mlm = ce(self.model.lm_head(words[keep]).float(), labels[keep], reduction="sum")
        mep = ce(self.model.entity_predictions(ents[ekeep]).float(), ent_labels[ekeep], reduction="sum")
        return mlm, mep


def pretrain(
    config: TrainConfig | str | Path, *, resume: bool = True, progress: bool = True, max_steps: int | None = None
) -> Path:
    """Pretrain (or continue) and export the final model; returns the exported folder (what ``mluke pretrain
    --config`` does). ``config``: a :class:`TrainConfig` or the path of its TOML file."""
    if not isinstance(config, TrainConfig):
        config = TrainConfig.from_toml(config)
    trainer = Trainer(config, progress=progress)
    if resume:
        trainer.resume()
    try:
        trainer.train(max_steps)
    except KeyboardInterrupt:  # (the demo's training, on the same trainer, says it in its own words)
        if trainer.rank == 0:
            print(f"\n{trainer.interrupted_note()}", file=sys.stderr, flush=True)
        raise
    if trainer.step >= config.total_steps:
        return trainer.export()
    return trainer.out
