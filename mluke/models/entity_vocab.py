"""The entity vocabulary of a checkpoint folder, served from :class:`kb.EntityVocab` (SQLite).

A folder may hold our ``entity_vocab.sqlite`` (used directly), the Hugging Face
``entity_vocab.json`` or the original luke ``entity_vocab.jsonl``. JSON files
are imported once into the cache (keyed by a hash of the file's content), so
later loads open the SQLite copy instantly instead of parsing ~418 MB of JSON.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from kb.cache import cache_dir
from kb.errors import InputFormatError
from kb.files import atomic_path
from kb.vocab import EntityVocab

SQLITE_FILE = "entity_vocab.sqlite"
#: The cache folder (:func:`kb.cache.cache_dir`) where imported JSON vocabularies are kept as SQLite.
VOCAB_FOLDER = "entity-vocab"
HF_FILE = "entity_vocab.json"
JSONL_FILE = "entity_vocab.jsonl"


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def load_entity_vocab(directory: str | Path, *, default_lang: str | None = None) -> EntityVocab | None:
    """The folder's entity vocabulary, or ``None`` when it has none (a word-only checkpoint).

    Args:
        directory: the checkpoint folder.
        default_lang: the language of keys without a ``lang:`` prefix (``"en"`` for English LUKE).

    Returns:
        The vocabulary, or ``None``.
    """
    directory = Path(directory)
    if (directory / SQLITE_FILE).is_file():
        return EntityVocab(directory / SQLITE_FILE)
    for name, importer in ((HF_FILE, EntityVocab.import_hf), (JSONL_FILE, EntityVocab.import_jsonl)):
        source = directory / name
        if source.is_file():
            lang = f"-{default_lang}" if default_lang and name == HF_FILE else ""
            target = cache_dir() / VOCAB_FOLDER / f"{_digest(source)}{lang}.sqlite"
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                if lang:
                    EntityVocab.import_hf(source, target, default_lang=default_lang, overwrite=True)
                else:
                    importer(source, target, overwrite=True)
            return EntityVocab(target)
    return None


def save_entity_vocab(vocab: EntityVocab, directory: str | Path, *, default_lang: str | None = None) -> None:
    """Write ``entity_vocab.json`` (for transformers; titles of ``default_lang`` unprefixed, as English LUKE has
    them) and our ``entity_vocab.sqlite`` into ``directory``."""
    directory = Path(directory)
    if vocab.path.resolve() == (directory / SQLITE_FILE).resolve():
        raise InputFormatError(f"{directory}: saving a vocabulary onto itself")
    vocab.export_hf(directory / HF_FILE, default_lang=default_lang, overwrite=True)
    with atomic_path(directory / SQLITE_FILE, overwrite=True) as tmp:
        shutil.copyfile(vocab.path, tmp)
