"""Model inputs for fine-tuning and inference: span enumeration for NER, marked pairs for relation
extraction, one mention per row for entity typing, and the padded tensors of a batch.

Texts are cut at every span boundary before tokenising (:func:`mluke.models.encoding.encode_with_spans`), as
the pretraining corpus was, so a word (or a mention) always covers whole pieces. Positions below are
piece positions in the model input, ``<s>`` included.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import torch

from mluke.models.encoding import encode_with_spans, insert_markers

if TYPE_CHECKING:
    from mluke.knowbert.candidates import Window
    from mluke.models.tokenizer import MlukeTokenizer

#: Languages whose words are written without spaces between them (characters are words in PAN-X).
NO_SPACE = frozenset({"ja", "zh", "th"})

Span = tuple[int, int]


def join_words(words: Sequence[str], lang: str | None) -> tuple[str, list[Span]]:
    """The text of ``words`` and each word's character span.

    Args:
        words: the words of one sentence.
        lang: their language: no separator in ja, zh and th, else one space.

    Returns:
        ``(text, spans)``.
    """
    sep = "" if lang in NO_SPACE else " "
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + len(sep)
    return sep.join(words), spans


@dataclass
class Row:
    """One model input row: word pieces, and per slot either an entity [MASK] over piece positions (NER-E),
    first/last piece positions (NER-W, RE-W) or an entity over a mention (RE-E); ``items`` says what each
    slot is (``(sentence, first word, end word)`` for NER, the example index for RE)."""

    ids: list[int]
    slots: list[Span] = field(default_factory=list)  # piece positions [start, end) in ids
    entity_ids: list[int] = field(default_factory=list)  # per slot, for entity features (0 = padding)
    items: list[Any] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    #: the text the row was made from, its language and each piece's characters in it ((0, 0): <s>, </s>, markers),
    #: for the knowledge layer's spans (``knowbert`` features, :mod:`mluke.finetuning.knowledge`)
    text: str = ""
    lang: str | None = None
    piece_chars: list[Span] = field(default_factory=list)
    knowledge: Window | None = None  #: the row's spans and candidates (a :class:`mluke.knowbert.Window`), when attached


def _with_specials(
    tokenizer: MlukeTokenizer, ids: list[int], spans: list[Span], max_length: int
) -> tuple[list[int], list[Span]]:
    """``<s> ids </s>`` cut to ``max_length``; spans shifted by one, those cut off left out (as ``(-1, -1)``)."""
    limit = max_length - 2
    kept = [(s + 1, e + 1) if e <= limit else (-1, -1) for s, e in spans]
    return [tokenizer.bos_id, *ids[:limit], tokenizer.eos_id], kept


def _row_offsets(offsets: Sequence[Span], max_length: int) -> list[Span]:
    """Character offsets of ``<s> pieces </s>`` cut as :func:`_with_specials` cuts the pieces."""
    return [(0, 0), *offsets[: max_length - 2], (0, 0)]


def ner_rows(
    tokenizer: MlukeTokenizer,
    sentences: Sequence[Sequence[str]],
    langs: Sequence[str | None],
    *,
    features: str,
    max_span_pieces: int = 16,
    max_entities: int = 128,
    max_length: int = 512,
    gold: Sequence[Sequence[tuple[int, int, str]]] | None = None,
    label_ids: dict[str, int] | None = None,
) -> list[Row]:
    """Rows for span NER: every span of at most ``max_span_pieces`` pieces made of whole words.

    Words cut off by ``max_length`` get no span.

    Args:
        tokenizer: the mLUKE tokenizer.
        sentences: the words of each sentence.
        langs: the language of each sentence.
        features: ``"word"``: one row per sentence, a slot per span (its first and last piece). ``"entity"``:
            an entity [MASK] per span over its pieces, all spans of a sentence in one row, or several rows when a
            sentence has more than ``max_entities`` spans.
        max_span_pieces: the longest span, in pieces.
        max_entities: entity tokens per row.
        max_length: pieces per row.
        gold: the gold spans of each sentence (training).
        label_ids: with ``gold``, the id of each type (0 = not an entity).

    Returns:
        The rows, in sentence order.
    """
    texts, word_spans = zip(*(join_words(w, l) for w, l in zip(sentences, langs))) if sentences else ((), ())
    rows: list[Row] = []
    for n, (ids, offsets, pieces) in enumerate(encode_with_spans(tokenizer.words, list(texts), list(word_spans))):
        ids, pieces = _with_specials(tokenizer, ids, pieces, max_length)
        source = {"text": texts[n], "lang": langs[n], "piece_chars": _row_offsets(offsets, max_length)}
        truth = {(s, e): label_ids[t] for s, e, t in gold[n]} if gold is not None and label_ids else {}
        slots, items, labels = [], [], []
        for i in range(len(pieces)):
            if pieces[i][0] < 0:
                break
            for j in range(i + 1, len(pieces) + 1):
                if pieces[j - 1][0] < 0 or pieces[j - 1][1] - pieces[i][0] > max_span_pieces:
                    break
                slots.append((pieces[i][0], pieces[j - 1][1]))
                items.append((n, i, j))
                labels.append(truth.get((i, j), 0))
        step = max_entities if features == "entity" else max(1, len(slots))
        for k in range(0, max(1, len(slots)), step):
            part = slice(k, k + step)
            rows.append(Row(ids, slots[part], [1] * len(slots[part]), items[part], labels[part], **source))
    return rows


def relation_rows(
    tokenizer: MlukeTokenizer,
    texts: Sequence[str],
    pairs: Sequence[tuple[Span, Span]],
    *,
    features: str,
    labels: Sequence[int] | None = None,
    max_length: int = 512,
    langs: Sequence[str | None] | None = None,
) -> list[Row]:
    """One row per example: the head and tail mentions as two slots.

    Args:
        tokenizer: the mLUKE tokenizer.
        texts: the text of each example.
        pairs: the (head, tail) character spans of each example.
        features: ``"entity"``: entities [HEAD] (id 1) and [TAIL] (id 2) over the mentions' pieces.
            ``"word"``: ``<ent>``/``<ent2>`` markers around head and tail; a slot is its opening marker.
        labels: the label id of each example (training).
        max_length: pieces per row.
        langs: the language of each example (kept on the rows).

    Returns:
        The rows, in example order.
    """
    rows = []
    encoded = encode_with_spans(tokenizer.words, list(texts), [list(p) for p in pairs])
    for n, (ids, offsets, spans) in enumerate(encoded):
        if features == "word":
            ids, offsets, spans = insert_markers(ids, offsets, spans, [tokenizer.ent_id, tokenizer.ent2_id])
            spans = [(s, s + 1) for s, _ in spans]  # the opening marker
        ids, spans = _with_specials(tokenizer, ids, spans, max_length)
        lang = langs[n] if langs is not None else None
        rows.append(
            Row(
                ids,
                spans,
                [1, 2],
                [n],
                [labels[n]] if labels is not None else [],
                texts[n],
                lang,
                _row_offsets(offsets, max_length),
            )
        )
    return rows


def typing_rows(
    tokenizer: MlukeTokenizer,
    texts: Sequence[str],
    spans: Sequence[Span],
    *,
    labels: Sequence[Sequence[int]] | None = None,
    max_length: int = 512,
    langs: Sequence[str | None] | None = None,
) -> list[Row]:
    """One row per example with the mention as its one slot: an entity [MASK] (id 1) over the mention's pieces
    (entity features) or its first and last pieces (word features); the same row serves both.

    A text too long for ``max_length`` loses pieces before the mention as needed to keep it (and a mention
    longer than a row, its end).

    Args:
        tokenizer: the mLUKE or LUKE tokenizer.
        texts: the text of each example.
        spans: the mention's character span in each text.
        labels: per example, 0 or 1 for each type (training).
        max_length: pieces per row.
        langs: the language of each example (kept on the rows).

    Returns:
        The rows, in example order.
    """
    rows = []
    for n, (ids, offsets, (span,)) in enumerate(encode_with_spans(tokenizer.words, list(texts), [[s] for s in spans])):
        cut = max(0, min(span[0], span[1] - (max_length - 2)))  # pieces dropped in front so that the mention fits
        ids, (slot,) = _with_specials(
            tokenizer, ids[cut:], [(span[0] - cut, min(span[1] - cut, max_length - 2))], max_length
        )
        lang = langs[n] if langs is not None else None
        gold = list(labels[n]) if labels is not None else []
        rows.append(Row(ids, [slot], [1], [n], gold, texts[n], lang, _row_offsets(offsets[cut:], max_length)))
    return rows


def collate(rows: Sequence[Row], *, pad_id: int, max_mention_length: int = 30) -> dict[str, torch.Tensor]:
    """Padded tensors of ``rows``.

    Args:
        rows: the rows of one batch.
        pad_id: the tokenizer's padding id.
        max_mention_length: pieces per entity position list.

    Returns:
        ``input_ids``, ``attention_mask``; ``entity_ids``, ``entity_position_ids`` (-1 padded),
        ``entity_attention_mask``; ``slot_start``/``slot_end`` (piece positions, last piece inclusive for
        ``slot_end``), ``slot_mask``; ``labels`` (-100 padded; as wide as the slots or the longest label list).
    """
    width = max(len(r.ids) for r in rows)
    slots = max(1, max(len(r.slots) for r in rows))
    label_width = max(slots, max(len(r.labels) for r in rows))
    mention = min(max_mention_length, max((e - s for r in rows for s, e in r.slots), default=1))
    batch = {
        "input_ids": torch.full((len(rows), width), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros(len(rows), width, dtype=torch.long),
        "entity_ids": torch.zeros(len(rows), slots, dtype=torch.long),
        "entity_position_ids": torch.full((len(rows), slots, mention), -1, dtype=torch.long),
        "entity_attention_mask": torch.zeros(len(rows), slots, dtype=torch.long),
        "slot_start": torch.zeros(len(rows), slots, dtype=torch.long),
        "slot_end": torch.zeros(len(rows), slots, dtype=torch.long),
        "labels": torch.full((len(rows), label_width), -100, dtype=torch.long),
    }
    for r, row in enumerate(rows):
        batch["input_ids"][r, : len(row.ids)] = torch.tensor(row.ids)
        batch["attention_mask"][r, : len(row.ids)] = 1
        for k, ((s, e), eid) in enumerate(zip(row.slots, row.entity_ids)):
            if s < 0:
                continue
            batch["entity_ids"][r, k] = eid
            batch["entity_attention_mask"][r, k] = 1
            positions = torch.arange(s, min(e, s + mention))
            batch["entity_position_ids"][r, k, : len(positions)] = positions
            batch["slot_start"][r, k], batch["slot_end"][r, k] = s, e - 1
        if row.labels:
            batch["labels"][r, : len(row.labels)] = torch.tensor(row.labels)
    batch["slot_mask"] = batch["entity_attention_mask"].bool()
    if any(row.knowledge is not None for row in rows):  # knowbert features: the rows' spans and candidates
        from mluke.knowbert.pieces import knowledge_inputs

        batch |= knowledge_inputs([cast("Window", row.knowledge) for row in rows], pad_id)  # attached to all rows
    return batch


def batches(rows: Sequence[Row], size: int, *, order: Sequence[int] | None = None) -> Iterator[list[Row]]:
    """``rows`` in groups of ``size``.

    Args:
        rows: the rows.
        size: rows per group (the last may be smaller).
        order: the order to take them in (default: as given).

    Returns:
        An iterator over the groups.
    """
    picked = [rows[i] for i in order] if order is not None else list(rows)
    for start in range(0, len(picked), size):
        yield picked[start : start + size]
