"""Extractive question answering: model inputs (the question and a window of the passage, with entity tokens
over linked names for mLUKE-E), answer positions, and span decoding.

Input rows read ``<s> question </s></s> passage window </s>`` (XLM-R's pair layout). A passage longer than
the room left by the question is cut into overlapping windows: each window starts ``doc_stride`` pieces
after the previous one. Texts are cut at the linked names' boundaries before tokenising (as for NER and RE),
in both feature kinds, so mLUKE-E and mLUKE-W see the same pieces. A training window that does not hold the
whole answer points at ``<s>`` (position 0), the usual SQuAD 1.1 practice; at inference only passage pieces
can start or end an answer, and the best span over all windows of a question wins.

A row is a pair of texts: :class:`QaRow` keeps the passage as the row's text (``text``, ``lang``, ``piece_chars``:
the passage characters of each piece, ``(0, 0)`` outside the window) and the question beside it (``question``,
``question_lang``, ``question_chars``), so that knowledge-enhanced features can place each text's kb mentions on
its own pieces (:func:`mluke.finetuning.knowledge.attach_knowledge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from kb.errors import OptionError
from mluke.finetuning.inputs import Row, collate
from mluke.models.encoding import encode_with_spans

#: ``(start, end, entity id)`` in characters of a question or passage.
LinkedName = tuple[int, int, int]


@dataclass
class QaRow(Row):
    """One window: ``example`` is the question's index, ``offsets[k]`` the passage characters of piece ``k``
    (``None`` outside the passage), ``start``/``end`` the answer's first and last piece (0 when outside);
    ``question``, ``question_lang`` and ``question_chars`` (the question characters of each piece, ``(0, 0)``
    outside the question) are the question's part of the pair (module docs)."""

    example: int = -1
    offsets: list[tuple[int, int] | None] = field(default_factory=list)
    start: int = 0
    end: int = 0
    question: str = ""
    question_lang: str | None = None
    question_chars: list[tuple[int, int]] = field(default_factory=list)


def _answer_pieces(offsets: Sequence[tuple[int, int]], answer: tuple[int, int]) -> tuple[int, int] | None:
    """First and last piece covering the answer's characters (``None`` when no piece does)."""
    a, b = answer
    inside = [k for k, (s, e) in enumerate(offsets) if e > a and s < b and e > s]
    return (inside[0], inside[-1]) if inside else None


def qa_rows(
    tokenizer,
    questions: Sequence[str],
    contexts: Sequence[str],
    *,
    features: str,
    question_names: Sequence[Sequence[LinkedName]] | None = None,
    context_names: Sequence[Sequence[LinkedName]] | None = None,
    answers: Sequence[tuple[int, int] | None] | None = None,
    max_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    max_entities: int = 64,
    langs: Sequence[str | None] | None = None,
    question_langs: Sequence[str | None] | None = None,
) -> list[QaRow]:
    """The windows of every (question, passage) pair; see the module docs.

    Args:
        tokenizer: the mLUKE tokenizer.
        questions: the question of each example.
        contexts: the passage of each example.
        features: ``"entity"`` (linked names get entity tokens) or ``"word"``.
        question_names: per example, the question's linked names (their boundaries cut the text in both kinds).
        context_names: per example, the passage's linked names.
        answers: per example, the answer's character span in the passage (training), else ``None``.
        max_length: pieces per window.
        doc_stride: pieces between window starts.
        max_query_length: the question's pieces kept.
        max_entities: entity tokens per row, the question's first.
        langs: per example, the passage's language (kept on the rows, for knowledge-enhanced features).
        question_langs: per example, the question's language (default: the passage's).

    Returns:
        The rows, each example's windows in order.

    Raises:
        OptionError: a question that leaves no room for the passage.
    """
    if max_query_length < 1 or doc_stride < 1 or max_length < 8:
        raise OptionError(
            f"max_length={max_length}, max_query_length={max_query_length}, doc_stride={doc_stride}: "
            "expected positive numbers, with room for a question and some passage in max_length"
        )
    n = len(questions)
    q_names = question_names if question_names is not None else [[] for _ in range(n)]
    c_names = context_names if context_names is not None else [[] for _ in range(n)]
    q_enc = encode_with_spans(tokenizer.words, list(questions), [[(s, e) for s, e, _ in names] for names in q_names])
    c_enc = encode_with_spans(tokenizer.words, list(contexts), [[(s, e) for s, e, _ in names] for names in c_names])
    rows: list[QaRow] = []
    c_langs = list(langs) if langs is not None else [None] * n
    q_langs = list(question_langs) if question_langs is not None else c_langs
    for i, ((q_ids, q_offsets, q_pieces), (c_ids, c_offsets, c_pieces)) in enumerate(zip(q_enc, c_enc)):
        q_ids = q_ids[:max_query_length]
        q_chars = [(0, 0), *q_offsets[: len(q_ids)], (0, 0), (0, 0)]  # the question's characters on ``head``
        head = [tokenizer.bos_id, *q_ids, tokenizer.eos_id, tokenizer.eos_id]
        room = max_length - len(head) - 1
        if room < 1:
            raise OptionError(
                f"question {i}: {len(q_ids)} pieces leave no room for the passage in max_length={max_length}"
            )
        chars = answers[i] if answers is not None else None
        answer = _answer_pieces(c_offsets, chars) if chars is not None else None
        q_slots = [
            ((s + 1, e + 1), eid) for (s, e), (_, _, eid) in zip(q_pieces, q_names[i]) if e <= len(q_ids) and e > s
        ]
        begin = 0
        while True:
            end = min(len(c_ids), begin + room)
            shift = len(head) - begin
            slots = list(q_slots) + [
                ((s + shift, e + shift), eid)
                for (s, e), (_, _, eid) in zip(c_pieces, c_names[i])
                if s >= begin and e <= end and e > s
            ]
            slots = slots[:max_entities] if features == "entity" else []
            window = list(c_offsets[begin:end])
            outside = [(0, 0)] * (end - begin + 1)
            row = QaRow(
                [*head, *c_ids[begin:end], tokenizer.eos_id],
                [s for s, _ in slots],
                [e for _, e in slots],
                text=contexts[i],
                lang=c_langs[i],
                piece_chars=[(0, 0)] * len(head) + window + [(0, 0)],
                example=i,
                offsets=[None] * len(head) + window + [None],
                question=questions[i],
                question_lang=q_langs[i],
                question_chars=q_chars + outside,
            )
            if answer is not None and begin <= answer[0] and answer[1] < end:
                row.start, row.end = answer[0] + shift, answer[1] + shift
            rows.append(row)
            if end >= len(c_ids):
                break
            begin += min(doc_stride, room)
    return rows


