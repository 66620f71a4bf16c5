"""Reading a Wikipedia ``pages-articles(-multistream).xml[.bz2]`` dump, one language at a time.

Three resumable steps per language, each committing after every chunk of input
into the language's staging database (see :mod:`kb.sources.staging`):

1. **read** (parallel): the main process cuts the decompressed XML into chunks
   of whole ``<page>`` elements; workers parse them (``xml.etree`` per page,
   then :func:`kb.sources.wikitext.parse_wikitext` for namespace-0 articles) and return
   page titles, redirects, per-chunk counts of ``(anchor, target title)`` and a
   gzip member of the articles' text with link spans. Namespace names come from
   the dump's own ``<siteinfo>``.
2. **resolve** (SQL): redirects are followed over up to 16 hops, in SQL (a
   recursive query, so memory stays flat however many redirects there are);
   loops and dangling redirects resolve to nothing. Titles map to entities
   through the Wikidata sitelinks. Anchor counts ``(surface, entity)`` and
   hyperlink counts per entity are sums over the resolved pairs.
3. **count** (parallel; :mod:`kb.sources.wikipedia_counts`): the articles are read back from the gzip members
   (not from the XML); each page's links get their entity keys (written to the
   final corpus), and each anchor surface counts the pages where it is a link
   (``link_docs``) and where it occurs in the text at all (``text_docs``, LUKE
   appendix C). Occurrences are found with one Aho-Corasick automaton
   (``pyahocorasick``) over all anchor surfaces, with a word-boundary test in
   languages written with spaces. If there are more surfaces than
   ``max_surfaces`` the surfaces are split into parts by hash and the text is
   scanned once per part, so memory is bounded whatever the dump's size.
"""

from __future__ import annotations

import gzip
import sqlite3
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import orjson

from kb.db.titles import normalize_title
from kb.errors import InputFormatError
from kb.sources.decompress import DumpStream, iter_blocks
from kb.sources.parallel import ordered_map
from kb.sources.staging import Stage, append_rows
from kb.sources.wiki_links import LinkRules
from kb.sources.wikidata import staged
from kb.sources.wikitext import parse_wikitext

MAX_REDIRECT_HOPS = 16
#: Default bound on the anchor surfaces scanned for in one pass over the text.
DEFAULT_MAX_SURFACES = 2_000_000
_SITE_LANG = {"be_x_old": "be-tarask"}

STAGING_SCHEMA = """
CREATE TABLE IF NOT EXISTS s_pages(title TEXT NOT NULL, page_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS s_redirects(source TEXT NOT NULL, target TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS s_links(surface TEXT NOT NULL, target TEXT NOT NULL, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS s_members(file TEXT NOT NULL, start INTEGER NOT NULL, size INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS s_link_docs(surface TEXT NOT NULL, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS s_text_docs(surface TEXT NOT NULL, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS s_parts(file TEXT NOT NULL, pages INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS malformed(message TEXT NOT NULL);
"""


@dataclass(frozen=True)
class SiteInfo:
    """What the ``<siteinfo>`` of a dump says: database name, language, namespaces."""

    dbname: str
    lang: str
    namespaces: dict[str, int]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_siteinfo(path: Path) -> SiteInfo:
    """Read the ``<siteinfo>`` at the top of a dump (decompressing only its first blocks)."""
    head = b""
    with DumpStream(path, external=False) as stream:
        while b"</siteinfo>" not in head:
            data = stream.read(1 << 16)
            if not data or len(head) > 1 << 24:
                break
            head += data
    start, end = head.find(b"<mediawiki"), head.find(b"</siteinfo>")
    if start < 0 or end < 0:
        raise InputFormatError(
            f"{path}: not a MediaWiki XML export (expected <mediawiki ...><siteinfo>...</siteinfo> at the top)"
        )
    try:
        root = ET.fromstring(head[start : end + len(b"</siteinfo>")] + b"</mediawiki>")
    except ET.ParseError as exc:
        raise InputFormatError(f"{path}: the <siteinfo> block is not valid XML ({exc})") from None
    info = next((el for el in root if _local(el.tag) == "siteinfo"), None)
    dbname = ""
    namespaces: dict[str, int] = {}
    for el in info.iter() if info is not None else ():
        if _local(el.tag) == "dbname":
            dbname = (el.text or "").strip()
        elif _local(el.tag) == "namespace" and el.text:
            namespaces[el.text.strip()] = int(el.get("key", "0"))
    if not dbname.endswith("wiki") or len(dbname) <= 4:
        raise InputFormatError(f"{path}: <dbname> is {dbname!r}, expected a Wikipedia such as 'jawiki'")
    site = dbname[:-4]
    lang = _SITE_LANG.get(site, site.replace("_", "-"))
    return SiteInfo(dbname, lang, namespaces)


# -- step 1: read the XML -------------------------------------------------------------------
@dataclass
class ReadResult:
    """What one chunk of pages gives."""

    pages: list[tuple[str, int]] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    links: list[tuple[str, str, int]] = field(default_factory=list)
    member: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)
    malformed: list[str] = field(default_factory=list)


