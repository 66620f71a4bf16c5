"""Fine-tuning heads on the mLUKE encoder: span NER, relation classification and entity typing, each with entity
features (mLUKE-E) or word features (mLUKE-W), as in section 4 of the mLUKE paper and section 4.1 of LUKE's.

- NER, entity: the last-layer vector of an entity [MASK] placed over the span.
- NER, word: the first and last piece vectors of the span, concatenated (no entity in the input).
- Relation, entity: entities [HEAD] and [TAIL] over the two mentions, their embeddings initialised from the
  entity [MASK]; their vectors concatenated.
- Relation, word: ``<ent>``/``<ent2>`` markers around head and tail; the vectors of the opening markers.
- Typing, entity: the last-layer vector of an entity [MASK] over the mention (as transformers'
  ``LukeForEntityClassification``); word: the mention's first and last piece vectors. Multi-label: one sigmoid
  per type, binary cross-entropy, a type predicted when its probability exceeds 0.5.
- ReCoRD (``"record"``), entity: an entity [MASK] at the query's ``@placeholder`` and one over every entity mention of
  the passage; a mention's score is the linear layer over [placeholder vector; mention vector] (LUKE section 4.4);
  word: the placeholder's and the mention's first and last piece vectors. Binary cross-entropy over the mentions
  (1 where the mention is a gold answer); the best mention is the answer.
- QA: start and end scores over the last-layer word vectors (:mod:`mluke.finetuning.qa` builds the rows); with
  entity features the input also holds an entity token for every linked name of the question and passage; with
  knowbert features the word vectors come through the knowledge layer, which reads the kb mentions of both.

The encoder keeps a small entity table of its own (NER, typing, ReCoRD: [PAD], [MASK]; relations: [PAD], [HEAD],
[TAIL]), copied from the pretrained [PAD] and [MASK] rows, so a fine-tuned model does not carry the 1.2M-entity
table. A linear layer over the features (after dropout) gives the label scores. A QA model with entity
features keeps the whole pretrained entity table (its linked entities can be any), frozen during fine-tuning so
that entities seen only in the training language do not drift away from the rest.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

import torch
from torch import Tensor, nn
from transformers import LukeConfig, LukeModel

from kb.errors import OptionError, option
from mluke.models.masked_lm import encode_entity_rows

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

Features = Literal["entity", "word", "knowbert"]
Task = Literal["ner", "re", "qa", "typing", "record"]


def check_features(features: str) -> str:
    """``features`` when it is ``"entity"`` (mLUKE-E), ``"word"`` (mLUKE-W) or ``"knowbert"`` (word features of a
    KnowBert model, :mod:`mluke.finetuning.knowledge`).

    Args:
        features: the feature kind asked for.

    Returns:
        ``features``, unchanged.

    Raises:
        OptionError: any other value.
    """
    if features not in ("entity", "word", "knowbert"):
        raise OptionError(
            "{features}: expected 'entity' (mLUKE-E), 'word' (mLUKE-W) or 'knowbert' (word features with a knowledge "
            "layer)",
            options={"features": option("features", features)},
        )
    return features


def encoder_from(pretrained: Any, entity_rows: list[int]) -> LukeModel:
    """A new ``LukeModel`` with the pretrained model's weights and an entity table of ``entity_rows``.

    Args:
        pretrained: the pretrained mLUKE model (the first item of a ``mluke.load`` bundle).
        entity_rows: vocabulary ids of the pretrained table, in order; row 0 is padding.

    Returns:
        The encoder.
    """
    config = copy.deepcopy(pretrained.config)
    config.entity_vocab_size = len(entity_rows)
    encoder = LukeModel(config, add_pooling_layer=False)
    table_key = "entity_embeddings.entity_embeddings.weight"
    state = {k: v for k, v in pretrained.luke.state_dict().items() if not k.startswith("pooler.") and k != table_key}
    missing, unexpected = encoder.load_state_dict(state, strict=False)
    if set(missing) != {table_key} or unexpected:
        raise OptionError(
            f"the pretrained encoder does not fit: missing {sorted(set(missing) - {table_key})}, "
            f"unexpected {sorted(unexpected)}"
        )
    with torch.no_grad():
        table = pretrained.luke.entity_embeddings.entity_embeddings.weight
        encoder.entity_embeddings.entity_embeddings.weight.copy_(table[entity_rows])
    return encoder


class TransferModel(nn.Module):
    """The mLUKE encoder with a linear classifier over entity or word features (see the module docs).

    ``labels``: the label set, index 0 being "no entity" (NER) or ``no_relation`` (relations) when present.
    ``forward(batch)`` takes :func:`mluke.finetuning.inputs.collate` tensors and returns
    (rows x slots x labels) span scores for NER, (rows x labels) pair scores for relations and type scores
    (logits of independent sigmoids) for typing, (rows x mention slots) answer scores for ReCoRD (slot 0, the
    placeholder, excluded).
    """

    def __init__(
        self,
        encoder: LukeModel,
        task: Task,
        features: Features,
        labels: list[str],
        *,
        dropout: float = 0.1,
        settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.luke = encoder
        self.task, self.features, self.labels = task, check_features(features), list(labels)
        self.settings = dict(settings or {})
        hidden = getattr(encoder, "encoder", encoder).config.hidden_size  # a KnowBertModel: its encoder's
        width = hidden * (1 if task == "qa" or (task in ("ner", "typing") and features == "entity") else 2)
        if task == "record":
            width = hidden * (2 if features == "entity" else 4)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(width, len(labels))

    @property
    def config(self) -> LukeConfig:
        return self.luke.config

    def features_of(self, batch: dict[str, Tensor]) -> Tensor:
        """(rows x slots x feature width) for NER, (rows x feature width) for relations and typing, (rows x
        pieces x hidden) for QA."""
        if self.task == "qa":
            if self.features != "entity":
                return self.word_states(batch)
            inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
            inputs |= {k: batch[k] for k in ("entity_ids", "entity_position_ids", "entity_attention_mask")}
            states: Tensor = self.luke(**inputs).last_hidden_state
            return states
        if self.features == "entity":
            states = encode_entity_rows(
                self.luke,
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                entity_ids=batch["entity_ids"],
                entity_position_ids=batch["entity_position_ids"],
                entity_attention_mask=batch["entity_attention_mask"],
            )
            if self.task == "typing":
                return states[:, 0]
            if self.task == "record":
                return _with_placeholder(states)
            return states if self.task == "ner" else states[:, :2].flatten(1)
        words = self.word_states(batch)
        first = torch.gather(words, 1, batch["slot_start"][..., None].expand(-1, -1, words.shape[-1]))
        if self.task == "re":
            return first[:, :2].flatten(1)
        last = torch.gather(words, 1, batch["slot_end"][..., None].expand(-1, -1, words.shape[-1]))
        both = torch.cat([first, last], dim=-1)
        if self.task == "record":
            return _with_placeholder(both)
        return both[:, 0] if self.task == "typing" else both

    def word_states(self, batch: dict[str, Tensor]) -> Tensor:
        """(rows x pieces x hidden): the last layer's word vectors without entity input (word features), through
        the knowledge layer with the batch's ``kb_*`` spans and candidates (knowbert features)."""
        if self.features == "knowbert":
            from mluke.knowbert.pieces import candidates_from_inputs

            candidates = candidates_from_inputs(batch, cast(Any, self.luke).names)
            knowing: Tensor = self.luke(batch["input_ids"], batch["attention_mask"], candidates).hidden_states
            return knowing
        output = self.luke(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        words: Tensor = output.last_hidden_state
        return words

    def forward(self, batch: dict[str, Tensor]) -> Tensor:
        scores: Tensor = self.classifier(self.dropout(self.features_of(batch)))
        return scores[..., 0] if self.task == "record" else scores

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Cross-entropy over the labelled slots (NER), examples (relations) or answer ends (QA: the mean of
        the start and end losses, padding excluded); binary cross-entropy over every type (typing: ``labels``
        holds each example's 0/1 per type) or over the mention slots (ReCoRD: 0/1 per slot after the placeholder's,
        -100 where nothing is scored)."""
        logits: Tensor = self(batch)
        if self.task == "typing":
            return nn.functional.binary_cross_entropy_with_logits(
                logits, batch["labels"][:, : logits.shape[-1]].to(logits.dtype)
            )
        if self.task == "record":
            labels = batch["labels"][:, 1 : 1 + logits.shape[1]]
            kept = labels >= 0
            if not kept.any():  # every mention of the batch cut off: nothing to learn (0, not the mean of nothing)
                return logits.sum() * 0.0
            return nn.functional.binary_cross_entropy_with_logits(logits[kept], labels[kept].to(logits.dtype))
        if self.task == "qa":
            logits = logits.masked_fill(batch["attention_mask"][..., None] == 0, torch.finfo(logits.dtype).min)
            return (
                nn.functional.cross_entropy(logits[..., 0], batch["start_positions"])
                + nn.functional.cross_entropy(logits[..., 1], batch["end_positions"])
            ) / 2
        labels = batch["labels"] if self.task == "ner" else batch["labels"][:, 0]
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


def _with_placeholder(slots: Tensor) -> Tensor:
    """(rows x slots x width) -> (rows x slots-1 x 2 width): slot 0's features beside those of every other slot."""
    return torch.cat([slots[:, :1].expand(-1, slots.shape[1] - 1, -1), slots[:, 1:]], dim=-1)


class HeadKeywords(TypedDict, total=False):
    """The keyword arguments of :class:`TransferModel` that :func:`new_model` passes on: ``dropout`` before the
    classifier (0.1) and ``settings`` stored with the model (input settings such as ``max_span_pieces``; its
    ``seed``, default 0, also seeds the classifier's initial weights)."""

    dropout: float
    settings: dict[str, Any] | None


def new_model(
    pretrained: Any, task: Task, features: Features, labels: list[str], **head: Unpack[HeadKeywords]
) -> TransferModel:
    """A fine-tuning model on a loaded ``mluke.load`` bundle: its encoder, an entity table and a new classifier.

    The entity table is [PAD], [MASK] for NER, typing and ReCoRD; [PAD], [HEAD], [TAIL] (from [MASK]) for relations;
    the whole table, frozen, for QA with entity features.

    Args:
        pretrained: the bundle.
        task: ``"ner"``, ``"re"``, ``"typing"``, ``"record"`` or ``"qa"``.
        features: ``"entity"`` (mLUKE-E), ``"word"`` (mLUKE-W) or ``"knowbert"`` (word features of a KnowBert
            bundle, :func:`mluke.finetuning.knowledge.open_knowbert_bundle`; every task).
        labels: the classifier's labels (QA: ``["start", "end"]``; typing: the types; ReCoRD: ``["answer"]``).
        **head: ``dropout`` and ``settings`` (:class:`HeadKeywords`).

    Returns:
        The :class:`TransferModel`.

    Raises:
        OptionError: a model without an entity vocabulary, an unknown feature kind, or knowbert features on a model
            that is not a KnowBert model.
    """
    model, _, vocab = pretrained
    if check_features(features) == "knowbert":
        from mluke.finetuning.knowledge import KNOWBERT, knowbert_encoder, knowbert_settings
        from mluke.knowbert.model import KnowBertModel

        if not isinstance(model, KnowBertModel):
            raise OptionError(
                f"knowbert features need a KnowBert model (open its folder with open_knowbert_bundle), not a "
                f"{type(model).__name__}"
            )
        words = int(cast(Any, model.encoder).config.vocab_size)
        if task == "re" and max(pretrained[1].ent_id, pretrained[1].ent2_id) >= words:
            raise OptionError(
                f"relations with word features mark the mentions with <ent>/<ent2>, which this KnowBert model's "
                f"encoder ({words:,} word pieces) does not have: build it on an mLUKE checkpoint"
            )
        settings = dict(head.get("settings") or {})
        settings[KNOWBERT] = knowbert_settings(model, settings.get(KNOWBERT, {}))
        with torch.random.fork_rng():
            torch.manual_seed(settings.get("seed", 0))
            return TransferModel(
                cast(Any, knowbert_encoder(model)), task, features, labels, **(head | {"settings": settings})
            )
    if vocab is None:
        raise OptionError("fine-tuning needs a model with an entity vocabulary (for the [MASK] and [PAD] rows)")
    whole = task == "qa" and check_features(features) == "entity"
    rows = (
        list(range(len(vocab))) if whole else [vocab.pad_id, vocab.mask_id] + ([vocab.mask_id] if task == "re" else [])
    )
    with torch.random.fork_rng():  # the classifier's initial weights follow the seed; the global RNG is left as it was
        torch.manual_seed((head.get("settings") or {}).get("seed", 0))
        net = TransferModel(encoder_from(model, rows), task, features, labels, **head)
    if whole:
        net.luke.entity_embeddings.entity_embeddings.weight.requires_grad_(False)
    return net
