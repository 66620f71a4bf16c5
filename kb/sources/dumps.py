"""``build_from_dumps``: an entity database (and page-text corpus) from the real dumps.

Inputs: the Wikidata JSON dump and any number of Wikipedia XML dumps (one per
language). Stages, each resumable and committed per chunk (:mod:`kb.sources.staging`):

1. the Wikidata dump -> sitelinks, labels, aliases, item-valued claims of the
   chosen properties, property labels (:mod:`kb.sources.wikidata`), parsed in
   parallel while ``lbzip2``/``pigz`` decompress (a plain dump is read by the
   workers); each chunk's rows are staged as JSON arrays, unpacked by SQLite
   only where they are read;
2. per Wikipedia dump: read, resolve, count (:mod:`kb.sources.wikipedia`);
3. assembly: the staged rows are written in key order into a new database
   (``<output>.partial-<pid>``, renamed when complete; secondary indexes are built
   after loading), the corpus folder is moved into place, the work folder removed.

A build may be killed at any moment and continues when re-run. Its two outputs
cannot appear in one rename, so the corpus is moved into place first (after
noting so in the work folder) and the database last: the database is what says
that a build is complete. A re-run of a build that was killed between the two
takes the corpus it finds at the noted place as its own. Temporary files that a
killed build left (``<output>.partial-<pid>``) are removed by the next build of
the same output, which holds the work folder's lock (see :mod:`kb.sources.staging`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from tqdm import tqdm

from kb.db import schema
from kb.db.schema import check_pid
from kb.errors import InputFormatError, OutputExistsError, UnknownLanguageError
from kb.files import check_output, remove_temporaries
from kb.languages import MLUKE_LANGUAGES, check_languages
from kb.sources.assembly import BuildReport, assemble_database, corpus_placed, place_corpus
from kb.sources.decompress import (
    DumpStream,
    FileRange,
    detect_compression,
    iter_blocks,
    iter_ranges,
)
from kb.sources.parallel import default_workers, ordered_map
from kb.sources.staging import (
    Stage,
    WorkDir,
    append_rows,
    connect_staging,
    file_identity,
)
from kb.sources.wikidata import (
    MLAMA_PROPERTIES,
    WIKIDATA_SCHEMA,
    WikidataOptions,
    parse_chunk,
)
from kb.sources.wikipedia import (
    DEFAULT_MAX_SURFACES,
    STAGING_SCHEMA,
    SiteInfo,
    read_dump,
    read_siteinfo,
    resolve,
)
from kb.sources.wikipedia_counts import count_surfaces

#: Bumped when staged data changes meaning, so an old work folder is not resumed.
BUILDER_VERSION = 4
DEFAULT_CHUNK_BYTES = 4 << 20
DEFAULT_PAGES_PER_PART = 100_000


def _bar(enabled: bool, desc: str, unit: str, total: int | None = None) -> tqdm[NoReturn]:
    return tqdm(
        desc=desc,
        unit=unit,
        unit_scale=True,
        total=total,
        disable=not enabled,
        mininterval=0.5,
        smoothing=0.05,
        dynamic_ncols=True,
    )


def read_wikidata(
    path: Path,
    conn: sqlite3.Connection,
    opts: WikidataOptions,
    *,
    workers: int,
    chunk_bytes: int,
    progress: Callable[[int], object],
) -> Stage:
    """Stream the Wikidata dump into the staging database (resumable, committed per chunk)."""
    stage = Stage(conn, "wikidata")
    if stage.done:
        return stage
    ends: list[int] = []

    def tasks(stream: DumpStream) -> Iterator[tuple[bytes | FileRange, WikidataOptions]]:
        if stream.compression == "none":  # the workers read their own ranges of a plain file
            blocks: Iterator[tuple[int, bytes | FileRange]] = iter_ranges(path, stage.offset, chunk_bytes)
        else:
            stream.skip(stage.offset)
            blocks = iter_blocks(stream, chunk_bytes)
        for start, block in blocks:
            ends.append(start + len(block))
            yield block, opts

    insert = "INSERT INTO s_rows(tbl, lang, data) VALUES (?, ?, CAST(? AS TEXT))"
    with DumpStream(path, threads=workers) as stream:
        for k, rows in enumerate(ordered_map(parse_chunk, tasks(stream), workers)):
            first = stage.line
            if (
                stage.chunks == 0
                and rows.counts.get("lines", 0)
                and rows.counts.get("lines") == rows.counts.get("malformed")
            ):
                raise InputFormatError(_not_a_dump(path, [(first + n, msg) for n, msg in rows.malformed]))
            with stage.chunk(offset=ends[k], line=first + rows.lines, counts=rows.counts):
                conn.executemany(insert, [(table, lang, data) for (table, lang), data in rows.tables.items()])
                append_rows(conn, {"malformed": [(first + n, msg) for n, msg in rows.malformed]})
            progress(rows.counts.get("lines", 0))
    if not stage.counts.get("array_end"):
        raise InputFormatError(
            f"{path}: ends before the closing ']' of the JSON array after line {stage.line - 1:,}: "
            "the file is truncated; download it again"
        )
    conn.execute("CREATE INDEX IF NOT EXISTS s_rows_by_table ON s_rows(tbl, lang)")
    stage.finish()
    return stage


def _not_a_dump(path: Path, malformed: list[tuple[int, str]]) -> str:
    """The error for a file whose first block holds no Wikidata entity at all (not a truncated dump)."""
    example = f"; line {malformed[0][0]}: {malformed[0][1]}" if malformed else ""
    return (
        f"{path}: not a Wikidata JSON dump: no line of its first block is a JSON entity (expected "
        "latest-all.json(.bz2|.gz): a JSON array with one entity per line, '[', "
        '\'{"type":"item","id":"Q17",...},\', ..., \']\')' + example
    )


def _default_corpus(output: Path) -> Path:
    return output.with_name(output.stem + ".corpus")


def build_from_dumps(
    output: str | os.PathLike[str],
    *,
    wikidata: str | os.PathLike[str],
    wikipedia: Iterable[str | os.PathLike[str]] = (),
    languages: Iterable[str] | None = None,
    properties: Iterable[str] = MLAMA_PROPERTIES,
    all_items: bool = False,
    corpus: str | os.PathLike[str] | None = None,
    keep_corpus: bool = True,
    workers: int | None = None,
    overwrite: bool = False,
    restart: bool = False,
    progress: bool = True,
    max_surfaces: int = DEFAULT_MAX_SURFACES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    pages_per_part: int = DEFAULT_PAGES_PER_PART,
    on_stage: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build an entity database at ``output`` from the Wikidata JSON dump and Wikipedia XML dumps.

    - ``languages``: which languages to keep (default: the 24 mLUKE languages); each
      Wikipedia dump's language (from its ``<siteinfo>``) must be one of them;
    - ``properties``: Wikidata properties whose item-valued claims become facts
      (default: the mLAMA relations);
    - ``all_items``: also keep items without a Wikipedia article in those languages;
    - ``corpus``: where to write the page-text corpus (default: ``<output stem>.corpus``
      next to the output; see :mod:`kb.sources.corpus`), unless ``keep_corpus`` is false;
    - ``workers``: parsing processes (default: all CPUs);
    - an interrupted build continues when re-run with the same inputs and options
      (``restart=True`` starts over); ``on_stage(name)`` is called after each stage.

    Nothing the user has is replaced unless ``overwrite``; the database appears only
    when complete. Returns a :class:`BuildReport`.
    """
    t0 = time.perf_counter()
    output = Path(output)
    langs = check_languages(languages if languages is not None else MLUKE_LANGUAGES)
    props = tuple(dict.fromkeys(check_pid(p) for p in properties))
    corpus_path = Path(corpus) if corpus is not None else _default_corpus(output)
    check_output(output, overwrite=overwrite)
    if keep_corpus and (restart or not corpus_placed(WorkDir.folder(output), corpus_path)):
        check_output(corpus_path, overwrite=overwrite)
    wd_path = Path(wikidata)
    detect_compression(wd_path)  # fails early, naming the file, if it is missing
    sites: dict[str, tuple[Path, SiteInfo]] = {}
    for p in map(Path, wikipedia):
        info = read_siteinfo(p)
        if info.lang not in langs:
            raise UnknownLanguageError(
                f"{p}: a dump of the {info.lang!r} Wikipedia, which is not among the chosen languages "
                f"({', '.join(langs)}); add it with --languages"
            )
        if info.lang in sites:
            raise InputFormatError(f"{p} and {sites[info.lang][0]}: two dumps of the {info.lang!r} Wikipedia")
        sites[info.lang] = (p, info)
    workers = workers or default_workers()
    params = {
        "builder_version": BUILDER_VERSION,
        "format_version": schema.FORMAT_VERSION,
        "inputs": {
            "wikidata": file_identity(wd_path),
            **{f"wikipedia:{lang}": file_identity(p) for lang, (p, _) in sorted(sites.items())},
        },
        "languages": list(langs),
        "properties": list(props),
        "all_items": all_items,
        "max_surfaces": max_surfaces,
        "chunk_bytes": chunk_bytes,
        "pages_per_part": pages_per_part,
    }
    with WorkDir(output, params, restart=restart) as work:
        try:  # again, holding the lock: a build of the same output that held it until now may have finished
            check_output(output, overwrite=overwrite)
        except OutputExistsError:
            if not work.resumed:
                work.remove()
            raise
        for path in (output, corpus_path, work.path):  # what killed builds of this output left: none runs now
            remove_temporaries(path)
        report = BuildReport(output, corpus_path if keep_corpus else None, notes=list(work.notes), all_items=all_items)
        notify = on_stage or (lambda name: None)
        opts = WikidataOptions(langs, props, all_items)

        wd_conn = connect_staging(work.file("wikidata.sqlite"), WIKIDATA_SCHEMA)
        try:
            stage = Stage(wd_conn, "wikidata")
            if stage.resumed:
                report.resumed.append("wikidata")
            with _bar(progress, "wikidata", "items") as bar, _failures(work, "wikidata"):
                stage = read_wikidata(
                    wd_path, wd_conn, opts, workers=workers, chunk_bytes=chunk_bytes, progress=bar.update
                )
            report.wikidata = {
                **stage.counts,
                "malformed_examples": wd_conn.execute(
                    "SELECT line, message FROM malformed ORDER BY line LIMIT 10"
                ).fetchall(),
            }
            report.wikidata.pop("array_end", None)
        finally:
            wd_conn.close()
        notify("wikidata")

        corpus_work = work.file("corpus")
        for lang, (path, info) in sorted(sites.items()):
            report.wikipedia[lang] = _build_language(
                path,
                info,
                work,
                corpus_work,
                report,
                workers=workers,
                chunk_bytes=chunk_bytes,
                max_surfaces=max_surfaces,
                pages_per_part=pages_per_part,
                progress=progress,
                notify=notify,
            )

        with schema.building(output, overwrite=overwrite, provenance=_provenance(params), tables=schema.TABLES) as conn:
            assemble_database(conn, work, sorted(sites), opts, report)
            if keep_corpus:
                place_corpus(work, corpus_work, corpus_path, output, report, overwrite)
        work.remove()
    report.seconds = time.perf_counter() - t0
    return report


