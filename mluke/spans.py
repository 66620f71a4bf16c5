"""Contextual span representations: one vector per character span of a text, read from any layer.

Three kinds (``features=``), as the mLUKE paper's analyses use them:

- ``"word"`` (mLUKE-W): the mean of the span's word-piece vectors, words only in the input;
- ``"entity"`` (mLUKE-E): the same mean, computed with an entity token over every span of the text in the
  input (the span's entity when it is given and in the model's vocabulary, else the entity [MASK]), so the
  words attend to the entities;
- ``"entity-token"``: the output vector of the entity token placed over the span (same input as ``"entity"``).

Texts are cut at span boundaries before tokenising (:func:`mluke.models.encoding.encode_with_spans`), so a span
always covers whole pieces. A text longer than ``max_length`` pieces is read in windows of ``max_length``
pieces centred on each span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
import torch
from tqdm.auto import tqdm

from kb.errors import OptionError, TextInputError, option
from mluke.finetuning.inputs import Row, batches, collate
from mluke.models.encoding import encode_with_spans

if TYPE_CHECKING:
    from kb.vocab import EntityVocab
    from mluke.models.devices import Device, DType
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource

#: A span's entity: its key (QID), a vocabulary id, or None ([MASK]).
EntityRef: TypeAlias = "str | int | None"

SpanFeatures = Literal["word", "entity", "entity-token"]
FEATURES = ("word", "entity", "entity-token")
Span = tuple[int, int]


def _check(
    texts: Sequence[str], spans: Sequence[Sequence[Span]], entities: Sequence[Sequence[EntityRef]] | None, features: str
) -> None:
    if features not in FEATURES:
        raise OptionError(
            f"{features}: expected one of {', '.join(FEATURES)}", options={"features": option("features", features)}
        )
    if isinstance(texts, str):
        raise TextInputError("texts: expected a list of texts, got one string (pass [text], with [spans])")
    if len(spans) != len(texts):
        raise OptionError(f"{len(texts)} texts but {len(spans)} span lists")
    if entities is not None and [len(e) for e in entities] != [len(s) for s in spans]:
        raise OptionError("entities must give one entity (or None) per span, text by text")
    for i, (text, text_spans) in enumerate(zip(texts, spans)):
        for s, e in text_spans:
            if not 0 <= s < e <= len(text):
                raise OptionError(f"text {i}: span ({s}, {e}) is empty or outside the text (length {len(text)})")


def _entity_id(vocab: EntityVocab, ref: EntityRef) -> int:
    """A vocabulary id for a span's entity: an int as is, a key looked up; unknown or None -> [MASK]."""
    if isinstance(ref, int):
        return ref
    found = vocab.id_of_key(ref) if isinstance(ref, str) else None
    return vocab.mask_id if found is None else found


