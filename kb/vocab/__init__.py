"""The multilingual entity vocabulary of an mLUKE model: :class:`EntityVocab`.

Ids are what the model's entity embedding rows are indexed by. One id stands for one entity under all its
titles (``("en", "Tokyo")`` and ``("ja", "東京")`` share an id). The vocabulary is an SQLite file: opening
it is instant and a look-up reads a few pages, instead of parsing a 418 MB JSON file into a dict.

Special entities ``[PAD]``, ``[UNK]``, ``[MASK]``, ``[MASK2]`` have ids that differ between checkpoints:
they are always read from the file, never assumed.

- ``entity_vocab``: :class:`EntityVocab` (look-ups, building, import and export);
- ``storage``: the file format, :class:`VocabEntry` and the atomic writer every way of making a vocabulary
  goes through;
- ``interchange``: the Hugging Face ``entity_vocab.json`` and the luke JSON-lines layouts.
"""

from kb.vocab.entity_vocab import EntityVocab
from kb.vocab.interchange import vocab_layout
from kb.vocab.storage import (
    DEFAULT_MIN_LANGUAGES,
    DEFAULT_SIZE,
    FORMAT,
    FORMAT_VERSION,
    MASK,
    MASK2,
    PAD,
    SPECIAL_ENTITIES,
    UNK,
    VocabEntry,
)

__all__ = [
    "DEFAULT_MIN_LANGUAGES",
    "DEFAULT_SIZE",
    "FORMAT",
    "FORMAT_VERSION",
    "MASK",
    "MASK2",
    "PAD",
    "SPECIAL_ENTITIES",
    "UNK",
    "EntityVocab",
    "VocabEntry",
    "vocab_layout",
]
