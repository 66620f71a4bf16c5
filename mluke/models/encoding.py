"""The encoded batch: what :class:`mluke.models.tokenizer.MlukeTokenizer` returns and how it is assembled from
tokenized texts (truncation of words and entities, ``<s>``/``</s>``, padding, the fine-tuning formats); the
checks of the texts, spans and task the tokenizer is given; and the cutting of texts at span boundaries
(:func:`encode_with_spans`, :func:`insert_markers`), which the span vectors, fine-tuning inputs and the
pretraining corpus share with the tokenizer."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tokenizers import Tokenizer

from kb.errors import MlukeError
from kb.vocab import EntityVocab

Task = Literal["entity_classification", "entity_pair_classification", "entity_span_classification"]
Span = tuple[int, int]


class EntityTruncationWarning(UserWarning):
    """Some entities were dropped or clipped because their span fell outside the kept pieces."""


class MlukeEncoding(dict):
    """The model inputs (a dict of tensors or lists) plus what the tokenizer did to get them.

    Keys: ``input_ids``, ``attention_mask`` (batch x words); ``entity_ids``,
    ``entity_attention_mask`` (batch x entities); ``entity_position_ids`` (batch x
    entities x max_mention_length, padded with -1); for span classification also
    ``entity_start_positions`` and ``entity_end_positions``; with
    ``return_token_type_ids=True``, ``token_type_ids`` and ``entity_token_type_ids`` (zeros).

    Attributes, one list per text: ``offsets`` (character span of each word
    position, ``(0, 0)`` for special tokens; for a pair, positions of the second
    text have offsets into ``text_pair``), ``entity_token_spans`` (word
    positions ``[start, end)`` of each kept entity), ``kept_entities`` (index of
    each kept entity among the given spans), ``dropped_entities`` and
    ``clipped_entities`` (indices), ``unknown_entities`` (indices of entities
    not in the vocabulary, given [UNK]).
    """

    offsets: list[list[tuple[int, int]]]
    entity_token_spans: list[list[Span]]
    kept_entities: list[list[int]]
    dropped_entities: list[list[int]]
    clipped_entities: list[list[int]]
    unknown_entities: list[list[int]]


@dataclass
class Example:
    """One text as the tokenizer sees it before assembling: word ids, offsets, its entities' word positions."""

    ids: list[int]
    offsets: list[tuple[int, int]]
    spans: list[Span]  # word positions [start, end) in ids (without <s>)
    entity_ids: list[int]
    entity_index: list[int]  # index of each entity among the user's spans
    unknown: list[int]


class TokenizerSettings(Protocol):
    """What :func:`assemble` reads of a tokenizer."""

    bos_id: int
    eos_id: int
    pad_id: int
    max_mention_length: int
    entity_vocab: EntityVocab | None


def require_vocab(vocab: EntityVocab | None) -> EntityVocab:
    """``vocab``, or an error saying that encoding entities needs one.

    Args:
        vocab: the tokenizer's entity vocabulary.

    Returns:
        ``vocab``.

    Raises:
        MlukeError: ``vocab`` is None.
    """
    if vocab is None:
        raise MlukeError("this tokenizer has no entity vocabulary; load it with one to encode entities")
    return vocab


def entities_in(
    ex: Example, n_ids: int, offset: int, first_index: int, max_mention_length: int
) -> list[tuple[int, int, Span, list[int], bool]]:
    """The entities of ``ex`` whose span starts within its first ``n_ids`` pieces: ``(index, id,
    word positions in the row, position ids, clipped)``; the row starts ``offset`` pieces before ``ex``."""
    out = []
    for k, ((s, e), eid) in enumerate(zip(ex.spans, ex.entity_ids)):
        if s >= n_ids or e <= s:
            continue
        e2 = min(e, n_ids, s + max_mention_length)
        positions = list(range(s + offset, e2 + offset))
        padded = positions + [-1] * (max_mention_length - len(positions))
        out.append((first_index + k, eid, (s + offset, e2 + offset), padded, e2 < e))
    return out


