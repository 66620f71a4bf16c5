"""Masked-LM masking for KnowBert training (Peters et al., 2019, §3.4): BERT's 15% of word pieces, 80% <mask> /
10% a random piece / 10% unchanged, chosen in units that never split a candidate span, and no leakage of the
masked words through the kb: every span that overlaps a masked piece gets its candidates replaced by the entity
table's [MASK] row (one candidate, prior 1) and no linking supervision.

Units: a whole word (pieces from one ``▁`` piece to the next, as in our pretraining's whole-word masking) or,
with ``whole_spans``, the whole run of words that overlapping candidate spans cover: the issue's "whole candidate
spans masked". The reference implementation masks single word pieces and then treats the overlapping spans
80/10/10; the paper replaces them all, which we follow (otherwise the entity names of a masked word would be
visible through its candidates one time in ten).

The "0.8/0.2" of the issue is not part of masking: it is KnowBert's 4:1 ratio of masked-LM batches to
entity-linking batches (appendix A.1), drawn per step by :mod:`mluke.knowbert.training`.

Each window is masked by its own generator (seeded by the caller from run seed, step and position), so the
masks do not depend on batching or on a resume.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mluke.knowbert.batch import IGNORE
from mluke.knowbert.windows import KbSpans, Window
from mluke.pretraining.batching import Vocabulary

if TYPE_CHECKING:
    from mluke.models.tokenizer import MlukeTokenizer


@dataclass(frozen=True)
class MaskingOptions:
    """How much and how to mask (BERT's defaults)."""

    word_prob: float = 0.15  #: share of word pieces to predict
    mask_share: float = 0.8  #: ... replaced by <mask>
    random_share: float = 0.1  #: ... replaced by a random piece (the rest stay unchanged)
    whole_words: bool = True  #: mask whole words, never a piece alone
    whole_spans: bool = True  #: mask the words a candidate span covers together

    def __post_init__(self) -> None:
        if not 0.0 <= self.word_prob <= 1.0 or self.mask_share < 0 or self.random_share < 0:
            raise ValueError(f"masking shares must be in [0, 1]: {self}")
        if self.mask_share + self.random_share > 1.0:
            raise ValueError(f"mask_share + random_share must be at most 1: {self}")


#: Scripts written without spaces between words: each of their pieces is a unit of its own (a SentencePiece
#: "word", from one ``▁`` to the next, can be a whole Japanese sentence).
_UNSPACED = re.compile(
    "[\\u0e00-\\u0eff\\u1000-\\u109f\\u1780-\\u17ff\\u3000-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff"
    "\\uff00-\\uffef]"
)


@dataclass(frozen=True)
class MaskVocabulary:
    """What masking reads of the word vocabulary, per word id."""

    unit_starts: np.ndarray  #: bool: the piece starts a unit (a ``▁`` piece, a special, a piece of an unspaced script)
    special: np.ndarray  #: bool: never masked nor drawn as a random piece
    mask_id: int

    @classmethod
    def from_tokenizer(cls, tokenizer: MlukeTokenizer) -> MaskVocabulary:
        """From an mLUKE/XLM-R tokenizer (our pretraining's :class:`~mluke.pretraining.batching.Vocabulary`,
        plus the unspaced scripts)."""
        base = Vocabulary.from_tokenizer(tokenizer)
        unspaced = np.array(
            [bool(_UNSPACED.search(tokenizer.words.id_to_token(i) or "")) for i in range(len(base.word_starts))]
        )
        return cls(base.word_starts | unspaced, base.special_words, base.mask_word)


def masking_units(window: Window, vocab: MaskVocabulary, options: MaskingOptions) -> np.ndarray:
    """The unit of each piece of ``window`` (-1: never masked: ``<s>``, ``</s>``, special pieces); see module docs."""
    ids = np.asarray(window.input_ids, dtype=np.int64)
    n = len(ids)
    maskable = ~vocab.special[ids]
    maskable[0] = maskable[-1] = False
    starts = vocab.unit_starts[ids].copy() if options.whole_words else np.ones(n, bool)
    starts |= np.concatenate([[True], ~maskable[:-1]])  # a piece after <s> or a special starts a unit ...
    spans = [*window.spans, *(span for kb in window.others.values() for span in kb.spans)]  # every knowledge base's
    if options.whole_spans and spans:
        joined = np.zeros(n + 1, np.int64)  # joined[i] > 0: pieces i - 1 and i are in one unit
        for s, e in spans:  # the span, widened to whole words on both sides
            a, b = s, e
            while a > 1 and not starts[a]:
                a -= 1
            while b + 2 < n and not starts[b + 1]:
                b += 1
            joined[a + 1 : b + 1] += 1
        starts &= joined[:n] == 0  # ... except inside a span (an <unk> in a name)
    starts &= maskable
    unit = np.cumsum(starts) - 1
    unit[~maskable] = -1
    return np.asarray(unit)


def mask_window(
    window: Window,
    rng: np.random.Generator,
    vocab: MaskVocabulary,
    mask_row: int,
    options: MaskingOptions | None = None,
    *,
    other_mask_rows: Mapping[str, int] | None = None,
) -> Window:
    """``window`` with masked pieces, masked-LM ``labels`` and the candidates of every span that overlaps a masked
    piece replaced by ``mask_row`` (its gold: IGNORE). The input window is not changed.

    With several knowledge bases (``window.others``), masking units join the spans of all of them, and the spans of
    knowledge base ``name`` get ``other_mask_rows[name]`` (the [MASK] row of its own entity table)."""
    options = options or MaskingOptions()
    rows = dict(other_mask_rows or {})
    missing = sorted(set(window.others) - set(rows))
    if missing:
        raise ValueError(f"mask_window: no [MASK] row given for knowledge base(s) {missing} (other_mask_rows)")
    ids = np.asarray(window.input_ids, dtype=np.int64)
    unit = masking_units(window, vocab, options)
    n_units = int(unit.max()) + 1 if (unit >= 0).any() else 0
    labels = np.full(len(ids), IGNORE, np.int64)
    if n_units == 0 or options.word_prob == 0:
        return replace(window, labels=labels.tolist(), others={k: replace(v) for k, v in window.others.items()})
    sizes = np.bincount(unit[unit >= 0], minlength=n_units)
    target = max(1, round(options.word_prob * int(sizes.sum())))
    chosen = np.zeros(n_units, bool)
    covered = 0
    for u in rng.permutation(n_units):
        if covered >= target:
            break
        if covered and covered + sizes[u] > target * 1.5:
            continue  # a long span would overshoot the share by half: try a shorter unit
        chosen[u] = True
        covered += int(sizes[u])
    masked = (unit >= 0) & chosen[np.maximum(unit, 0)]
    labels[masked] = ids[masked]
    decision = rng.random(n_units)[np.maximum(unit, 0)]  # one decision per unit
    new_ids = ids.copy()
    new_ids[masked & (decision < options.mask_share)] = vocab.mask_id
    to_random = masked & (decision >= options.mask_share) & (decision < options.mask_share + options.random_share)
    if to_random.any():
        allowed = np.flatnonzero(~vocab.special)
        new_ids[to_random] = rng.choice(allowed, size=int(to_random.sum()))
    own = _masked_spans(window, masked, mask_row)
    others = {name: replace(kb, **_masked_spans(kb, masked, rows[name])) for name, kb in window.others.items()}
    return replace(window, input_ids=new_ids.tolist(), labels=labels.tolist(), **own, others=others)


def _masked_spans(part: Window | KbSpans, masked: np.ndarray, mask_row: int) -> dict[str, Any]:
    """The candidate fields of one knowledge base's spans with every span over a masked piece given ``mask_row``."""
    entity_ids, log_prior = list(part.entity_ids), list(part.log_prior)
    gold = None if part.gold is None else list(part.gold)
    for j, (s, e) in enumerate(part.spans):
        if masked[s : e + 1].any():
            entity_ids[j], log_prior[j] = [mask_row], [0.0]
            if gold is not None:
                gold[j] = IGNORE
    return {"entity_ids": entity_ids, "log_prior": log_prior, "gold": gold}
