"""KnowBert's candidate selector on our kb: mention spans of a text with up to 30 kb candidates and their priors
p(e|m), aligned to the encoder's word pieces, with the gold entity of each hyperlink for training.

Spans are the mentions our mention index detects (:meth:`kb.mentions.MentionIndex.detect`: the longest
non-overlapping kb names, at most ``max_span_words`` words; in unspaced scripts a name counts as one word, see
:func:`span_words`) and, for a corpus document, its hyperlinks (candidates from the index for the anchor's
text). The text is cut at every span boundary before it is tokenized (:func:`mluke.models.encoding.encode_with_spans`,
as mLUKE's tokenizer and pretraining corpus do), so a span covers whole word pieces in every script, ja/zh
included. A document longer than the encoder's input is read in consecutive windows, cut between word pieces
that no span straddles where possible.

Gold labels (``SpanCandidates.gold``), training only:

- a hyperlink: the index of its entity among the span's candidates; :data:`~mluke.knowbert.batch.IGNORE` when
  the entity is not among them (the span *is* a mention, so NULL would teach the linker to reject real
  mentions; the linker cannot pick the entity either, so the span gives no supervision);
- a detected span that overlaps a hyperlink without being it: NULL (the editor linked that stretch of text
  differently, e.g. *Tokyo* inside a detected *Tokyo Tower*);
- any other detected span: IGNORE, because Wikipedia's anchors are not exhaustive (an article links a name
  once, at its first mention), *unless* the kb says the span is surely not a link: link probability below
  ``null_below`` (stored anchor statistics or, given an estimator, :class:`kb.mentions.linkability.LinkEstimator`'s
  estimate: a lowercase *nice* 0.02, a match inside a longer word 0.05) -> NULL.

A hyperlink with no candidates at all is left out (nothing to link it to, and inference would not propose
it). Candidates missing from the entity table are dropped; :class:`SelectionStats` counts every such case.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, cast

from kb.mentions.candidates import MAX_CANDIDATES
from kb.mentions.surfaces import surface_key
from mluke.knowbert.batch import IGNORE
from mluke.knowbert.windows import NULL, KbSpans, Window, collate, collate_knowledge, mlm_labels
from mluke.models.encoding import encode_with_spans

__all__ = [
    "NULL",
    "CandidateSelector",
    "KbSpans",
    "MultiSelector",
    "SelectionStats",
    "Window",
    "WindowSource",
    "collate",
    "collate_knowledge",
    "mlm_labels",
    "span_words",
]

if TYPE_CHECKING:
    from kb.mentions import Mention, MentionIndex
    from kb.mentions.linkability import LinkEstimator
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.pretraining.corpus import Document

#: Smallest prior whose log is taken (a prior of 0 would give -inf).
PRIOR_FLOOR = 1e-6
#: Default: a detected span whose link probability is below this is surely not a link (gold NULL).
NULL_BELOW = 0.1


@dataclass
class SelectionStats:
    """What the selector left out or could not supervise, summed over the texts it read."""

    windows: int = 0
    spans: int = 0  #: spans kept
    hyperlinks: int = 0  #: hyperlinks kept as spans
    gold_found: int = 0  #: hyperlinks whose entity is among their candidates
    gold_missing: int = 0  #: hyperlinks whose entity is not (gold IGNORE)
    hyperlinks_without_candidates: int = 0  #: hyperlinks left out: the index knows no entity for the anchor
    null_spans: int = 0  #: detected spans with gold NULL
    long_spans: int = 0  #: detected spans of more than ``max_span_words`` words, left out
    cut_spans: int = 0  #: spans left out: beyond the encoder's length or across a window cut
    candidates_missing_from_table: int = 0  #: candidates dropped: not in the entity table

    def add(self, other: SelectionStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def span_words(surface: str) -> int:
    """Words of a name: space-separated units of its folded form (:func:`kb.mentions.surface_key`), so
    "New York City" has 3 and "東京タワー" (no spaces in the script) 1."""
    return len(surface_key(surface).split(" "))


class WindowSource:
    """What reads texts and documents into windows (:class:`CandidateSelector`, :class:`MultiSelector`)."""

    def encode(self, texts: Sequence[str], lang: str) -> list[Window]:
        """One window per text (cut at the encoder's length), without gold: what inference reads."""
        return [self._windows(text, lang, None, first_only=True)[0] for text in texts]

    def document(self, doc: Document) -> list[Window]:
        """The windows of a corpus document, with gold from its hyperlinks (module docs)."""
        return self._windows(doc.text, doc.lang, doc.links, first_only=False)

    def documents(self, docs: Iterable[Document]) -> list[Window]:
        """The windows of many documents, in order."""
        return [w for doc in docs for w in self.document(doc)]

    def _windows(
        self, text: str, lang: str, links: Sequence[tuple[int, int, str]] | None, *, first_only: bool
    ) -> list[Window]:
        raise NotImplementedError


class CandidateSelector(WindowSource):
    """Spans, candidates and gold of texts and corpus documents for a knowledge layer (module docs).

    Args:
        tokenizer: the encoder's tokenizer (its ``words`` and ``max_length`` are used).
        index: the kb's mention index (spans and candidates with priors).
        key_to_row: entity key -> row of the layer's entity table (``EntityTable.key_to_row``).
        max_candidates: candidates kept per span, best prior first (KnowBert: 30).
        max_span_words: the longest detected span, in words (:func:`span_words`).
        max_length: word pieces per window, ``<s>``/``</s>`` included (default: the tokenizer's).
        estimator: estimates link probabilities the kb has no statistics for (for NULL gold).
        null_below: a detected span with a lower link probability is surely not a link (gold NULL).
    """

    def __init__(
        self,
        tokenizer: MlukeTokenizer,
        index: MentionIndex,
        key_to_row: Mapping[str, int],
        *,
        max_candidates: int = MAX_CANDIDATES,
        max_span_words: int = 5,
        max_length: int | None = None,
        estimator: LinkEstimator | None = None,
        null_below: float = NULL_BELOW,
    ) -> None:
        self.tokenizer = tokenizer
        self.index = index
        self.key_to_row = key_to_row
        self.max_candidates = max_candidates
        self.max_span_words = max_span_words
        self.max_length = tokenizer.max_length if max_length is None else max_length
        if self.max_length < 3:
            raise ValueError(f"max_length must leave room for <s>, </s> and a piece, got {self.max_length}")
        self.estimator = estimator
        self.null_below = null_below
        #: What was left out or unsupervised in every text read so far.
        self.stats = SelectionStats()

    # -- one text ------------------------------------------------------------------------------------
    def _windows(
        self, text: str, lang: str, links: Sequence[tuple[int, int, str]] | None, *, first_only: bool
    ) -> list[Window]:
        return _windows_of([self], [], text, lang, links, first_only=first_only)

    def _spans(
        self, text: str, lang: str, links: Sequence[tuple[int, int, str]] | None, stats: SelectionStats
    ) -> list[tuple[int, int, list[int], list[float], int]]:
        """``(start, end, rows, log priors, gold)`` of the text's spans (characters), ordered by position."""
        detected = self.index.detect(text, lang)
        if self.estimator is not None and links is not None:
            detected = self.estimator.fill(text, detected, lang)
        gold_links = {} if links is None else {(a, b): key for a, b, key in links if 0 <= a < b <= len(text)}
        found: dict[tuple[int, int], tuple[list[int], list[float], int]] = {}
        for (a, b), key in sorted(gold_links.items()):
            [mention] = self.index.mentions_at(text, [(a, b)], lang)
            rows, priors, keys = self._candidates(mention, stats)
            if not rows:
                stats.hyperlinks_without_candidates += 1
                continue
            stats.hyperlinks += 1
            if key in keys:
                stats.gold_found += 1
                found[(a, b)] = (rows, priors, keys.index(key))
            else:
                stats.gold_missing += 1
                found[(a, b)] = (rows, priors, IGNORE)
        for m in detected:
            if (m.start, m.end) in found:
                continue
            if span_words(m.surface) > self.max_span_words:
                stats.long_spans += 1
                continue
            rows, priors, _ = self._candidates(m, stats)
            if not rows:
                continue
            gold = self._unlinked_gold(m, gold_links) if links is not None else IGNORE
            stats.null_spans += gold == NULL
            found[(m.start, m.end)] = (rows, priors, gold)
        return [(a, b, *found[(a, b)]) for a, b in sorted(found)]

    def _candidates(self, mention: Mention, stats: SelectionStats) -> tuple[list[int], list[float], list[str]]:
        """Table rows, log priors and keys of the mention's candidates in the table, best prior first."""
        rows: list[int] = []
        priors: list[float] = []
        keys: list[str] = []
        ranked = sorted(mention.candidates, key=lambda c: (-c.prior, c.key))
        for c in ranked:
            row = self.key_to_row.get(c.key)
            if row is None:
                stats.candidates_missing_from_table += 1
                continue
            if len(rows) < self.max_candidates:
                rows.append(row)
                priors.append(math.log(max(c.prior, PRIOR_FLOOR)))
                keys.append(c.key)
        return rows, priors, keys

    def _unlinked_gold(self, m: Mention, links: Mapping[tuple[int, int], str]) -> int:
        """Gold of a detected span that is not a hyperlink (module docs)."""
        if any(a < m.end and m.start < b for a, b in links):
            return NULL
        lp = m.link_probability
        return NULL if lp is not None and lp < self.null_below else IGNORE


class MultiSelector(WindowSource):
    """The candidate selectors of several knowledge bases over the same windows: each text is cut at every knowledge
    base's span boundaries and tokenized once, each knowledge base's spans placed on those pieces (the first's in the
    window's own fields, the others' in ``Window.others``), and windows are cut where no span of any knowledge base
    straddles the cut where possible. With one selector it gives exactly that selector's windows.

    Args:
        selectors: a :class:`CandidateSelector` per knowledge base name, in the model's order (each with its own
            mention index and entity table rows; one tokenizer and one ``max_length`` for all).
    """

    def __init__(self, selectors: Mapping[str, CandidateSelector]) -> None:
        if not selectors:
            raise ValueError("MultiSelector needs at least one candidate selector")
        self.selectors = dict(selectors)
        first = next(iter(self.selectors.values()))
        if any(s.tokenizer is not first.tokenizer or s.max_length != first.max_length for s in self.selectors.values()):
            raise ValueError("the candidate selectors of one model must share its tokenizer and max_length")

    @property
    def stats(self) -> dict[str, SelectionStats]:
        """What each knowledge base's selector left out or could not supervise, by name."""
        return {name: s.stats for name, s in self.selectors.items()}

    def _windows(
        self, text: str, lang: str, links: Sequence[tuple[int, int, str]] | None, *, first_only: bool
    ) -> list[Window]:
        names = list(self.selectors)
        return _windows_of(list(self.selectors.values()), names[1:], text, lang, links, first_only=first_only)


def _windows_of(
    selectors: Sequence[CandidateSelector],
    other_names: Sequence[str],
    text: str,
    lang: str,
    links: Sequence[tuple[int, int, str]] | None,
    *,
    first_only: bool,
) -> list[Window]:
    """The windows of one text with the spans of every selector's knowledge base (the first's in the window's fields,
    the others' under ``other_names``)."""
    first = selectors[0]
    per_kb = [sel._spans(text, lang, links, sel.stats) for sel in selectors]
    if len(per_kb) == 1:
        char_spans = [(a, b) for a, b, *_ in per_kb[0]]
    else:
        char_spans = sorted({(a, b) for spans in per_kb for a, b, *_ in spans})
    [(ids, offsets, piece_spans)] = encode_with_spans(first.tokenizer.words, [text], [char_spans])
    at = dict(zip(char_spans, piece_spans))
    limit = first.max_length - 2
    cuts = [(0, min(len(ids), limit))] if first_only else _window_cuts(len(ids), piece_spans, limit)
    out = []
    for lo, hi in cuts:
        win = Window(
            lang,
            [first.tokenizer.bos_id, *ids[lo:hi], first.tokenizer.eos_id],
            [(0, 0), *offsets[lo:hi], (0, 0)],
            [],
            [],
            [],
            gold=None if links is None else [],
        )
        for k, (sel, spans) in enumerate(zip(selectors, per_kb)):
            target: Window | KbSpans = win if k == 0 else KbSpans(gold=None if links is None else [])
            _place(target, spans, at, lo, hi, sel.stats)
            if k:
                win.others[other_names[k - 1]] = cast(KbSpans, target)
        out.append(win)
    for sel, spans in zip(selectors, per_kb):
        sel.stats.windows += len(out)
        if first_only:  # spans beyond the text's one window
            sel.stats.cut_spans += sum(1 for a, b, *_ in spans if at[(a, b)][0] >= cuts[0][1])
    return out


def _place(
    target: Window | KbSpans,
    spans: Sequence[tuple[int, int, list[int], list[float], int]],
    at: Mapping[tuple[int, int], tuple[int, int]],
    lo: int,
    hi: int,
    stats: SelectionStats,
) -> None:
    """Put the spans (characters, rows, priors, gold) that lie inside pieces ``[lo, hi)`` into ``target``."""
    for a, b, rows, priors, gold in spans:
        s, e = at[(a, b)]
        if s >= hi or e <= lo:
            continue
        if s < lo or e > hi or e <= s:
            stats.cut_spans += 1
            continue
        target.spans.append((s - lo + 1, e - lo))  # +1 for <s>; end inclusive
        target.char_spans.append((a, b))
        target.entity_ids.append(rows)
        target.log_prior.append(priors)
        if target.gold is not None:
            target.gold.append(gold)
    stats.spans += len(target.spans)


def _window_cuts(n: int, spans: Sequence[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """Consecutive ``[lo, hi)`` piece ranges of at most ``limit`` pieces covering ``0 .. n``; each cut falls
    where no span straddles it if such a place exists in the window's second half."""
    inside = [False] * (n + 1)  # inside[c]: a span covers pieces c - 1 and c
    for s, e in spans:
        for c in range(s + 1, min(e, n + 1)):
            inside[c] = True
    out = []
    lo = 0
    while True:
        hi = min(n, lo + limit)
        if hi < n:
            best = next((c for c in range(hi, lo + limit // 2, -1) if not inside[c]), hi)
            hi = best
        out.append((lo, hi))
        if hi >= n:
            return out
        lo = hi