def _page_fields(page: ET.Element) -> tuple[str, str, int, str | None, str]:
    title = ns = pid = ""
    redirect: str | None = None
    text = ""
    for el in page:
        tag = el.tag
        if tag == "title":
            title = el.text or ""
        elif tag == "ns":
            ns = (el.text or "").strip()
        elif tag == "id":
            pid = (el.text or "").strip()
        elif tag == "redirect":
            redirect = el.get("title", "")
        elif tag == "revision":
            for sub in el:
                if sub.tag == "text":
                    text = sub.text or ""
    try:
        page_id = int(pid or 0)
    except ValueError:
        raise ValueError(f"<id> is {pid!r}, not a number") from None
    return title, ns, page_id, redirect, text


def read_pages(block: bytes, lang: str, namespaces: dict[str, int]) -> ReadResult:
    """Parse the ``<page>`` elements in ``block`` (a worker task of step 1).

    A page that is not well-formed XML, has a non-numeric ``<id>`` or is cut short (no
    ``</page>`` before the next ``<page>`` or the block's end) is counted and reported as
    malformed; the pages around it are read."""
    rules = _rules(lang, tuple(sorted(namespaces.items())))
    res = ReadResult()
    counts: Counter[str] = Counter()
    link_counts: Counter[tuple[str, str]] = Counter()
    lines: list[bytes] = []
    pos = block.find(b"<page>")
    while pos >= 0:
        end = block.find(b"</page>", pos)
        cut = block.find(b"<page>", pos + 6, end if end >= 0 else len(block))
        if end < 0 or cut >= 0:  # no </page> before the next page or the end: this one is cut short
            counts["malformed_pages"] += 1
            if len(res.malformed) < 5:
                head = block[pos : min(pos + 80, cut if cut >= 0 else len(block))]
                res.malformed.append(f"no </page> (the page is cut short) in <page> starting {head!r}")
            pos = cut
            continue
        raw = block[pos : end + 7]
        pos = block.find(b"<page>", end)
        try:
            title, ns, pid, redirect, wikitext = _page_fields(ET.fromstring(raw))
        except (ET.ParseError, ValueError) as exc:
            counts["malformed_pages"] += 1
            if len(res.malformed) < 5:
                res.malformed.append(f"{exc} in <page> starting {raw[:80]!r}")
            continue
        if ns != "0":
            counts["other_namespace_pages"] += 1
            continue
        title = normalize_title(title)
        if redirect is not None:
            counts["redirects"] += 1
            res.redirects.append((title, normalize_title(redirect)))
            continue
        counts["articles"] += 1
        text, links = parse_wikitext(wikitext, rules)
        res.pages.append((title, pid))
        counts["links"] += len(links)
        for start, stop, target in links:
            link_counts[text[start:stop], target] += 1
        lines.append(orjson.dumps({"id": pid, "title": title, "text": text, "links": links}))
        lines.append(b"\n")
    if b"</mediawiki>" in block:
        counts["end_of_dump"] += 1
    res.links = [(s, t, n) for (s, t), n in link_counts.items()]
    res.member = gzip.compress(b"".join(lines), compresslevel=1, mtime=0) if lines else b""
    res.counts = dict(counts)
    return res


@lru_cache(maxsize=8)
def _rules(lang: str, namespaces: tuple[tuple[str, int], ...]) -> LinkRules:
    return LinkRules(lang, dict(namespaces))


def read_dump(
    path: Path,
    conn: sqlite3.Connection,
    info: SiteInfo,
    raw_file: Path,
    *,
    workers: int,
    chunk_bytes: int,
    progress: Callable[[int], object],
) -> Stage:
    """Step 1: stream the XML into the staging database and ``raw_file`` (resumable)."""
    stage = Stage(conn, "read")
    if stage.done:
        return stage
    size = conn.execute("SELECT COALESCE(SUM(size), 0) FROM s_members").fetchone()[0]
    with raw_file.open("ab") as f:
        f.truncate(size)
    ends: list[int] = []

    def tasks(stream: DumpStream) -> Iterator[tuple[bytes, str, dict[str, int]]]:
        for start, block in iter_blocks(stream, chunk_bytes, sep=b"</page>"):
            ends.append(start + len(block))
            yield block, info.lang, info.namespaces

    with DumpStream(path, threads=workers) as stream, raw_file.open("ab") as out:
        stream.skip(stage.offset)
        for k, res in enumerate(ordered_map(read_pages, tasks(stream), workers)):
            with stage.chunk(offset=ends[k], line=0, counts=res.counts):
                append_rows(
                    conn,
                    {
                        "s_pages": res.pages,
                        "s_redirects": res.redirects,
                        "s_links": res.links,
                        "malformed": [(m,) for m in res.malformed],
                    },
                )
                if res.member:
                    out.write(res.member)
                    out.flush()
                    conn.execute("INSERT INTO s_members VALUES (?, ?, ?)", (raw_file.name, size, len(res.member)))
                    size += len(res.member)
            progress(res.counts.get("articles", 0) + res.counts.get("redirects", 0))
    if not stage.counts.get("end_of_dump"):
        raise InputFormatError(f"{path}: the XML ends before </mediawiki>: the file is truncated; download it again")
    stage.finish()
    return stage


