"""Step 3 of reading a Wikipedia dump (see :mod:`kb.sources.wikipedia`): count where each anchor surface
occurs in the text and write the final corpus.

The articles are read back from the gzip members the read step staged (not from the XML); each page's
links get their entity keys (written to the final corpus), and each anchor surface counts the pages where
it is a link (``link_docs``) and where it occurs in the text at all (``text_docs``, LUKE appendix C).
Occurrences are found with one Aho-Corasick automaton (``pyahocorasick``) over all anchor surfaces, with a
word-boundary test in languages written with spaces; more surfaces than ``max_surfaces`` are split into
parts by hash and the text is scanned once per part, so memory is bounded whatever the dump's size.
"""

from __future__ import annotations

import gzip
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from kb.sources.parallel import ordered_map
from kb.sources.staging import Stage
from kb.sources.wiki_links import NO_SPACE_LANGUAGES

#: gzip level of the final corpus's members: 3 compresses 3.6x faster than 6 (level 6 was ~15% of a build's CPU)
#: for a corpus 6% larger; level 1 is 2x faster again but 17% larger (docs/benchmarks/full-scale.md)
CORPUS_GZIP_LEVEL = 3


@lru_cache(maxsize=1)
def _automaton(staging: str, part: int) -> Any:  # an ahocorasick.Automaton (a C extension without types)
    import ahocorasick

    auto = ahocorasick.Automaton()
    conn = sqlite3.connect(f"{Path(staging).resolve().as_uri()}?mode=ro", uri=True)  # escaped: a # or ? in the path
    try:
        for (surface,) in conn.execute("SELECT surface FROM surface_set WHERE part = ?", (part,)):
            auto.add_word(surface, surface)
    finally:
        conn.close()
    if len(auto):
        auto.make_automaton()
    return auto


def _lookup(conn: sqlite3.Connection, sql: str, keys: list[str]) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for i in range(0, len(keys), 900):
        part = keys[i : i + 900]
        for row in conn.execute(sql.format(",".join("?" * len(part))), part):
            out[row[0]] = row[1:]
    return out


def _occurrences(text: str, auto: Any, boundaries: bool) -> set[str]:
    found: set[str] = set()
    if not len(auto):
        return found
    n = len(text)
    for end, surface in auto.iter(text):
        if surface in found:
            continue
        start = end - len(surface) + 1
        if boundaries and (
            (surface[0].isalnum() and start > 0 and text[start - 1].isalnum())
            or (surface[-1].isalnum() and end + 1 < n and text[end + 1].isalnum())
        ):
            continue
        found.add(surface)
    return found


@dataclass
class CountResult:
    member: bytes = b""
    link_docs: list[tuple[str, int]] = field(default_factory=list)
    text_docs: list[tuple[str, int]] = field(default_factory=list)
    pages: int = 0


def count_pages(raw: str, start: int, size: int, staging: str, lang: str, part: int, write: bool) -> CountResult:
    """Resolve the links of one gzip member of pages, count link and text documents per
    surface of surface part ``part``, and (if ``write``) re-encode the pages for the corpus."""
    with open(raw, "rb") as f:
        f.seek(start)
        data = gzip.decompress(f.read(size))
    pages = [orjson.loads(line) for line in data.splitlines()]
    auto = _automaton(staging, part)
    conn = sqlite3.connect(f"{Path(staging).resolve().as_uri()}?mode=ro", uri=True)  # escaped: a # or ? in the path
    try:
        targets = sorted({t for p in pages for _, _, t in p["links"]})
        resolved = _lookup(conn, "SELECT title, entity, final FROM resolved WHERE title IN ({})", targets)
        finals = _lookup(conn, "SELECT source, final FROM r_final WHERE source IN ({})", targets)
        redirects = _lookup(conn, "SELECT source FROM r WHERE source IN ({})", targets)
        own = _lookup(conn, "SELECT title, entity FROM sl WHERE title IN ({})", sorted({p["title"] for p in pages}))
        in_part = _lookup(
            conn,
            "SELECT surface, part FROM surface_set WHERE surface IN ({})",
            sorted({p["text"][s:e] for p in pages for s, e, t in p["links"] if t in resolved}),
        )
    finally:
        conn.close()
    boundaries = lang not in NO_SPACE_LANGUAGES
    link_docs: Counter[str] = Counter()
    text_docs: Counter[str] = Counter()
    out: list[bytes] = []
    for p in pages:
        text = p["text"]
        linked = {text[s:e] for s, e, t in p["links"] if t in resolved}
        mine = {s for s in linked if in_part.get(s, (None,))[0] == part}
        text_docs.update(_occurrences(text, auto, boundaries) | mine)
        if write:
            link_docs.update(linked)
            links = []
            for s, e, t in p["links"]:
                hit = resolved.get(t)
                if hit is not None:
                    links.append((s, e, hit[0], hit[1]))
                else:  # no entity: the title after redirects, or None for a loop or a dangling redirect
                    final = finals[t][0] if t in finals else (None if t in redirects else t)
                    links.append((s, e, None, final))
            entity = own.get(p["title"], (None,))[0]
            out.append(
                orjson.dumps({"id": p["id"], "title": p["title"], "entity": entity, "text": text, "links": links})
            )
            out.append(b"\n")
    member = gzip.compress(b"".join(out), compresslevel=CORPUS_GZIP_LEVEL, mtime=0) if out else b""
    return CountResult(member, sorted(link_docs.items()), sorted(text_docs.items()), len(pages))


