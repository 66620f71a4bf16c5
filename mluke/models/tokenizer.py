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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

from tokenizers import Tokenizer

from kb.db import EntityDB
from kb.errors import MlukeError
from kb.renamed import renamed_keyword
from kb.vocab import MASK, MASK2, PAD, SPECIAL_ENTITIES, UNK, EntityVocab
from mluke.models import xlmr
from mluke.models.encoding import (
    Example,
    MlukeEncoding,
    Span,
    Task,
    assemble,
    batchify,
    check_span,
    check_task,
    encode_with_spans,
    insert_markers,
    is_texts,
    require_vocab,
)

#: An entity given to the tokenizer: an id, a key (QID), a (lang, title) pair, a title
#: (with ``lang=``), a special entity name such as "[MASK]", or None for [MASK].
EntityRef = int | str | tuple[str, str] | None

MAX_LENGTH = 512
MAX_ENTITY_LENGTH = 128
# The entity count of the tasks whose entities are fixed ([MASK], [MASK2]): transformers' LUKE and mLUKE
# tokenizers set max_entity_length to these for the task, whatever the configured value.
TASK_ENTITY_LENGTH = {"entity_classification": 1, "entity_pair_classification": 2}
MAX_MENTION_LENGTH = 30
_KEY_RE = re.compile(r"^(Q[1-9][0-9]*|[a-z][a-z0-9_.-]*:[^\s:]\S*)$")


