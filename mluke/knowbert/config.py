"""The settings of a knowledge layer (:class:`KnowBertConfig`), with KnowBert-Wiki's values as defaults
(Peters et al., 2019, §3.3 and §4.1): a span self-attention and a word-to-span attention of 4 heads and a
1024-wide feed-forward each, a 100-unit scoring MLP, the decode threshold 0 and dropout 0.1."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from kb.errors import InputFormatError

#: KnowBert-Wiki puts its knowledge layer after layer 10 of BERT-base's 12; other depths keep that ratio
DEFAULT_POSITION = 10 / 12


@dataclass(frozen=True)
class KnowBertConfig:
    """Where the knowledge layer sits and how big its parts are.

    The entity dimension is not set here: it is the entity table's (:class:`mluke.knowbert.EntityTable`).
    """

    #: the layer sits after this many encoder layers (1-based); ``None``: ``round(10/12 * depth)``, kept in
    #: ``1 .. depth-1`` (12 layers: after layer 10; 24: after 20; 2: after 1)
    kar_layer: int | None = None
    #: contextualise the span vectors with one transformer layer before scoring (KnowBert-Wiki: on)
    span_attention: bool = True
    span_heads: int = 4  #: heads of the span self-attention
    span_ffn: int = 1024  #: feed-forward width of the span self-attention
    word_heads: int = 4  #: heads of the word-to-span attention
    word_ffn: int = 1024  #: feed-forward width of the word-to-span attention
    mlp_hidden: int = 100  #: hidden units of the candidate-scoring MLP over [dot / sqrt(d), log prior]
    #: candidates scoring below this are left out of the weighted entity embedding; a span with none left
    #: takes the NULL embedding. It is also the NULL class's logit in the linking loss
    threshold: float = 0.0
    dropout: float = 0.1
    #: log priors are clipped from below to this (a prior of 0 would make log p = -inf)
    log_prior_floor: float = -20.0
    layer_norm_eps: float = 1e-5
    initializer_range: float = 0.02  #: standard deviation of the new weights (as BERT's)

    def __post_init__(self) -> None:
        if self.kar_layer is not None and self.kar_layer < 1:
            raise ValueError(f"kar_layer must be at least 1 (after the first encoder layer), got {self.kar_layer}")
        for name in ("span_heads", "span_ffn", "word_heads", "word_ffn", "mlp_hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def layer_for(self, depth: int) -> int:
        """After how many of ``depth`` encoder layers the knowledge layer runs."""
        if depth < 1:
            raise ValueError(f"an encoder needs at least one layer, got {depth}")
        if self.kar_layer is not None:
            if self.kar_layer > depth:
                raise ValueError(f"kar_layer {self.kar_layer} is past the encoder's {depth} layers")
            return self.kar_layer
        return min(max(1, round(DEFAULT_POSITION * depth)), max(1, depth - 1))

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict (what :meth:`from_dict` reads)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "the KnowBert config") -> KnowBertConfig:
        """Settings from a dict, refusing unknown keys (a typo would otherwise be a silent default)."""
        if not isinstance(data, dict):
            raise InputFormatError(f"{where}: expected a JSON object of knowledge-layer settings")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputFormatError(
                f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        try:
            return cls(**data)
        except (TypeError, ValueError) as exc:
            raise InputFormatError(f"{where}: {exc}") from None