def collate_qa(rows: Sequence[QaRow], *, pad_id: int, max_mention_length: int = 30) -> dict[str, torch.Tensor]:
    """:func:`mluke.finetuning.inputs.collate` tensors plus ``start_positions``, ``end_positions`` and
    ``context_mask`` (the pieces an answer may use).

    Args:
        rows: the rows of one batch.
        pad_id: the tokenizer's padding id.
        max_mention_length: pieces per entity position list.

    Returns:
        The batch tensors.
    """
    batch = collate(rows, pad_id=pad_id, max_mention_length=max_mention_length)
    batch["start_positions"] = torch.tensor([r.start for r in rows], dtype=torch.long)
    batch["end_positions"] = torch.tensor([r.end for r in rows], dtype=torch.long)
    mask = torch.zeros_like(batch["input_ids"], dtype=torch.bool)
    for r, row in enumerate(rows):
        mask[r, : len(row.offsets)] = torch.tensor([o is not None for o in row.offsets])
    batch["context_mask"] = mask
    return batch


def best_spans(
    start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor, *, max_answer_length: int = 30
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row, the passage span ``start <= end < start + max_answer_length`` with the highest
    ``start_logit + end_logit``.

    Args:
        start_logits: (rows, pieces).
        end_logits: (rows, pieces).
        context_mask: (rows, pieces), true on the pieces an answer may use.
        max_answer_length: the longest answer, in pieces.

    Returns:
        ``(start, end, score)`` tensors of shape (rows,).
    """
    width = start_logits.shape[1]
    scores = start_logits[:, :, None] + end_logits[:, None, :]
    positions = torch.arange(width, device=scores.device)
    allowed = (positions[None, :] >= positions[:, None]) & (positions[None, :] < positions[:, None] + max_answer_length)
    allowed = allowed[None] & context_mask[:, :, None] & context_mask[:, None, :]
    scores = scores.masked_fill(~allowed, float("-inf")).flatten(1)
    best, flat = scores.max(dim=1)
    return flat // width, flat % width, best


@torch.inference_mode()
def predict_answers(
    model,
    tokenizer,
    rows: Sequence[QaRow],
    contexts: Sequence[str],
    *,
    batch_size: int = 16,
    max_answer_length: int = 30,
) -> list[tuple[str, float]]:
    """The best answer text of each passage (over all its windows) and its score.

    Args:
        model: a QA model.
        tokenizer: its tokenizer.
        rows: the windows of :func:`qa_rows`.
        contexts: the passage of each example.
        batch_size: rows per forward pass.
        max_answer_length: the longest answer, in pieces.

    Returns:
        ``(text, score)`` per example; ``("", -inf)`` for a question none of whose windows holds a passage piece.
    """
    model.eval()
    best: list[tuple[str, float]] = [("", float("-inf")) for _ in contexts]
    device = next(model.parameters()).device
    order = sorted(range(len(rows)), key=lambda k: -len(rows[k].ids))  # less padding
    for at in range(0, len(order), batch_size):
        part = [rows[k] for k in order[at : at + batch_size]]
        batch = {
            k: v.to(device)
            for k, v in collate_qa(
                part, pad_id=tokenizer.pad_id, max_mention_length=tokenizer.max_mention_length
            ).items()
        }
        logits = model(batch).float()
        starts, ends, scores = best_spans(
            logits[..., 0], logits[..., 1], batch["context_mask"], max_answer_length=max_answer_length
        )
        for row, s, e, score in zip(part, starts.tolist(), ends.tolist(), scores.tolist()):
            if score > best[row.example][1] and row.offsets[s] is not None and row.offsets[e] is not None:
                a, b = row.offsets[s][0], row.offsets[e][1]
                best[row.example] = (contexts[row.example][a:b].strip(), score)
    return best