def assemble(
    tok: TokenizerSettings,
    examples: list[Example],
    pairs: list[Example] | None,
    truncation: bool,
    max_length: int,
    max_entity_length: int,
    padding: bool | str,
    task: Task | None,
    return_token_type_ids: bool = False,
) -> MlukeEncoding:
    """The model inputs of ``examples`` (and their ``pairs``): ``<s> A </s>`` or ``<s> A </s></s> B </s>`` per
    row, truncated to ``max_length`` pieces and ``max_entity_length`` entities, padded into a batch.

    Args:
        tok: the tokenizer's special word ids, mention length and entity vocabulary.
        examples: the texts, tokenized, with their entities.
        pairs: the pair texts (one per example), or None.
        truncation: cut what does not fit (else an error).
        max_length: the most word pieces in a row, special tokens included.
        max_entity_length: the most entities in a row.
        padding: ``True``/``"longest"``: to the longest row; ``"max_length"``: to the limits; ``False``: none.
        task: the fine-tuning format (span classification adds start/end positions).
        return_token_type_ids: add all-zero token type ids.

    Returns:
        The encoding, as lists; dropped and clipped entities are warned about (:class:`EntityTruncationWarning`).

    Raises:
        MlukeError: a row too long without ``truncation``, or rows of different lengths without ``padding``.
    """
    enc = MlukeEncoding()
    enc.offsets, enc.entity_token_spans, enc.kept_entities = [], [], []
    enc.dropped_entities, enc.clipped_entities, enc.unknown_entities = [], [], []
    rows_ids, rows_ent, rows_pos = [], [], []
    for i, ex in enumerate(examples):
        pair = pairs[i] if pairs is not None else None
        n_a, n_b = len(ex.ids), len(pair.ids) if pair is not None else 0
        limit = max_length - (4 if pair is not None else 2)
        if n_a + n_b > limit:
            if not truncation:
                raise MlukeError(
                    f"text {i} has {n_a + n_b + max_length - limit} pieces, more than "
                    f"max_length={max_length}; pass truncation=True"
                )
            n_a, n_b = longest_first(n_a, n_b, n_a + n_b - limit) if pair is not None else (limit, 0)
        # entities (A's, then B's), then the entity limit: A's first N, or longest_first for a pair
        found_a = entities_in(ex, n_a, 1, 0, tok.max_mention_length)
        found_b = entities_in(pair, n_b, n_a + 3, len(ex.spans), tok.max_mention_length) if pair is not None else []
        if len(found_a) + len(found_b) > max_entity_length:
            if pair is None:
                keep_a, keep_b = max_entity_length, 0
            else:
                excess = len(found_a) + len(found_b) - max_entity_length
                keep_a, keep_b = longest_first(len(found_a), len(found_b), excess)
            found_a, found_b = found_a[:keep_a], found_b[:keep_b]
        found = found_a + found_b
        kept = [k for k, *_ in found]
        n_given = len(ex.spans) + (len(pair.spans) if pair is not None else 0)
        unknown = set(ex.unknown) | ({len(ex.spans) + k for k in pair.unknown} if pair is not None else set())
        rows_ent.append([eid for _, eid, *_ in found])
        rows_pos.append([pos for *_, pos, _ in found])
        enc.entity_token_spans.append([span for _, _, span, _, _ in found])
        enc.kept_entities.append(kept)
        enc.dropped_entities.append(sorted(set(range(n_given)) - set(kept)))
        enc.clipped_entities.append([k for k, _, _, _, clipped in found if clipped])
        enc.unknown_entities.append([k for k in kept if k in unknown])
        if pair is None:
            rows_ids.append([tok.bos_id, *ex.ids[:n_a], tok.eos_id])
            enc.offsets.append([(0, 0), *ex.offsets[:n_a], (0, 0)])
        else:
            rows_ids.append([tok.bos_id, *ex.ids[:n_a], tok.eos_id, tok.eos_id, *pair.ids[:n_b], tok.eos_id])
            enc.offsets.append([(0, 0), *ex.offsets[:n_a], (0, 0), (0, 0), *pair.offsets[:n_b], (0, 0)])
    n_dropped = sum(map(len, enc.dropped_entities))
    n_clipped = sum(map(len, enc.clipped_entities))
    if n_dropped or n_clipped:
        warnings.warn(
            f"{n_dropped} entities dropped and {n_clipped} clipped: their spans fall beyond the kept pieces "
            f"(max_length={max_length}, max_entity_length={max_entity_length}, "
            f"max_mention_length={tok.max_mention_length}); see .dropped_entities / .clipped_entities",
            EntityTruncationWarning,
            stacklevel=3,
        )
    width = max(map(len, rows_ids)) if padding != "max_length" else max_length
    if not padding and len({len(r) for r in rows_ids}) > 1:
        raise MlukeError("texts of different lengths need padding=True to form a batch")
    enc["input_ids"] = [r + [tok.pad_id] * (width - len(r)) for r in rows_ids]
    enc["attention_mask"] = [[1] * len(r) + [0] * (width - len(r)) for r in rows_ids]
    if return_token_type_ids:
        enc["token_type_ids"] = [[0] * width for _ in rows_ids]
    if any(rows_ent) or task is not None:
        vocab = require_vocab(tok.entity_vocab)
        n = max_entity_length if padding == "max_length" else max(1, max(map(len, rows_ent)))
        enc["entity_ids"] = [r + [vocab.pad_id] * (n - len(r)) for r in rows_ent]
        enc["entity_attention_mask"] = [[1] * len(r) + [0] * (n - len(r)) for r in rows_ent]
        enc["entity_position_ids"] = [p + [[-1] * tok.max_mention_length] * (n - len(p)) for p in rows_pos]
        if return_token_type_ids:
            enc["entity_token_type_ids"] = [[0] * n for _ in rows_ent]
        if task == "entity_span_classification":
            enc["entity_start_positions"] = [[s for s, _ in sp] + [0] * (n - len(sp)) for sp in enc.entity_token_spans]
            enc["entity_end_positions"] = [
                [e - 1 for _, e in sp] + [0] * (n - len(sp)) for sp in enc.entity_token_spans
            ]
    return enc


