"""Wikipedia dump reader: pages/s of ours vs mwparserfromhell, scaling with workers, memory.

1. Per core: the same pages (wikitext taken from the generated dump) through
   ``kb.sources.wikitext.parse_wikitext`` (plain text + link spans + anchors) and through
   ``mwparserfromhell.parse`` + ``strip_code()`` + ``filter_wikilinks()`` (the
   reference pipeline's approach), alternating rounds, in one process. The link
   outputs are compared: the article links ``mwparserfromhell`` finds outside
   templates, tags (references, tables) and non-article namespaces, in order,
   must be ours (target and anchor; ours adds a link trail to the anchor).
2. The full XML reader (decompress + split + parse, step 1 of a language build)
   with 1 and 2 workers: pages/s and the scaling factor.
3. A whole build (Wikidata stage + one Wikipedia language: read, resolve, count,
   corpus) on two dump sizes: time and peak RSS (main process, largest worker).

``pip install mwparserfromhell`` first (benchmark only, not a dependency).

    python benchmarks/dump_generate.py wikipedia --pages 20000 --items 200000 -o benchmarks/work/dumps/enwiki-20k.xml
    python benchmarks/dump_wikipedia.py --xml benchmarks/work/dumps/enwiki-20k.xml
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kb.db.titles import normalize_title
from kb.sources.wiki_links import LinkRules
from kb.sources.wikitext import parse_wikitext


def load_pages(xml: Path, n: int) -> list[str]:
    """Wikitext of the first ``n`` articles (not redirects) of a dump."""
    out = []
    for _, el in ET.iterparse(xml):
        if el.tag.endswith("}page"):
            ns = "{http://www.mediawiki.org/xml/export-0.10/}"
            if el.find(f"{ns}redirect") is None:
                out.append(el.find(f"{ns}revision/{ns}text").text or "")
                if len(out) == n:
                    break
            el.clear()
    return out


def mwp_links(code) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Article links of a parsed page outside templates and tags, as (target title, anchor)."""
    out = []
    for link in code.filter_wikilinks(recursive=False):
        target = str(link.title).strip()
        if re.match(r"(?i)\s*:?\s*(file|image|category|[a-z]{2,3})\s*:", target) or target.startswith("#"):
            continue
        anchor = str(link.text) if link.text is not None else target
        out.append((normalize_title(target.split("#")[0]), anchor))
    return out


def _same_links(text: str, links: list[tuple[int, int, str]], ref: list[tuple[str, str]]) -> bool:
    """Same targets in the same order, and each anchor is mwparserfromhell's (plus our link trail)."""
    return len(links) == len(ref) and all(
        t == rt and text[s:e].startswith(ra.strip()) for (s, e, t), (rt, ra) in zip(links, ref)
    )


def per_core(pages: list[str], mwp_pages: int, rounds: int) -> dict:
    import mwparserfromhell

    rules = LinkRules("en")
    ours_t = mwp_t = 0.0
    for _ in range(rounds):
        t = time.process_time()  # CPU time: the machine is shared, this is what one core does
        ours = [parse_wikitext(p, rules) for p in pages]
        ours_t += time.process_time() - t
        t = time.process_time()
        theirs = []
        for p in pages[:mwp_pages]:
            code = mwparserfromhell.parse(p)
            code.strip_code()
            theirs.append(mwp_links(code))
        mwp_t += time.process_time() - t
    equal = sum(_same_links(text, links, ref) for (text, links), ref in zip(ours, theirs))
    return {
        "ours_pages_per_s": rounds * len(pages) / ours_t,
        "mwp_pages_per_s": rounds * mwp_pages / mwp_t,
        "pages_compared": len(theirs),
        "pages_with_equal_links": int(equal),
        "links_compared": sum(len(r) for r in theirs),
        "avg_wikitext_bytes": sum(len(p.encode()) for p in pages) / len(pages),
    }


READER = r"""
import json, sys, time, resource
from pathlib import Path
from kb.sources.staging import connect_staging
from kb.sources.wikipedia import STAGING_SCHEMA, read_dump, read_siteinfo
xml, work, workers = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for p in work.glob("reader*"):
    p.unlink()
info = read_siteinfo(xml)
conn = connect_staging(work / "reader.sqlite", STAGING_SCHEMA)
t = time.perf_counter()
stage = read_dump(xml, conn, info, work / "reader-raw.jsonl.gz", workers=workers, chunk_bytes=4 << 20,
                  progress=lambda n: None)
dt = time.perf_counter() - t
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"pages": stage.counts["articles"] + stage.counts["redirects"], "seconds": dt,
                  "rss_mb": me.ru_maxrss / 1024, "children_rss_mb": kids.ru_maxrss / 1024,
                  "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime}))
"""

