"""Cloze-style reading comprehension (ReCoRD, LUKE section 4.4): model inputs and answer choice.

A row reads ``<s> query </s></s> passage </s>`` (XLM-R's pair layout) and its slots are the query's
``@placeholder`` (slot 0) and every entity mention of the passage (one slot each). With entity features each slot
is an entity [MASK] over its pieces; with word features its first and last pieces. The model scores each mention
against the placeholder (:class:`mluke.finetuning.models.TransferModel`, task ``"record"``) and the best mention's
text is the answer.

Long inputs are cut, not windowed, and what is cut is counted (:class:`RecordInputs`): a query longer than
``max_query_length`` pieces keeps the pieces around its placeholder; the passage keeps the pieces that fit in
``max_length``, and a mention that does not fit, or beyond ``max_entities`` slots, is dropped. A query whose
every gold mention is dropped cannot be answered right.

With knowbert features a row is a pair as a QA window is (:class:`RecordRow`): the query's kb mentions are placed on
the query's pieces and the passage's on the passage's, each in the query's language
(:func:`mluke.finetuning.knowledge.attach_knowledge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from kb.errors import OptionError
from mluke.finetuning.inputs import Row, Span
from mluke.models.encoding import encode_with_spans

if TYPE_CHECKING:
    from mluke.models.tokenizer import MlukeTokenizer

#: Input sizes of ReCoRD rows (LUKE fine-tuned ReCoRD with 512 pieces).
RECORD_DEFAULTS = {"max_length": 512, "max_query_length": 90, "max_entities": 128}


@dataclass
class RecordRow(Row):
    """One query's row: ``text``/``lang``/``piece_chars`` are the passage's part of the pair, ``question``,
    ``question_lang`` and ``question_chars`` (the query characters of each piece, ``(0, 0)`` outside the query) the
    query's, as in a QA window (:class:`mluke.finetuning.qa.QaRow`), for the knowledge layer's spans."""

    question: str = ""
    question_lang: str | None = None
    question_chars: list[Span] = field(default_factory=list)


@dataclass
class RecordInputs:
    """The rows of some queries (one per query, in order; ``items`` = [query index, index of each slot's mention])
    and what the cut lost: ``mentions`` in all, ``mentions_dropped`` (outside ``max_length`` or beyond
    ``max_entities``), ``answers_lost`` (queries with gold mentions, none of them kept)."""

    rows: list[RecordRow] = field(default_factory=list)
    mentions: int = 0
    mentions_dropped: int = 0
    answers_lost: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "queries": len(self.rows),
            "mentions": self.mentions,
            "mentions_dropped": self.mentions_dropped,
            "answers_lost": self.answers_lost,
        }


@dataclass(frozen=True)
class ClozeQuery:
    """One query as the model reads it: the query text and the character span of its placeholder, the passage and
    its entity mentions (character spans), and, for training and dev data, 1 for each mention that is a gold
    answer (else 0); ``lang``, the language of both (knowbert features find the kb's mentions per language)."""

    query: str
    placeholder: Span
    passage: str
    mentions: tuple[Span, ...]
    labels: tuple[int, ...] | None = None
    lang: str | None = None


def record_rows(
    tokenizer: MlukeTokenizer,
    items: Sequence[ClozeQuery],
    *,
    max_length: int = 512,
    max_query_length: int = 90,
    max_entities: int = 128,
) -> RecordInputs:
    """One row per query (see the module docs); the labels of the slots are those of ``items`` (else none).

    Args:
        tokenizer: the mLUKE or LUKE tokenizer.
        items: the queries.
        max_length: pieces per row.
        max_query_length: pieces of the query.
        max_entities: slots per row, the placeholder's included.

    Returns:
        The :class:`RecordInputs`.

    Raises:
        OptionError: sizes that leave no room for a passage.
    """
    if max_entities < 2 or max_query_length < 1 or max_length < 8:
        raise OptionError(
            f"max_length={max_length}, max_query_length={max_query_length}, max_entities={max_entities}: expected "
            "positive sizes, max_length of at least 8 and at least 2 entities (the placeholder and a mention)"
        )
    q_enc = encode_with_spans(tokenizer.words, [q.query for q in items], [[q.placeholder] for q in items])
    unique: dict[tuple[str, tuple[Span, ...]], int] = {}
    for q in items:
        unique.setdefault((q.passage, q.mentions), len(unique))
    p_enc = encode_with_spans(tokenizer.words, [t for t, _ in unique], [list(s) for _, s in unique])
    out = RecordInputs()
    for n, (q_ids, q_offsets, (ph,)) in enumerate(q_enc):
        p_ids, p_offsets, p_spans = p_enc[unique[items[n].passage, items[n].mentions]]
        labels = items[n].labels
        cut = max(0, ph[1] - max_query_length)
        q_ids = q_ids[cut : cut + max_query_length]
        head = [tokenizer.bos_id, *q_ids, tokenizer.eos_id, tokenizer.eos_id]
        room = max_length - len(head) - 1
        if room < 1:
            raise OptionError(
                f"query {n}: {len(q_ids)} pieces leave no room for the passage in max_length={max_length}"
            )
        slots, which, row_labels = [(ph[0] - cut + 1, ph[1] - cut + 1)], [n], [-100]
        gold = list(labels) if labels is not None else [0] * len(p_spans)
        for m, (s, e) in enumerate(p_spans):
            if e <= room and e > s and len(slots) < max_entities:
                slots.append((s + len(head), e + len(head)))
                which.append(m)
                row_labels.append(gold[m])
        out.mentions += len(p_spans)
        out.mentions_dropped += len(p_spans) - (len(slots) - 1)
        out.answers_lost += any(gold) and not any(row_labels[1:]) if labels is not None else 0
        ids = [*head, *p_ids[:room], tokenizer.eos_id]
        passage = [(0, 0)] * len(head) + list(p_offsets[:room]) + [(0, 0)]
        query = [(0, 0), *q_offsets[cut : cut + len(q_ids)]] + [(0, 0)] * (len(ids) - len(q_ids) - 1)
        row = RecordRow(ids, slots, [1] * len(slots), which, row_labels if labels is not None else [])
        row.text, row.lang, row.piece_chars = items[n].passage, items[n].lang, passage
        row.question, row.question_chars = items[n].query, query
        out.rows.append(row)
    return out


def best_mentions(rows: Sequence[Row], scores: Sequence[torch.Tensor]) -> list[int | None]:
    """The index of the best-scored mention of each row (``None`` for a row without any).

    Args:
        rows: :func:`record_rows` rows.
        scores: the model's scores of each row (one per mention slot after the placeholder, possibly padded).

    Returns:
        Per row, a mention index of its passage.
    """
    best: list[int | None] = []
    for row, row_scores in zip(rows, scores):
        n = len(row.slots) - 1
        best.append(row.items[1 + int(row_scores[:n].argmax())] if n > 0 else None)
    return best
