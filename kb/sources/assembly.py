"""The last stage of a dump build (:func:`kb.sources.dumps.build_from_dumps`): the staged rows written in key
order into the new database, the corpus moved into place, and the :class:`BuildReport` of what was read and
kept."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db import schema
from kb.db.sqlite import attach
from kb.db.writer import EntityDBWriter
from kb.files import atomic_text, check_output, remove, temporary_name
from kb.sources.corpus import write_manifest
from kb.sources.relation_table import load_relations, write_relations
from kb.sources.staging import WorkDir
from kb.sources.wikidata import WikidataOptions, staged


@dataclass
class BuildReport:
    """What a dump build read and kept: counts per input, malformed records, timings."""

    output: Path
    corpus: Path | None
    wikidata: dict[str, Any] = field(default_factory=dict)
    wikipedia: dict[str, dict[str, Any]] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    all_items: bool = False  # the build kept items without a Wikipedia article (what a dropped fact means)

    def summary(self) -> str:
        """A few human-readable lines (what ``mluke kb build`` prints)."""
        wd = self.wikidata
        lines = [f"note: {n}" for n in self.notes]
        lines += [
            (
                f"wikidata: {wd.get('lines', 0):,} lines, {wd.get('items', 0):,} items, "
                f"kept {wd.get('kept_items', 0):,} with {wd.get('sitelinks', 0):,} sitelinks; "
                f"skipped {wd.get('skipped_items', 0):,} items without a "
                f"Wikipedia article in the chosen languages; {wd.get('malformed', 0):,} malformed lines"
            )
        ]
        lines += [f"  malformed line {n}: {msg}" for n, msg in wd.get("malformed_examples", [])]
        if "facts" in wd:
            lines.append(
                f"wikidata facts: kept {wd['facts']:,}; dropped {wd.get('facts_without_object', 0):,} "
                "claims whose object is not in the database ("
                + (
                    "not in the dump: a partial dump?)"
                    if self.all_items
                    else "not in the dump, e.g. a partial dump, or an item skipped for want of a Wikipedia "
                    "article; all_items=True keeps those)"
                )
            )
        for lang, c in self.wikipedia.items():
            lines.append(
                f"{lang}wiki: {c.get('articles', 0):,} articles, {c.get('redirects', 0):,} redirects, "
                f"{c.get('links', 0):,} links ({c.get('resolved_links', 0):,} to entities), "
                f"{c.get('surfaces', 0):,} anchor surfaces, {c.get('malformed_pages', 0):,} malformed pages"
            )
        if self.resumed:
            lines.append(f"continued an interrupted build: {', '.join(self.resumed)} already done or started")
        lines.append(
            f"wrote {self.output}" + (f" and {self.corpus}" if self.corpus else "") + f" in {self.seconds:,.1f} s"
        )
        return "\n".join(lines)


_INDEX_NAME_RE = re.compile(r"INDEX (\w+) ON")


def assemble_database(
    conn: sqlite3.Connection, work: WorkDir, langs: list[str], opts: WikidataOptions, report: BuildReport
) -> None:
    """Write the staged rows, in key order, into the new database; then indexes and statistics.

    Args:
        conn: the new database, open for writing.
        work: the build's work folder (its staging databases).
        langs: the Wikipedia languages read.
        opts: what was read of the Wikidata dump (languages, properties).
        report: the build's report; the fact counts are added to it.
    """
    q = conn.execute
    q("PRAGMA temp_store = FILE")  # sorts of many millions of rows spill to disk instead of memory
    for index in schema.INDEXES:
        q(f"DROP INDEX IF EXISTS {_INDEX_NAME_RE.search(index).group(1)}")  # type: ignore[union-attr]
    writer = EntityDBWriter(conn)
    writer.add_languages(opts.languages)
    attach(conn, work.file("wikidata.sqlite"), "wd")
    q(f"INSERT OR IGNORE INTO entities SELECT key, kind FROM {staged('entities')} ORDER BY key, seq")
    q(f"INSERT OR IGNORE INTO titles SELECT lang, title, entity FROM {staged('titles')} ORDER BY lang, title, seq")
    # One label per entity and language: each entity line gives at most one, so only an entity
    # that appears twice in the dump needs the first-wins choice (and the extra sort it costs).
    q(f"CREATE TEMP TABLE twice AS SELECT key FROM {staged('entities')} GROUP BY key HAVING COUNT(*) > 1")
    q(f"""INSERT OR IGNORE INTO names SELECT lang, name, entity, kind FROM (
            SELECT lang, name, entity, 'label' AS kind FROM {staged("labels")}
            WHERE entity NOT IN (SELECT key FROM temp.twice)
            UNION ALL SELECT lang, name, entity, 'alias' FROM {staged("aliases")})
         ORDER BY lang, name, entity, kind""")
    if q("SELECT 1 FROM temp.twice LIMIT 1").fetchone():
        q(f"""INSERT OR IGNORE INTO names SELECT lang, name, entity, 'label' FROM (
                SELECT lang, name, entity, MIN(seq) FROM {staged("labels")}
                WHERE entity IN (SELECT key FROM temp.twice) GROUP BY entity, lang)""")
    q("DROP TABLE temp.twice")
    q(f"""INSERT OR IGNORE INTO facts SELECT subject, property, object FROM {staged("facts")}
         WHERE object IN (SELECT key FROM entities) ORDER BY property, subject, object""")
    # A claim whose object is not an entity of the database (not in the dump: a partial dump; or an item
    # skipped for want of a Wikipedia article) makes no fact: counted, so that the summary says so.
    report.wikidata["facts"] = q("SELECT COUNT(*) FROM facts").fetchone()[0]
    report.wikidata["facts_without_object"] = q(
        f"""SELECT COUNT(*) FROM (SELECT DISTINCT subject, property, object FROM {staged("facts")}
            WHERE object NOT IN (SELECT key FROM entities))"""
    ).fetchone()[0]
    q(f"INSERT OR IGNORE INTO properties SELECT pid, datatype FROM {staged('properties')} ORDER BY pid, seq")
    q(
        f"INSERT OR IGNORE INTO property_labels SELECT pid, lang, label FROM {staged('property_labels')} "
        "ORDER BY pid, lang, seq"
    )
    write_relations(writer, opts.languages, dict.fromkeys([*load_relations(), *opts.properties]))
    attach(conn, None, "wd")
    wd = {k: v for k, v in report.wikidata.items() if k != "malformed_examples"}
    inputs = work.params["inputs"]
    writer.add_source("wikidata-dump", Path(inputs["wikidata"]["path"]).name, size=inputs["wikidata"]["size"], **wd)
    for lang in langs:
        attach(conn, work.file(f"wiki-{lang}.sqlite"), "w")
        q("INSERT OR IGNORE INTO redirects SELECT ?, source, target FROM w.r ORDER BY source", (lang,))
        q("INSERT INTO anchors SELECT ?, surface, entity, count FROM w.anchors_l ORDER BY surface, entity", (lang,))
        q("INSERT INTO entity_links SELECT entity, ?, count FROM w.entity_links_l ORDER BY entity", (lang,))
        q(
            """INSERT INTO surfaces SELECT ?, s.surface, COALESCE(ld.n, 0), COALESCE(td.n, 0) FROM w.surface_set s
             LEFT JOIN (SELECT surface, SUM(n) AS n FROM w.s_link_docs GROUP BY surface) ld USING (surface)
             LEFT JOIN (SELECT surface, SUM(n) AS n FROM w.s_text_docs GROUP BY surface) td USING (surface)
             ORDER BY s.surface""",
            (lang,),
        )
        attach(conn, None, "w")
        counts = {k: v for k, v in report.wikipedia[lang].items() if k not in ("malformed_examples", "corpus_parts")}
        writer.add_source(
            "wikipedia-dump",
            Path(inputs[f"wikipedia:{lang}"]["path"]).name,
            lang=lang,
            size=inputs[f"wikipedia:{lang}"]["size"],
            **counts,
        )
    for index in schema.INDEXES:
        q(index)
    writer.finish()


PLACED = "corpus-placed.json"


def corpus_placed(work: Path, corpus_path: Path) -> bool:
    """Whether an earlier run of the build whose work folder is ``work`` moved its corpus to ``corpus_path``
    (and was then stopped before its database was in place)."""
    try:
        noted = json.loads((work / PLACED).read_text(encoding="utf-8"))["path"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return noted == str(corpus_path.resolve()) and corpus_path.is_dir()


def place_corpus(
    work: WorkDir, corpus_work: Path, corpus_path: Path, output: Path, report: BuildReport, overwrite: bool
) -> None:
    """Move the finished corpus to ``corpus_path`` (in one rename; see the module docs)."""
    if corpus_placed(work.path, corpus_path):
        return
    corpus_work.mkdir(exist_ok=True)
    write_manifest(
        corpus_work,
        {
            "database": output.name,
            "languages": {
                lang: {"pages": c.get("articles", 0), "links": c.get("links", 0), "parts": c.get("corpus_parts", [])}
                for lang, c in report.wikipedia.items()
            },
        },
    )
    check_output(corpus_path, overwrite=overwrite)
    remove(corpus_path)
    with atomic_text(work.file(PLACED), overwrite=True) as f:  # before the rename: see _corpus_placed
        f.write(json.dumps({"path": str(corpus_path.resolve())}))
    try:
        os.rename(corpus_work, corpus_path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = temporary_name(corpus_path)  # another file system: copy, then rename there
        remove(tmp)
        shutil.copytree(corpus_work, tmp)
        os.rename(tmp, corpus_path)
