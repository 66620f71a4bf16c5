"""Pretraining configuration: one TOML file; the defaults are the mLUKE paper's recipe.

Paper values (Ri et al., 2022): AdamW (b1 0.9, b2 0.999, eps 1e-6, weight decay
0.01), batch 2048, stage 1 (500K steps) trains only the new parameters at peak
LR 5e-4, stage 2 (500K steps) all parameters at 1e-4, 2,500 warm-up steps and
linear decay with the scheduler reset per stage, no gradient clipping, dropout
0.1, 15% word masking (80/10/10) and 15% entity masking, language sampling
smoothing alpha = 0.7.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kb.errors import InputFormatError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class ModelConfig:
    """Where the word side comes from and the shape of the new entity side."""

    xlmr: str = "FacebookAI/xlm-roberta-base"  #: hub name or local dir of an XLMRobertaForMaskedLM
    entity_emb_size: int = 256
    use_entity_aware_attention: bool = False  #: mLUKE pretraining does not use it
    max_entity_length: int = 128
    max_mention_length: int = 30


@dataclass
class DataConfig:
    corpus: str = "corpus"  #: folder written by `build_corpus`
    alpha: float = 0.7  #: language sampling p_i ~ n_i ** alpha
    languages: list[str] = field(default_factory=list)  #: empty: every language in the corpus


@dataclass
class MaskingConfig:
    word_prob: float = 0.15
    word_mask_share: float = 0.8  #: of masked words: replaced by <mask>
    word_random_share: float = 0.1  #: replaced by a random word (the rest is kept)
    whole_word: bool = True  #: mask whole words (SentencePiece '▁' boundaries)
    entity_prob: float = 0.15  #: each entity is replaced by the entity [MASK] with this probability
    mention_word_prob: float = (
        0.0  #: a masked entity's mention words are all <mask>ed with this probability (0 in the paper)
    )
    mention_single_mask: bool = False  #: ... and become one <mask> (as at [Y] in an entity probe), without word labels
    entity_drop_prob: float = (
        0.0  #: an entity left unmasked is removed from the input with this probability (its words stay)
    )


@dataclass
class StageConfig:
    name: str
    steps: int
    learning_rate: float
    warmup_steps: int = 2500
    train: Literal["new", "all"] = "all"  #: "new": only the parameters mLUKE adds to XLM-R


@dataclass
class OptimConfig:
    batch_size: int = 2048  #: effective batch (over processes and accumulation)
    micro_batch_size: int = 32  #: per process and forward pass
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    max_grad_norm: float = 0.0  #: 0: no clipping
    dropout: float = 0.1


@dataclass
class RunConfig:
    output: str = "run"
    seed: int = 42
    save_every: int = 1000
    log_every: int = 10
    keep_checkpoints: int = 2
    tensorboard: bool = False
    bf16: Literal["auto", "on", "off"] = "auto"  #: bf16 autocast on GPU ("auto" and "on": on when training on a GPU)
    fp16: bool = False  #: fp16 autocast with a gradient scaler on GPU instead of bf16 (GPUs without bf16)
    device: str = "auto"  #: "auto" (GPU LOCAL_RANK when CUDA is available), "cpu" or "cuda"


@dataclass
class TrainConfig:
    """Everything a pretraining run needs. ``TrainConfig()`` is the paper's recipe."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    masking: MaskingConfig = field(default_factory=MaskingConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    stages: list[StageConfig] = field(
        default_factory=lambda: [
            StageConfig("new-parameters", 500_000, 5e-4, 2500, "new"),
            StageConfig("all-parameters", 500_000, 1e-4, 2500, "all"),
        ]
    )

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        import tomli_w

        data = self.to_dict()
        data["optim"]["betas"] = list(data["optim"]["betas"])
        return tomli_w.dumps(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> TrainConfig:
        """Build from nested dicts; an unknown or misspelled key is an error naming it."""
        parts: dict[str, Any] = {}
        sections = {
            "model": ModelConfig,
            "data": DataConfig,
            "masking": MaskingConfig,
            "optim": OptimConfig,
            "run": RunConfig,
        }
        for key, value in data.items():
            if key == "stages":
                if not isinstance(value, list) or not value:
                    raise InputFormatError(f"{where}: [[stages]] must be a non-empty list of tables")
                parts["stages"] = [_make(StageConfig, s, f"{where} [[stages]] #{i + 1}") for i, s in enumerate(value)]
            elif key in sections:
                parts[key] = _make(sections[key], value, f"{where} [{key}]")
            else:
                raise InputFormatError(f"{where}: unknown section {key!r}; expected {', '.join([*sections, 'stages'])}")
        config = cls(**parts)
        config.optim.betas = tuple(config.optim.betas)  # type: ignore[assignment]
        config.validate(where)
        return config

    @classmethod
    def from_toml(cls, path: str | Path) -> TrainConfig:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputFormatError(f"{path}: no such config file") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputFormatError(f"{path}: not valid TOML ({exc})") from None
        return cls.from_dict(data, str(path))

    def validate(self, where: str = "config") -> None:
        o = self.optim
        if o.batch_size <= 0 or o.micro_batch_size <= 0:
            raise InputFormatError(f"{where}: batch sizes must be positive")
        for stage in self.stages:
            if stage.train not in ("new", "all") or stage.steps < 0 or stage.learning_rate <= 0:
                raise InputFormatError(
                    f"{where}: stage {stage.name!r}: train must be 'new' or 'all', steps >= 0, learning_rate > 0"
                )
        m = self.masking
        probs = (m.word_prob, m.entity_prob, m.mention_word_prob, m.entity_drop_prob)
        if not (all(0 <= x <= 1 for x in probs) and m.word_mask_share + m.word_random_share <= 1):
            raise InputFormatError(
                f"{where}: masking probabilities must lie in [0, 1] and mask + random shares sum to <= 1"
            )
        if self.data.alpha <= 0:
            raise InputFormatError(f"{where}: data.alpha must be positive (0.7 in the paper)")


def _make(kind: type, values: Any, where: str) -> Any:
    if not isinstance(values, dict):
        raise InputFormatError(f"{where}: expected a table")
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise InputFormatError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected some of {', '.join(sorted(names))}"
        )
    try:
        return kind(**values)
    except TypeError as exc:
        raise InputFormatError(f"{where}: {exc}") from None
