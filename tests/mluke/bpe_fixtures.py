"""A tiny RoBERTa-style byte-level BPE (``vocab.json`` + ``merges.txt``) trained in a test's folder: the word
tokenizer of the English LUKE and RoBERTa test checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def write_byte_level_bpe(folder: Path, sentences: Sequence[str], vocab_size: int) -> None:
    """Create ``folder`` and write a byte-level BPE trained on ``sentences`` (RoBERTa's special tokens first)."""
    from tokenizers import ByteLevelBPETokenizer

    folder.mkdir(parents=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        sentences, vocab_size=vocab_size, min_frequency=2, show_progress=False, special_tokens=SPECIAL_TOKENS
    )
    bpe.save_model(str(folder))
