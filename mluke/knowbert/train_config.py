"""The settings of a KnowBert training run (:class:`KnowBertTrainConfig`; the run itself:
:mod:`mluke.knowbert.training`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kb.errors import MlukeError
from mluke.knowbert.masking import MaskingOptions
from mluke.pretraining.config import StageConfig

#: Settings that may change between a run and its resumption (they do not change what is computed).
_FREE = ("output", "device", "save_every", "keep_checkpoints", "log_every")


@dataclass
class KnowBertTrainConfig:
    """A KnowBert training run (defaults: the paper's recipe where it has one, scaled-down steps)."""

    output: str  #: the run folder (checkpoints, log, the exported model under ``model/``)
    stage1_steps: int = 1000  #: linker steps (encoder frozen); 0 skips stage 1
    stage2_steps: int = 1000  #: masked LM + linking steps; 0 skips stage 2
    batch_size: int = 32
    learning_rate: float = 1e-4  #: ``alpha``: the knowledge layer's peak learning rate (KnowBert-Wiki: 1e-4)
    warmup_share: float = 0.1  #: share of each stage's steps spent warming up
    weight_decay: float = 0.01
    lm_share: float = 0.8  #: stage 2: share of masked-LM batches (the rest: linking batches)
    language_alpha: float = 0.7  #: language sampling exponent (mLUKE's 0.7)
    word_prob: float = 0.15  #: masked-LM share of word pieces
    seed: int = 0
    save_every: int = 100
    keep_checkpoints: int = 2
    log_every: int = 10
    device: str = "auto"  #: "auto" (GPU LOCAL_RANK when CUDA is available, else the CPU), "cpu", "cuda[:N]"
    masking: MaskingOptions = field(default_factory=MaskingOptions, repr=False)

    def __post_init__(self) -> None:
        for name in ("stage1_steps", "stage2_steps"):
            if getattr(self, name) < 0:
                raise MlukeError(f"{name} must be 0 or more, got {getattr(self, name)}")
        if self.stage1_steps + self.stage2_steps == 0:
            raise MlukeError("nothing to train: stage1_steps and stage2_steps are both 0")
        if self.batch_size < 1 or self.learning_rate <= 0 or not 0 <= self.lm_share <= 1:
            raise MlukeError(
                f"batch_size must be positive, learning_rate > 0 and lm_share in [0, 1] "
                f"(got {self.batch_size}, {self.learning_rate}, {self.lm_share})"
            )
        self.masking = MaskingOptions(**{**asdict(self.masking), "word_prob": self.word_prob})

    def stages(self) -> list[StageConfig]:
        """The two stages, for the schedule (a stage of 0 steps is skipped)."""
        return [
            StageConfig(name, steps, self.learning_rate, round(self.warmup_share * steps))
            for name, steps in (("linker", self.stage1_steps), ("joint", self.stage2_steps))
        ]

    def per_process(self, world: int) -> int:
        """The windows each of ``world`` processes computes per step.

        Raises:
            MlukeError: ``batch_size`` does not split evenly into ``world``.
        """
        if self.batch_size % world:
            raise MlukeError(
                f"batch_size {self.batch_size} must split evenly into the {world} processes of the run "
                f"(each computes batch_size / {world} windows of every step): choose a multiple of {world}"
            )
        return self.batch_size // world

    def fixed(self) -> dict[str, Any]:
        """The settings a resumed run must share with the run it continues."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in (*_FREE, "masking")}
