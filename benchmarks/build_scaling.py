"""The whole dump build at growing sizes: cost per page of each phase of ``kb.build_from_dumps``, and the corpus's
gzip level.

1. Generates one Wikidata dump (``--items`` items) and one English dump of the largest ``--sizes`` pages
   (``benchmarks/dump_generate.py``; links point at the items' sitelink titles), cuts the smaller dumps from its
   first pages, and runs ``kb.build_from_dumps`` on each size in a fresh process (``--workers``, 2 by default),
   timing each phase from the build's ``on_stage`` calls (CPU: the process, its finished workers and, from
   ``/proc``, its running ones): ``wikidata`` (the Wikidata stage, the same for every
   size), ``read`` (XML to staged rows and raw text), ``resolve`` (links to entities, the surface table),
   ``count`` (Aho-Corasick counting of every surface in every page, and the corpus parts), ``assemble`` (the
   final database, indexes, statistics). Per phase: wall seconds, CPU seconds of the process and its finished
   workers, and both per 1,000 pages; a phase is flat when its cost per page does not grow with the size.
2. Compresses the largest build's corpus (decompressed, in members of the size the build writes) with gzip
   levels 1, 3 and 6: CPU seconds to compress and to decompress, and bytes.
3. Why count grows (``scan``): the Aho-Corasick automaton of each build's anchor surfaces (its ``surfaces``
   table, what the count phase looks for) scans the same ``--scan-pages`` pages (the first of the smallest
   build's corpus), as the count phase does (:func:`kb.sources.wikipedia_counts._occurrences`): CPU seconds to
   build the automaton (once per worker and surface part), milliseconds per page to scan, and the raw matches
   (every occurrence of every surface, overlapping ones included, each looked at in Python) and distinct
   surfaces found per page. ``--scan-only`` runs this step alone on the builds already in ``--work``.

    python benchmarks/build_scaling.py [--sizes 10000,50000,200000] [--items 50000] [--work benchmarks/work/scaling]
                                      [--scan-pages 500] [--scan-only]

``--smoke``: 60 and 120 pages over 300 items, in a temporary folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

from common import add_smoke, smoke_folder
from dump_generate import write_wikidata, write_wikipedia

ROOT = Path(__file__).resolve().parents[1]

BUILD = r"""
import json, resource, sys, time
from pathlib import Path
import kb

import os
TICK = os.sysconf("SC_CLK_TCK")

def live_children():
    # CPU seconds of the worker processes still running (a pool may outlive a stage: getrusage counts a child
    # only once it has been waited for)
    total, me = 0.0, str(os.getpid())
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                total += (int(fields[11]) + int(fields[12])) / TICK
    return total

def cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + live_children()

wd, xml, out, workers = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
marks = [("start", time.perf_counter(), cpu())]
stage = lambda name: marks.append((name.split(":")[-1], time.perf_counter(), cpu()))
r = kb.build_from_dumps(out, wikidata=wd, wikipedia=[xml], workers=workers, progress=False, on_stage=stage,
                        overwrite=True)
marks.append(("assemble", time.perf_counter(), cpu()))
phases = {name: {"wall_s": round(t - t0, 2), "cpu_s": round(c - c0, 2)}
          for (_, t0, c0), (name, t, c) in zip(marks, marks[1:])}
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"pages": r.wikipedia["en"]["articles"], "seconds": round(r.seconds, 1), "phases": phases,
                  "surfaces": r.wikipedia["en"].get("surfaces", 0), "links": r.wikipedia["en"].get("links", 0),
                  "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "largest_worker_mb": round(kids)}))
