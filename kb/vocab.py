"""``EntityVocab``: the multilingual entity vocabulary of an mLUKE model.

One cohesive class (about 480 lines): building, importing, exporting and looking up the
same SQLite file.

Ids are what the model's entity embedding rows are indexed by. One id stands
for one entity under all its titles (``("en", "Tokyo")`` and ``("ja", "東京")``
share an id). The vocabulary is an SQLite file: opening it is instant and a
look-up reads a few pages, instead of parsing a 418 MB JSON file into a dict.

Special entities ``[PAD]``, ``[UNK]``, ``[MASK]``, ``[MASK2]`` have ids that
differ between checkpoints: they are always read from the file, never assumed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.db.sqlite import SqliteStore, atomic_build, chunked
from kb.db.titles import normalize_title
from kb.errors import InputFormatError, NotFoundError, Option, OptionError, option
from kb.files import atomic_text
from kb.languages import check_languages

if TYPE_CHECKING:
    from kb.db.database import EntityDB

FORMAT = "mluke-entity-vocab"
FORMAT_VERSION = 1
PAD, UNK, MASK, MASK2 = "[PAD]", "[UNK]", "[MASK]", "[MASK2]"
#: Special entities, in the order a newly built vocabulary gives them ids 0-3.
SPECIAL_ENTITIES: tuple[str, ...] = (PAD, UNK, MASK, MASK2)
DEFAULT_SIZE = 1_200_000
DEFAULT_MIN_LANGUAGES = 3

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- One row per id. key: the entity key (QID) when known; special: '[MASK]' etc.
CREATE TABLE entries(id INTEGER PRIMARY KEY, key TEXT, special TEXT, count INTEGER NOT NULL DEFAULT 0);
CREATE TABLE names(lang TEXT NOT NULL, title TEXT NOT NULL, id INTEGER NOT NULL,
                   PRIMARY KEY(lang, title)) WITHOUT ROWID;
"""
_INDEXES = """
CREATE INDEX names_by_id ON names(id);
CREATE INDEX entries_by_key ON entries(key) WHERE key IS NOT NULL;
CREATE UNIQUE INDEX entries_by_special ON entries(special) WHERE special IS NOT NULL;
"""
_LANG_PREFIX_RE = re.compile(r"^([a-z]{2,3}(?:-[a-z0-9]{2,8})*|simple):(.+)$", re.S)


@dataclass(frozen=True)
class VocabEntry:
    """One vocabulary id: its entity key (if known), special name, count and titles."""

    id: int
    key: str | None
    special: str | None
    count: int
    names: tuple[tuple[str, str], ...]  # ((lang, title), ...)

    def title(self, lang: str) -> str | None:
        return next((t for l, t in self.names if l == lang), None)


