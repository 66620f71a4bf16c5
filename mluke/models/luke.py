"""English LUKE checkpoints (``studio-ousia/luke-base``, ``luke-large`` and fine-tuned variants).

They differ from mLUKE in three ways, handled here so that :func:`mluke.load` reads both:

- the word tokenizer is RoBERTa's byte-level BPE (``vocab.json`` + ``merges.txt``, ``<ent>``/``<ent2>`` in
  ``added_tokens.json``), served by the ``tokenizers`` library behind the :class:`~mluke.MlukeTokenizer` API
  (:class:`LukeTokenizer`);
- the entity vocabulary has plain English titles (``"Tokyo"``) instead of ``"lang:title"`` keys: it is
  imported with the language ``"en"``, and titles are looked up in English whatever ``lang=`` says;
- some checkpoints hold a bare ``LukeModel`` (weights without the ``luke.`` prefix, no prediction heads):
  they load as an encoder whose heads are :class:`MissingHead` placeholders that raise a
  :class:`CheckpointError` naming the folder when anything needs them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from kb.errors import InputFormatError
from kb.vocab import EntityVocab
from mluke.models import xlmr
from mluke.models.errors import CheckpointError
from mluke.models.tokenizer import EntityRef, MlukeTokenizer, config_limits

VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
#: The language of an English LUKE entity vocabulary's plain titles.
LANG = "en"
_HEADS = ("lm_head", "entity_predictions")


def is_luke_folder(directory: str | Path) -> bool:
    """Whether a checkpoint folder holds an English LUKE word tokenizer (byte-level BPE files, or a
    ``tokenizer_config.json`` naming ``LukeTokenizer`` as :meth:`LukeTokenizer.save_pretrained` writes)."""
    directory = Path(directory)
    if (directory / VOCAB_FILE).is_file() and (directory / MERGES_FILE).is_file():
        return True
    config = directory / "tokenizer_config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class") == LukeTokenizer.HUB_CLASS)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return False


def load_bpe_word_tokenizer(directory: str | Path) -> Tokenizer:
    """RoBERTa's byte-level BPE word tokenizer of an English LUKE folder, with ``<ent>`` and ``<ent2>``.

    Reads ``vocab.json`` + ``merges.txt`` (else our ``tokenizer.json``); ``<ent>``/``<ent2>`` take the ids of
    ``added_tokens.json``, or the next free ids (luke-base: 50265 and 50266). Special tokens written in the
    text are whole pieces; ``<mask>`` takes the whitespace before it unless ``special_tokens_map.json`` says
    otherwise.

    Args:
        directory: the checkpoint folder.

    Returns:
        The tokenizer (no special tokens added by ``encode``; no padding or truncation).

    Raises:
        InputFormatError: missing or unreadable files, or ``added_tokens.json`` ids that do not follow the
            vocabulary.
    """
    directory = Path(directory)
    vocab, merges = directory / VOCAB_FILE, directory / MERGES_FILE
    if vocab.is_file() and merges.is_file():
        try:
            tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
        except Exception as exc:
            raise InputFormatError(
                f"{directory}: cannot read {VOCAB_FILE}/{MERGES_FILE} as a byte-level BPE ({exc})"
            ) from None
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    elif (directory / xlmr.TOKENIZER_FILE).is_file():
        tok = Tokenizer.from_file(str(directory / xlmr.TOKENIZER_FILE))
    else:
        raise InputFormatError(f"{directory}: no {VOCAB_FILE} and {MERGES_FILE} (expected an English LUKE folder)")
    tok.no_padding()
    tok.no_truncation()
    missing = [t for t in (xlmr.BOS, xlmr.PAD, xlmr.EOS, xlmr.UNK, xlmr.MASK) if tok.token_to_id(t) is None]
    if missing:
        raise InputFormatError(f"{directory / VOCAB_FILE}: no {', '.join(missing)} (expected RoBERTa's vocabulary)")
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in (xlmr.BOS, xlmr.PAD, xlmr.EOS, xlmr.UNK)]
        + [AddedToken(xlmr.MASK, lstrip=_mask_lstrip(directory), special=True, normalized=False)]
    )
    declared: dict[str, int] = {}
    added = directory / xlmr.ADDED_TOKENS_FILE
    if added.is_file():
        declared = json.loads(added.read_text(encoding="utf-8"))
    for token in sorted(declared, key=declared.__getitem__):
        if tok.token_to_id(token) is None:
            if declared[token] != tok.get_vocab_size(with_added_tokens=True):
                raise InputFormatError(
                    f"{added}: {token!r} is declared as id {declared[token]}, but the next free id is "
                    f"{tok.get_vocab_size(with_added_tokens=True)}"
                )
            tok.add_special_tokens([AddedToken(token, special=True, normalized=False)])
    for token in (xlmr.ENT, xlmr.ENT2):
        if tok.token_to_id(token) is None:
            tok.add_special_tokens([AddedToken(token, special=True, normalized=False)])
    return tok


def _mask_lstrip(directory: Path) -> bool:
    """Whether ``<mask>`` takes the whitespace before it: as ``special_tokens_map.json`` says, else True (as in
    roberta-base and luke-base, so that ``"of <mask>"`` gives ``of``, ``<mask>``, not ``of``, ``Ġ``, ``<mask>``)."""
    path = directory / "special_tokens_map.json"
    if path.is_file():
        try:
            mask = json.loads(path.read_text(encoding="utf-8")).get("mask_token")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
            raise InputFormatError(f"{path}: not a JSON object ({exc})") from None
        if isinstance(mask, dict) and "lstrip" in mask:
            return bool(mask["lstrip"])
    return True


class LukeTokenizer(MlukeTokenizer):
    """:class:`~mluke.MlukeTokenizer` for English LUKE: byte-level BPE words, English entity titles.

    The ids equal those of transformers' ``LukeTokenizer`` (text cut at entity span boundaries, the space
    before a boundary kept with the following piece). Titles are English: ``"Tokyo"``, ``("en", "Tokyo")``
    and ``"Tokyo"`` with any ``lang=`` name the same entity.
    """

    HUB_CLASS = "LukeTokenizer"

    @classmethod
    def from_pretrained(
        cls, directory: str | Path, *, entity_vocab: EntityVocab | None = None, **kwargs: Any
    ) -> LukeTokenizer:
        """Load from an English LUKE folder (hub layout, or ours).

        Args:
            directory: the checkpoint folder.
            entity_vocab: the entity vocabulary to use; by default the folder's (plain titles imported as
                English, cached as SQLite).
            **kwargs: the keyword arguments of :class:`~mluke.MlukeTokenizer` (``db=``, limits).

        Returns:
            The tokenizer.
        """
        from mluke.models.entity_vocab import load_entity_vocab

        directory = Path(directory)
        words = load_bpe_word_tokenizer(directory)
        if entity_vocab is None:
            entity_vocab = load_entity_vocab(directory, default_lang=LANG)
        return cls(words, entity_vocab, source_dir=directory, **config_limits(directory, kwargs))

    def _save_word_files(self, directory: Path) -> None:
        """Write the English LUKE word files: ``vocab.json``, ``merges.txt``, ``added_tokens.json`` and
        ``special_tokens_map.json`` (:meth:`save_pretrained` adds ``tokenizer_config.json``; the entity
        vocabulary: see :func:`mluke.models.entity_vocab.save_entity_vocab`)."""
        self.words.model.save(str(directory))
        xlmr.write_json(directory / xlmr.ADDED_TOKENS_FILE, {xlmr.ENT: self.ent_id, xlmr.ENT2: self.ent2_id})
        mask = self.words.get_added_tokens_decoder()[self.mask_id]
        mask_token = {"content": xlmr.MASK, "lstrip": mask.lstrip, "rstrip": False, "normalized": False}
        specials: dict[str, object] = {
            "bos_token": xlmr.BOS,
            "eos_token": xlmr.EOS,
            "unk_token": xlmr.UNK,
            "sep_token": xlmr.EOS,
        }
        specials |= {"pad_token": xlmr.PAD, "cls_token": xlmr.BOS, "mask_token": mask_token}
        xlmr.write_json(directory / "special_tokens_map.json", specials)

    def entity_ids(self, entities: Sequence[EntityRef], lang: str | None = None) -> tuple[list[int], list[int]]:
        """:meth:`MlukeTokenizer.entity_ids <mluke.MlukeTokenizer.entity_ids>` with every title looked up in
        English (``lang`` and the language of ``(lang, title)`` pairs are ignored)."""
        english = [(LANG, ref[1]) if isinstance(ref, tuple) else ref for ref in entities]
        return super().entity_ids(english, LANG)


def english_titles(tokenizer: object) -> str | None:
    """``"en"`` for a :class:`LukeTokenizer` (its entity vocabulary is written with plain titles), else None."""
    return LANG if isinstance(tokenizer, LukeTokenizer) else None


def tokenizer_class(directory: str | Path) -> type[MlukeTokenizer]:
    """The tokenizer class of a checkpoint folder: :class:`LukeTokenizer` or :class:`~mluke.MlukeTokenizer`."""
    return LukeTokenizer if is_luke_folder(directory) else MlukeTokenizer


# -- encoder-only checkpoints ----------------------------------------------------------------------
def is_encoder_only(state: dict[str, torch.Tensor]) -> bool:
    """Whether weights were saved from a bare ``LukeModel`` (no key has the ``luke.`` prefix)."""
    return bool(state) and not any(k.startswith("luke.") for k in state)


def encoder_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A bare ``LukeModel``'s weights under the names they have inside ``LukeForMaskedLM`` (``luke.`` prefix)."""
    return {f"luke.{k}": v for k, v in state.items()}


