"""``EntityVocab``: read access to an entity vocabulary file, and the class methods that build, import and
export one (the writing is :mod:`kb.vocab.storage`'s, the other tools' layouts :mod:`kb.vocab.interchange`'s).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kb.db.sqlite import SqliteStore, chunked
from kb.db.titles import normalize_title
from kb.errors import NotFoundError, OptionError, option
from kb.languages import check_languages
from kb.vocab import interchange, storage

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from kb.db.database import EntityDB
    from kb.jsontypes import JsonObject, JsonValue
    from kb.vocab.interchange import HfImportKeywords, ImportKeywords


class EntityVocab(SqliteStore):
    """Read access to a vocabulary file; build or import one with the class methods."""

    FORMAT = storage.FORMAT
    FORMAT_VERSION = storage.FORMAT_VERSION
    WHAT = "an mluke entity vocabulary"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.special_ids: dict[str, int] = dict(
            self._conn.execute("SELECT special, id FROM entries WHERE special IS NOT NULL")
        )
        self._size = int(self._conn.execute("SELECT COALESCE(MAX(id) + 1, 0) FROM entries").fetchone()[0])

    def __repr__(self) -> str:
        return f"EntityVocab({str(self.path)!r}, size={len(self)})"

    def __len__(self) -> int:
        """Number of ids (the entity embedding's row count)."""
        return self._size

    # -- special entities ---------------------------------------------------------------
    def special_id(self, name: str) -> int:
        """Id of a special entity (``"[MASK]"``...), as stored in the file."""
        try:
            return self.special_ids[name]
        except KeyError:
            raise NotFoundError(
                f"{self.path} has no special entity {name!r} (it has: {', '.join(sorted(self.special_ids)) or 'none'})"
            ) from None

    @property
    def pad_id(self) -> int:
        return self.special_id(storage.PAD)

    @property
    def unk_id(self) -> int:
        return self.special_id(storage.UNK)

    @property
    def mask_id(self) -> int:
        return self.special_id(storage.MASK)

    @property
    def mask2_id(self) -> int:
        return self.special_id(storage.MASK2)

    # -- look-ups -------------------------------------------------------------------------
    def get_id(self, lang: str, title: str, default: int | None = None) -> int | None:
        """Id of the page ``title`` in ``lang`` (exact, then MediaWiki-normalised title).

        Args:
            lang: the wiki's language code.
            title: the page title.
            default: what to return when the title is not in the vocabulary.

        Returns:
            The id, or ``default``.
        """
        for candidate in dict.fromkeys((title, normalize_title(title))):
            row = self._conn.execute("SELECT id FROM names WHERE lang = ? AND title = ?", (lang, candidate)).fetchone()
            if row is not None:
                return cast(int, row[0])
        return default

    def get_ids(self, pairs: Sequence[tuple[str, str]], default: int | None = None) -> list[int | None]:
        """Ids of many ``(lang, title)`` pairs (exact titles), one indexed query per language and chunk.

        Args:
            pairs: the ``(lang, title)`` pairs.
            default: the id of a pair that is not in the vocabulary.

        Returns:
            One id (or ``default``) per pair.
        """
        by_lang: dict[str, list[str]] = {}
        for lang, title in dict.fromkeys(pairs):
            by_lang.setdefault(lang, []).append(title)
        found: dict[tuple[str, str], int] = {}
        for lang, titles in by_lang.items():
            for part in chunked(titles, 900):
                marks = ",".join("?" * len(part))
                found.update(
                    ((lang, t), i)
                    for t, i in self._conn.execute(
                        f"SELECT title, id FROM names WHERE lang = ? AND title IN ({marks})", (lang, *part)
                    )
                )
        return [found.get((p[0], p[1]), default) for p in pairs]

    def id_of_key(self, key: str, default: int | None = None) -> int | None:
        """Id of an entity key (QID); ``default`` if the entity is not in the vocabulary."""
        row = self._conn.execute("SELECT id FROM entries WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def ids_of_keys(self, keys: Sequence[str], default: int | None = None) -> list[int | None]:
        found: dict[str, int] = {}
        for part in chunked(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            found.update(self._conn.execute(f"SELECT key, id FROM entries WHERE key IN ({marks})", part))
        return [found.get(k, default) for k in keys]

    def entry(self, id: int) -> storage.VocabEntry:
        """Everything stored for ``id``.

        Args:
            id: a vocabulary id.

        Returns:
            Its entry.

        Raises:
            NotFoundError: an unused id.
        """
        row = self._conn.execute("SELECT key, special, count FROM entries WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"id {id} is not in {self.path} (ids run from 0 to {len(self) - 1})")
        names = tuple(self._conn.execute("SELECT lang, title FROM names WHERE id = ? ORDER BY lang, title", (id,)))
        return storage.VocabEntry(id, row[0], row[1], row[2], names)

    def entries(self, ids: Sequence[int]) -> list[storage.VocabEntry]:
        """:meth:`entry` of many ids at once (one query per 500 ids); unused ids raise :class:`NotFoundError`."""
        found: dict[int, tuple[str | None, str | None, int]] = {}
        names: dict[int, list[tuple[str, str]]] = {}
        for part in chunked(list(dict.fromkeys(int(i) for i in ids))):
            marks = ",".join("?" * len(part))
            found.update(
                (i, (k, s, c))
                for i, k, s, c in self._conn.execute(
                    f"SELECT id, key, special, count FROM entries WHERE id IN ({marks})", part
                )
            )
            for i, lang, title in self._conn.execute(
                f"SELECT id, lang, title FROM names WHERE id IN ({marks}) ORDER BY id, lang, title", part
            ):
                names.setdefault(i, []).append((lang, title))
        missing = [i for i in ids if int(i) not in found]
        if missing:
            raise NotFoundError(f"ids {missing[:5]} are not in {self.path} (ids run from 0 to {len(self) - 1})")
        return [storage.VocabEntry(int(i), *found[int(i)], tuple(names.get(int(i), ()))) for i in ids]

    def __iter__(self) -> Iterator[storage.VocabEntry]:
        """All entries in id order (names fetched in one pass, not one query per id)."""
        rows = self._conn.execute("SELECT id, key, special, count FROM entries ORDER BY id")
        name_rows = self._conn.execute("SELECT id, lang, title FROM names ORDER BY id, lang, title")
        pending = next(name_rows, None)
        for id_, key, special, count in rows:
            names: list[tuple[str, str]] = []
            while pending is not None and pending[0] == id_:
                names.append((pending[1], pending[2]))
                pending = next(name_rows, None)
            while pending is not None and pending[0] < id_:
                pending = next(name_rows, None)
            yield storage.VocabEntry(id_, key, special, count, tuple(names))

    def languages(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT lang FROM names ORDER BY lang")]

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        db: EntityDB,
        path: str | os.PathLike[str],
        *,
        size: int = storage.DEFAULT_SIZE,
        min_languages: int = storage.DEFAULT_MIN_LANGUAGES,
        languages: Iterable[str] | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """The ``size`` entities with most hyperlinks among those with a title in >= ``min_languages``.

        Ties are broken by entity key, so ids are the same on every run. Ids 0-3
        are ``[PAD]``, ``[UNK]``, ``[MASK]``, ``[MASK2]``.

        Args:
            db: the entity database (hyperlink counts and titles).
            path: the vocabulary file to write.
            size: the most entities (besides the special ones).
            min_languages: the fewest languages an entity needs a title in.
            languages: the languages counted and named (default: the database's).
            overwrite: replace an existing ``path``.

        Returns:
            The vocabulary.

        Raises:
            OptionError: a vocabulary that would be empty: ``min_languages`` above the number of languages
                counted, or no entity with titles in that many (the message says which value to pass).
        """
        langs = check_languages(languages if languages is not None else db.languages, db.languages)
        if size < 1 or min_languages < 1:
            raise OptionError(f"size and min_languages must be positive, got {size} and {min_languages}")
        fix = {
            "min_languages": option("min_languages", min_languages),
            "fewer": option("min_languages", max(1, min(len(langs), min_languages - 1))),
        }
        counted = f"{len(langs)} language{'s' if len(langs) != 1 else ''} ({', '.join(langs)})"
        if min_languages > len(langs):
            raise OptionError(
                f"{{min_languages}}: counting the {counted} of {db.path}, no entity can have a title in "
                f"{min_languages}, so the vocabulary would be empty; pass {{fewer}}",
                options=fix,
            )
        ranked = db.vocab_ranking(langs, min_languages, size)
        if not ranked and min_languages == 1:
            raise OptionError(f"{db.path} has no entity with a title in {counted}: the vocabulary would be empty")
        if not ranked:
            raise OptionError(
                f"{{min_languages}}: counting the {counted} of {db.path}, no entity has a title in "
                f"{min_languages}, so the vocabulary would be empty; pass {{fewer}}",
                options=fix,
            )
        first = len(storage.SPECIAL_ENTITIES)
        ids = {key: first + i for i, (key, _) in enumerate(ranked)}
        names: dict[int, list[tuple[str, str]]] = {}
        for lang, title, key in db.iter_titles(langs):
            if key in ids:
                names.setdefault(ids[key], []).append((lang, title))

        def rows() -> Iterator[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]]:
            for i, name in enumerate(storage.SPECIAL_ENTITIES):
                yield i, None, name, 0, ()
            for key, count in ranked:
                yield ids[key], key, None, count, names.get(ids[key], ())

        provenance: JsonObject = {
            "builder": "kb.EntityVocab.build",
            "database": str(db.path),
            "size": size,
            "min_languages": min_languages,
            "languages": list(langs),
            "entities": len(ranked),
        }
        storage.write_entries(path, rows(), overwrite=overwrite, provenance=provenance)
        return cls(path)

    @classmethod
    def for_entities(
        cls, db: EntityDB, keys: Sequence[str], path: str | os.PathLike[str], *, overwrite: bool = False
    ) -> EntityVocab:
        """A vocabulary of exactly ``keys`` (ids 4, 5, ... in the given order), named by their titles in ``db``.

        Args:
            db: the entity database (titles).
            keys: the entity keys (QIDs).
            path: the vocabulary file to write.
            overwrite: replace an existing ``path``.

        Returns:
            The vocabulary.
        """

        def rows() -> Iterator[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]]:
            for i, name in enumerate(storage.SPECIAL_ENTITIES):
                yield i, None, name, 0, ()
            for i, key in enumerate(keys, start=len(storage.SPECIAL_ENTITIES)):
                yield i, key, None, 0, tuple(sorted(db.titles(key).items()))

        provenance: JsonObject = {
            "builder": "kb.EntityVocab.for_entities",
            "database": str(db.path),
            "entities": len(keys),
        }
        storage.write_entries(path, rows(), overwrite=overwrite, provenance=provenance)
        return cls(path)

    @classmethod
    def from_entries(
        cls,
        entries: Iterable[storage.VocabEntry],
        path: str | os.PathLike[str],
        *,
        provenance: Mapping[str, JsonValue] | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """A vocabulary of exactly ``entries``, ids as given: for vocabularies made without an entity database
        (synthetic ones in tests and benchmarks, or another tool's ids). Special entities are entries with
        ``special`` set (e.g. ``VocabEntry(0, None, "[PAD]", 0, ())``).

        Args:
            entries: the entries, in any order (a generator is read once, so millions fit).
            path: the vocabulary file to write.
            provenance: what the file records about where it came from (default: this method's name).
            overwrite: replace an existing ``path``.

        Returns:
            The vocabulary.

        Raises:
            InputFormatError: an id or a (language, title) appears twice, or a special entity has two ids.
        """
        rows = ((e.id, e.key, e.special, e.count, e.names) for e in entries)
        recorded: JsonObject = {"builder": "kb.EntityVocab.from_entries", **(provenance or {})}
        storage.write_entries(path, rows, overwrite=overwrite, provenance=recorded)
        return cls(path)

    @classmethod
    def import_file(
        cls,
        source: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        layout: str | None = None,
        **keywords: Unpack[HfImportKeywords],
    ) -> EntityVocab:
        """Import a vocabulary file in the ``"hf"`` layout (:meth:`import_hf`) or the luke ``"jsonl"`` one
        (:meth:`import_jsonl`), keeping its ids: what ``mluke kb vocab-import`` does. ``layout=None`` reads
        it from the file: one JSON object per line with ``"entities"`` is ``"jsonl"``, anything else ``"hf"``.

        Args:
            source: the file to import.
            path: the vocabulary file to write.
            layout: ``"hf"``, ``"jsonl"`` or None (read from the file).
            **keywords: ``db``, ``overwrite`` and (``"hf"`` only) ``default_lang``, as :meth:`import_hf` takes them.

        Returns:
            The vocabulary.
        """
        if layout is None:
            layout = interchange.vocab_layout(source)
        if layout == "hf":
            return cls.import_hf(source, path, **keywords)
        if layout == "jsonl":
            return cls.import_jsonl(source, path, db=keywords.get("db"), overwrite=keywords.get("overwrite", False))
        raise OptionError(interchange.LAYOUT_MESSAGE, options={"layout": option("layout", layout)})

    @classmethod
    def import_hf(
        cls, json_path: str | os.PathLike[str], path: str | os.PathLike[str], **keywords: Unpack[HfImportKeywords]
    ) -> EntityVocab:
        """Import a Hugging Face ``entity_vocab.json`` (``{"en:Tokyo": 5, "[MASK]": 2, ...}``).

        Ids are taken from the file. Keys are ``"lang:title"``; special entities are unprefixed. The file is
        streamed: memory stays flat however large it is.

        Args:
            json_path: the ``entity_vocab.json``.
            path: the vocabulary file to write.
            **keywords: ``db``: also give each id its entity key (QID), through its titles; ``default_lang``: the
                language of unprefixed keys (a monolingual LUKE file needs it); ``overwrite``: replace an
                existing ``path``.

        Returns:
            The vocabulary.

        Raises:
            InputFormatError: not such a file, a bad id, a key without a language, a title twice.
        """
        interchange.import_hf(json_path, path, **keywords)
        return cls(path)

    @classmethod
    def import_jsonl(
        cls, jsonl_path: str | os.PathLike[str], path: str | os.PathLike[str], **keywords: Unpack[ImportKeywords]
    ) -> EntityVocab:
        """Import the original luke layout: one ``{"id", "entities": [[title, lang], ...], "count"}`` per line.

        Args:
            jsonl_path: the JSON-lines file.
            path: the vocabulary file to write.
            **keywords: ``db``: also give each id its entity key (QID), through its titles; ``overwrite``:
                replace an existing ``path``.

        Returns:
            The vocabulary.
        """
        provenance = {"builder": "kb.EntityVocab.import_jsonl", "source": str(Path(jsonl_path))}
        rows = interchange.read_jsonl(Path(jsonl_path))
        storage.write_entries(
            path, rows, overwrite=keywords.get("overwrite", False), provenance=provenance, db=keywords.get("db")
        )
        return cls(path)

    # -- export ---------------------------------------------------------------------------------
    def export(self, path: str | os.PathLike[str], *, layout: str = "hf", overwrite: bool = False) -> Path:
        """Write the ``"hf"`` (:meth:`export_hf`) or ``"jsonl"`` (:meth:`export_jsonl`) layout: what
        ``mluke kb vocab-export`` does."""
        if layout == "hf":
            return self.export_hf(path, overwrite=overwrite)
        if layout == "jsonl":
            return self.export_jsonl(path, overwrite=overwrite)
        raise OptionError(interchange.LAYOUT_MESSAGE, options={"layout": option("layout", layout)})

    def export_hf(
        self, json_path: str | os.PathLike[str], *, default_lang: str | None = None, overwrite: bool = False
    ) -> Path:
        """Write the Hugging Face ``entity_vocab.json`` layout (streamed, atomically).

        Args:
            json_path: the file to write.
            default_lang: write the titles of this language without a ``lang:`` prefix (``"en"`` for an English
                LUKE file; the inverse of :meth:`import_hf`'s ``default_lang``).
            overwrite: replace an existing file.

        Returns:
            ``json_path``.
        """
        lines = interchange.hf_lines(self, default_lang)
        return interchange.write_text(json_path, lines, overwrite=overwrite, head="{\n", sep=",\n", tail="\n}\n")

    def export_jsonl(self, jsonl_path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the original luke layout; special entities get one entry per language, as luke writes them."""
        lines = interchange.jsonl_lines(self, self.languages())
        return interchange.write_text(jsonl_path, lines, overwrite=overwrite, head="", sep="\n", tail="\n")