def config_limits(directory: Path, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the entity limits of the folder's ``tokenizer_config.json`` where they are not given.

    Args:
        directory: the checkpoint folder.
        kwargs: the tokenizer's keyword arguments (updated in place).

    Returns:
        ``kwargs``.
    """
    config = directory / "tokenizer_config.json"
    if config.is_file():
        cfg = json.loads(config.read_text(encoding="utf-8"))
        for key in ("max_entity_length", "max_mention_length"):
            if key in cfg and key not in kwargs:
                kwargs[key] = int(cfg[key])
    return kwargs


class MlukeTokenizer:
    """Tokenizer for mLUKE models: fairseq word ids with offsets, and entity inputs.

    >>> tok = MlukeTokenizer.from_pretrained("path/to/mluke-base")       # doctest: +SKIP
    >>> enc = tok("Tokyo is the capital of Japan.", entity_spans=[(0, 5), (24, 29)],
    ...           entities=[("en", "Tokyo"), "Q17"])                     # doctest: +SKIP
    """

    #: The ``tokenizer_class`` :meth:`save_pretrained` writes to ``tokenizer_config.json``.
    HUB_CLASS = "MLukeTokenizer"

    @renamed_keyword("kb", "db")
    def __init__(
        self,
        word_tokenizer: Tokenizer,
        entity_vocab: EntityVocab | None = None,
        *,
        max_length: int = MAX_LENGTH,
        max_entity_length: int = MAX_ENTITY_LENGTH,
        max_mention_length: int = MAX_MENTION_LENGTH,
        db: EntityDB | None = None,
        source_dir: Path | None = None,
    ) -> None:
        """Args:
        word_tokenizer: the XLM-R word tokenizer (fairseq ids, with ``<ent>`` and ``<ent2>``).
        entity_vocab: the entity vocabulary; without one only words can be encoded.
        max_length: the most word pieces of an encoded text, special tokens included.
        max_entity_length: the most entities of an encoded text.
        max_mention_length: the most word pieces one entity covers (longer mentions are clipped).
        db: an entity database that resolves keys (QIDs) the vocabulary lacks through their titles
            (``kb=`` is a deprecated alias).
        source_dir: the folder the tokenizer was loaded from (its ``sentencepiece.bpe.model`` is copied
            by :meth:`save_pretrained`).
        """
        self.words = word_tokenizer
        self.entity_vocab = entity_vocab
        self.db = db
        self.max_length = max_length
        self.max_entity_length = max_entity_length
        self.max_mention_length = max_mention_length
        self.source_dir = source_dir
        ids: dict[str, int] = {}
        for t in (xlmr.BOS, xlmr.PAD, xlmr.EOS, xlmr.UNK, xlmr.MASK, xlmr.ENT, xlmr.ENT2):
            found = word_tokenizer.token_to_id(t)
            if found is None:
                raise MlukeError(
                    f"the word tokenizer has no {t!r} token (expected an XLM-R tokenizer with <ent>, <ent2>)"
                )
            ids[t] = found
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
        """Load from a checkpoint folder (hub layout or ours).

        Args:
            directory: the checkpoint folder.
            entity_vocab: the entity vocabulary to use; by default the folder's, served from an SQLite store
                (imported once from ``entity_vocab.json`` if needed).
            **kwargs: the keyword arguments of :class:`MlukeTokenizer` (``db=``, limits); the limits default to
                ``tokenizer_config.json``'s.

        Returns:
            The tokenizer.
        """
        from mluke.models.entity_vocab import load_entity_vocab

        directory = Path(directory)
        words = xlmr.load_word_tokenizer(directory)
        if entity_vocab is None:
            entity_vocab = load_entity_vocab(directory)
        return cls(words, entity_vocab, source_dir=directory, **config_limits(directory, kwargs))

    def save_pretrained(self, directory: str | Path) -> None:
        """Write the hub layout: the word tokenizer's files (:func:`mluke.models.xlmr.save_word_tokenizer`; a subclass
        writes its own) and ``tokenizer_config.json`` (``tokenizer_class``: :attr:`HUB_CLASS`;
        the entity vocabulary: see :func:`mluke.models.entity_vocab.save_entity_vocab`).

        Args:
            directory: the folder (created if needed).
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._save_word_files(directory)
        xlmr.write_json(
            directory / "tokenizer_config.json",
            {
                "tokenizer_class": self.HUB_CLASS,
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

    def _save_word_files(self, directory: Path) -> None:
        """Write the word tokenizer's files (the part of :meth:`save_pretrained` a subclass replaces)."""
        xlmr.save_word_tokenizer(self.words, directory, self.source_dir)

    # -- words ------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        """Word pieces of ``text`` (no special tokens)."""
        return self.words.encode(text, add_special_tokens=False).tokens

    def encode_words(self, texts: Sequence[str]) -> list[list[int]]:
        """Word ids of each text, without ``<s>``/``</s>`` (batched in Rust)."""
        return [e.ids for e in self.words.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.words.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str | None]:
        return [self.words.id_to_token(i) for i in ids]

    @property
    def vocab_size(self) -> int:
        """Number of word ids (250,004 for mLUKE)."""
        return self.words.get_vocab_size(with_added_tokens=True)

    # -- entities -------------------------------------------------------------------------------
    def _vocab(self) -> EntityVocab:
        return require_vocab(self.entity_vocab)

    def entity_ids(self, entities: Sequence[EntityRef], lang: str | None = None) -> tuple[list[int], list[int]]:
        """Vocabulary ids of ``entities``.

        Args:
            entities: what each entity is (see :data:`EntityRef`).
            lang: the language of entities given as bare titles.

        Returns:
            The ids, and the indices of the entities not found (given [UNK]).

        Raises:
            MlukeError: an id outside the vocabulary, a bare title without ``lang``, or no entity vocabulary.
        """
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
            if found is None and self.db is not None:
                titles = self.db.titles(keys[i])
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

        Entities beyond the kept pieces are dropped, entities partly outside or longer than
        ``max_mention_length`` pieces are clipped, and an :class:`EntityTruncationWarning` says so.

        Args:
            text: a text or a list of texts.
            entity_spans: character ``(start, end)`` spans per text; or, as the second positional argument,
                the pair text(s) (``tok(text, text_pair)``).
            entities: what each span refers to (see :data:`EntityRef`); without it every span gets the
                entity [MASK].
            text_pair: pair texts as in transformers' ``MLukeTokenizer`` (``task=None`` only):
                ``<s> A </s></s> B </s>``; B's entities follow A's (index ``len(entity_spans) + k``), B's
                positions have offsets into ``text_pair``.
            entity_spans_pair: the spans of the pair texts.
            entities_pair: the entities of the pair texts.
            lang: the language of entities given as bare titles.
            task: the input format of the original fine-tuning code (see :mod:`mluke.models.encoding`).
            padding: ``True``/``"longest"``: to the longest text; ``"max_length"``: words to ``max_length``
                and entities to ``max_entity_length``.
            truncation: cut pieces beyond ``max_length`` (pairs: transformers' ``longest_first``, on the
                words and on the entities); otherwise a text too long is an error.
            max_length: the most word pieces (default: the tokenizer's).
            max_entity_length: the most entities (default: the tokenizer's; 1 for ``entity_classification`` and
                2 for ``entity_pair_classification``, as transformers sets them, so ``padding="max_length"``
                pads the entity arrays to 1 and 2).
            return_token_type_ids: add ``token_type_ids`` and ``entity_token_type_ids``, all zeros (XLM-R has
                no segment embeddings).
            return_tensors: ``"pt"`` for torch tensors, None for lists.

        Returns:
            The encoding (see :class:`MlukeEncoding`).

        Raises:
            MlukeError: a span outside its text, counts that do not match, an unknown ``task``, ...
        """
        single = isinstance(text, str)
        texts: list[str] = [text] if isinstance(text, str) else list(text)
        if is_texts(entity_spans, single):  # tok(text, text_pair)
            if text_pair is not None or entities is not None:
                raise MlukeError(
                    "the second argument is a pair text: give entities by keyword "
                    "(entity_spans=, entities=, entity_spans_pair=, entities_pair=)"
                )
            text_pair, entity_spans = cast("str | Sequence[str]", entity_spans), None
        max_length = max_length or self.max_length
        max_entity_length = max_entity_length or TASK_ENTITY_LENGTH.get(task or "", self.max_entity_length)
        spans_b = batchify(entity_spans, single, len(texts), "entity_spans")
        ents_b = batchify(entities, single, len(texts), "entities")
        examples = self._examples(texts, spans_b, ents_b, lang, task)
        pairs = None
        if text_pair is not None:
            pairs = self._pair_examples(text_pair, single, len(texts), entity_spans_pair, entities_pair, lang, task)
        elif entity_spans_pair is not None or entities_pair is not None:
            raise MlukeError("entity_spans_pair/entities_pair given without text_pair")
        enc = assemble(
            self, examples, pairs, truncation, max_length, max_entity_length, padding, task, return_token_type_ids
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
    ) -> list[Example]:
        if task is not None:
            raise MlukeError(f"text_pair is not supported with task {task!r} (only task=None), as in transformers")
        if single != isinstance(text_pair, str) or (not single and not is_texts(text_pair, False)):
            kind = "a string" if single else "a list of strings"
            raise MlukeError(f"text_pair: expected {kind} (one per text), got {type(text_pair).__name__}")
        pair_texts = [text_pair] if single else list(text_pair)
        if len(pair_texts) != n:
            raise MlukeError(f"text_pair: {len(pair_texts)} texts for {n} texts; give one pair text per text")
        spans_b = batchify(spans, single, n, "entity_spans_pair")
        ents_b = batchify(ents, single, n, "entities_pair")
        return self._examples(pair_texts, spans_b, ents_b, lang, None, name="text_pair")

    def _examples(
        self,
        texts: list[str],
        spans_b: list[Any],
        ents_b: list[Any],
        lang: str | None,
        task: Task | None,
        name: str = "text",
    ) -> list[Example]:
        checked = []
        for i, (t, spans) in enumerate(zip(texts, spans_b)):
            spans = [check_span(s, t, i, j, name) for j, s in enumerate(spans or [])]
            check_task(task, spans, i)
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
            examples.append(Example(ids, offsets, spans, entity_ids, list(range(len(spans))), unknown))
        return examples

    def _mark(
        self, ids: list[int], offsets: list[tuple[int, int]], spans: list[Span], task: Task
    ) -> tuple[list[int], list[tuple[int, int]], list[Span]]:
        """Insert <ent> (and <ent2>) around the mention(s), as the original fine-tuning formats do."""
        markers = [self.ent_id] if task == "entity_classification" else [self.ent_id, self.ent2_id]
        return insert_markers(ids, offsets, spans, markers)
