"""Wikidata dump builder: items/s of ours vs the straightforward baseline, plain and bz2.

Baseline (what a first version would do): one process, stdlib ``bz2`` (or plain
``open``) + ``json.loads`` per line, keeping the same fields (sitelinks, labels,
aliases of the chosen languages, item-valued claims of the mLAMA properties)
in Python lists. Floor: ``lbzip2 -dc`` alone on the same cores. Ours: the
Wikidata stage of ``kb.build_from_dumps`` (stream -> parse -> staging SQLite,
committed per chunk), and the whole build (plus writing the final database).

Each measurement runs in a fresh interpreter (its own time and peak RSS); the
variants alternate, ``--runs`` times, best time kept. Two input sizes show
whether memory stays flat.

    python benchmarks/dump_generate.py wikidata --items 200000 -o benchmarks/work/dumps/wd-200k.json
    python benchmarks/dump_wikidata.py --input benchmarks/work/dumps/wd-200k.json --sizes 100000,200000

``--smoke``: a generated dump of 40 items cut to 20, in a temporary folder, once. Without ``lbzip2`` on PATH
(Debian's ``lbzip2`` package) the smoke run compresses with Python's ``bz2`` and leaves out the floor.
"""

from __future__ import annotations

import argparse
import bz2
import json
import shutil
import subprocess
import sys
from pathlib import Path

from common import add_smoke, smoke_folder

ROOT = Path(__file__).resolve().parents[1]

BASELINE = r"""
import bz2, json, sys, time, resource
from kb.languages import MLUKE_LANGUAGES
from kb.sources.wikidata import MLAMA_PROPERTIES
path = sys.argv[1]
langs = MLUKE_LANGUAGES; sites = {l + "wiki": l for l in langs}; props = set(MLAMA_PROPERTIES)
t = time.perf_counter()
f = bz2.open(path, "rb") if path.endswith(".bz2") else open(path, "rb")
items = 0; titles = []; names = []; facts = []
for line in f:
    line = line.strip().rstrip(b",")
    if line in (b"[", b"]", b""):
        continue
    d = json.loads(line)
    if d.get("type") != "item":
        continue
    items += 1
    key = d["id"]
    sl = [(sites[s], v["title"], key) for s, v in (d.get("sitelinks") or {}).items() if s in sites]
    if not sl:
        continue
    titles += sl
    labels = d.get("labels") or {}
    names += [(l, labels[l]["value"], key, "label") for l in langs if l in labels]
    aliases = d.get("aliases") or {}
    names += [(l, a["value"], key, "alias") for l in langs for a in aliases.get(l, ())]
    for pid, sts in (d.get("claims") or {}).items():
        if pid in props:
            for st in sts:
                dv = st["mainsnak"].get("datavalue")
                if dv and dv["type"] == "wikibase-entityid" and st.get("rank") != "deprecated":
                    facts.append((key, pid, dv["value"]["id"]))
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"items": items, "seconds": dt, "rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "rows": len(titles) + len(names) + len(facts)}))
"""

OURS = r"""
import json, sys, time, resource, shutil
from pathlib import Path
import kb
from kb.sources.dumps import WIKIDATA_SCHEMA, read_wikidata
from kb.sources.staging import connect_staging
from kb.sources.wikidata import WikidataOptions
path, out, workers, mode = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for p in out.parent.glob(out.name + "*"):
    shutil.rmtree(p) if p.is_dir() else p.unlink()
t = time.perf_counter()
if mode == "stage":
    conn = connect_staging(out, WIKIDATA_SCHEMA)
    stage = read_wikidata(Path(path), conn, WikidataOptions(kb.MLUKE_LANGUAGES), workers=workers,
                          chunk_bytes=4 << 20, progress=lambda n: None)
    items = stage.counts["items"]
else:
    report = kb.build_from_dumps(out, wikidata=path, workers=workers, progress=False, keep_corpus=False)
    items = report.wikidata["items"]
dt = time.perf_counter() - t
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"items": items, "seconds": dt, "rss_mb": me.ru_maxrss / 1024,
                  "children_rss_mb": kids.ru_maxrss / 1024,
                  "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime}))
"""

FLOOR = r"""
import json, subprocess, sys, time, resource
t = time.perf_counter()
subprocess.run(["lbzip2", "-dc", "-n", sys.argv[2], sys.argv[1]], stdout=subprocess.DEVNULL, check=True)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_s": kids.ru_utime + kids.ru_stime}))
"""