def longest_first(len_a: int, len_b: int, remove: int) -> tuple[int, int]:
    """Lengths kept of a pair when ``remove`` items must go, by transformers' ``longest_first`` rule:
    the longer one loses up to the difference first; the rest is split in two, the first sequence
    losing the smaller half (the larger one if it was the longer)."""
    first = min(abs(len_a - len_b), remove)
    rest = remove - first
    if len_a > len_b:
        cut_a, cut_b = first + rest // 2, rest - rest // 2
    else:
        cut_a, cut_b = rest // 2, first + rest - rest // 2
    return max(0, len_a - cut_a), max(0, len_b - cut_b)


def is_texts(value: Any, single: bool) -> bool:
    """Whether ``value`` is a text (``single``) or a non-empty list of texts (a batch): a pair text, not spans."""
    if single:
        return isinstance(value, str)
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)


def batchify(value: Any, single: bool, n: int, name: str) -> list[Any]:
    """One list (or None) per text from what was given for one text (``single``) or a batch.

    Raises:
        MlukeError: a batch with a different number of lists than texts (``name`` is the argument).
    """
    if value is None:
        return [None] * n
    if single:
        return [list(value)]
    value = list(value)
    if len(value) != n:
        raise MlukeError(f"{name}: {len(value)} lists for {n} texts; give one list per text")
    return [None if v is None else list(v) for v in value]


