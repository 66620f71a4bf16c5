"""Entity vocabulary files of other tools: the Hugging Face ``entity_vocab.json`` (streamed, however large)
and the original luke JSON-lines layout, read into and written from :class:`kb.EntityVocab`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from kb.db.sqlite import atomic_build
from kb.errors import InputFormatError, Option
from kb.files import atomic_text
from kb.vocab.storage import (
    FORMAT,
    FORMAT_VERSION,
    SCHEMA,
    SPECIAL_ENTITIES,
    VocabEntry,
    attach_keys,
    create_indexes,
    insert_pairs,
)

if TYPE_CHECKING:
    from kb.db.database import EntityDB

LANG_PREFIX_RE = re.compile(r"^([a-z]{2,3}(?:-[a-z0-9]{2,8})*|simple):(.+)$", re.S)


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


class ImportKeywords(TypedDict, total=False):
    """The keyword arguments of every vocabulary import (:meth:`kb.EntityVocab.import_jsonl`, ...)."""

    db: EntityDB | None
    overwrite: bool


class HfImportKeywords(ImportKeywords, total=False):
    """:class:`ImportKeywords` and ``default_lang``, the language of unprefixed keys
    (:meth:`kb.EntityVocab.import_hf`)."""

    default_lang: str | None


LAYOUT_MESSAGE = "{layout}: expected 'hf' (entity_vocab.json of transformers) or 'jsonl' (the luke layout)"


def import_hf(
    json_path: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    db: EntityDB | None = None,
    default_lang: str | None = None,
    overwrite: bool = False,
) -> None:
    """Write the vocabulary file ``path`` from a Hugging Face ``entity_vocab.json`` (see
    :meth:`kb.EntityVocab.import_hf`).

    Ids are taken from the file. Keys are ``"lang:title"``; special entities are
    unprefixed. A monolingual LUKE file (plain titles) needs ``default_lang``.
    With ``db``, each id also gets its entity key (QID) through the titles.
    The file is streamed: memory stays flat however large it is.
    """
    json_path = Path(json_path)
    provenance = {"builder": "kb.EntityVocab.import_hf", "source": str(json_path)}
    with atomic_build(
        path, fmt=FORMAT, version=FORMAT_VERSION, schema=SCHEMA, overwrite=overwrite, provenance=provenance
    ) as conn:
        entries: list[tuple[int, str | None]] = []
        names: list[tuple[str, str, int]] = []
        for raw_key, raw_id in stream_json_object(json_path):
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
            m = LANG_PREFIX_RE.match(raw_key)
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
                insert_pairs(conn, entries, names, path)
        insert_pairs(conn, entries, names, path)
        if db is not None:
            attach_keys(conn, db)
        create_indexes(conn, path)


def read_jsonl(
    jsonl_path: Path,
) -> Iterator[tuple[int, str | None, str | None, int, list[tuple[str, str]]]]:
    """The ``(id, key, special, count, names)`` rows of a vocabulary in the original luke layout: one
    ``{"id", "entities": [[title, lang], ...], "count"}`` per line (read whole, then yielded in id order).

    Raises:
        InputFormatError: a missing file or a malformed line (named with its number).
    """
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
    return entries_from(by_id, specials, counts)


def entries_from(
    by_id: dict[int, list[tuple[str, str]]], specials: dict[int, str], counts: dict[int, int]
) -> Iterator[tuple[int, str | None, str | None, int, list[tuple[str, str]]]]:
    for id_ in sorted(set(by_id) | set(specials)):
        yield id_, None, specials.get(id_), counts.get(id_, 0), sorted(by_id.get(id_, []))


_JSON_STR = r'"(?:[^"\\]|\\.)*"'
_ITEM_RE = re.compile(
    r"\s*(" + _JSON_STR + r")\s*:\s*(" + _JSON_STR + r"|[-+0-9.eE]+|true|false|null|[\[{])\s*([,}])", re.S
)
_MAX_ITEM = 1 << 20


def stream_json_object(path: Path, chunk: int = 1 << 23) -> Iterator[tuple[str, str]]:
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


def hf_lines(vocab: Iterable[VocabEntry], default_lang: str | None = None) -> Iterator[str]:
    """The ``"key": id`` lines of the Hugging Face ``entity_vocab.json`` layout (titles of ``default_lang``
    without the ``lang:`` prefix, as a monolingual LUKE file has them)."""
    for e in vocab:
        keys = [e.special] if e.special else [t if l == default_lang else f"{l}:{t}" for l, t in e.names]
        for k in keys:
            yield f"{json.dumps(k, ensure_ascii=False)}: {e.id}"


def jsonl_lines(vocab: Iterable[VocabEntry], langs: list[str]) -> Iterator[str]:
    """The lines of the original luke layout; special entities get one entry per language, as luke writes them."""
    for e in vocab:
        ents = [[e.special, l] for l in langs] if e.special else [[t, l] for l, t in e.names]
        yield json.dumps({"id": e.id, "entities": ents, "count": e.count}, ensure_ascii=False)


def write_text(
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
