"""The page-text corpus a dump build leaves for the pretraining corpus builder.

Layout (``kb.corpus/`` next to ``kb.sqlite`` by default)::

    manifest.json                       format, version, database, per-language counts and shards
    <lang>/part-00000.jsonl.gz          one JSON object per article, in dump order
    <lang>/part-00001.jsonl.gz          (a new part every ``pages_per_part`` articles)

Each line: ``{"id": 12, "title": "Tokyo", "entity": "Q1490", "text": "...",
"links": [[start, end, "Q17", "Japan"], ...]}``: the page id and title, the
page's entity (``null`` without a Wikidata sitelink), the plain text
(:func:`kb.sources.wikitext.parse_wikitext`) and its article links: ``text[start:end]``
is the anchor, then the target's entity key (``null`` if it resolves to no
entity) and the target title after redirects (``null`` if it is a redirect loop
or dangles). Offsets are Python string indices (code points). Parts are gzip
files of several members, readable by any gzip reader, and are streamed
without re-parsing any XML.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kb.errors import InputFormatError
from kb.files import atomic_text, is_plain_name

FORMAT = "mluke-wiki-corpus"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class CorpusLink:
    """One article link of a page: anchor span, target entity (if any) and target title."""

    start: int
    end: int
    entity: str | None
    title: str | None


@dataclass(frozen=True)
class CorpusPage:
    """One article: id, title, entity, plain text and links."""

    lang: str
    id: int
    title: str
    entity: str | None
    text: str
    links: tuple[CorpusLink, ...]

    def anchor(self, link: CorpusLink) -> str:
        return self.text[link.start : link.end]


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` (atomically) with the format and version added."""
    data = {"format": FORMAT, "format_version": FORMAT_VERSION, **manifest}
    with atomic_text(folder / "manifest.json", overwrite=True) as f:
        f.write(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


class WikiCorpus:
    """Read a corpus folder written by :func:`kb.build_from_dumps`.

    >>> corpus = WikiCorpus("kb.corpus")             # doctest: +SKIP
    >>> for page in corpus.pages("ja"):              # doctest: +SKIP
    ...     for link in page.links: print(page.anchor(link), link.entity)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        manifest = self.path / "manifest.json"
        if not manifest.is_file():
            raise InputFormatError(f"{self.path}: no manifest.json, so not a corpus written by a dump build")
        try:
            self.manifest: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputFormatError(f"{manifest}: not valid JSON ({exc})") from None
        if self.manifest.get("format") != FORMAT:
            raise InputFormatError(f"{manifest}: holds {self.manifest.get('format')!r}, expected {FORMAT!r}")
        if self.manifest.get("format_version") != FORMAT_VERSION:
            raise InputFormatError(
                f"{manifest}: corpus format version {self.manifest.get('format_version')}, "
                f"this mluke reads version {FORMAT_VERSION}; rebuild it"
            )

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted(self.manifest["languages"]))

    def __repr__(self) -> str:
        return f"WikiCorpus({str(self.path)!r}, languages={','.join(self.languages)})"

    def parts(self, lang: str) -> list[Path]:
        """The part files of one language, in order."""
        if lang not in self.manifest["languages"]:
            raise InputFormatError(f"{self.path}: no language {lang!r} (it has: {', '.join(self.languages)})")
        names = self.manifest["languages"][lang]["parts"]
        bad = next((n for n in [lang, *names] if not is_plain_name(n)), None)
        if bad is not None:  # a manifest naming ../x or /x would have us read files outside the corpus
            raise InputFormatError(
                f"{self.path / 'manifest.json'}: {bad!r} of language {lang!r} is not a file name "
                "inside the corpus folder"
            )
        return [self.path / lang / name for name in names]

    def pages(self, lang: str) -> Iterator[CorpusPage]:
        """Stream the articles of ``lang`` in dump order."""
        for part in self.parts(lang):
            yield from read_part(part, lang)


def read_part(path: Path, lang: str) -> Iterator[CorpusPage]:
    """Stream the pages of one part file."""
    try:
        with gzip.open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                try:
                    d = orjson.loads(line)
                    links = tuple(CorpusLink(s, e, ent, title) for s, e, ent, title in d["links"])
                    yield CorpusPage(lang, d["id"], d["title"], d["entity"], d["text"], links)
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise InputFormatError(f"{path}, line {n}: not a corpus page ({exc})") from None
    except (OSError, EOFError) as exc:
        raise InputFormatError(f"{path}: unreadable or truncated gzip file ({exc})") from None