def check_span(span: Any, text: str, i: int, j: int, name: str = "text") -> Span:
    """Span ``j`` of text ``i`` as a pair of ints inside ``text``.

    Raises:
        MlukeError: not a ``(start, end)`` pair, or empty or outside the text.
    """
    try:
        a, b = int(span[0]), int(span[1])
    except (TypeError, ValueError, IndexError):
        raise MlukeError(
            f"{name} {i}, entity span {j}: {span!r} is not a (start, end) pair of character offsets"
        ) from None
    if not 0 <= a < b <= len(text):
        raise MlukeError(
            f"{name} {i}, entity span {j}: ({a}, {b}) is not a non-empty span inside the {name} (length {len(text)})"
        )
    return a, b


def check_task(task: Task | None, spans: list[Span], i: int) -> None:
    """Refuse an unknown ``task`` or a number of spans the task cannot take (text ``i``).

    Raises:
        MlukeError: what is wrong.
    """
    need = {"entity_classification": 1, "entity_pair_classification": 2}.get(task or "")
    if task is not None and task not in (
        "entity_classification",
        "entity_pair_classification",
        "entity_span_classification",
    ):
        raise MlukeError(
            f"unknown task {task!r}: expected entity_classification, entity_pair_classification or "
            "entity_span_classification"
        )
    if need is not None and len(spans) != need:
        raise MlukeError(f"text {i}: task {task!r} needs exactly {need} entity span(s), got {len(spans)}")
    if task == "entity_span_classification" and not spans:
        raise MlukeError(f"text {i}: task 'entity_span_classification' needs at least one entity span")


def encode_with_spans(
    words: Tokenizer, texts: Sequence[str], spans: Sequence[Sequence[Span]]
) -> list[tuple[list[int], list[tuple[int, int]], list[Span]]]:
    """Word ids, character offsets and the word positions ``[start, end)`` of each span, per text.

    Each text is cut at its span boundaries (a space before a boundary goes with
    the following segment) and all segments of all texts are tokenized in one
    batch, as mLUKE's tokenizer and pretraining corpus do. Spans must lie inside
    their text (not checked here).
    """
    segments: list[str] = []
    seg_starts: list[int] = []
    plans: list[tuple[list[int], dict[int, int]]] = []
    for t, text_spans in zip(texts, spans):
        moved = {p: (p - 1 if p > 0 and t[p - 1] == " " else p) for s in text_spans for p in s}
        seg_idx = []
        cur = 0
        for q in [*sorted(set(moved.values())), len(t)]:
            if q > cur:
                seg_idx.append(len(segments))
                segments.append(t[cur:q])
                seg_starts.append(cur)
                cur = q
        plans.append((seg_idx, moved))
    encoded = words.encode_batch(segments, add_special_tokens=False) if segments else []
    out = []
    for t, text_spans, (seg_idx, moved) in zip(texts, spans, plans):
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        char2pos: dict[int, int] = {0: 0}
        for s in seg_idx:
            char2pos[seg_starts[s]] = len(ids)
            ids.extend(encoded[s].ids)
            offsets.extend((a + seg_starts[s], b + seg_starts[s]) for a, b in encoded[s].offsets)
        char2pos[len(t)] = len(ids)
        out.append((ids, offsets, [(char2pos[moved[a]], char2pos[moved[b]]) for a, b in text_spans]))
    return out


def insert_markers(
    ids: list[int], offsets: list[tuple[int, int]], spans: Sequence[Span], markers: Sequence[int]
) -> tuple[list[int], list[tuple[int, int]], list[Span]]:
    """Put marker piece ``markers[k]`` before and after span ``k`` (piece positions, non-overlapping); returns the
    new ids, offsets (markers at ``(0, 0)``) and each span widened to cover its two markers."""
    ids, offsets = list(ids), list(offsets)
    for s, e, m in sorted(((s, e, m) for (s, e), m in zip(spans, markers)), reverse=True):  # right to left
        ids[e:e] = [m]
        offsets[e:e] = [(0, 0)]
        ids[s:s] = [m]
        offsets[s:s] = [(0, 0)]
    new_spans = []
    for k, (s, e) in enumerate(spans):
        before = sum(2 for j, (s2, _) in enumerate(spans) if j != k and s2 < s)
        new_spans.append((s + before, e + before + 2))
    return ids, offsets, new_spans