def _run(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def prepare(src: Path, n: int, work: Path) -> tuple[Path, Path]:
    """The first ``n`` items of ``src`` (with the properties) as plain and bz2 files."""
    plain = work / f"wd-{n // 1000}k.json"
    if not plain.exists():
        with src.open("rb") as f, plain.open("wb") as out:
            kept = 0
            for line in f:
                if line.startswith(b'{"type":"item"'):
                    kept += 1
                    if kept == n:
                        out.write(line.rstrip().rstrip(b",") + b"\n]\n")
                        break
                out.write(line)
    packed = plain.with_name(plain.name + ".bz2")
    if not packed.exists() and shutil.which("lbzip2"):
        subprocess.run(["lbzip2", "-k", "-n", "2", "-9", str(plain)], check=True)
    elif not packed.exists():  # a smoke run on a machine without lbzip2: the same file, more slowly
        packed.write_bytes(bz2.compress(plain.read_bytes(), 9))
    return plain, packed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", type=Path, default=ROOT / "benchmarks/work/dumps/wd-200k.json")
    p.add_argument("--sizes", default="100000,200000")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--skip-bz2-baseline", action="store_true", help="the slowest measurement (~2 min per 200k items)")
    p.add_argument(
        "--plain-only", action="store_true", help="only the plain-JSON measurements (e.g. for the memory check)"
    )
    add_smoke(p)
    a = p.parse_args()
    if a.smoke:
        from dump_generate import write_wikidata

        a.input, a.sizes, a.runs = smoke_folder() / "wd-40.json", "20", 1
        write_wikidata(a.input, 40)
    elif not shutil.which("lbzip2"):
        raise SystemExit("lbzip2 is not on PATH: install Debian's lbzip2 package (the floor and the bz2 inputs use it)")
    work = a.input.parent
    out = work / "bench-wd.sqlite"
    results: dict[str, dict] = {}
    for n in map(int, a.sizes.split(",")):
        plain, packed = prepare(a.input, n, work)
        for run in range(a.runs):
            for name, code, args in [
                ("baseline plain", BASELINE, (str(plain),)),
                ("ours stage plain", OURS, (str(plain), str(out), str(a.workers), "stage")),
                ("ours build plain", OURS, (str(plain), str(out), str(a.workers), "build")),
                ("lbzip2 -dc floor", FLOOR, (str(packed), str(a.workers))),
                ("ours stage bz2", OURS, (str(packed), str(out), str(a.workers), "stage")),
                ("ours build bz2", OURS, (str(packed), str(out), str(a.workers), "build")),
                ("baseline bz2", BASELINE, (str(packed),)),
            ]:
                if (name == "baseline bz2" and a.skip_bz2_baseline) or (a.plain_only and "plain" not in name):
                    continue
                if "lbzip2" in name and not shutil.which("lbzip2"):
                    print(f"{n} {name}: left out, lbzip2 is not on PATH")
                    continue
                r = _run(code, *args)
                r["items_per_s"] = n / r["seconds"]
                key = f"{n} {name}"
                if key not in results or r["seconds"] < results[key]["seconds"]:
                    results[key] = r
                cpu = r.get("cpu_s")
                print(
                    f"{key:32s} {r['seconds']:8.1f} s {r['items_per_s']:10,.0f} items/s "
                    + (f"{n / cpu:10,.0f} items/cpu-s " if cpu else "")
                    + f"rss {r.get('rss_mb', 0):7.0f} MB children {r.get('children_rss_mb', 0):6.0f} MB",
                    flush=True,
                )
        for kind in ("plain", "bz2"):
            base = results.get(f"{n} baseline {kind}")
            ours = results.get(f"{n} ours stage {kind}")
            if base and ours:
                print(
                    f"{n} {kind}: ours stage / baseline = {ours['items_per_s'] / base['items_per_s']:.2f}x; "
                    f"build / baseline = {results[f'{n} ours build {kind}']['items_per_s'] / base['items_per_s']:.2f}x"
                )
        floor = results.get(f"{n} lbzip2 -dc floor")
        if floor:
            print(
                f"{n} bz2: ours stage time / lbzip2 floor time = "
                f"{results[f'{n} ours stage bz2']['seconds'] / floor['seconds']:.2f}"
            )
    (work / f"dump_wikidata_results_{a.sizes.replace(',', '_')}.json").write_text(json.dumps(results, indent=1))
    for p_ in work.glob("bench-wd.sqlite*"):
        shutil.rmtree(p_) if p_.is_dir() else p_.unlink()


if __name__ == "__main__":
    main()
