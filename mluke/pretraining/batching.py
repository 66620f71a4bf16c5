"""Masking and batching for pretraining: whole-word MLM (80/10/10) and entity masking (MEP).

Every example is masked with its own random generator seeded by (run seed, step,
index of the example in the global batch), so the masks do not depend on how
the global batch is split over processes or accumulation steps, nor on a resume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mluke.pretraining.config import MaskingConfig
from mluke.pretraining.corpus_reader import Sequence

IGNORE = -100


@dataclass
class Vocabulary:
    """What masking needs to know about the word and entity vocabularies."""

    word_starts: np.ndarray  # bool per word id: the piece begins a word ('▁...') or is special
    special_words: np.ndarray  # bool per word id: never masked nor drawn as a random word
    mask_word: int
    bos: int
    eos: int
    pad_word: int
    mask_entity: int
    pad_entity: int

    @classmethod
    def from_tokenizer(cls, tokenizer) -> Vocabulary:
        n = tokenizer.vocab_size
        tokens = [tokenizer.words.id_to_token(i) or "" for i in range(n)]
        special = np.zeros(n, bool)
        for i in (
            tokenizer.bos_id,
            tokenizer.pad_id,
            tokenizer.eos_id,
            tokenizer.unk_id,
            tokenizer.mask_id,
            tokenizer.ent_id,
            tokenizer.ent2_id,
        ):
            special[i] = True
        starts = np.array([t.startswith("▁") for t in tokens]) | special
        vocab = tokenizer.entity_vocab  # None for a words-only tokenizer (KnowBert masks words only): ids -1
        return cls(
            starts,
            special,
            tokenizer.mask_id,
            tokenizer.bos_id,
            tokenizer.eos_id,
            tokenizer.pad_id,
            vocab.mask_id if vocab is not None else -1,
            vocab.pad_id if vocab is not None else -1,
        )


@dataclass
class MaskedExample:
    input_ids: np.ndarray
    labels: np.ndarray
    entity_ids: np.ndarray
    entity_labels: np.ndarray
    entity_spans: np.ndarray


def mask_example(seq: Sequence, rng: np.random.Generator, cfg: MaskingConfig, vocab: Vocabulary) -> MaskedExample:
    """Mask ``cfg.word_prob`` of the word pieces (whole words when ``cfg.whole_word``) and
    ``cfg.entity_prob`` of the entities of one sequence; adds ``<s>`` and ``</s>``."""
    ids = seq.word_ids.astype(np.int64)
    n = len(ids)
    labels = np.full(n, IGNORE, np.int64)
    if n and cfg.word_prob > 0:
        starts = vocab.word_starts[ids] if cfg.whole_word else np.ones(n, bool)
        starts[0] = True
        word_of = np.cumsum(starts) - 1
        n_words = int(word_of[-1]) + 1
        target = max(1, round(cfg.word_prob * n))
        chosen = np.zeros(n_words, bool)
        covered = 0
        sizes = np.bincount(word_of, minlength=n_words)
        for w in rng.permutation(n_words):
            if covered >= target:
                break
            if covered + sizes[w] > target * 1.5 and covered > 0:
                continue
            chosen[w] = True
            covered += sizes[w]
        masked = chosen[word_of] & ~vocab.special_words[ids]
        labels[masked] = ids[masked]
        # one decision per word: <mask>, a random piece, or unchanged
        decision = rng.random(n_words)
        per_token = decision[word_of]
        to_mask = masked & (per_token < cfg.word_mask_share)
        to_random = (
            masked & (per_token >= cfg.word_mask_share) & (per_token < cfg.word_mask_share + cfg.word_random_share)
        )
        ids = ids.copy()
        ids[to_mask] = vocab.mask_word
        if to_random.any():
            allowed = np.flatnonzero(~vocab.special_words)
            ids[to_random] = rng.choice(allowed, size=int(to_random.sum()))
    ents = seq.entity_ids.astype(np.int64)
    ent_labels = np.full(len(ents), IGNORE, np.int64)
    spans = seq.entity_spans.astype(np.int64)
    if len(ents) and cfg.entity_prob > 0:
        pick = np.flatnonzero(rng.random(len(ents)) < cfg.entity_prob)
        ent_labels[pick] = ents[pick]
        ents = ents.copy()
        ents[pick] = vocab.mask_entity
        if cfg.mention_word_prob > 0:
            ids = ids.copy()
            keep = np.ones(n, bool)
            for k in pick[rng.random(len(pick)) < cfg.mention_word_prob]:
                a, b = (int(x) for x in seq.entity_spans[k])
                ids[a:b] = vocab.mask_word
                if cfg.mention_single_mask:  # one <mask> whatever the name's length: no length hint
                    labels[a:b] = IGNORE
                    keep[a + 1 : b] = False
                else:
                    labels[a:b] = np.where(labels[a:b] == IGNORE, seq.word_ids[a:b], labels[a:b])
            if not keep.all():
                new_pos = np.cumsum(keep) - 1
                spans = np.stack([new_pos[spans[:, 0]], new_pos[spans[:, 1] - 1] + 1], axis=1)
                ids, labels = ids[keep], labels[keep]
    if len(ents) and cfg.entity_drop_prob > 0:  # as an unlinked mention, or the subject of an entity [Y] probe
        keep_ent = (ent_labels != IGNORE) | (rng.random(len(ents)) >= cfg.entity_drop_prob)
        ents, ent_labels, spans = ents[keep_ent], ent_labels[keep_ent], spans[keep_ent]
    return MaskedExample(
        np.concatenate([[vocab.bos], ids, [vocab.eos]]),
        np.concatenate([[IGNORE], labels, [IGNORE]]),
        ents,
        ent_labels,
        spans + 1,
    )


def collate(examples: list[MaskedExample], vocab: Vocabulary, max_mention_length: int = 30) -> dict[str, torch.Tensor]:
    """Pad a list of masked examples to the longest one (dynamic padding) -> model inputs + labels."""
    b = len(examples)
    width = max(len(e.input_ids) for e in examples)
    n_ent = max(1, max(len(e.entity_ids) for e in examples))
    input_ids = np.full((b, width), vocab.pad_word, np.int64)
    labels = np.full((b, width), IGNORE, np.int64)
    attention = np.zeros((b, width), np.int64)
    entity_ids = np.full((b, n_ent), vocab.pad_entity, np.int64)
    entity_labels = np.full((b, n_ent), IGNORE, np.int64)
    entity_mask = np.zeros((b, n_ent), np.int64)
    positions = np.full((b, n_ent, max_mention_length), -1, np.int64)
    for i, e in enumerate(examples):
        input_ids[i, : len(e.input_ids)] = e.input_ids
        labels[i, : len(e.labels)] = e.labels
        attention[i, : len(e.input_ids)] = 1
        k = len(e.entity_ids)
        entity_ids[i, :k] = e.entity_ids
        entity_labels[i, :k] = e.entity_labels
        entity_mask[i, :k] = 1
        for j, (s, t) in enumerate(e.entity_spans):
            span = np.arange(s, min(t, s + max_mention_length))
            positions[i, j, : len(span)] = span
    batch = {
        "input_ids": input_ids,
        "attention_mask": attention,
        "labels": labels,
        "entity_ids": entity_ids,
        "entity_attention_mask": entity_mask,
        "entity_position_ids": positions,
        "entity_labels": entity_labels,
    }
    return {k: torch.from_numpy(v) for k, v in batch.items()}