BUILD = r"""
import json, sys, time, resource, shutil
from pathlib import Path
import kb
wd, xml, out, workers = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
for p in out.parent.glob(out.stem + "*"):
    shutil.rmtree(p) if p.is_dir() else p.unlink()
t = time.perf_counter()
r = kb.build_from_dumps(out, wikidata=wd, wikipedia=[xml], workers=workers, progress=False)
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"pages": r.wikipedia["en"]["articles"], "seconds": time.perf_counter() - t,
                  "rss_mb": me.ru_maxrss / 1024, "children_rss_mb": kids.ru_maxrss / 1024,
                  "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime}))
"""


def _run(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_pages(xml: Path, n: int) -> Path:
    """A dump with the first ``n`` pages of ``xml``."""
    out = xml.with_name(f"{xml.stem}-{n // 1000}k.xml")
    if out.exists():
        return out
    data = xml.read_bytes()
    pos = 0
    for _ in range(n):
        pos = data.index(b"</page>", pos) + len(b"</page>")
    out.write_bytes(data[:pos] + b"\n</mediawiki>\n")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--xml", type=Path, default=ROOT / "benchmarks/work/dumps/enwiki-20k.xml")
    p.add_argument("--wikidata", type=Path, default=ROOT / "benchmarks/work/dumps/wd-100k.json")
    p.add_argument("--pages", type=int, default=2000, help="pages for the per-core comparison (ours)")
    p.add_argument("--mwp-pages", type=int, default=300, help="of which through mwparserfromhell")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sizes", default="10000,20000", help="dump sizes (pages) for the whole-build memory check")
    p.add_argument("--parts", default="core,reader,build", help="which measurements: core, reader, build")
    a = p.parse_args()
    work = a.xml.parent
    results: dict = {}
    parts = a.parts.split(",")
    if "core" in parts:
        core(a, results)
    if "reader" in parts:
        reader(a, work, results)
    if "build" in parts:
        build(a, work, results)
    (work / f"dump_wikipedia_results_{a.parts.replace(',', '_')}.json").write_text(json.dumps(results, indent=1))
    for p_ in [*work.glob("bench-wp.sqlite*"), *work.glob("bench-wp.corpus"), *work.glob("reader*")]:
        shutil.rmtree(p_) if p_.is_dir() else p_.unlink()


def core(a: argparse.Namespace, results: dict) -> None:
    pages = load_pages(a.xml, a.pages)
    results["per_core"] = r = per_core(pages, a.mwp_pages, a.rounds)
    print(
        f"per core: ours {r['ours_pages_per_s']:,.0f} pages/s, mwparserfromhell {r['mwp_pages_per_s']:,.0f} pages/s, "
        f"ratio {r['ours_pages_per_s'] / r['mwp_pages_per_s']:.1f}x; equal links on {r['pages_with_equal_links']}/"
        f"{r['pages_compared']} pages ({r['links_compared']:,} links); {r['avg_wikitext_bytes']:,.0f} B/page",
        flush=True,
    )


def reader(a: argparse.Namespace, work: Path, results: dict) -> None:
    for workers in (1, 2):
        r = _run(READER, str(a.xml), str(work), str(workers))
        results[f"reader_{workers}"] = r
        print(
            f"XML reader, {workers} worker(s): {r['pages'] / r['seconds']:,.0f} pages/s ({r['seconds']:.1f} s, "
            f"{r['pages'] / r['cpu_s']:,.0f} pages per CPU-second), "
            f"rss {r['rss_mb']:.0f} MB, largest child {r['children_rss_mb']:.0f} MB",
            flush=True,
        )
    print(f"scaling 1 -> 2 workers: {results['reader_1']['seconds'] / results['reader_2']['seconds']:.2f}x")


def build(a: argparse.Namespace, work: Path, results: dict) -> None:
    for n in map(int, a.sizes.split(",")):
        xml = first_pages(a.xml, n)
        r = _run(BUILD, str(a.wikidata), str(xml), str(work / "bench-wp.sqlite"), "2")
        results[f"build_{n}"] = r
        print(
            f"whole build, {n:,} pages (+ {a.wikidata.name}): {r['seconds']:.1f} s ({r['cpu_s']:.0f} CPU-s), "
            f"rss {r['rss_mb']:.0f} MB, "
            f"largest child {r['children_rss_mb']:.0f} MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