# -- step 2: resolve --------------------------------------------------------------------------
def resolve(conn: sqlite3.Connection, lang: str, max_surfaces: int) -> Stage:
    """Step 2 (SQL): redirects, title -> entity, anchors and entity link counts, surface parts."""
    stage = Stage(conn, "resolve")
    if stage.done:
        return stage
    q = conn.execute
    q("BEGIN IMMEDIATE")
    for table in ("r", "r_final", "sl", "resolved", "anchors_l", "entity_links_l", "surface_set", "page_entity"):
        q(f"DROP TABLE IF EXISTS {table}")
    q("CREATE TABLE r(source TEXT PRIMARY KEY, target TEXT NOT NULL) WITHOUT ROWID")
    q("INSERT OR IGNORE INTO r SELECT source, target FROM s_redirects ORDER BY rowid")
    q("CREATE TABLE r_final(source TEXT PRIMARY KEY, final TEXT NOT NULL) WITHOUT ROWID")
    q(f"""INSERT OR IGNORE INTO r_final
        WITH RECURSIVE chain(source, cur, hops) AS (
            SELECT source, target, 1 FROM r
            UNION ALL
            SELECT c.source, r.target, c.hops + 1 FROM chain c JOIN r ON r.source = c.cur
            WHERE c.hops < {MAX_REDIRECT_HOPS} AND r.target != c.source)
        SELECT source, cur FROM chain WHERE NOT EXISTS (SELECT 1 FROM r r2 WHERE r2.source = chain.cur)""")
    q("CREATE TABLE sl(title TEXT PRIMARY KEY, entity TEXT NOT NULL) WITHOUT ROWID")
    q(f"INSERT OR IGNORE INTO sl SELECT title, entity FROM {staged('titles', one_language=True)} ORDER BY seq", (lang,))
    q("CREATE TABLE resolved(title TEXT PRIMARY KEY, entity TEXT NOT NULL, final TEXT NOT NULL) WITHOUT ROWID")
    q("""INSERT INTO resolved
        SELECT d.target, sl.entity, d.final FROM (
            SELECT t.target AS target, CASE WHEN r.source IS NULL THEN t.target ELSE rf.final END AS final
            FROM (SELECT DISTINCT target FROM s_links) t
            LEFT JOIN r ON r.source = t.target LEFT JOIN r_final rf ON rf.source = t.target) d
        JOIN sl ON sl.title = d.final ORDER BY d.target""")
    q(
        "CREATE TABLE anchors_l(surface TEXT NOT NULL, entity TEXT NOT NULL, count INTEGER NOT NULL, "
        "PRIMARY KEY(surface, entity)) WITHOUT ROWID"
    )
    q("""INSERT INTO anchors_l SELECT l.surface, rs.entity, SUM(l.count) FROM s_links l
         JOIN resolved rs ON rs.title = l.target GROUP BY l.surface, rs.entity ORDER BY l.surface, rs.entity""")
    q("CREATE TABLE entity_links_l(entity TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID")
    q("INSERT INTO entity_links_l SELECT entity, SUM(count) FROM anchors_l GROUP BY entity ORDER BY entity")
    n = q("SELECT COUNT(DISTINCT surface) FROM anchors_l").fetchone()[0]
    parts = max(1, -(-n // max(1, max_surfaces)))
    q("CREATE TABLE surface_set(surface TEXT PRIMARY KEY, part INTEGER NOT NULL) WITHOUT ROWID")
    rows = conn.execute("SELECT DISTINCT surface FROM anchors_l ORDER BY surface")
    while batch := rows.fetchmany(10000):
        conn.executemany(
            "INSERT INTO surface_set VALUES (?, ?)", [(s, zlib.crc32(s.encode("utf-8")) % parts) for (s,) in batch]
        )
    total, resolved_n = q(
        "SELECT COALESCE(SUM(l.count), 0), COALESCE(SUM(CASE WHEN rs.title IS NULL THEN 0 "
        "ELSE l.count END), 0) FROM s_links l LEFT JOIN resolved rs ON rs.title = l.target"
    ).fetchone()
    stage.add_counts(
        {
            "surfaces": n,
            "surface_parts": parts,
            "resolved_links": resolved_n,
            "unresolved_links": total - resolved_n,
            "redirect_loops_or_dangling": q(
                "SELECT COUNT(*) FROM r WHERE source NOT IN (SELECT source FROM r_final)"
            ).fetchone()[0],
        }
    )
    stage.save(chunks=1, offset=0, line=0, done=True)
    q("COMMIT")
    return stage
