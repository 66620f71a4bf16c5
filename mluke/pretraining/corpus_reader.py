"""Reading a pretraining corpus folder (written by :func:`mluke.pretraining.corpus.build_corpus`, whose
docs give the layout): per-language memory-mapped shards of :class:`Sequence` objects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kb.errors import InputFormatError
from kb.files import is_plain_name
from kb.vocab import EntityVocab
from mluke.models.tokenizer import MlukeTokenizer

FORMAT = "mluke-pretraining-corpus"
FORMAT_VERSION = 1
ARRAYS = {
    "word_ids": np.int32,
    "word_offsets": np.int64,
    "entity_ids": np.int32,
    "entity_spans": np.int32,
    "entity_offsets": np.int64,
}


@dataclass
class Sequence:
    """One training sequence: word ids (no specials), entity ids and their word spans."""

    lang: str
    word_ids: np.ndarray
    entity_ids: np.ndarray
    entity_spans: np.ndarray  # (n, 2)


class LanguageShard:
    """Random access to one language's sequences (memory-mapped)."""

    def __init__(self, folder: Path, lang: str, counts: dict[str, int]) -> None:
        self.lang = lang
        n = counts["sequences"]
        self._arrays = {}
        sizes = {
            "word_ids": counts["words"],
            "word_offsets": n + 1,
            "entity_ids": counts["entities"],
            "entity_offsets": n + 1,
            "entity_spans": counts["entities"] * 2,
        }
        for name, dtype in ARRAYS.items():
            path = folder / f"{name}.bin"
            expected = sizes[name] * np.dtype(dtype).itemsize
            if not path.is_file() or path.stat().st_size != expected:
                raise InputFormatError(
                    f"{path}: missing or of the wrong size (expected {expected} bytes); rebuild the corpus"
                )
            self._arrays[name] = np.memmap(path, dtype=dtype, mode="r") if expected else np.zeros(0, dtype)
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> Sequence:
        if not 0 <= i < self._n:
            raise IndexError(f"sequence {i} of {self._n} in {self.lang!r}")
        a = self._arrays
        w0, w1 = a["word_offsets"][i], a["word_offsets"][i + 1]
        e0, e1 = a["entity_offsets"][i], a["entity_offsets"][i + 1]
        spans = a["entity_spans"][2 * e0 : 2 * e1].reshape(-1, 2)
        return Sequence(
            self.lang, np.asarray(a["word_ids"][w0:w1]), np.asarray(a["entity_ids"][e0:e1]), np.asarray(spans)
        )


class Corpus:
    """A corpus folder opened for reading: ``corpus["ja"][17]`` is a :class:`Sequence`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise InputFormatError(f"{self.path}: no meta.json (expected a corpus folder written by build_corpus)")
        self.meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if self.meta.get("format") != FORMAT or self.meta.get("format_version") != FORMAT_VERSION:
            raise InputFormatError(f"{meta_path}: not a {FORMAT} v{FORMAT_VERSION} corpus")
        bad = next((lang for lang in self.meta["languages"] if not is_plain_name(lang)), None)
        if bad is not None:  # each language is a folder of the corpus: ../x or /x would reach other files
            raise InputFormatError(f"{meta_path}: language {bad!r} is not a folder name inside the corpus")
        self.shards = {
            lang: LanguageShard(self.path / lang, lang, c) for lang, c in sorted(self.meta["languages"].items())
        }

    @property
    def languages(self) -> list[str]:
        return list(self.shards)

    def __getitem__(self, lang: str) -> LanguageShard:
        return self.shards[lang]

    def sizes(self) -> dict[str, int]:
        return {lang: len(s) for lang, s in self.shards.items()}

    def tokenizer(self) -> MlukeTokenizer:
        return MlukeTokenizer.from_pretrained(self.path / "tokenizer", entity_vocab=self.entity_vocab())

    def entity_vocab(self) -> EntityVocab:
        return EntityVocab(self.path / "entity_vocab.sqlite")

    def __iter__(self) -> Iterator[Sequence]:
        for shard in self.shards.values():
            for i in range(len(shard)):
                yield shard[i]