"""


def first_pages(xml: Path, n: int) -> Path:
    """A dump with the first ``n`` pages of ``xml`` (read in blocks, so memory stays small)."""
    out = xml.with_name(f"{xml.stem}-first{n}.xml")
    if out.exists():
        return out
    seen = 0
    with xml.open("rb") as src, out.open("wb") as dst:
        for line in src:
            dst.write(line)
            if b"</page>" in line:
                seen += 1
                if seen == n:
                    break
        dst.write(b"</mediawiki>\n")
    return out


def run_build(wd: Path, xml: Path, out: Path, workers: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(wd), str(xml), str(out), str(workers)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode:
        raise SystemExit(f"build of {xml} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def gzip_levels(corpus: Path, levels: tuple[int, ...] = (1, 3, 6)) -> dict:
    """Recompress the corpus's text (members of the build's average member size) at each level."""
    raw, members = b"", 0
    for part in sorted(corpus.rglob("*.gz")):
        data = part.read_bytes()
        raw += gzip.decompress(data)
        members += max(1, data.count(b"\x1f\x8b\x08"))  # an upper bound: the magic may occur inside data
    size = max(64 * 1024, len(raw) // max(1, members))
    chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
    out: dict = {"uncompressed_mb": round(len(raw) / 2**20, 1), "member_kb": round(size / 1024)}
    for level in levels:
        t = time.process_time()
        packed = [gzip.compress(c, compresslevel=level, mtime=0) for c in chunks]
        comp = time.process_time() - t
        t = time.process_time()
        for p in packed:
            gzip.decompress(p)
        dec = time.process_time() - t
        out[f"level {level}"] = {
            "compress_cpu_s": round(comp, 2),
            "decompress_cpu_s": round(dec, 2),
            "mb": round(sum(map(len, packed)) / 2**20, 1),
            "mb_per_cpu_s": round(len(raw) / 2**20 / comp, 1) if comp else None,
        }
    return out


def scan_profile(work: Path, sizes: list[int], pages: int) -> dict:
    """Step 3 (module docs): each build's automaton over the same pages of the smallest build's corpus."""
    import sqlite3

    import ahocorasick
    import orjson

    from kb.sources.wikipedia_counts import _occurrences

    texts: list[str] = []
    for part in sorted((work / f"build-{sizes[0]}.corpus").rglob("*.jsonl.gz")):
        with gzip.open(part) as f:
            texts += [orjson.loads(line)["text"] for _, line in zip(range(pages - len(texts)), f)]
    out: dict = {"pages": len(texts), "chars_per_page": round(sum(map(len, texts)) / max(1, len(texts)))}
    for n in sizes:
        conn = sqlite3.connect(f"{(work / f'build-{n}.sqlite').resolve().as_uri()}?mode=ro", uri=True)
        t = time.process_time()
        auto = ahocorasick.Automaton()
        for (surface,) in conn.execute("SELECT surface FROM surfaces WHERE lang = 'en'"):
            auto.add_word(surface, surface)
        auto.make_automaton()
        built = time.process_time() - t
        conn.close()
        t = time.process_time()
        raw = sum(1 for text in texts for _ in auto.iter(text))
        walk = time.process_time() - t
        t = time.process_time()
        found = sum(len(_occurrences(text, auto, True)) for text in texts)
        scan = time.process_time() - t
        out[f"build {n} pages"] = {
            "surfaces": len(auto),
            "automaton_cpu_s": round(built, 2),
            "scan_ms_per_page": round(1000 * scan / len(texts), 3),
            "matches_only_ms_per_page": round(1000 * walk / len(texts), 3),
            "raw_matches_per_page": round(raw / len(texts), 1),
            "found_per_page": round(found / len(texts), 1),
        }
        print(json.dumps({n: out[f"build {n} pages"]}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,50000,200000")
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work" / "scaling")
    ap.add_argument("--scan-pages", type=int, default=500, help="pages scanned by every build's automaton (step 3)")
    ap.add_argument("--scan-only", action="store_true", help="only step 3, on the builds already in --work")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.work, args.sizes, args.items = smoke_folder(), "60,120", 300
    sizes = sorted(map(int, args.sizes.split(",")))
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    results_path = work / "build_scaling.json"
    results: dict = json.loads(results_path.read_text()) if results_path.exists() else {}
    if args.scan_only:
        results["scan"] = scan_profile(work, sizes, args.scan_pages)
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return
    wd = work / f"wd-{args.items}.json"
    if not wd.exists():
        t = time.perf_counter()
        write_wikidata(wd, args.items)
        print(f"generated {wd} in {time.perf_counter() - t:.0f} s", flush=True)
    xml = work / f"enwiki-{sizes[-1]}.xml"
    if not xml.exists():
        t = time.perf_counter()
        write_wikipedia(xml, "en", sizes[-1], args.items)
        print(f"generated {xml} in {time.perf_counter() - t:.0f} s", flush=True)
    for n in sizes:
        dump = xml if n == sizes[-1] else first_pages(xml, n)
        r = run_build(wd, dump, work / f"build-{n}.sqlite", args.workers)
        for phase in r["phases"].values():
            phase["wall_s_per_1k_pages"] = round(phase["wall_s"] / n * 1000, 2)
            phase["cpu_s_per_1k_pages"] = round(phase["cpu_s"] / n * 1000, 2)
        results[f"build {n} pages"] = r
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(json.dumps({n: r}), flush=True)
    results["gzip levels"] = gzip_levels(work / f"build-{sizes[-1]}.corpus")
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"gzip levels": results["gzip levels"]}), flush=True)
    results["scan"] = scan_profile(work, sizes, args.scan_pages)
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