def _build_language(
    path: Path,
    info: SiteInfo,
    work: WorkDir,
    corpus_work: Path,
    report: BuildReport,
    *,
    workers: int,
    chunk_bytes: int,
    max_surfaces: int,
    pages_per_part: int,
    progress: bool,
    notify: Callable[[str], None],
) -> dict[str, Any]:
    lang = info.lang
    staging = work.file(f"wiki-{lang}.sqlite")
    conn = connect_staging(staging, STAGING_SCHEMA)
    try:
        conn.execute("ATTACH DATABASE ? AS wd", (str(work.file("wikidata.sqlite")),))
        read = Stage(conn, "read")
        if read.resumed:
            report.resumed.append(f"{lang}wiki")
        with _bar(progress, f"{lang}wiki read", "pages") as bar, _failures(work, f"wikipedia:{lang}"):
            read = read_dump(
                path,
                conn,
                info,
                work.file(f"raw-{lang}.jsonl.gz"),
                workers=workers,
                chunk_bytes=chunk_bytes,
                progress=bar.update,
            )
        notify(f"{lang}:read")
        res = resolve(conn, lang, max_surfaces)
        notify(f"{lang}:resolve")
        with _bar(
            progress,
            f"{lang}wiki count",
            "pages",
            total=read.counts.get("articles", 0) * res.counts.get("surface_parts", 1),
        ) as bar:
            count_surfaces(
                conn, staging, lang, corpus_work, workers=workers, pages_per_part=pages_per_part, progress=bar.update
            )
        notify(f"{lang}:count")
        counts = {**read.counts, **res.counts}
        counts.pop("end_of_dump", None)
        counts["malformed_examples"] = [r[0] for r in conn.execute("SELECT message FROM malformed LIMIT 10")]
        counts["corpus_parts"] = [r[0] for r in conn.execute("SELECT file FROM s_parts ORDER BY rowid")]
    finally:
        conn.close()
    work.file(f"raw-{lang}.jsonl.gz").unlink(missing_ok=True)
    return counts


@contextlib.contextmanager
def _failures(work: WorkDir, name: str) -> Iterator[None]:
    """Record in the work folder that input ``name`` turned out truncated or corrupt (see :class:`WorkDir`)."""
    try:
        yield
    except InputFormatError as exc:
        work.record_failure(name, str(exc))
        raise


def _provenance(params: dict[str, Any]) -> dict[str, Any]:
    prov = {k: v for k, v in params.items() if k != "inputs"}
    prov["builder"] = "kb.build_from_dumps"
    prov["wikidata"] = Path(params["inputs"]["wikidata"]["path"]).name
    prov["wikipedia"] = {
        name.removeprefix("wikipedia:"): Path(v["path"]).name
        for name, v in params["inputs"].items()
        if name != "wikidata"
    }
    return prov
