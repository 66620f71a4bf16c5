"""``MlukeTokenizer``: words through the fast XLM-R tokenizer, entities through the
:class:`kb.EntityVocab`, in the input format of mLUKE.

One cohesive class (a little over 400 lines): words, entities and the three fine-tuning
formats share the span cutting and the batching.

Entities are given as character spans. The text is cut at every span boundary
(whitespace before a boundary goes with the following piece) and each segment is
tokenized on its own, as the original mLUKE tokenizer and pretraining corpus do,
so a mention always covers whole pieces. For space-delimited text and spans on
word boundaries the ids equal those of the whole text.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenizers import Tokenizer

from kb.errors import MlukeError
from kb.vocab import MASK, MASK2, PAD, SPECIAL_ENTITIES, UNK, EntityVocab
from mluke import xlmr

Task = Literal["entity_classification", "entity_pair_classification", "entity_span_classification"]
#: An entity given to the tokenizer: an id, a key (QID), a (lang, title) pair, a title
#: (with ``lang=``), a special entity name such as "[MASK]", or None for [MASK].
EntityRef = int | str | tuple[str, str] | None
Span = tuple[int, int]

MAX_LENGTH = 512
MAX_ENTITY_LENGTH = 128
MAX_MENTION_LENGTH = 30
_KEY_RE = re.compile(r"^(Q[1-9][0-9]*|[a-z][a-z0-9_.-]*:[^\s:]\S*)$")


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
class _Example:
    ids: list[int]
    offsets: list[tuple[int, int]]
    spans: list[Span]  # word positions [start, end) in ids (without <s>)
    entity_ids: list[int]
    entity_index: list[int]  # index of each entity among the user's spans
    unknown: list[int]


class MlukeTokenizer:
    """Tokenizer for mLUKE models: fairseq word ids with offsets, and entity inputs.

    >>> tok = MlukeTokenizer.from_pretrained("path/to/mluke-base")       # doctest: +SKIP
    >>> enc = tok("Tokyo is the capital of Japan.", entity_spans=[(0, 5), (24, 29)],
    ...           entities=[("en", "Tokyo"), "Q17"])                     # doctest: +SKIP
    """

    def __init__(
        self,
        word_tokenizer: Tokenizer,
        entity_vocab: EntityVocab | None = None,
        *,
        max_length: int = MAX_LENGTH,
        max_entity_length: int = MAX_ENTITY_LENGTH,
        max_mention_length: int = MAX_MENTION_LENGTH,
        kb: Any = None,
        source_dir: Path | None = None,
    ) -> None:
        self.words = word_tokenizer
        self.entity_vocab = entity_vocab
        self.kb = kb
        self.max_length = max_length
        self.max_entity_length = max_entity_length
        self.max_mention_length = max_mention_length
        self.source_dir = source_dir
        ids = {
            t: word_tokenizer.token_to_id(t)
            for t in (xlmr.BOS, xlmr.PAD, xlmr.EOS, xlmr.UNK, xlmr.MASK, xlmr.ENT, xlmr.ENT2)
        }
        self.bos_id, self.pad_id, self.eos_id = ids[xlmr.BOS], ids[xlmr.PAD], ids[xlmr.EOS]
        self.unk_id, self.mask_id, self.ent_id, self.ent2_id = (
            ids[xlmr.UNK],
            ids[xlmr.MASK],
            ids[xlmr.ENT],
            ids[xlmr.ENT2],
        )

    # -- loading and saving -----------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls, directory: str | Path, *, entity_vocab: EntityVocab | None = None, **kwargs: Any
    ) -> MlukeTokenizer:
        """Load from a checkpoint folder (hub layout or ours); the entity vocabulary is
        served from an SQLite store (imported once from ``entity_vocab.json`` if needed)."""
        from mluke.entity_vocab import load_entity_vocab

        directory = Path(directory)
        words = xlmr.load_word_tokenizer(directory)
        config = directory / "tokenizer_config.json"
        if config.is_file():
            cfg = json.loads(config.read_text(encoding="utf-8"))
            for key in ("max_entity_length", "max_mention_length"):
                if key in cfg and key not in kwargs:
                    kwargs[key] = int(cfg[key])
        if entity_vocab is None:
            entity_vocab = load_entity_vocab(directory)
        return cls(words, entity_vocab, source_dir=directory, **kwargs)

    def save_pretrained(self, directory: str | Path) -> None:
        """Write the hub layout: ``sentencepiece.bpe.model`` (when loaded from one), ``tokenizer.json``,
        ``added_tokens.json``, ``special_tokens_map.json``, ``tokenizer_config.json`` (entity vocabulary: see
        :func:`mluke.entity_vocab.save_entity_vocab`)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        spm = self.source_dir / xlmr.SPM_FILE if self.source_dir is not None else None
        if spm is not None and spm.is_file() and spm.resolve() != (directory / xlmr.SPM_FILE).resolve():
            shutil.copyfile(self.source_dir / xlmr.SPM_FILE, directory / xlmr.SPM_FILE)
        self.words.save(str(directory / xlmr.TOKENIZER_FILE))
        _write_json(directory / xlmr.ADDED_TOKENS_FILE, {xlmr.ENT: self.ent_id, xlmr.ENT2: self.ent2_id})
        _write_json(
            directory / "special_tokens_map.json",
            {
                "bos_token": xlmr.BOS,
                "eos_token": xlmr.EOS,
                "unk_token": xlmr.UNK,
                "sep_token": xlmr.EOS,
                "pad_token": xlmr.PAD,
                "cls_token": xlmr.BOS,
                "mask_token": {
                    "content": xlmr.MASK,
                    "lstrip": True,
                    "rstrip": False,
                    "normalized": False,
                    "single_word": False,
                },
                "additional_special_tokens": [xlmr.ENT, xlmr.ENT2],
            },
        )
        _write_json(
            directory / "tokenizer_config.json",
            {
                "tokenizer_class": "MLukeTokenizer",
                "model_max_length": self.max_length,
                "max_entity_length": self.max_entity_length,
                "max_mention_length": self.max_mention_length,
                "entity_token_1": xlmr.ENT,
                "entity_token_2": xlmr.ENT2,
                "entity_unk_token": UNK,
                "entity_pad_token": PAD,
                "entity_mask_token": MASK,
                "entity_mask2_token": MASK2,
            },
        )

    # -- words ------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        """Word pieces of ``text`` (no special tokens)."""
        return self.words.encode(text, add_special_tokens=False).tokens

    def encode_words(self, texts: Sequence[str]) -> list[list[int]]:
        """Word ids of each text, without ``<s>``/``</s>`` (batched in Rust)."""
        return [e.ids for e in self.words.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.words.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.words.id_to_token(i) for i in ids]

    @property
    def vocab_size(self) -> int:
        """Number of word ids (250,004 for mLUKE)."""
        return self.words.get_vocab_size(with_added_tokens=True)

    # -- entities -------------------------------------------------------------------------------
    def _vocab(self) -> EntityVocab:
        if self.entity_vocab is None:
            raise MlukeError("this tokenizer has no entity vocabulary; load it with one to encode entities")
        return self.entity_vocab

    def entity_ids(self, entities: Sequence[EntityRef], lang: str | None = None) -> tuple[list[int], list[int]]:
        """Vocabulary ids of ``entities`` and the indices of those not found (given [UNK])."""
        vocab = self._vocab()
        out: list[int | None] = [None] * len(entities)
        keys: dict[int, str] = {}
        pairs: dict[int, tuple[str, str]] = {}
        for i, ref in enumerate(entities):
            if ref is None:
                out[i] = vocab.mask_id
            elif isinstance(ref, bool):
                raise MlukeError(f"entity {i}: {ref!r} is not an entity")
            elif isinstance(ref, int):
                if not 0 <= ref < len(vocab):
                    raise MlukeError(f"entity {i}: id {ref} is outside the vocabulary (0..{len(vocab) - 1})")
                out[i] = ref
            elif isinstance(ref, tuple):
                pairs[i] = (str(ref[0]), str(ref[1]))
            elif ref in SPECIAL_ENTITIES:
                out[i] = vocab.special_id(ref)
            elif _KEY_RE.match(ref):
                keys[i] = ref
            elif lang is not None:
                pairs[i] = (lang, ref)
            else:
                raise MlukeError(
                    f"entity {i}: {ref!r} is a title but no lang= was given; pass lang='en' or a (lang, title) pair"
                )
        for i, found in zip(keys, vocab.ids_of_keys(list(keys.values()))):
            if found is None and self.kb is not None:
                titles = self.kb.titles(keys[i])
                hits = [h for h in vocab.get_ids(list(titles.items())) if h is not None]
                found = hits[0] if hits else None
            out[i] = found
        for i, found in zip(pairs, vocab.get_ids(list(pairs.values()))):
            out[i] = found if found is not None else vocab.get_id(*pairs[i])
        unknown = [i for i, x in enumerate(out) if x is None]
        unk = vocab.unk_id if unknown else 0
        return [unk if x is None else x for x in out], unknown

    # -- encoding -------------------------------------------------------------------------------
    def __call__(
        self,
        text: str | Sequence[str],
        entity_spans: Sequence[Span] | Sequence[Sequence[Span]] | str | Sequence[str] | None = None,
        entities: Sequence[EntityRef] | Sequence[Sequence[EntityRef]] | None = None,
        *,
        text_pair: str | Sequence[str] | None = None,
        entity_spans_pair: Sequence[Span] | Sequence[Sequence[Span]] | None = None,
        entities_pair: Sequence[EntityRef] | Sequence[Sequence[EntityRef]] | None = None,
        lang: str | None = None,
        task: Task | None = None,
        padding: bool | Literal["longest", "max_length"] = True,
        truncation: bool = True,
        max_length: int | None = None,
        max_entity_length: int | None = None,
        return_token_type_ids: bool = False,
        return_tensors: Literal["pt"] | None = "pt",
    ) -> MlukeEncoding:
        """Encode one text or a batch, or pairs of texts.

        ``entity_spans``: character ``(start, end)`` spans per text. ``entities``:
        what each span refers to (see :data:`EntityRef`); without it every span
        gets the entity [MASK]. ``task`` selects the input formats of the original
        fine-tuning code (see module docs). Pieces beyond ``max_length`` are cut;
        entities outside are dropped, entities partly outside or longer than
        ``max_mention_length`` pieces are clipped, and an
        :class:`EntityTruncationWarning` says so.

        Pairs, as transformers' ``MLukeTokenizer`` (``task=None`` only): ``text_pair``
        (also the second positional argument, ``tok(text, text_pair)``), with its own
        ``entity_spans_pair``/``entities_pair``, gives ``<s> A </s></s> B </s>``; the
        entities of B follow those of A (index ``len(entity_spans) + k``), positions of B
        have offsets into ``text_pair``, and truncation is transformers' ``longest_first``
        on the words and on the entities. ``padding="max_length"`` pads the words to
        ``max_length`` and the entity arrays to ``max_entity_length``.
        ``return_token_type_ids``: ``token_type_ids`` (and ``entity_token_type_ids``), all
        zeros, as XLM-R has no segment embeddings.
        """
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if _is_texts(entity_spans, single):  # tok(text, text_pair)
            if text_pair is not None or entities is not None:
                raise MlukeError(
                    "the second argument is a pair text: give entities by keyword "
                    "(entity_spans=, entities=, entity_spans_pair=, entities_pair=)"
                )
            text_pair, entity_spans = entity_spans, None
        max_length = max_length or self.max_length
        max_entity_length = max_entity_length or self.max_entity_length
        spans_b = _batchify(entity_spans, single, len(texts), "entity_spans")
        ents_b = _batchify(entities, single, len(texts), "entities")
        examples = self._examples(texts, spans_b, ents_b, lang, task)
        pairs = None
        if text_pair is not None:
            pairs = self._pair_examples(text_pair, single, len(texts), entity_spans_pair, entities_pair, lang, task)
        elif entity_spans_pair is not None or entities_pair is not None:
            raise MlukeError("entity_spans_pair/entities_pair given without text_pair")
        enc = self._assemble(
            examples, pairs, truncation, max_length, max_entity_length, padding, task, return_token_type_ids
        )
        if return_tensors == "pt":
            import torch

            for k, v in enc.items():
                enc[k] = torch.tensor(v, dtype=torch.long)
        elif return_tensors is not None:
            raise MlukeError(f"return_tensors={return_tensors!r}: expected 'pt' or None")
        return enc

    def _pair_examples(
        self, text_pair: Any, single: bool, n: int, spans: Any, ents: Any, lang: str | None, task: Task | None
    ) -> list[_Example]:
        if task is not None:
            raise MlukeError(f"text_pair is not supported with task {task!r} (only task=None), as in transformers")
        if single != isinstance(text_pair, str) or (not single and not _is_texts(text_pair, False)):
            kind = "a string" if single else "a list of strings"
            raise MlukeError(f"text_pair: expected {kind} (one per text), got {type(text_pair).__name__}")
        pair_texts = [text_pair] if single else list(text_pair)
        if len(pair_texts) != n:
            raise MlukeError(f"text_pair: {len(pair_texts)} texts for {n} texts; give one pair text per text")
        spans_b = _batchify(spans, single, n, "entity_spans_pair")
        ents_b = _batchify(ents, single, n, "entities_pair")
        return self._examples(pair_texts, spans_b, ents_b, lang, None, name="text_pair")

    def _examples(
        self,
        texts: list[str],
        spans_b: list[Any],
        ents_b: list[Any],
        lang: str | None,
        task: Task | None,
        name: str = "text",
    ) -> list[_Example]:
        checked = []
        for i, (t, spans) in enumerate(zip(texts, spans_b)):
            spans = [_check_span(s, t, i, j, name) for j, s in enumerate(spans or [])]
            _check_task(task, spans, i)
            checked.append(spans)
        examples = []
        for i, (ids, offsets, spans) in enumerate(encode_with_spans(self.words, texts, checked)):
            refs = ents_b[i]
            if task in ("entity_classification", "entity_pair_classification"):
                if refs is not None:
                    raise MlukeError(f"text {i}: task {task!r} uses [MASK]/[MASK2] entities; do not pass entities")
                ids, offsets, spans = self._mark(ids, offsets, spans, task)
                refs = [MASK] if task == "entity_classification" else [MASK, MASK2]
            if refs is not None and len(refs) != len(spans):
                raise MlukeError(f"{name} {i}: {len(refs)} entities for {len(spans)} entity spans; give one per span")
            if refs is not None:
                entity_ids, unknown = self.entity_ids(refs, lang)
            else:  # no vocabulary needed when there are no spans
                entity_ids, unknown = ([self._vocab().mask_id] * len(spans) if spans else []), []
            examples.append(_Example(ids, offsets, spans, entity_ids, list(range(len(spans))), unknown))
        return examples

    def _mark(
        self, ids: list[int], offsets: list[tuple[int, int]], spans: list[Span], task: Task
    ) -> tuple[list[int], list[tuple[int, int]], list[Span]]:
        """Insert <ent> (and <ent2>) around the mention(s), as the original fine-tuning formats do."""
        markers = [self.ent_id] if task == "entity_classification" else [self.ent_id, self.ent2_id]
        return insert_markers(ids, offsets, spans, markers)

    def _entities_in(
        self, ex: _Example, n_ids: int, offset: int, first_index: int
    ) -> list[tuple[int, int, Span, list[int], bool]]:
        """The entities of ``ex`` whose span starts within its first ``n_ids`` pieces: ``(index, id,
        word positions in the row, position ids, clipped)``; the row starts ``offset`` pieces before ``ex``."""
        out = []
        for k, ((s, e), eid) in enumerate(zip(ex.spans, ex.entity_ids)):
            if s >= n_ids or e <= s:
                continue
            e2 = min(e, n_ids, s + self.max_mention_length)
            positions = list(range(s + offset, e2 + offset))
            padded = positions + [-1] * (self.max_mention_length - len(positions))
            out.append((first_index + k, eid, (s + offset, e2 + offset), padded, e2 < e))
        return out

    def _assemble(
        self,
        examples: list[_Example],
        pairs: list[_Example] | None,
        truncation: bool,
        max_length: int,
        max_entity_length: int,
        padding: bool | str,
        task: Task | None,
        return_token_type_ids: bool = False,
    ) -> MlukeEncoding:
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
                n_a, n_b = _longest_first(n_a, n_b, n_a + n_b - limit) if pair is not None else (limit, 0)
            # entities (A's, then B's), then the entity limit: A's first N, or longest_first for a pair
            found_a = self._entities_in(ex, n_a, 1, 0)
            found_b = self._entities_in(pair, n_b, n_a + 3, len(ex.spans)) if pair is not None else []
            if len(found_a) + len(found_b) > max_entity_length:
                if pair is None:
                    keep_a, keep_b = max_entity_length, 0
                else:
                    excess = len(found_a) + len(found_b) - max_entity_length
                    keep_a, keep_b = _longest_first(len(found_a), len(found_b), excess)
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
                rows_ids.append([self.bos_id, *ex.ids[:n_a], self.eos_id])
                enc.offsets.append([(0, 0), *ex.offsets[:n_a], (0, 0)])
            else:
                rows_ids.append([self.bos_id, *ex.ids[:n_a], self.eos_id, self.eos_id, *pair.ids[:n_b], self.eos_id])
                enc.offsets.append([(0, 0), *ex.offsets[:n_a], (0, 0), (0, 0), *pair.offsets[:n_b], (0, 0)])
        n_dropped = sum(map(len, enc.dropped_entities))
        n_clipped = sum(map(len, enc.clipped_entities))
        if n_dropped or n_clipped:
            warnings.warn(
                f"{n_dropped} entities dropped and {n_clipped} clipped: their spans fall beyond the kept pieces "
                f"(max_length={max_length}, max_entity_length={max_entity_length}, "
                f"max_mention_length={self.max_mention_length}); see .dropped_entities / .clipped_entities",
                EntityTruncationWarning,
                stacklevel=3,
            )
        width = max(map(len, rows_ids)) if padding != "max_length" else max_length
        if not padding and len({len(r) for r in rows_ids}) > 1:
            raise MlukeError("texts of different lengths need padding=True to form a batch")
        enc["input_ids"] = [r + [self.pad_id] * (width - len(r)) for r in rows_ids]
        enc["attention_mask"] = [[1] * len(r) + [0] * (width - len(r)) for r in rows_ids]
        if return_token_type_ids:
            enc["token_type_ids"] = [[0] * width for _ in rows_ids]
        if any(rows_ent) or task is not None:
            vocab = self._vocab()
            n = max_entity_length if padding == "max_length" else max(1, max(map(len, rows_ent)))
            enc["entity_ids"] = [r + [vocab.pad_id] * (n - len(r)) for r in rows_ent]
            enc["entity_attention_mask"] = [[1] * len(r) + [0] * (n - len(r)) for r in rows_ent]
            enc["entity_position_ids"] = [p + [[-1] * self.max_mention_length] * (n - len(p)) for p in rows_pos]
            if return_token_type_ids:
                enc["entity_token_type_ids"] = [[0] * n for _ in rows_ent]
            if task == "entity_span_classification":
                enc["entity_start_positions"] = [
                    [s for s, _ in sp] + [0] * (n - len(sp)) for sp in enc.entity_token_spans
                ]
                enc["entity_end_positions"] = [
                    [e - 1 for _, e in sp] + [0] * (n - len(sp)) for sp in enc.entity_token_spans
                ]
        return enc


