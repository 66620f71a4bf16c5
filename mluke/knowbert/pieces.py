"""Spans and kb candidates of a text placed on the word pieces of *another* tokenization of it: what a knowledge
layer reads when the input is not the candidate selector's own (fine-tuning rows, cloze prompts).

The candidate selector (:class:`mluke.knowbert.candidates.CandidateSelector`) finds the text's mentions and their
candidates; this module maps each mention's characters onto the pieces of the given input by their character
offsets: a span covers every piece that overlaps its characters (a mention cut inside a piece takes the whole
piece). Pieces without characters (``<s>``, ``</s>``, markers: offsets ``(0, 0)``) are never part of a span.

With several knowledge bases (``TextCandidates(..., others=...)``, :func:`kb_text_candidates`) each finds its spans
with its own kb and table; the first's are the window's own fields, the others' go into ``Window.others``, and in
a batch dict of tensors the first's are the ``kb_*`` tensors (as with one knowledge base) and knowledge base
``NAME``'s the ``kb_*@NAME`` ones.

Masked pieces (a cloze prompt's [Y]) get the [MASK] entity, as in KnowBert's training (§3.4): a span over the
masked run of pieces with the single candidate ``mask_row`` (log prior 0), and every detected span that overlaps a
masked piece has its candidates replaced by ``mask_row``, so no candidate list can leak the answer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

import torch

from kb.mentions.candidates import MAX_CANDIDATES
from mluke.knowbert.batch import SpanCandidates
from mluke.knowbert.candidates import CandidateSelector, KbSpans, Window, collate, collate_knowledge

if TYPE_CHECKING:
    from kb.db import EntityDB
    from kb.mentions import MentionIndex
    from mluke.knowbert.entities import EntityTable
    from mluke.knowbert.model import KnowBertModel
    from mluke.models.tokenizer import MlukeTokenizer

Span = tuple[int, int]


#: texts whose mentions a :class:`TextCandidates` keeps (a few long passages' windows, a dev set's rows)
_CACHED_TEXTS = 4096


def piece_span(offsets: Sequence[Span], start: int, end: int) -> Span | None:
    """The first and last piece (inclusive) overlapping characters ``[start, end)``, or ``None`` when no piece
    with characters does (the text was cut before the mention)."""
    hit = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (hit[0], hit[-1]) if hit else None


def masked_runs(input_ids: Sequence[int], mask_id: int) -> list[Span]:
    """Each run of consecutive ``mask_id`` pieces as ``(first, last)`` (inclusive)."""
    runs: list[Span] = []
    for i, piece in enumerate(input_ids):
        if piece != mask_id:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


class TextCandidates:
    """Spans and candidates of texts on given word pieces (module docs).

    Args:
        tokenizer: the encoder's tokenizer (the selector tokenizes the text again to find the mentions' pieces; only
            their characters are used here).
        index: the kb's mention index.
        entities: the knowledge layer's entity table (rows of the candidates; its ``mask_row``).
        max_candidates: candidates per span, best prior first.
        max_span_words: the longest detected span, in words.
        others: the span finders of a model's other knowledge bases, by name: :meth:`window` places their spans on
            the same pieces, in ``Window.others``.
    """

    def __init__(
        self,
        tokenizer: MlukeTokenizer,
        index: MentionIndex,
        entities: EntityTable,
        *,
        max_candidates: int = MAX_CANDIDATES,
        max_span_words: int = 5,
        others: Mapping[str, TextCandidates] | None = None,
    ) -> None:
        self.others = dict(others or {})
        self.selector = CandidateSelector(
            tokenizer,
            index,
            entities.key_to_row,
            max_candidates=max_candidates,
            max_span_words=max_span_words,
            max_length=1 << 30,  # the whole text: spans are cut by the caller's pieces, not here
        )
        self.mask_row = entities.mask_row
        #: the mentions found in recent texts, by (text, language): a passage cut into several windows (QA's
        #: stride, ReCoRD) and dev rows attached again every epoch are looked up once
        self._found: OrderedDict[tuple[str, str], Window] = OrderedDict()

    def _mentions(self, text: str, lang: str) -> Window:
        """The kb mentions of the whole ``text`` (the selector's window over it), from the cache when recent."""
        key = (text, lang)
        found = self._found.get(key)
        if found is None:
            [found] = self.selector.encode([text], lang)
            self._found[key] = found
            if len(self._found) > _CACHED_TEXTS:
                self._found.popitem(last=False)
        else:
            self._found.move_to_end(key)
        return found

    def window(
        self,
        text: str,
        lang: str,
        input_ids: Sequence[int],
        offsets: Sequence[Span],
        masked: Sequence[Span] = (),
    ) -> Window:
        """The spans of ``text`` on ``input_ids`` (whose character ``offsets`` in ``text`` are given), with their
        candidates; ``masked``: runs of masked pieces (``(first, last)``), which get the [MASK] entity."""
        if len(offsets) != len(input_ids):
            raise ValueError(f"{len(offsets)} offsets for {len(input_ids)} pieces")
        found = self._mentions(text, lang)
        spans: dict[Span, tuple[list[int], list[float], Span]] = {}
        for chars, rows, priors in zip(found.char_spans, found.entity_ids, found.log_prior):
            span = piece_span(offsets, *chars)
            if span is None or span in spans:
                continue
            if any(s <= span[1] and span[0] <= e for s, e in masked):
                rows, priors = [self.mask_row], [0.0]
            spans[span] = (list(rows), list(priors), chars)
        for run in masked:
            spans[run] = ([self.mask_row], [0.0], (-1, -1))
        win = Window(lang, list(input_ids), list(offsets), [], [], [])
        for span in sorted(spans):
            rows, priors, chars = spans[span]
            win.spans.append(span)
            win.entity_ids.append(rows)
            win.log_prior.append(priors)
            win.char_spans.append(chars)
        for name, finder in self.others.items():
            win.others[name] = as_kb_spans(finder.window(text, lang, input_ids, offsets, masked))
        return win


def kb_text_candidates(
    tokenizer: MlukeTokenizer,
    model: KnowBertModel,
    dbs: Mapping[str, EntityDB],
    *,
    max_candidates: int = MAX_CANDIDATES,
    max_span_words: int = 5,
) -> TextCandidates:
    """The span finder of every knowledge base of ``model`` (the first's, with the others in ``others``), each on
    the mention index of its kb in ``dbs`` (by name, e.g. :func:`mluke.knowbert.kb_dbs` opened; one index per
    database)."""
    from kb.mentions import MentionIndex

    indexes = {id(db): MentionIndex.for_db(db) for db in dbs.values()}
    first, *others = model.names

    def finder(name: str, rest: Mapping[str, TextCandidates] | None = None) -> TextCandidates:
        return TextCandidates(
            tokenizer,
            indexes[id(dbs[name])],
            model.tables[name],
            max_candidates=max_candidates,
            max_span_words=max_span_words,
            others=rest,
        )

    return finder(first, {n: finder(n) for n in others})


def as_kb_spans(window: Window) -> KbSpans:
    """A window's own spans as :class:`KbSpans` (to carry them as another knowledge base's in ``Window.others``)."""
    return KbSpans(window.spans, window.entity_ids, window.log_prior, window.gold, window.char_spans)


#: the fields of :class:`SpanCandidates` carried in a batch dict of tensors (``kb_`` + name)
_FIELDS = ("span_start", "span_end", "span_mask", "entity_ids", "log_prior", "candidate_mask")


def candidates_as_inputs(candidates: SpanCandidates, name: str | None = None) -> dict[str, torch.Tensor]:
    """``candidates`` as ``kb_*`` tensors (``name``: another knowledge base's, ``kb_*@name``), to travel in a batch
    dict (devices move tensors, not dataclasses)."""
    suffix = "" if name is None else "@" + name
    return {"kb_" + field + suffix: getattr(candidates, field) for field in _FIELDS}


def candidates_from_inputs(
    inputs: Mapping[str, object], names: Sequence[str] | None = None
) -> SpanCandidates | dict[str, SpanCandidates] | None:
    """The candidates of a batch dict with ``kb_*`` tensors (module docs), else ``None`` (no knowledge inputs): one
    :class:`SpanCandidates` when it carries one knowledge base's, else a mapping by name (``names``: the model's,
    the first one the ``kb_*`` tensors').

    Raises:
        ValueError: other knowledge bases' tensors without ``names``, or of a name not among them.
    """
    if "kb_span_start" not in inputs:
        return None
    first = SpanCandidates(*(cast(torch.Tensor, inputs["kb_" + field]) for field in _FIELDS))
    others = [key.partition("@")[2] for key in inputs if key.startswith("kb_span_start@")]
    if not others:
        return first
    unknown = sorted(set(others) - set(names[1:] if names else ()))
    if not names or unknown:
        raise ValueError(f"knowledge inputs of knowledge base(s) {unknown} that are not among {list(names or [])}")
    out = {names[0]: first}
    for name in others:
        out[name] = SpanCandidates(*(cast(torch.Tensor, inputs[f"kb_{field}@{name}"]) for field in _FIELDS))
    return out


def knowledge_inputs(windows: Sequence[Window], pad_id: int) -> dict[str, torch.Tensor]:
    """The ``kb_*`` tensors of windows (their spans and candidates, padded as :func:`collate` does), and the
    ``kb_*@NAME`` tensors of the other knowledge bases they carry (``Window.others``)."""
    others = list(dict.fromkeys(name for w in windows for name in w.others))
    if not others:
        _, _, candidates = collate(windows, pad_id)
        return candidates_as_inputs(candidates)
    _, _, by_kb = collate_knowledge(windows, pad_id, ["", *others])
    out = candidates_as_inputs(by_kb.pop(""))
    for name, found in by_kb.items():
        out |= candidates_as_inputs(found, name)
    return out
