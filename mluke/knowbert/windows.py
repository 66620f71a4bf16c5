"""The encoder inputs of a knowledge layer before batching (:class:`Window`: word pieces with each knowledge base's
spans, candidates and gold) and their batching into tensors (:func:`collate`, :func:`collate_knowledge`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from mluke.knowbert.batch import IGNORE, SpanCandidates

#: ``Window.gold`` of a span whose target is the NULL entity (becomes ``K`` when the batch is collated).
NULL = -1


@dataclass
class Window:
    """One encoder input with its spans, before collation: what :func:`collate` batches.

    ``spans`` are word-piece positions in ``input_ids`` (``<s>`` included), both ends inclusive; ``gold`` is
    per span an index into its candidates, :data:`NULL` or :data:`IGNORE` (``None`` without supervision).
    """

    lang: str
    input_ids: list[int]
    offsets: list[tuple[int, int]]  #: character span of each piece in the text ((0, 0) for <s>, </s>)
    spans: list[tuple[int, int]]
    entity_ids: list[list[int]]
    log_prior: list[list[float]]
    gold: list[int] | None = None
    labels: list[int] | None = None  #: masked-LM targets (-100: not masked), set by :mod:`mluke.knowbert.masking`
    char_spans: list[tuple[int, int]] = field(default_factory=list)  #: each span's characters in the text
    #: the spans of the model's other knowledge bases, by name (the fields above are the first knowledge base's;
    #: :class:`MultiSelector` fills this, :func:`collate_knowledge` batches it)
    others: dict[str, KbSpans] = field(default_factory=dict)


@dataclass
class KbSpans:
    """One more knowledge base's spans in a :class:`Window` (``Window.others``): the same fields as the window's own,
    on the same word pieces."""

    spans: list[tuple[int, int]] = field(default_factory=list)
    entity_ids: list[list[int]] = field(default_factory=list)
    log_prior: list[list[float]] = field(default_factory=list)
    gold: list[int] | None = None
    char_spans: list[tuple[int, int]] = field(default_factory=list)


def collate(windows: Sequence[Window], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, SpanCandidates]:
    """``input_ids`` [B, T], ``attention_mask`` [B, T] and the :class:`SpanCandidates` of a batch of windows (their
    own spans: the first knowledge base's): T, S and K padded to the batch's longest; NULL gold becomes ``K``. A
    batch without any span gets S = 1 (one padding span), K at least 1."""
    input_ids, attention = _collate_pieces(windows, pad_id)
    return input_ids, attention, _collate_spans(windows)


def collate_knowledge(
    windows: Sequence[Window], pad_id: int, names: Sequence[str]
) -> tuple[torch.Tensor, torch.Tensor, dict[str, SpanCandidates]]:
    """As :func:`collate`, with the candidates of every knowledge base in ``names`` (a model's ``names``: the
    first is the windows' own spans, the others come from ``Window.others``; a window without a knowledge base's
    spans has none of it)."""
    input_ids, attention = _collate_pieces(windows, pad_id)
    first, *others = names
    unknown = sorted({n for w in windows for n in w.others} - set(others))
    if unknown:
        raise ValueError(f"windows carry spans of knowledge base(s) {unknown} that are not among {list(names)}")
    out = {first: _collate_spans(windows)}
    for name in others:
        out[name] = _collate_spans([w.others.get(name, KbSpans()) for w in windows])
    return input_ids, attention, out


def _collate_pieces(windows: Sequence[Window], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    if not windows:
        raise ValueError("collate() needs at least one window")
    t = max(len(w.input_ids) for w in windows)
    input_ids = torch.full((len(windows), t), pad_id, dtype=torch.long)
    attention = torch.zeros((len(windows), t), dtype=torch.long)
    for i, w in enumerate(windows):
        input_ids[i, : len(w.input_ids)] = torch.tensor(w.input_ids)
        attention[i, : len(w.input_ids)] = 1
    return input_ids, attention


def _collate_spans(parts: Sequence[Window | KbSpans]) -> SpanCandidates:
    """The padded spans and candidates of one knowledge base, one part per window."""
    b = len(parts)
    s = max(1, max(len(w.spans) for w in parts))
    k = max(1, max((len(r) for w in parts for r in w.entity_ids), default=1))
    start = torch.zeros((b, s), dtype=torch.long)
    end = torch.zeros((b, s), dtype=torch.long)
    span_mask = torch.zeros((b, s), dtype=torch.bool)
    entity_ids = torch.zeros((b, s, k), dtype=torch.long)
    log_prior = torch.zeros((b, s, k), dtype=torch.float32)
    cand_mask = torch.zeros((b, s, k), dtype=torch.bool)
    supervised = any(w.gold is not None for w in parts)
    gold = torch.full((b, s), IGNORE, dtype=torch.long)
    for i, w in enumerate(parts):
        for j, ((a, e), rows, priors) in enumerate(zip(w.spans, w.entity_ids, w.log_prior)):
            start[i, j], end[i, j], span_mask[i, j] = a, e, True
            entity_ids[i, j, : len(rows)] = torch.tensor(rows)
            log_prior[i, j, : len(priors)] = torch.tensor(priors)
            cand_mask[i, j, : len(rows)] = True
            if w.gold is not None:
                gold[i, j] = k if w.gold[j] == NULL else w.gold[j]
    return SpanCandidates(start, end, span_mask, entity_ids, log_prior, cand_mask, gold if supervised else None)


def mlm_labels(windows: Sequence[Window], width: int) -> torch.Tensor:
    """The masked-LM targets of collated windows, [B, ``width``] (-100 where a window has none)."""
    out = torch.full((len(windows), width), IGNORE, dtype=torch.long)
    for i, w in enumerate(windows):
        if w.labels is not None:
            out[i, : len(w.labels)] = torch.tensor(w.labels)
    return out