class MissingHead(torch.nn.Module):
    """Stands for a prediction head an encoder-only checkpoint lacks: using it (calling it, or reading any
    of its parts) raises a :class:`CheckpointError` naming the folder."""

    def __init__(self, name: str, where: Path) -> None:
        super().__init__()
        self.head_name = name
        self.where = where

    def _error(self) -> CheckpointError:
        what = "word-prediction (masked LM)" if self.head_name == "lm_head" else "entity-prediction (MEP)"
        return MissingHeadError(
            f"{self.where}: holds an encoder without prediction heads (a LukeModel checkpoint); this needs the "
            f"{what} head: use a masked-LM checkpoint (LukeForMaskedLM), or fine-tune the encoder"
        )

    def forward(self, *args: object, **kwargs: object) -> torch.Tensor:
        raise self._error()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("head_name", "where", "training"):
            return super().__getattr__(name)
        raise self._error()


class MissingHeadError(CheckpointError, AttributeError):
    """A prediction head was needed, but the checkpoint holds an encoder only (also an ``AttributeError``, so
    ``hasattr(model.lm_head, "decoder")`` is False)."""


def is_encoder_only_model(model: torch.nn.Module) -> bool:
    """Whether a model was loaded from an encoder-only checkpoint (its heads are :class:`MissingHead`)."""
    return isinstance(model._modules.get("lm_head"), MissingHead)


def drop_heads(model: torch.nn.Module, where: Path) -> None:
    """Replace the prediction heads of a ``LukeForMaskedLM`` by :class:`MissingHead` placeholders."""
    for name in _HEADS:
        setattr(model, name, MissingHead(name, where))
