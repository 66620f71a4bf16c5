"""The storage of a :class:`kb.mentions.index.MentionIndex`: compiling a surface source into per-language
automata and arrays, the SQLite file they are saved in (format, schema, atomic writes) and the cache file
of a database's index.

Why these libraries (measured on the development machine with synthetic surfaces
of 2-4 made-up words, 24 characters on average; ``benchmarks/mention_detection.py``
has the 5M-surface figures):

- ``daachorse`` (compact double-array Aho-Corasick, Rust), character-wise, on
  two-character word codes: 1M surfaces build in 2 s into 57 MB, a 100-word
  search takes ~5 us, and the automaton serialises to bytes that load without
  a rebuild;
- the same automaton over the characters of the text (separators marking word
  boundaries) needs 123 MB per 500k surfaces; with one code character per word
  (a 300k-letter alphabet) 1M surfaces take 20 s to build and 5M did not finish
  in 12 minutes;
- ``pyahocorasick``: ~700 bytes per surface over characters (3.5 GB for 5M);
  over word codes 95 s to build 1M and 4 ms per search;
- ``ahocorasick-rs``: as fast to search, but it cannot be saved, so every load
  would rebuild it (10 s per million surfaces);
- ``marisa-trie`` (compact and memory-mapped) answers prefix queries one Python
  call per token: ~430 us per 100-word text, slower than the n-gram baseline.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kb.cache import cache_dir
from kb.db.sqlite import atomic_build, open_readonly
from kb.errors import InputFormatError, MlukeError, OptionError
from kb.languages import check_languages
from kb.mentions.candidates import SurfaceSource
from kb.mentions.compiled import ARRAY_TYPES, LanguageBuilder, le_bytes
from kb.mentions.db_candidates import default_source

if TYPE_CHECKING:
    from kb.db.database import EntityDB

FORMAT = "mluke-mention-index"
FORMAT_VERSION = 1

_SCHEMA = """
PRAGMA page_size = 65536;  -- large blobs read twice as fast as with 4 KiB pages
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE languages(lang TEXT PRIMARY KEY, surfaces INTEGER NOT NULL, units INTEGER NOT NULL,
                       link_statistics INTEGER NOT NULL, keep_unscored INTEGER NOT NULL,
                       max_chars INTEGER NOT NULL) WITHOUT ROWID;
