"""The XLM-R word tokenizer with fairseq ids, as a fast (Rust) ``tokenizers.Tokenizer``.

Ids follow fairseq: ``<s>``=0, ``<pad>``=1, ``</s>``=2, ``<unk>``=3, every other
sentencepiece piece = its sentencepiece id + 1, ``<mask>`` = last piece + 1
(250001 for XLM-R), then mLUKE's ``<ent>`` and ``<ent2>`` (250002, 250003).
It loads from a ``tokenizer.json`` or converts the hub layout's
``sentencepiece.bpe.model`` (with transformers' XLM-R converter), so the ids
do not depend on transformers' ``MLukeTokenizer``, which drops the offset.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tokenizers import AddedToken, Tokenizer

from kb.errors import InputFormatError

SPM_FILE = "sentencepiece.bpe.model"
TOKENIZER_FILE = "tokenizer.json"
ADDED_TOKENS_FILE = "added_tokens.json"
BOS, PAD, EOS, UNK, MASK, ENT, ENT2 = "<s>", "<pad>", "</s>", "<unk>", "<mask>", "<ent>", "<ent2>"


class _SpmShim:
    """The two things transformers' XLMRobertaConverter asks of a slow tokenizer."""

    def __init__(self, vocab_file: Path) -> None:
        self.vocab_file = str(vocab_file)

    def convert_tokens_to_ids(self, token: str) -> int:
        return {BOS: 0, PAD: 1, EOS: 2, UNK: 3}[token]


def from_sentencepiece(spm_path: str | Path) -> Tokenizer:
    """Convert an XLM-R ``sentencepiece.bpe.model`` into a fast tokenizer with fairseq ids."""
    from transformers.convert_slow_tokenizer import XLMRobertaConverter

    spm_path = Path(spm_path)
    try:
        tok = XLMRobertaConverter(_SpmShim(spm_path)).converted()
    except ImportError as exc:  # protobuf missing
        raise InputFormatError(
            f"{spm_path}: reading a sentencepiece model needs the 'protobuf' package ({exc})"
        ) from None
    except Exception as exc:  # a corrupt or non-sentencepiece file
        raise InputFormatError(f"{spm_path}: not a sentencepiece model ({type(exc).__name__}: {exc})") from None
    return tok


def _mark_special_tokens(tok: Tokenizer) -> None:
    """Make the specials, ``<ent>`` and ``<ent2>`` left-stripping special added tokens.

    Left-stripping: whitespace before a special token written in the text makes no piece,
    as with the sentencepiece model mLUKE was trained with (the slow XLM-R and mLUKE
    tokenizers encode the text between special tokens on its own, and sentencepiece drops
    whitespace at its ends): ``"to <unk>, such"`` -> ``▁to <unk> ▁ , ▁such``, not
    ``▁to ▁ <unk> ...``. XLM-R's ``tokenizer.json`` has this for ``<mask>`` only, so
    transformers' fast tokenizer adds a ``▁`` (id 6) before ``<s>``, ``</s>``, ``<unk>``.
    """
    vocab_size = tok.get_vocab_size(with_added_tokens=False)
    mask_id = tok.token_to_id(MASK)
    if mask_id is None:
        raise InputFormatError("the word vocabulary has no <mask> piece; not an XLM-R tokenizer")
    tok.add_special_tokens(
        [AddedToken(t, lstrip=True, special=True, normalized=False) for t in (BOS, PAD, EOS, UNK, MASK, ENT, ENT2)]
    )
    expected = {MASK: vocab_size - 1, ENT: vocab_size, ENT2: vocab_size + 1}
    got = {t: tok.token_to_id(t) for t in expected}
    if got != expected:
        raise InputFormatError(f"special word ids {got} differ from the XLM-R layout {expected}")


def load_word_tokenizer(directory: str | Path) -> Tokenizer:
    """Load the word tokenizer of a checkpoint folder: ``tokenizer.json`` if present, else the
    hub layout's ``sentencepiece.bpe.model``; checks ``added_tokens.json`` against the ids."""
    directory = Path(directory)
    if (directory / TOKENIZER_FILE).is_file():
        try:
            tok = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        except Exception as exc:
            raise InputFormatError(f"{directory / TOKENIZER_FILE}: not a tokenizers JSON file ({exc})") from None
    elif (directory / SPM_FILE).is_file():
        tok = from_sentencepiece(directory / SPM_FILE)
    else:
        raise InputFormatError(
            f"{directory}: no {TOKENIZER_FILE} or {SPM_FILE} (expected an mLUKE/XLM-R checkpoint folder)"
        )
    tok.no_padding()
    tok.no_truncation()
    _mark_special_tokens(tok)
    added = directory / ADDED_TOKENS_FILE
    if added.is_file():
        declared = json.loads(added.read_text(encoding="utf-8"))
        for token, id_ in declared.items():
            if tok.token_to_id(token) != id_:
                raise InputFormatError(
                    f"{added}: {token!r} is declared as id {id_} but the word vocabulary gives {tok.token_to_id(token)}"
                )
    return tok


def save_word_tokenizer(words: Tokenizer, directory: Path, source_dir: Path | None = None) -> None:
    """Write the word tokenizer's files of the hub layout into ``directory``: ``sentencepiece.bpe.model``
    (copied from ``source_dir`` when it has one), ``tokenizer.json``, ``added_tokens.json`` and
    ``special_tokens_map.json``.

    Args:
        words: the word tokenizer (with ``<ent>`` and ``<ent2>``).
        directory: an existing folder.
        source_dir: the folder the tokenizer was loaded from, if any.
    """
    spm = source_dir / SPM_FILE if source_dir is not None else None
    if spm is not None and spm.is_file() and spm.resolve() != (directory / SPM_FILE).resolve():
        shutil.copyfile(spm, directory / SPM_FILE)
    words.save(str(directory / TOKENIZER_FILE))
    write_json(directory / ADDED_TOKENS_FILE, {ENT: words.token_to_id(ENT), ENT2: words.token_to_id(ENT2)})
    write_json(
        directory / "special_tokens_map.json",
        {
            "bos_token": BOS,
            "eos_token": EOS,
            "unk_token": UNK,
            "sep_token": EOS,
            "pad_token": PAD,
            "cls_token": BOS,
            "mask_token": {
                "content": MASK,
                "lstrip": True,
                "rstrip": False,
                "normalized": False,
                "single_word": False,
            },
            "additional_special_tokens": [ENT, ENT2],
        },
    )


def write_json(path: Path, data: object) -> None:
    """Write ``data`` as indented UTF-8 JSON (non-ASCII kept as it is), ending with a newline."""
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
