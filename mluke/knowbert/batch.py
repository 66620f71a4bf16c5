"""The mention spans and kb candidates a knowledge layer (:mod:`mluke.knowbert`) reads with a batch of texts.

Shapes: ``B`` texts, ``S`` spans per text (padded), ``K`` candidates per span (padded, at most
``max_candidates``). Span positions are word-piece indices of the encoder's input, both ends inclusive.
Candidates are rows of the layer's entity table (:class:`mluke.knowbert.entities.EntityTable`); padding
uses row 0 with ``candidate_mask`` False. ``gold`` (training only) is the index of the right candidate in
``0 .. K-1``, ``K`` when the span is a mention of no candidate (its target is the NULL entity), or
:data:`IGNORE` when the span carries no supervision.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch

IGNORE = -100  #: ``gold`` of a span without supervision (as the ignore index of torch's losses)


@dataclass(frozen=True)
class SpanCandidates:
    """Candidate mention spans of a batch and their kb candidates with priors p(e|m)."""

    span_start: torch.Tensor  #: int64 [B, S], first word piece of the span
    span_end: torch.Tensor  #: int64 [B, S], last word piece of the span (inclusive)
    span_mask: torch.Tensor  #: bool [B, S], a real span (False: padding)
    entity_ids: torch.Tensor  #: int64 [B, S, K], rows of the entity table
    log_prior: torch.Tensor  #: float32 [B, S, K], log p(e|m) from the kb's mention index
    candidate_mask: torch.Tensor  #: bool [B, S, K], a real candidate (False: padding)
    gold: torch.Tensor | None = None  #: int64 [B, S]: right candidate, K for NULL, IGNORE for none

    def __post_init__(self) -> None:
        b, s = self.span_start.shape
        k = self.entity_ids.shape[-1]
        expected = {
            "span_end": (b, s),
            "span_mask": (b, s),
            "entity_ids": (b, s, k),
            "log_prior": (b, s, k),
            "candidate_mask": (b, s, k),
        }
        if self.gold is not None:
            expected["gold"] = (b, s)
        for name, shape in expected.items():
            got = tuple(getattr(self, name).shape)
            if got != shape:
                raise ValueError(f"SpanCandidates.{name} has shape {got}, expected {shape} (B, S[, K])")

    @property
    def num_candidates(self) -> int:
        """``K``: candidates per span, padding included."""
        return int(self.entity_ids.shape[-1])

    def to(self, device: torch.device | str) -> SpanCandidates:
        """The same spans and candidates with every tensor on ``device``."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{k: v.to(device) for k, v in moved.items() if v is not None})