def _longest_first(len_a: int, len_b: int, remove: int) -> tuple[int, int]:
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


def _is_texts(value: Any, single: bool) -> bool:
    """Whether ``value`` is a text (``single``) or a non-empty list of texts (a batch): a pair text, not spans."""
    if single:
        return isinstance(value, str)
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)


def _batchify(value: Any, single: bool, n: int, name: str) -> list[Any]:
    if value is None:
        return [None] * n
    if single:
        return [list(value)]
    value = list(value)
    if len(value) != n:
        raise MlukeError(f"{name}: {len(value)} lists for {n} texts; give one list per text")
    return [None if v is None else list(v) for v in value]


def _check_span(span: Any, text: str, i: int, j: int, name: str = "text") -> Span:
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


def _check_task(task: Task | None, spans: list[Span], i: int) -> None:
    need = {"entity_classification": 1, "entity_pair_classification": 2}.get(task or "")
    if task is not None and task not in (
        "entity_classification",
        "entity_pair_classification",
        "entity_span_classification",
    ):
        raise MlukeError(
            f"unknown task {task!r}: expected entity_classification, entity_pair_classification or entity_span_classification"
        )
    if need is not None and len(spans) != need:
        raise MlukeError(f"text {i}: task {task!r} needs exactly {need} entity span(s), got {len(spans)}")
    if task == "entity_span_classification" and not spans:
        raise MlukeError(f"text {i}: task 'entity_span_classification' needs at least one entity span")


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