def count_surfaces(
    conn: sqlite3.Connection,
    staging: Path,
    lang: str,
    corpus_dir: Path,
    *,
    workers: int,
    pages_per_part: int,
    progress: Callable[[int], object],
) -> list[Stage]:
    """Step 3: one pass per surface part; the first also writes the corpus parts (resumable)."""
    parts = conn.execute("SELECT COALESCE(MAX(part) + 1, 1) FROM surface_set").fetchone()[0]
    members = conn.execute("SELECT file, start, size FROM s_members ORDER BY rowid").fetchall()
    stages = []
    for part in range(parts):
        stage = Stage(conn, f"count-{part}")
        stages.append(stage)
        if stage.done:
            continue
        write = part == 0
        _automaton.cache_clear()
        out_file, out_size, out_pages = _corpus_tail(conn, corpus_dir, lang) if write else (corpus_dir, 0, 0)
        tasks = (
            (str(staging.parent / f), s, n, str(staging), lang, part, write) for f, s, n in members[stage.chunks :]
        )
        for res in ordered_map(count_pages, tasks, workers):
            counts = {"pages": res.pages, **({"corpus_bytes": len(res.member)} if write else {})}
            with stage.chunk(counts=counts) as position:
                conn.executemany("INSERT INTO s_text_docs VALUES (?, ?)", res.text_docs)
                if write:
                    conn.executemany("INSERT INTO s_link_docs VALUES (?, ?)", res.link_docs)
                    if out_pages >= pages_per_part:
                        out_file, out_size, out_pages = _new_part(conn, corpus_dir, lang)
                    with out_file.open("ab") as f:
                        f.write(res.member)
                    out_size += len(res.member)
                    out_pages += res.pages
                    conn.execute("UPDATE s_parts SET pages = ? WHERE file = ?", (out_pages, out_file.name))
                    position.offset = out_size
            progress(res.pages)
        stage.finish()
    return stages


def _new_part(conn: sqlite3.Connection, corpus_dir: Path, lang: str) -> tuple[Path, int, int]:
    n = conn.execute("SELECT COUNT(*) FROM s_parts").fetchone()[0]
    path = corpus_dir / lang / f"part-{n:05d}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    conn.execute("INSERT INTO s_parts VALUES (?, 0)", (path.name,))
    return path, 0, 0


def _corpus_tail(conn: sqlite3.Connection, corpus_dir: Path, lang: str) -> tuple[Path, int, int]:
    """The corpus part to append to, cut back to its size at the last commit."""
    row = conn.execute("SELECT file, pages FROM s_parts ORDER BY rowid DESC LIMIT 1").fetchone()
    if row is None:
        conn.execute("BEGIN IMMEDIATE")
        tail = _new_part(conn, corpus_dir, lang)
        conn.execute("COMMIT")
        return tail
    path = corpus_dir / lang / row[0]
    stage = Stage(conn, "count-0")
    with path.open("ab") as f:
        f.truncate(stage.offset)
    return path, stage.offset, row[1]
