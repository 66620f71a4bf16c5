"""Training a knowledge layer (KnowBert, Peters et al., 2019, Algorithm 1 and §3.4) on a corpus's hyperlinks.

- **Stage 1, the linker**: the encoder frozen (and run in eval mode, a fixed feature extractor), the
  knowledge layer trained on the linking loss alone, supervised by the documents' hyperlinks in every
  language (KnowBert used English AIDA; Wikipedia's anchors give supervision in all 24 languages).
- **Stage 2, everything**: W2 re-initialised as the pseudo-inverse of the trained W1 (Algorithm 1), then all
  parameters but the entity vectors trained. Each step draws a whole batch of one kind (KnowBert's homogeneous
  batches, appendix A.1: 4:1): with probability ``lm_share`` (0.8) a masked-LM batch (:mod:`mluke.knowbert.masking`;
  loss = masked LM + the linking loss of the spans left unmasked: our corpus's hyperlinks come with every
  window), else a linking batch (unmasked windows with supervised spans; linking loss). Learning rates
  (appendix A.1): the knowledge layer ``alpha``, the encoder below it ``0.25 alpha``, above it (and the
  masked-LM head) ``0.5 alpha``.

Several knowledge bases (KnowBert-W+W): each window carries every knowledge base's spans (the first's in its own
fields, the others' in ``Window.others``), stage 1 trains every linker, the linking loss is the sum of the knowledge
bases' losses (each logged as ``linking_loss_NAME``), and masking masks the whole candidate spans of all of them.
The encoder "below" is what lies under the lowest knowledge layer; layers between two knowledge layers are "above".

Both stages: AdamW (weight decay on all but biases and norms), linear warm-up over the first ``warmup_share``
of the stage then linear decay, reset per stage (:func:`mluke.pretraining.schedule.lr_factor`); languages
drawn with p ~ n^0.7 (:class:`mluke.pretraining.sampler.LanguageSampler`). Windows are built from the documents
once, in memory, before training (:class:`mluke.knowbert.candidates.CandidateSelector`).

Exactness as in our pretraining: masks and batch kinds come from generators seeded by (seed, step, ...);
checkpoints ``checkpoints/step-N`` hold the weights, optimizer, schedule, sampler positions and torch's RNG
states, written under a temporary name and renamed (:mod:`mluke.pretraining.run_folder`); a run started
again in its folder resumes from the newest one and ends with the same parameters, bit for bit, as a run
never stopped.

Several processes (``torchrun``), as our pretraining (:mod:`mluke.pretraining.trainer`): each process reads
``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` (:func:`mluke.pretraining.schedule.dist_info`: gloo on CPUs, NCCL on
GPUs, ``device="auto"`` or ``"cuda"`` is GPU ``LOCAL_RANK``). Every rank draws the same global batch of
``batch_size`` windows (the same kind, the same masks: both seeded by the step and the window's place in the
batch) and computes contiguous share ``rank``; DDP averages the gradients (``find_unused_parameters``: a linking
batch leaves everything above the knowledge layer, and stage 1 the layer's output half, without a gradient).
Each rank's mean losses are weighted by its share of the global numbers of supervised spans and masked pieces,
so the update is the one-process update of the whole batch; logged losses are global. Rank 0 alone writes
checkpoints, the log and the exported model; a run resumes with any number of processes. With dropout, ranks
draw their masks from their own generator: runs with different numbers of processes are then equivalent,
not equal. One process: the model runs on ``device`` (:mod:`mluke.models.devices`).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist

from kb.errors import MlukeError
from kb.files import atomic_path
from mluke.knowbert.batch import IGNORE
from mluke.knowbert.masking import MaskVocabulary, mask_window
from mluke.knowbert.parallel import wrap_losses
from mluke.knowbert.train_config import KnowBertTrainConfig
from mluke.knowbert.windows import KbSpans, Window, collate_knowledge, mlm_labels
from mluke.models.devices import resolve_device
from mluke.pretraining import run_folder
from mluke.pretraining.sampler import LanguageSampler
from mluke.pretraining.schedule import dist_info, lr_factor, stage_at

if TYPE_CHECKING:
    from mluke.knowbert.model import KnowBertModel
    from mluke.models.tokenizer import MlukeTokenizer

STATE_FILE = "trainer_state.json"
WEIGHTS_FILE = "state.pt"
#: Learning-rate multipliers of stage 2 (appendix A.1): the knowledge layer, the encoder below it, above it.
LAYER_RATES = {"kar": 1.0, "below": 0.25, "above": 0.5}


def _by_language(windows: Sequence[Window]) -> dict[str, list[Window]]:
    out: dict[str, list[Window]] = {}
    for w in windows:
        out.setdefault(w.lang, []).append(w)
    return out


def _supervised(w: Window) -> bool:
    """Whether a window has a supervised span in any knowledge base."""
    parts: list[Window | KbSpans] = [w, *w.others.values()]
    return any(part.gold is not None and any(g != IGNORE for g in part.gold) for part in parts)


class KnowBertTrainer:
    """One KnowBert training run in ``config.output`` (module docs).

    Args:
        model: the model to train (a new knowledge layer on an encoder, or a stage-1 model).
        tokenizer: its tokenizer (masking reads the word vocabulary; padding its ``<pad>``).
        windows: the training windows with gold (:meth:`CandidateSelector.documents`).
        config: the run's settings.
    """

    def __init__(
        self, model: KnowBertModel, tokenizer: MlukeTokenizer, windows: Sequence[Window], config: KnowBertTrainConfig
    ) -> None:
        self.config = config
        self.out = Path(config.output)
        named = resolve_device(config.device) or torch.device("cpu")  # checks the name
        self.rank, self.world, local = dist_info(config.device)  # starts the process group under torchrun
        self.device = local if self.world > 1 else named  # one process: "cuda:1" is GPU 1
        config.per_process(self.world)  # batch_size splits over the processes
        self.model = model.to(self.device)
        self.ddp = wrap_losses(self.model, 1, self.device)  # DDP over it from the first stage on
        self.tokenizer = tokenizer
        self.vocab = MaskVocabulary.from_tokenizer(tokenizer)
        self.mask_row = model.entities.mask_row
        #: the [MASK] rows of the other knowledge bases' tables (their spans are ``Window.others``)
        self.other_mask_rows = {name: model.tables[name].mask_row for name in model.names[1:]}
        unknown = sorted({n for w in windows for n in w.others} - set(model.names[1:]))
        if unknown:
            raise MlukeError(
                f"the training windows carry spans of knowledge base(s) {unknown}, which the model does not have "
                f"(it has {', '.join(model.names)}; a window's own spans are the first's)"
            )
        self.pools = {"lm": _by_language(windows), "linking": _by_language([w for w in windows if _supervised(w)])}
        if not self.pools["linking"]:
            raise MlukeError(
                "no training window has a supervised span: the documents need hyperlinks whose entities are "
                "among the kb's candidates for the anchor text (and in the entity table)"
            )
        sizes = {kind: {lang: len(ws) for lang, ws in pool.items()} for kind, pool in self.pools.items()}
        self.samplers = {kind: LanguageSampler(sizes[kind], config.language_alpha, config.seed) for kind in sizes}
        self.stages = config.stages()
        self.step = 0
        self.stage_index = -1
        self.optimizer: torch.optim.AdamW | None = None
        self.scheduler: torch.optim.lr_scheduler.LambdaLR | None = None

    @property
    def total_steps(self) -> int:
        return self.config.stage1_steps + self.config.stage2_steps

    # -- stages ------------------------------------------------------------------------------------------
    def parameter_groups(self, index: int) -> list[dict[str, Any]]:
        """AdamW's groups for stage ``index``: stage 1 the knowledge layer alone; stage 2 the knowledge layer,
        the encoder below it and above it at their rates (:data:`LAYER_RATES`), each split into weights with
        decay and biases/norms without."""
        names = {id(p): n for n, p in self.model.named_parameters()}
        alpha = self.stages[index].learning_rate
        parts = {"kar": self.model.kar_parameters()}
        if index == 1:
            parts |= {"below": self.model.encoder_parameters(True), "above": self.model.encoder_parameters(False)}
        groups = []
        for part, params in parts.items():
            for decay in (True, False):
                chosen = [p for p in params if _decays(names.get(id(p), "")) == decay]
                if chosen:
                    wd = self.config.weight_decay if decay else 0.0
                    groups.append({"params": chosen, "lr": alpha * LAYER_RATES[part], "weight_decay": wd, "part": part})
        return groups

    def _enter_stage(self, index: int, step_in_stage: int) -> None:
        stage = self.stages[index]
        self.stage_index = index
        self.model.freeze_encoder(index == 0)
        for p in self.model.kar_parameters():
            p.requires_grad_(True)
        if index == 1 and step_in_stage == 0:
            for kar in self.model.knowledge_layers().values():  # Algorithm 1: W2 = pinv(W1) after the linker's training
                kar.init_output_projection()
        self.optimizer = torch.optim.AdamW(self.parameter_groups(index), betas=(0.9, 0.999), eps=1e-6)
        self.ddp = wrap_losses(self.model, self.world, self.device)  # after freezing: DDP syncs what trains now
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: lr_factor(stage, s))
        if step_in_stage:  # resuming inside the stage: the schedule at its step (torch warns of no optimizer step)
            self.scheduler.last_epoch = step_in_stage - 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self.scheduler.step()

    def _train_mode(self) -> None:
        self.ddp.train()
        if self.stage_index == 0:
            self.model.encoder.eval()  # frozen: a fixed feature extractor, no dropout noise

    # -- one step ----------------------------------------------------------------------------------------
    def batch(self, step: int) -> tuple[str, list[Window]]:
        """The kind (``"lm"`` or ``"linking"``) and windows of step ``step`` (the samplers advance)."""
        index = stage_at(self.stages, step)[0]
        kind = "linking"
        if index == 1 and np.random.default_rng([self.config.seed, step, 5]).random() < self.config.lm_share:
            kind = "lm"
        picks = self.samplers[kind].next_batch(self.config.batch_size)
        windows = [self.pools[kind][lang][i] for lang, i in picks]
        if kind == "lm":
            windows = [
                mask_window(w, np.random.default_rng([self.config.seed, step, j, 11]), self.vocab, self.mask_row,
                            self.config.masking, other_mask_rows=self.other_mask_rows)
                for j, w in enumerate(windows)
            ]  # fmt: skip
        return kind, windows

    def train_step(self) -> dict[str, Any]:
        index, stage, in_stage = stage_at(self.stages, self.step)
        if index != self.stage_index:
            self._enter_stage(index, in_stage)
        assert self.optimizer is not None and self.scheduler is not None
        t0 = time.perf_counter()
        kind, windows = self.batch(self.step)
        share = self.config.per_process(self.world)
        windows = windows[self.rank * share : (self.rank + 1) * share]  # this rank's part of the global batch
        names = self.model.names
        ids, attention, candidates = collate_knowledge(windows, self.tokenizer.pad_id, names)
        labels = mlm_labels(windows, ids.shape[1]) if kind == "lm" else None
        # the numbers each of the model's mean losses divides by (every knowledge base's linking loss, then the
        # masked LM's), here and over all ranks
        counts = [0 if c.gold is None else int((c.gold != IGNORE).sum()) for c in candidates.values()]
        counts.append(0 if labels is None else int((labels != IGNORE).sum()))
        totals = self._all_reduce(counts) if self.world > 1 else [float(n) for n in counts]
        self._train_mode()
        means = self.ddp(ids, attention, candidates, labels, linking_only=kind == "linking")  # nothing above the KAR
        # rank r's mean x n_r / N, times the world size that DDP's average divides by: the global mean's gradient
        weights = [n * self.world / max(total, 1.0) for n, total in zip(counts, totals)]
        terms = [m * w for m, w in zip(means, weights) if m is not None]
        loss = sum(terms, torch.zeros((), device=self.device))
        lr = self.optimizer.param_groups[0]["lr"]
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        sums = [0.0 if m is None else float(m.detach()) * n for m, n in zip(means, counts)]
        sums = self._all_reduce(sums) if self.world > 1 else sums
        global_means = {
            key: total_sum / max(total, 1.0)
            for key, m, total_sum, total in zip([*names, "mlm"], means, sums, totals)
            if m is not None
        }
        record: dict[str, Any] = {"step": self.step, "stage": stage.name, "kind": kind, "lr": lr}
        linking = [global_means[name] for name in names if name in global_means]
        if linking:  # the sum over knowledge bases, as the model's linking loss
            record["linking_loss"] = sum(linking)
        if "mlm" in global_means:
            record["mlm_loss"] = global_means["mlm"]
        if len(names) > 1:
            record |= {f"linking_loss_{name}": global_means[name] for name in names if name in global_means}
        record["loss"] = record.get("linking_loss", 0.0) + record.get("mlm_loss", 0.0)
        record["step_s"] = time.perf_counter() - t0
        return record

    def _all_reduce(self, values: list[float] | list[int]) -> list[float]:
        """The sums of ``values`` over all processes (float64, on the model's device: NCCL takes no CPU tensor)."""
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor)
        return [float(v) for v in tensor.tolist()]

    # -- checkpoints ---------------------------------------------------------------------------------------
    def save_checkpoint(self) -> Path | None:
        """Write ``checkpoints/step-N`` (through a temporary name; rank 0 alone: other ranks return ``None``);
        keep the newest ``keep_checkpoints``."""
        assert self.optimizer is not None and self.scheduler is not None
        if self.rank != 0:
            return None
        final = self.out / "checkpoints" / f"step-{self.step:08d}"
        with atomic_path(final, overwrite=True) as tmp:
            tmp.mkdir()
            weights = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
            extra = {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}
            torch.save({"model": weights, **extra, **run_folder.rng_states()}, tmp / WEIGHTS_FILE)
            state = {
                "step": self.step,
                "stage": self.stage_index,
                "samplers": {k: s.state_dict() for k, s in self.samplers.items()},
                "config": self.config.fixed(),
                "world_size": self.world,  # for the record: a run resumes with any number of processes
            }
            (tmp / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")
        run_folder.prune_checkpoints(self.out, self.config.keep_checkpoints)
        return final

    def resume(self) -> bool:
        """Continue from the newest checkpoint in the run folder, if there is one.

        Raises:
            MlukeError: the checkpoint was written by a run with other settings.
        """
        ckpts = run_folder.finished_checkpoints(self.out)
        if not ckpts:
            return False
        last = ckpts[-1]
        state = json.loads((last / STATE_FILE).read_text(encoding="utf-8"))
        if state["config"] != json.loads(json.dumps(self.config.fixed())):
            diff = sorted(k for k, v in self.config.fixed().items() if state["config"].get(k) != v)
            raise MlukeError(
                f"{last}: written by a run with other settings ({', '.join(diff)}); use another output folder"
            )
        saved = torch.load(last / WEIGHTS_FILE, weights_only=True, map_location="cpu")
        self.model.load_state_dict(saved["model"])
        self.step = int(state["step"])
        for kind, sampler in self.samplers.items():
            sampler.load_state_dict(state["samplers"][kind])
        index, _, in_stage = stage_at(self.stages, self.step)
        self._enter_stage(index, in_stage)  # at a stage's first step (W2 re-initialised) exactly as without a stop
        if state["stage"] == index:
            assert self.optimizer is not None and self.scheduler is not None
            self.optimizer.load_state_dict(saved["optimizer"])
            self.scheduler.load_state_dict(saved["scheduler"])
        run_folder.restore_rng_states(saved)
        return True

    # -- the loop --------------------------------------------------------------------------------------------
    def train(
        self, max_steps: int | None = None, *, progress: bool = True, on_step: Callable[[int], None] | None = None
    ) -> Path:
        """Train to the end of stage 2 (or ``max_steps`` more steps); ``on_step(step)`` after each step (and
        its checkpoint). Returns the run folder. Rank 0 alone writes the log and shows progress."""
        from tqdm import tqdm

        stop = self.total_steps if max_steps is None else min(self.total_steps, self.step + max_steps)
        if self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            run_folder.remove_leftovers(self.out)
            run_folder.cut_log(self.out / "log.jsonl", self.step)
        bar = tqdm(total=stop, initial=self.step, desc="knowbert", unit="step", disable=not progress or self.rank != 0)
        log = (self.out / "log.jsonl").open("a", encoding="utf-8") if self.rank == 0 else None
        try:
            while self.step < stop:
                record = self.train_step()
                bar.update(1)
                bar.set_postfix(loss=f"{record['loss']:.3f}", stage=record["stage"])
                if log is not None and (self.step % self.config.log_every == 0 or self.step == stop):
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                if self.step % self.config.save_every == 0 or self.step == stop:
                    self.save_checkpoint()
                if on_step is not None:
                    on_step(self.step)
        except KeyboardInterrupt:
            if self.rank == 0:
                bar.close()
                print(f"\n{self.interrupted_note()}", file=sys.stderr, flush=True)
            raise
        finally:
            bar.close()
            if log is not None:
                log.close()
        return self.out

    def interrupted_note(self) -> str:
        """What an interruption (Ctrl-C) keeps, and how to continue: printed when :meth:`train` is interrupted."""
        kept = run_folder.finished_checkpoints(self.out)
        return run_folder.interrupted_note(
            self.step,
            self.total_steps,
            kept=int(kept[-1].name[5:]) if kept else 0,
            folder=kept[-1] if kept else self.out,
            saved=f"every {self.config.save_every:,} steps",
            resume="the next run with the same options resumes from it",
        )

    def export(self, directory: str | Path | None = None) -> Path:
        """Save the model (:meth:`KnowBertModel.save_pretrained`) with its tokenizer in ``tokenizer/`` (rank 0;
        the other ranks wait until it is written)."""
        directory = Path(directory) if directory is not None else self.out / "model"
        if self.rank == 0:
            self.model.eval()
            with atomic_path(directory, overwrite=True) as tmp:
                self.model.save_pretrained(tmp)
                self.tokenizer.save_pretrained(tmp / "tokenizer")
        self.barrier()
        return directory

    def barrier(self) -> None:
        """Wait for every process (nothing with one): what rank 0 writes is there when any rank goes on."""
        if self.world > 1:
            dist.barrier(device_ids=[self.device.index] if self.device.type == "cuda" else None)


def _decays(name: str) -> bool:
    """Whether a parameter gets weight decay: all but biases and norm weights (as our pretraining)."""
    return not (name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name or "norm." in name)
