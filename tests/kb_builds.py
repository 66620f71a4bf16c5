"""Real-format dumps big enough for a build to take a second, and what tests compare builds by
(used by test_kill and test_concurrency; light to import, for the processes those tests spawn)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.kb.sources.dump_fixtures import PAGES, _claim, _item, _labels, _sitelinks, wikidata_lines, write_wikipedia

LANGS = ("en", "ja", "ar")
EXTRA_ITEMS = 2000  # on top of the hand-written fixture entities: ~2 MB of Wikidata, ~0.8 MB of XML per language
CHUNK_BYTES = 32 << 10  # the CLI's default is 4 MiB: one chunk per stage here, so nothing to resume within a stage
#: Run before ``mluke kb build``: the chunk size, which the command line does not expose.
KB_PRELUDE = (
    f"import kb.sources.dumps as _dumps\n_dumps.build_from_dumps.__kwdefaults__['chunk_bytes'] = {CHUNK_BYTES}\n"
)
PLACE = {"en": "Place {}", "ja": "場所{}", "ar": "مكان {}"}


def write_grown_dumps(folder: Path) -> tuple[Path, list[Path]]:
    """The real-format fixture dumps of tests/kb/sources/dump_fixtures.py, grown with generated items and
    pages (linked to each other and to the fixture's entities) so that every stage has many chunks."""
    lines = wikidata_lines()
    extra = []
    for k in range(EXTRA_ITEMS):
        item = _item(
            f"Q{100_000 + k}",
            _labels(**{l: PLACE[l].format(k) for l in LANGS}),
            _sitelinks(**{f"{l}wiki": PLACE[l].format(k) for l in LANGS}),
            claims={"P17": [_claim("P17", "Q17")], "P36": [_claim("P36", f"Q{100_000 + (k + 1) % EXTRA_ITEMS}")]},
        )
        extra.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b",")
    wd = folder / "latest-all.json"
    wd.write_bytes(b"\n".join(lines[:1] + extra + lines[1:]) + b"\n")
    wps = []
    for lang in LANGS:
        pages = list(PAGES[lang])
        home = PAGES[lang][0][0]
        for k in range(EXTRA_ITEMS):
            name, nxt = PLACE[lang].format(k), PLACE[lang].format((k + 1) % EXTRA_ITEMS)
            pages.append((name, 0, f"'''{name}''' is near [[{nxt}]] and in [[{home}]]. {name} {home}. " * 3, None))
        wps.append(write_wikipedia(folder / f"{lang}wiki-pages-articles.xml", lang, pages=pages))
    return wd, wps


def kb_build_args(folder: Path, dumps: tuple[Path, list[Path]], *extra: str) -> list[str]:
    """``mluke kb build`` of ``dumps`` into ``folder/kb.sqlite`` (and ``folder/kb.corpus``)."""
    wd, wps = dumps
    return [
        "kb",
        "build",
        "--wikidata",
        str(wd),
        *(x for p in wps for x in ("--wikipedia", str(p))),
        "-o",
        str(folder / "kb.sqlite"),
        "--languages",
        ",".join(LANGS),
        "--workers",
        "1",
        "--quiet",
        *extra,
    ]


def db_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted. Only meta's ``created`` (the wall-clock time of the build) is left
    out: the provenance row holds the dumps' file names (the same in every folder here), not their paths."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {}
        for t in tables:
            rows = conn.execute(f"SELECT * FROM {t}").fetchall()
            out[t] = sorted((r for r in rows if not (t == "meta" and r[0] == "created")), key=repr)
        return out
    finally:
        conn.close()


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """``{relative path: bytes}`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
