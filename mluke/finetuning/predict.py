"""Predictions of fine-tuned models: NER spans (greedy decoding), relation labels, entity types and ReCoRD
answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from mluke.finetuning.inputs import Row, Span, batches, collate, ner_rows, relation_rows, typing_rows
from mluke.finetuning.knowledge import attach_knowledge
from mluke.finetuning.models import TransferModel
from mluke.finetuning.record import RECORD_DEFAULTS, ClozeQuery, best_mentions, record_rows
from mluke.models.devices import model_device, to_device

if TYPE_CHECKING:
    from mluke.models.tokenizer import MlukeTokenizer


def decode_spans(scored: Sequence[tuple[int, int, int, float]]) -> list[tuple[int, int, int]]:
    """Greedy decoding: candidates, the best first, each kept unless it overlaps one already kept.

    Args:
        scored: ``(first word, end word, label, score)`` candidates.

    Returns:
        ``(first word, end word, label)`` sorted by position.
    """
    taken: list[tuple[int, int, int]] = []
    used: set[int] = set()
    for start, end, label, _ in sorted(scored, key=lambda c: (-c[3], c[0], c[1])):
        if used.isdisjoint(range(start, end)):
            taken.append((start, end, label))
            used.update(range(start, end))
    return sorted(taken)


@torch.inference_mode()
def predict_spans(
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    sentences: Sequence[Sequence[str]],
    langs: Sequence[str | None],
    *,
    batch_size: int = 16,
) -> list[list[tuple[int, int, str]]]:
    """Entity spans of each sentence of words: every span scored, those whose best label is an entity type
    decoded greedily by probability.

    Args:
        model: a NER model.
        tokenizer: its tokenizer.
        sentences: the words of each sentence.
        langs: the language of each sentence.
        batch_size: rows per forward pass.

    Returns:
        Per sentence, ``(first word, end word, type)`` spans.
    """
    model.eval()
    settings = model.settings
    rows = ner_rows(
        tokenizer,
        sentences,
        langs,
        features=model.features,
        max_span_pieces=settings.get("max_span_pieces", 16),
        max_entities=settings.get("max_entities", 128),
    )
    attach_knowledge(model, tokenizer, rows)  # knowbert features: each sentence's spans and candidates
    found: list[list[tuple[int, int, int, float]]] = [[] for _ in sentences]
    by_size = sorted(range(len(rows)), key=lambda i: (-len(rows[i].slots), -len(rows[i].ids)))  # less padding
    device = model_device(model)
    for part in batches(rows, batch_size, order=by_size):
        probs = torch.softmax(model(to_device(collate(part, pad_id=tokenizer.pad_id), device)).float(), dim=-1).cpu()
        best, label = probs.max(dim=-1)
        for r, row in enumerate(part):
            for k, (n, i, j) in enumerate(row.items):
                if int(label[r, k]) != 0:
                    found[n].append((i, j, int(label[r, k]), float(best[r, k])))
    return [[(s, e, model.labels[l]) for s, e, l in decode_spans(c)] for c in found]


@torch.inference_mode()
def predict_relations(
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    texts: Sequence[str],
    pairs: Sequence[tuple[Span, Span]],
    *,
    batch_size: int = 16,
    langs: Sequence[str | None] | None = None,
) -> list[str]:
    """The label of each (head, tail) character-span pair in its text.

    Args:
        model: a relation model.
        tokenizer: its tokenizer.
        texts: the text of each example.
        pairs: the (head, tail) character spans of each example.
        batch_size: rows per forward pass.
        langs: the language of each example (needed with knowbert features).

    Returns:
        The predicted label of each example.
    """
    model.eval()
    rows = attach_knowledge(
        model, tokenizer, relation_rows(tokenizer, texts, pairs, features=model.features, langs=langs)
    )
    return [model.labels[int(scores.argmax())] for scores in _row_scores(model, tokenizer, rows, batch_size)]


@torch.inference_mode()
def predict_types(
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    texts: Sequence[str],
    spans: Sequence[Span],
    *,
    batch_size: int = 16,
    threshold: float = 0.5,
    langs: Sequence[str | None] | None = None,
) -> list[list[str]]:
    """The types of each mention: those whose sigmoid probability exceeds ``threshold`` (LUKE: 0.5).

    Args:
        model: a typing model.
        tokenizer: its tokenizer.
        texts: the text of each example.
        spans: the mention's character span in each text.
        batch_size: rows per forward pass.
        threshold: the probability above which a type is predicted.
        langs: the language of each example (needed with knowbert features).

    Returns:
        The predicted types of each example, in the model's label order (possibly none).
    """
    model.eval()
    rows = attach_knowledge(model, tokenizer, typing_rows(tokenizer, texts, spans, langs=langs))
    return [
        [model.labels[i] for i, p in enumerate(torch.sigmoid(scores).tolist()) if p > threshold]
        for scores in _row_scores(model, tokenizer, rows, batch_size)
    ]


@torch.inference_mode()
def predict_record(
    model: TransferModel, tokenizer: MlukeTokenizer, items: Sequence[ClozeQuery], *, batch_size: int = 16
) -> tuple[list[Span | None], dict[str, int]]:
    """The answer mention of each ReCoRD query: the passage mention scored best against the placeholder.

    Args:
        model: a ReCoRD model (task ``"record"``).
        tokenizer: its tokenizer.
        items: the queries (their labels, when given, are only counted: ``answers_lost``; with knowbert features
            each needs its ``lang``).
        batch_size: rows per forward pass.

    Returns:
        Per query the chosen mention's span (``None`` when every mention was cut off), and the counts of
        :meth:`mluke.finetuning.record.RecordInputs.counts` (what the input sizes cut off).
    """
    model.eval()
    sizes = {k: int(model.settings.get(k, v)) for k, v in RECORD_DEFAULTS.items()}
    inputs = record_rows(tokenizer, items, **sizes)
    attach_knowledge(model, tokenizer, inputs.rows)  # knowbert features: the query's and the passage's kb spans
    chosen = best_mentions(inputs.rows, _row_scores(model, tokenizer, inputs.rows, batch_size))
    return [items[n].mentions[m] if m is not None else None for n, m in enumerate(chosen)], inputs.counts()


def _row_scores(
    model: TransferModel, tokenizer: MlukeTokenizer, rows: Sequence[Row], batch_size: int
) -> list[torch.Tensor]:
    """The model's (float, CPU) scores of each row, in row order; batches hold rows of similar length."""
    by_size = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))  # less padding
    out: dict[int, torch.Tensor] = {}
    for k in range(0, len(rows), batch_size):
        part = by_size[k : k + batch_size]
        batch = to_device(collate([rows[i] for i in part], pad_id=tokenizer.pad_id), model_device(model))
        out.update(zip(part, model(batch).float().cpu()))
    return [out[i] for i in range(len(rows))]