def _rows(
    tokenizer: MlukeTokenizer,
    vocab: EntityVocab | None,
    texts: Sequence[str],
    spans: Sequence[Sequence[Span]],
    entities: Sequence[Sequence[EntityRef]] | None,
    max_length: int,
) -> list[Row]:
    """Model rows; ``row.items`` holds the global span number of each slot."""
    limit = max_length - 2
    rows: list[Row] = []
    number = 0
    for t, (ids, _, pieces) in enumerate(encode_with_spans(tokenizer.words, list(texts), [list(s) for s in spans])):
        refs = entities[t] if entities is not None else [None] * len(pieces)
        eids = [_entity_id(vocab, r) for r in refs] if vocab is not None else [1] * len(pieces)
        numbers = list(range(number, number + len(pieces)))
        number += len(pieces)
        if len(ids) <= limit:
            windows = [(0, numbers)]
        else:  # one window per span, centred on it; the spans inside it get their entity tokens too
            windows = []
            for k, (s, e) in enumerate(pieces):
                if e - s > limit:
                    raise OptionError(
                        f"text {t}: span {spans[t][k]} covers {e - s} pieces, more than max_length={max_length}"
                    )
                start = max(0, min(len(ids) - limit, (s + e) // 2 - limit // 2))
                windows.append((start, [numbers[k]]))
        for start, wanted in windows:
            inside = [k for k, (s, e) in enumerate(pieces) if s >= start and e <= start + limit]
            order = sorted(inside, key=lambda k: numbers[k] not in wanted)  # the wanted spans first
            rows.append(
                Row(
                    [tokenizer.bos_id, *ids[start : start + limit], tokenizer.eos_id],
                    [(pieces[k][0] - start + 1, pieces[k][1] - start + 1) for k in order],
                    [eids[k] for k in order],
                    [numbers[k] if numbers[k] in wanted else -1 for k in order],
                )
            )
    return rows


def span_vectors(
    model: ModelSource,
    texts: Sequence[str],
    spans: Sequence[Sequence[Span]],
    *,
    features: SpanFeatures = "word",
    entities: Sequence[Sequence[EntityRef]] | None = None,
    layer: int = -1,
    normalize: bool = False,
    batch_size: int = 32,
    max_length: int = 512,
    progress: bool = False,
    device: Device = None,
    dtype: DType = None,
) -> np.ndarray:
    """Vectors of the character ``spans`` of ``texts``: a float32 array (total spans x hidden size), the spans of
    text 0 first, in the order given.

    ``model``: anything :func:`mluke.open_model` takes (``None``: the demo model). ``entities``: per text, per
    span, an entity key (QID), a vocabulary id or ``None`` ([MASK]); used by the entity kinds only. ``layer``:
    0 is the embeddings, 1..L the layers, negative counts from the last (default: the last layer).
    ``normalize``: L2-normalise each vector (cosine similarity becomes an inner product). ``device`` /
    ``dtype``: where and in which precision the model runs (:mod:`mluke.models.devices`); vectors are float32.
    """
    from mluke.opening import open_model

    _check(texts, spans, entities, features)
    net, tokenizer, vocab = open_model(model, device=device, dtype=dtype)
    if features != "word" and vocab is None:
        raise OptionError(f"features={features!r} needs a model with an entity vocabulary; this one has none")
    layers = net.config.num_hidden_layers
    if not -layers - 1 <= layer <= layers:
        raise OptionError(f"layer {layer} does not exist: the model has the embeddings (0) and layers 1..{layers}")
    rows = _rows(tokenizer, vocab, texts, spans, entities, max_length)
    total = sum(len(s) for s in spans)
    out = np.zeros((total, net.config.hidden_size), dtype=np.float32)
    device = next(net.parameters()).device
    order = sorted(range(len(rows)), key=lambda r: len(rows[r].ids))
    bar = tqdm(total=len(rows), desc="span vectors", unit="row", disable=not progress)
    with torch.inference_mode():
        for group in batches(rows, batch_size, order=order):
            batch = {
                k: v.to(device)
                for k, v in collate(
                    group, pad_id=tokenizer.pad_id, max_mention_length=tokenizer.max_mention_length
                ).items()
            }
            inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
            if features != "word":
                inputs.update(
                    entity_ids=batch["entity_ids"],
                    entity_position_ids=batch["entity_position_ids"],
                    entity_attention_mask=batch["entity_attention_mask"],
                )
            result = net.luke(**inputs, output_hidden_states=True, return_dict=True)
            if features == "entity-token":
                vectors = result.entity_hidden_states[layer]
            else:
                words = result.hidden_states[layer]  # (rows, width, hidden)
                positions = torch.arange(words.shape[1], device=device)
                inside = (
                    (positions[None, None] >= batch["slot_start"][..., None])
                    & (positions[None, None] <= batch["slot_end"][..., None])
                ).to(words.dtype)
                vectors = torch.einsum("rsw,rwh->rsh", inside, words) / inside.sum(-1, keepdim=True).clamp(min=1)
            vectors = vectors.float().cpu().numpy()
            for r, row in enumerate(group):
                for k, number in enumerate(row.items):
                    if number >= 0:
                        out[number] = vectors[r, k]
            bar.update(len(group))
    bar.close()
    if normalize:
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out