class EntityVocab(SqliteStore):
    """Read access to a vocabulary file; build or import one with the class methods."""

    FORMAT = FORMAT
    FORMAT_VERSION = FORMAT_VERSION
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
        return self.special_id(PAD)

    @property
    def unk_id(self) -> int:
        return self.special_id(UNK)

    @property
    def mask_id(self) -> int:
        return self.special_id(MASK)

    @property
    def mask2_id(self) -> int:
        return self.special_id(MASK2)

    # -- look-ups -------------------------------------------------------------------------
    def get_id(self, lang: str, title: str, default: int | None = None) -> int | None:
        """Id of the page ``title`` in ``lang`` (exact, then MediaWiki-normalised title)."""
        for candidate in dict.fromkeys((title, normalize_title(title))):
            row = self._conn.execute("SELECT id FROM names WHERE lang = ? AND title = ?", (lang, candidate)).fetchone()
            if row is not None:
                return row[0]
        return default

    def get_ids(self, pairs: Sequence[tuple[str, str]], default: int | None = None) -> list[int | None]:
        """Ids of many ``(lang, title)`` pairs (exact titles), one indexed query per language and chunk."""
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

    def entry(self, id: int) -> VocabEntry:
        """Everything stored for ``id``; raises :class:`NotFoundError` for an unused id."""
        row = self._conn.execute("SELECT key, special, count FROM entries WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"id {id} is not in {self.path} (ids run from 0 to {len(self) - 1})")
        names = tuple(self._conn.execute("SELECT lang, title FROM names WHERE id = ? ORDER BY lang, title", (id,)))
        return VocabEntry(id, row[0], row[1], row[2], names)

    def entries(self, ids: Sequence[int]) -> list[VocabEntry]:
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
        return [VocabEntry(int(i), *found[int(i)], tuple(names.get(int(i), ()))) for i in ids]

    def __iter__(self) -> Iterator[VocabEntry]:
        """All entries in id order (names fetched in one pass, not one query per id)."""
        names: dict[int, list[tuple[str, str]]] = {}
        rows = self._conn.execute("SELECT id, key, special, count FROM entries ORDER BY id")
        name_rows = self._conn.execute("SELECT id, lang, title FROM names ORDER BY id, lang, title")
        pending = next(name_rows, None)
        for id_, key, special, count in rows:
            names = []
            while pending is not None and pending[0] == id_:
                names.append((pending[1], pending[2]))
                pending = next(name_rows, None)
            while pending is not None and pending[0] < id_:
                pending = next(name_rows, None)
            yield VocabEntry(id_, key, special, count, tuple(names))

    def languages(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT lang FROM names ORDER BY lang")]

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def _write(
        cls,
        path: str | os.PathLike[str],
        entries: Iterable[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]],
        *,
        overwrite: bool,
        provenance: dict[str, Any],
        db: EntityDB | None = None,
    ) -> EntityVocab:
        """Write ``(id, key, special, count, names)`` rows atomically; reject duplicate names or ids.
        With ``db``, ids without a key get the one their titles resolve to."""
        with atomic_build(
            path, fmt=FORMAT, version=FORMAT_VERSION, schema=_SCHEMA, overwrite=overwrite, provenance=provenance
        ) as conn:
            ins_entry = "INSERT INTO entries(id, key, special, count) VALUES (?, ?, ?, ?)"
            ins_name = "INSERT INTO names(lang, title, id) VALUES (?, ?, ?)"
            batch_e: list[tuple] = []
            batch_n: list[tuple] = []
            for id_, key, special, count, names in entries:
                batch_e.append((id_, key, special, count))
                batch_n.extend((l, t, id_) for l, t in names)
                if len(batch_n) > 50_000:
                    _flush(conn, ins_entry, batch_e, ins_name, batch_n, path)
            _flush(conn, ins_entry, batch_e, ins_name, batch_n, path)
            if db is not None:
                _attach_keys(conn, db)
            _create_indexes(conn, path)
        return cls(path)

    @classmethod
    def build(
        cls,
        db: EntityDB,
        path: str | os.PathLike[str],
        *,
        size: int = DEFAULT_SIZE,
        min_languages: int = DEFAULT_MIN_LANGUAGES,
        languages: Iterable[str] | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """The ``size`` entities with most hyperlinks among those with a title in >= ``min_languages``.

        Ties are broken by entity key, so ids are the same on every run. Ids 0-3
        are ``[PAD]``, ``[UNK]``, ``[MASK]``, ``[MASK2]``.
        """
        langs = check_languages(languages if languages is not None else db.languages, db.languages)
        if size < 1 or min_languages < 1:
            raise ValueError(f"size and min_languages must be positive, got {size} and {min_languages}")
        ranked = db.vocab_ranking(langs, min_languages, size)
        first = len(SPECIAL_ENTITIES)
        ids = {key: first + i for i, (key, _) in enumerate(ranked)}
        names: dict[int, list[tuple[str, str]]] = {}
        for lang, title, key in db.iter_titles(langs):
            if key in ids:
                names.setdefault(ids[key], []).append((lang, title))

        def rows() -> Iterator[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]]:
            for i, name in enumerate(SPECIAL_ENTITIES):
                yield i, None, name, 0, ()
            for key, count in ranked:
                yield ids[key], key, None, count, names.get(ids[key], ())

        provenance = {
            "builder": "kb.EntityVocab.build",
            "database": str(db.path),
            "size": size,
            "min_languages": min_languages,
            "languages": list(langs),
            "entities": len(ranked),
        }
        return cls._write(path, rows(), overwrite=overwrite, provenance=provenance)

    @classmethod
    def for_entities(
        cls, db: EntityDB, keys: Sequence[str], path: str | os.PathLike[str], *, overwrite: bool = False
    ) -> EntityVocab:
        """A vocabulary of exactly ``keys`` (ids 4, 5, ... in the given order), named by their titles in ``db``."""

        def rows() -> Iterator[tuple[int, str | None, str | None, int, Iterable[tuple[str, str]]]]:
            for i, name in enumerate(SPECIAL_ENTITIES):
                yield i, None, name, 0, ()
            for i, key in enumerate(keys, start=len(SPECIAL_ENTITIES)):
                yield i, key, None, 0, tuple(sorted(db.titles(key).items()))

        provenance = {"builder": "kb.EntityVocab.for_entities", "database": str(db.path), "entities": len(keys)}
        return cls._write(path, rows(), overwrite=overwrite, provenance=provenance)

    @classmethod
    def import_file(
        cls,
        source: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        layout: str | None = None,
        db: EntityDB | None = None,
        default_lang: str | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """Import a vocabulary file in the ``"hf"`` layout (:meth:`import_hf`) or the luke ``"jsonl"`` one
        (:meth:`import_jsonl`), keeping its ids: what ``mluke kb vocab-import`` does. ``layout=None`` reads
        it from the file: one JSON object per line with ``"entities"`` is ``"jsonl"``, anything else ``"hf"``."""
        if layout is None:
            layout = vocab_layout(source)
        if layout == "hf":
            return cls.import_hf(source, path, db=db, default_lang=default_lang, overwrite=overwrite)
        if layout == "jsonl":
            return cls.import_jsonl(source, path, db=db, overwrite=overwrite)
        raise OptionError(_layout_message, options={"layout": option("layout", layout)})

    @classmethod
    def import_hf(
        cls,
        json_path: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        db: EntityDB | None = None,
        default_lang: str | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """Import a Hugging Face ``entity_vocab.json`` (``{"en:Tokyo": 5, "[MASK]": 2, ...}``).

        Ids are taken from the file. Keys are ``"lang:title"``; special entities are
        unprefixed. A monolingual LUKE file (plain titles) needs ``default_lang``.
        With ``db``, each id also gets its entity key (QID) through the titles.
        The file is streamed: memory stays flat however large it is.
        """
        json_path = Path(json_path)
        provenance = {"builder": "kb.EntityVocab.import_hf", "source": str(json_path)}
        with atomic_build(
            path, fmt=FORMAT, version=FORMAT_VERSION, schema=_SCHEMA, overwrite=overwrite, provenance=provenance
        ) as conn:
            entries: list[tuple[int, str | None]] = []
            names: list[tuple[str, str, int]] = []
            for raw_key, raw_id in _stream_json_object(json_path):
                try:
                    id_ = int(raw_id)
                except ValueError:
                    id_ = -1
                if id_ < 0 or not raw_id.isdigit():
                    raise InputFormatError(
                        f"{json_path}: entry {raw_key!r} has id {raw_id}; expected a non-negative integer"
                    )
                if raw_key in SPECIAL_ENTITIES:
                    entries.append((id_, raw_key))
                    continue
                entries.append((id_, None))
                m = _LANG_PREFIX_RE.match(raw_key)
                if m:
                    names.append((m.group(1), m.group(2), id_))
                elif default_lang is not None:
                    names.append((default_lang, raw_key, id_))
                else:
                    raise InputFormatError(
                        f"{json_path}: key {raw_key!r} has no language prefix; expected 'lang:title' keys "
                        "as in mLUKE's entity_vocab.json (for a monolingual LUKE vocabulary pass {default_lang})",
                        options={"default_lang": Option("default_lang='en'", "--default-lang en")},
                    )
                if len(names) >= 50_000:
                    _insert_pairs(conn, entries, names, path)
            _insert_pairs(conn, entries, names, path)
            if db is not None:
                _attach_keys(conn, db)
            _create_indexes(conn, path)
        return cls(path)

    @classmethod
    def import_jsonl(
        cls,
        jsonl_path: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        db: EntityDB | None = None,
        overwrite: bool = False,
    ) -> EntityVocab:
        """Import the original luke layout: one ``{"id", "entities": [[title, lang], ...], "count"}`` per line."""
        import orjson

        jsonl_path = Path(jsonl_path)
        if not jsonl_path.is_file():
            raise InputFormatError(f"{jsonl_path}: no such file (expected a luke entity vocabulary in JSON lines)")
        by_id: dict[int, list[tuple[str, str]]] = {}
        specials: dict[int, str] = {}
        counts: dict[int, int] = {}
        with jsonl_path.open("rb") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = orjson.loads(line)
                    id_, ents, count = item["id"], item["entities"], int(item.get("count", 0))
                    pairs = [(str(t), l) for t, l in ents]
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise InputFormatError(
                        f'{jsonl_path}, line {lineno}: expected {{"id": int, "entities": [[title, lang], ...], '
                        f'"count": int}} ({exc})'
                    ) from None
                counts[id_] = count
                for title, lang in pairs:
                    if title in SPECIAL_ENTITIES:
                        specials[id_] = title
                    else:
                        by_id.setdefault(id_, []).append((lang, title))
        provenance = {"builder": "kb.EntityVocab.import_jsonl", "source": str(jsonl_path)}
        return cls._write(
            path, _entries_from(by_id, specials, counts), overwrite=overwrite, provenance=provenance, db=db
        )

    # -- export ---------------------------------------------------------------------------------
    def export(self, path: str | os.PathLike[str], *, layout: str = "hf", overwrite: bool = False) -> Path:
        """Write the ``"hf"`` (:meth:`export_hf`) or ``"jsonl"`` (:meth:`export_jsonl`) layout: what
        ``mluke kb vocab-export`` does."""
        if layout == "hf":
            return self.export_hf(path, overwrite=overwrite)
        if layout == "jsonl":
            return self.export_jsonl(path, overwrite=overwrite)
        raise OptionError(_layout_message, options={"layout": option("layout", layout)})

    def export_hf(self, json_path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the Hugging Face ``entity_vocab.json`` layout (streamed, atomically)."""

        def lines() -> Iterator[str]:
            for e in self:
                keys = [e.special] if e.special else [f"{l}:{t}" for l, t in e.names]
                for k in keys:
                    yield f"{json.dumps(k, ensure_ascii=False)}: {e.id}"

        return _write_text(json_path, lines(), overwrite=overwrite, head="{\n", sep=",\n", tail="\n}\n")

    def export_jsonl(self, jsonl_path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the original luke layout; special entities get one entry per language, as luke writes them."""
        langs = self.languages()

        def lines() -> Iterator[str]:
            for e in self:
                ents = [[e.special, l] for l in langs] if e.special else [[t, l] for l, t in e.names]
                yield json.dumps({"id": e.id, "entities": ents, "count": e.count}, ensure_ascii=False)

        return _write_text(jsonl_path, lines(), overwrite=overwrite, head="", sep="\n", tail="\n")


def vocab_layout(source: str | os.PathLike[str]) -> str:
    """``"jsonl"`` if the file's first line is a whole luke vocabulary record (``{"id": .., "entities": ..}``),
    else ``"hf"`` (one JSON object over the whole file, whose first line is not a whole object)."""
    try:
        with open(source, "rb") as f:
            first = f.readline(1 << 20).strip()
    except OSError:
        return "hf"  # the importer names the missing or unreadable file
    try:
        record = json.loads(first)
    except ValueError:
        return "hf"
    return "jsonl" if isinstance(record, dict) and "entities" in record else "hf"


_layout_message = "{layout}: expected 'hf' (entity_vocab.json of transformers) or 'jsonl' (the luke layout)"


def _flush(conn: Any, ins_entry: str, batch_e: list[tuple], ins_name: str, batch_n: list[tuple], path: Any) -> None:
    try:
        conn.executemany(ins_entry, batch_e)
        conn.executemany(ins_name, batch_n)
    except sqlite3.IntegrityError as exc:
        raise InputFormatError(f"building {path}: an id or a (language, title) appears twice ({exc})") from None
    batch_e.clear()
    batch_n.clear()


def _entries_from(
    by_id: dict[int, list[tuple[str, str]]], specials: dict[int, str], counts: dict[int, int]
) -> Iterator[tuple[int, str | None, str | None, int, list[tuple[str, str]]]]:
    for id_ in sorted(set(by_id) | set(specials)):
        yield id_, None, specials.get(id_), counts.get(id_, 0), sorted(by_id.get(id_, []))


_JSON_STR = r'"(?:[^"\\]|\\.)*"'
_ITEM_RE = re.compile(
    r"\s*(" + _JSON_STR + r")\s*:\s*(" + _JSON_STR + r"|[-+0-9.eE]+|true|false|null|[\[{])\s*([,}])", re.S
)
_MAX_ITEM = 1 << 20


def _stream_json_object(path: Path, chunk: int = 1 << 23) -> Iterator[tuple[str, str]]:
    """Yield ``(key, raw scalar value)`` of a flat JSON object, reading ``chunk`` characters at a time."""
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file (expected an entity_vocab.json)")
    try:
        with path.open(encoding="utf-8") as f:
            buf = f.read(chunk)
            start = len(buf) - len(buf.lstrip())
            if buf[start : start + 1] != "{":
                raise InputFormatError(
                    f"{path}: expected a JSON object mapping 'lang:title' to ids (the file does not start with '{{')"
                )
            pos, consumed = start + 1, 0
            if buf[pos:].lstrip().startswith("}"):
                return
            while True:
                m = _ITEM_RE.match(buf, pos)
                if m is None:
                    more = f.read(chunk)
                    if not more or len(buf) - pos > _MAX_ITEM + chunk:
                        raise InputFormatError(
                            f"{path}: not valid JSON at character {consumed + pos}: expected '\"key\": id' "
                            f"(found {buf[pos : pos + 40]!r})"
                        )
                    consumed += pos
                    buf, pos = buf[pos:] + more, 0
                    continue
                raw = m.group(1)[1:-1]
                yield (json.loads(m.group(1)) if "\\" in raw else raw), m.group(2)
                pos = m.end()
                if m.group(3) == "}":
                    break
            if buf[pos:].strip() or f.read(1).strip():
                raise InputFormatError(
                    f"{path}: not valid JSON: text after the closing '}}' at character {consumed + pos}"
                )
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{path}: not UTF-8 text ({exc})") from None


def _insert_pairs(
    conn: Any, entries: list[tuple[int, str | None]], names: list[tuple[str, str, int]], path: Any
) -> None:
    """Write streamed ``(id, special)`` entries and ``(lang, title, id)`` names, then clear the batches."""
    conn.executemany(
        "INSERT INTO entries(id, special) VALUES (?, ?) "
        "ON CONFLICT(id) DO UPDATE SET special = coalesce(excluded.special, special)",
        entries,
    )
    try:
        conn.executemany("INSERT INTO names(lang, title, id) VALUES (?, ?, ?)", names)
    except sqlite3.IntegrityError:
        raise InputFormatError(f"building {path}: a (language, title) appears twice") from None
    entries.clear()
    names.clear()


def _attach_keys(conn: Any, db: EntityDB) -> None:
    """Give each id the entity key its first resolvable title has in ``db``."""
    keys: list[tuple[str, int]] = []
    done: set[int] = set()
    for id_, lang, title in conn.execute("SELECT id, lang, title FROM names ORDER BY id, lang, title").fetchall():
        if id_ in done or lang not in db.languages:
            continue
        key = db.resolve_title(lang, title)
        if key is not None:
            keys.append((key, id_))
            done.add(id_)
    conn.executemany("UPDATE entries SET key = ? WHERE id = ?", keys)


def _create_indexes(conn: Any, path: Any) -> None:
    try:
        for statement in filter(str.strip, _INDEXES.split(";")):
            conn.execute(statement)
    except sqlite3.IntegrityError:
        raise InputFormatError(f"building {path}: a special entity has more than one id") from None


def _write_text(
    path: str | os.PathLike[str], lines: Iterable[str], *, overwrite: bool, head: str, sep: str, tail: str
) -> Path:
    """Stream ``lines`` into ``path`` through a temporary file renamed at the end."""
    with atomic_text(path, overwrite=overwrite) as f:
        f.write(head)
        first = True
        for line in lines:
            if not first:
                f.write(sep)
            f.write(line)
            first = False
        f.write(tail)
    return Path(path)
