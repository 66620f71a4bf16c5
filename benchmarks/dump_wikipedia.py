"""Wikipedia dump reader: pages/s of ours vs mwparserfromhell, scaling with workers, memory.

1. Per core: the same pages (the first ``--mwp-pages`` articles of the dump) through
   ``kb.sources.wikitext.parse_wikitext`` (plain text + link spans + anchors) and through
   ``mwparserfromhell.parse`` + ``strip_code()`` + ``filter_wikilinks()`` (the
   reference pipeline's approach), in one process, ``--rounds`` rounds with the order
   alternated every round; CPU time per round, the per-round ratio and its median and
   range. The link outputs are compared on every page: the article links
   ``mwparserfromhell`` finds outside templates, tags (references, tables) and
   non-article namespaces, in order, must be ours (target and anchor; ours adds a link
   trail to the anchor).
2. The full XML reader (decompress + split + parse, step 1 of a language build)
   with 1 and 2 workers: pages/s and the scaling factor.
3. A whole build (Wikidata stage + one Wikipedia language: read, resolve, count,
   corpus) on two dump sizes: time and peak RSS (main process, largest worker).

``mwparserfromhell`` comes with the test extra (benchmark only, not a dependency of the library).

    python benchmarks/dump_generate.py wikipedia --pages 20000 --items 200000 -o benchmarks/work/dumps/enwiki-20k.xml
    python benchmarks/dump_wikipedia.py --xml benchmarks/work/dumps/enwiki-20k.xml [--parts core --rounds 9]
    python benchmarks/dump_wikipedia.py --smoke   # tiny generated dumps in a temporary folder, every part
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def per_core(pages: list[str], rounds: int) -> dict:
    """CPU seconds of ours and of mwparserfromhell over the same ``pages``, alternating which goes first each round;
    the links of every page compared."""
    import mwparserfromhell

    rules = LinkRules("en")
    seconds: dict[str, list[float]] = {"ours": [], "mwparserfromhell": []}
    ours: list = []
    theirs: list = []

    def run_ours() -> None:
        ours[:] = [parse_wikitext(p, rules) for p in pages]

    def run_theirs() -> None:
        out = []
        for p in pages:
            code = mwparserfromhell.parse(p)
            code.strip_code()
            out.append(mwp_links(code))
        theirs[:] = out

    runs = [("ours", run_ours), ("mwparserfromhell", run_theirs)]
    for r in range(rounds):
        for name, run in runs if r % 2 == 0 else runs[::-1]:
            t = time.process_time()  # CPU time: the machine is shared, this is what one core does
            run()
            seconds[name].append(time.process_time() - t)
    equal = sum(_same_links(text, links, ref) for (text, links), ref in zip(ours, theirs))
    ratios = [m / o for o, m in zip(seconds["ours"], seconds["mwparserfromhell"])]
    med = {k: statistics.median(v) for k, v in seconds.items()}
    return {
        "pages": len(pages),
        "rounds": rounds,
        "cpu_seconds": seconds,
        "ours_pages_per_s": len(pages) / med["ours"],
        "mwp_pages_per_s": len(pages) / med["mwparserfromhell"],
        "ratio_per_round": ratios,
        "ratio_median": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
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
    out = xml.with_name(f"{xml.stem}-{n // 1000}k.xml" if n % 1000 == 0 else f"{xml.stem}-{n}.xml")
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
    p.add_argument("--mwp-pages", type=int, default=300, help="pages through both parsers (per-core comparison)")
    p.add_argument("--rounds", type=int, default=2, help="per-core rounds, the order alternated every round")
    p.add_argument("--sizes", default="10000,20000", help="dump sizes (pages) for the whole-build memory check")
    p.add_argument("--parts", default="core,reader,build", help="which measurements: core, reader, build")
    p.add_argument("--smoke", action="store_true", help="every part on tiny generated dumps in a temporary folder")
    a = p.parse_args()
    if a.smoke:
        with tempfile.TemporaryDirectory(prefix="dump_wikipedia_smoke_") as tmp:
            smoke_dumps(a, Path(tmp))
            run_parts(a, a.xml.parent)
        return
    run_parts(a, a.xml.parent)


def smoke_dumps(a: argparse.Namespace, folder: Path) -> None:
    """Point ``a`` at a 30-page English dump and a 300-item Wikidata dump generated in ``folder`` (smallest sizes
    that still exercise every part)."""
    from dump_generate import write_wikidata, write_wikipedia

    a.xml, a.wikidata = folder / "enwiki-smoke.xml", folder / "wd-smoke.json"
    write_wikipedia(a.xml, "en", 30, 300)
    write_wikidata(a.wikidata, 300)
    a.mwp_pages, a.rounds, a.sizes, a.parts = 10, 2, "15,30", "core,reader,build"


def run_parts(a: argparse.Namespace, work: Path) -> None:
    """The measurements of ``a.parts``; results as JSON next to the dump (``work``)."""
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
    pages = load_pages(a.xml, a.mwp_pages)
    results["per_core"] = r = per_core(pages, a.rounds)
    lo, hi = r["ratio_range"]
    print(
        f"per core, the same {r['pages']} pages, {r['rounds']} rounds: ours {r['ours_pages_per_s']:,.0f} pages/s, "
        f"mwparserfromhell {r['mwp_pages_per_s']:,.0f} pages/s (medians); ratio per round: median "
        f"{r['ratio_median']:.2f}x ({lo:.2f}-{hi:.2f}); equal links on {r['pages_with_equal_links']}/"
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