-- Arrays and the serialised automaton of each language ('' for the whole index).
CREATE TABLE blobs(lang TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY(lang, name)) WITHOUT ROWID;
"""


class IndexData(NamedTuple):
    """What a mention index is made of: ``meta`` (threshold, sources, provenance), per-language ``languages``
    statistics, the entity keys (UTF-8, concatenated) and their offsets, and per-language ``blobs``
    (empty for an index read from a file, whose blobs are read on first use)."""

    meta: dict[str, Any]
    languages: dict[str, dict[str, int]]
    entity_keys: bytes
    entity_offsets: bytes
    blobs: dict[str, dict[str, bytes]]


def compile_source(
    source: EntityDB | SurfaceSource,
    *,
    languages: Iterable[str] | None,
    min_link_probability: float,
    keep_unscored: bool | None,
    max_candidates: int,
) -> IndexData:
    """Compile ``source`` into one automaton and its arrays per language (see
    :meth:`kb.mentions.index.MentionIndex.build`, which documents the arguments).

    Raises:
        OptionError: a threshold outside [0, 1] or ``max_candidates`` below 1.
        InputFormatError: a source whose surface keys are not in ascending order.
    """
    if not 0.0 <= min_link_probability <= 1.0:
        raise OptionError(f"min_link_probability must be between 0 and 1, got {min_link_probability}")
    if max_candidates < 1:
        raise OptionError(f"max_candidates must be at least 1, got {max_candidates}")
    if not isinstance(source, SurfaceSource):
        source = default_source(source, max_candidates=max_candidates)
    langs = check_languages(source.languages if languages is None else languages, source.languages)
    entity_ids: dict[str, int] = {}
    source_ids: dict[str, int] = {}

    def entity_id(key: str) -> int:
        i = entity_ids.get(key)
        if i is None:
            i = entity_ids[key] = len(entity_ids)
        return i

    def source_id(name: str) -> int:
        i = source_ids.get(name)
        if i is None:
            if len(source_ids) == 255:
                raise MlukeError("more than 255 candidate source names in one index")
            i = source_ids[name] = len(source_ids)
        return i

    info: dict[str, dict[str, int]] = {}
    blobs: dict[str, dict[str, bytes]] = {}
    for lang in langs:
        stats = source.has_link_statistics(lang)
        keep = (not stats) if keep_unscored is None else keep_unscored
        builder = LanguageBuilder()
        previous: str | None = None
        n = 0
        for entry in source.entries(lang):
            if previous is not None and entry.key <= previous:
                raise InputFormatError(
                    f"{source.name}: surface keys of {lang!r} are not in ascending order "
                    f"({previous!r} then {entry.key!r})"
                )
            previous = entry.key
            lp = entry.link_probability
            if not entry.candidates or (lp is None and not keep) or (lp is not None and lp < min_link_probability):
                continue
            builder.add(entry.key, entry.candidates[:max_candidates], lp, entity_id, source_id)
            n += 1
        blobs[lang] = builder.finish()
        info[lang] = {
            "surfaces": n,
            "units": len(builder.unit_ids),
            "link_statistics": int(stats),
            "keep_unscored": int(keep),
            "max_chars": builder.max_chars,
        }
    meta = {
        "min_link_probability": min_link_probability,
        "max_candidates": max_candidates,
        "sources": list(source_ids),
        "provenance": {
            "builder": "kb.MentionIndex.build",
            "source": source.describe(),
            "languages": list(langs),
            "min_link_probability": min_link_probability,
            "keep_unscored": keep_unscored,
            "max_candidates": max_candidates,
            "daachorse": _version("daachorse"),
        },
    }
    keys = array.array("q", [0])
    for key in entity_ids:
        keys.append(keys[-1] + len(key.encode("utf-8")))
    return IndexData(meta, info, "".join(entity_ids).encode("utf-8"), le_bytes(keys), blobs)


def write_index(
    path: str | os.PathLike[str],
    data: IndexData,
    reader: Callable[[str], Callable[[str], bytes]],
    *,
    overwrite: bool = False,
) -> Path:
    """Write an index to one SQLite file, atomically; ``reader(lang)(name)`` gives the blobs of a language.

    Returns:
        The path written.
    """
    path = Path(path)
    with atomic_build(
        path,
        fmt=FORMAT,
        version=FORMAT_VERSION,
        schema=_SCHEMA,
        overwrite=overwrite,
        provenance=data.meta["provenance"],
    ) as conn:
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [
                ("min_link_probability", json.dumps(data.meta["min_link_probability"])),
                ("max_candidates", json.dumps(data.meta["max_candidates"])),
                ("sources", json.dumps(data.meta["sources"])),
            ],
        )
        conn.executemany(
            "INSERT INTO blobs(lang, name, data) VALUES ('', ?, ?)",
            [("entity_keys", data.entity_keys), ("entity_offsets", data.entity_offsets)],
        )
        for lang, info in sorted(data.languages.items()):
            conn.execute(
                "INSERT INTO languages VALUES (?, ?, ?, ?, ?, ?)",
                (
                    lang,
                    info["surfaces"],
                    info["units"],
                    info["link_statistics"],
                    info["keep_unscored"],
                    info["max_chars"],
                ),
            )
            read = reader(lang)
            for name in ("automaton", "units", *ARRAY_TYPES):
                conn.execute("INSERT INTO blobs(lang, name, data) VALUES (?, ?, ?)", (lang, name, read(name)))
    return path


def read_index(path: Path) -> tuple[IndexData, sqlite3.Connection]:
    """The meta data and entity keys of the index file ``path``, and the open connection its languages are
    read from later.

    Raises:
        InputFormatError: not a mention index, or a damaged one.
    """
    conn, raw = open_readonly(path, fmt=FORMAT, version=FORMAT_VERSION, what="an mluke mention index")
    try:
        meta = {
            "min_link_probability": json.loads(raw["min_link_probability"]),
            "max_candidates": json.loads(raw["max_candidates"]),
            "sources": json.loads(raw["sources"]),
            "provenance": json.loads(raw.get("provenance", "{}")),
        }
        cols = ("surfaces", "units", "link_statistics", "keep_unscored", "max_chars")
        info = {r[0]: dict(zip(cols, r[1:])) for r in conn.execute(f"SELECT lang, {', '.join(cols)} FROM languages")}
        glob = dict(conn.execute("SELECT name, data FROM blobs WHERE lang = ''"))
        return IndexData(meta, info, glob["entity_keys"], glob["entity_offsets"], {}), conn
    except (KeyError, sqlite3.DatabaseError, json.JSONDecodeError) as exc:
        conn.close()
        raise InputFormatError(f"{path}: damaged mention index ({exc!r}); rebuild it") from None


def cache_path(
    db: EntityDB, langs: Iterable[str], min_link_probability: float, keep_unscored: bool | None, max_candidates: int
) -> Path:
    """The cache file of ``db``'s index with these options, named after the database's path, size,
    modification time and the options, so that a rebuilt database gets a new index."""
    stat = Path(db.path).stat()
    ident = json.dumps(
        [
            str(Path(db.path).resolve()),
            stat.st_size,
            stat.st_mtime_ns,
            db.meta.get("created"),
            sorted(langs),
            min_link_probability,
            keep_unscored,
            max_candidates,
            FORMAT_VERSION,
        ]
    )
    path = cache_dir() / f"mentions-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.sqlite"
    return path


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
