"""Peak memory and wall time of ``mluke link FILE --jsonl OUT`` as the input grows.

Inputs (generated once into ``<work>/link-memory/``; English sentences about the
embedded kb's countries, capitals and cities, rendered through its relation
templates, as in ``link_speed.py``):

- ``lines-N``: N short lines, one sentence each (about 40 characters, 2 mentions);
- ``line-NMB`` (or ``line-NKB``): one single line of N MB (kB) (the sentences joined by spaces).

Each input runs once, in a fresh ``python -m mluke link`` process (the demo model
and embedded kb from ``$MLUKE_HOME``, default ``<work>/home``; ``--model`` for
another model), through a wrapper that records the process's VmHWM (peak RSS)
when it exits. Wall time is that of the whole command: start-up (imports, kb, model
and index loading) included, so the ``lines-100`` row is the fixed cost. The 1-minute
load average before and after each run is recorded: on a shared machine, other jobs
slow the wall time (not the peak memory).

    python benchmarks/link_memory.py [--sizes lines-100,lines-10000,lines-100000,line-1MB,line-10MB]
                                     [--method combined] [--out benchmarks/results/link_memory.json] [--smoke]

``--smoke``: ``lines-20,line-20KB`` with the tiny demo model, everything in a temporary folder.
"""

from __future__ import annotations

import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import benchmark_parser, smoke_demo, smoke_folder

RELATIONS = ("P17", "P36", "P30", "P37", "P38", "P47")
SIZES = ("lines-100", "lines-10000", "lines-100000", "line-1MB", "line-10MB")

# Runs the mluke command line in this process and writes the process's VmHWM (peak RSS) to the
# file named by $LINK_MEMORY_HWM when it exits, however it exits.
WRAPPER = """
import atexit, os, sys
from pathlib import Path

def _hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            Path(os.environ["LINK_MEMORY_HWM"]).write_text(line.split()[1])

atexit.register(_hwm)
sys.argv = ["mluke", *sys.argv[1:]]
from mluke.cli import main
main()
"""


def sentences(lang: str = "en", seed: int = 0):
    """An endless stream of one-fact sentences in ``lang`` (kb labels through the relation templates)."""
    from kb.sources.embedded import default_db

    db = default_db()
    rng = random.Random(seed)
    facts = [f for pid in RELATIONS for f in db.facts(property=pid)]
    labels = db.labels(sorted({k for f in facts for k in (f.subject, f.object)}), lang)
    facts = [f for f in facts if f.subject in labels and f.object in labels]
    template = {pid: db.template(pid, lang) for pid in RELATIONS}
    while True:
        f = rng.choice(facts)
        yield template[f.property].fill(labels[f.subject], labels[f.object])


def make_input(folder: Path, size: str) -> Path:
    """The input file of ``size`` (``lines-N``, ``line-NMB`` or ``line-NKB``), generated on first use."""
    path = folder / f"{size}.txt"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    gen = sentences()
    with tmp.open("w", encoding="utf-8") as f:
        kind, n = size.split("-")
        if kind == "lines":
            for _ in range(int(n)):
                f.write(next(gen) + "\n")
        else:
            target, written = int(n[:-2]) * (1_000_000 if n.endswith("MB") else 1_000), 0
            while written < target:
                s = next(gen) + " "
                f.write(s)
                written += len(s.encode("utf-8"))
            f.write("\n")
    tmp.rename(path)
    return path


def run(size: str, source: Path, out: Path, method: str, model: str | None) -> dict:
    """One ``mluke link`` run over ``source``: peak RSS of the process, wall time, what it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        hwm = Path(tmp) / "hwm"
        cmd = [
            sys.executable,
            "-c",
            WRAPPER,
            "link",
            str(source),
            "--lang",
            "en",
            "--method",
            method,
            "--jsonl",
            str(out),
            "--overwrite",
            "--no-progress",
        ] + (["--model", model] if model else [])
        env = {**os.environ, "LINK_MEMORY_HWM": str(hwm)}
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - started
        load_after = os.getloadavg()[0]
        if proc.returncode:
            raise SystemExit(f"{size}: mluke link failed\n{proc.stderr[-3000:]}")
        peak_kb = int(hwm.read_text())
    lines = mentions = 0
    with out.open(encoding="utf-8") as f:
        for line in f:
            lines += 1
            mentions += len(json.loads(line)["mentions"])
    result = {
        "input": size,
        "input_bytes": source.stat().st_size,
        "method": method,
        "peak_rss_mb": peak_kb / 1024,
        "wall_s": seconds,
        "output_lines": lines,
        "mentions": mentions,
        "output_bytes": out.stat().st_size,
        "load_avg_1min": [round(load_before, 2), round(load_after, 2)],
    }  # other jobs on the machine slow it
    out.unlink()
    return result


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma-separated inputs, from: " + ", ".join(SIZES))
    ap.add_argument("--method", default="combined", help="linking method (default: combined)")
    ap.add_argument("--model", default=None, help="model folder (default: the demo model in $MLUKE_HOME)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "link_memory.json")
    args = ap.parse_args()
    if args.smoke:
        args.work, args.sizes, args.model = smoke_folder(), "lines-20,line-20KB", str(smoke_demo())
        args.out = args.work / "link_memory.json"
    os.environ.setdefault("MLUKE_HOME", str(args.work / "home"))
    folder = args.work / "link-memory"
    results = []
    for size in args.sizes.split(","):
        source = make_input(folder, size)
        results.append(run(size, source, folder / f"{size}.jsonl", args.method, args.model))
        print(json.dumps(results[-1]), flush=True)
    print("\n| input | MB in | mentions | peak RSS (MB) | wall (s) |\n|---|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['input']} | {r['input_bytes'] / 1e6:.1f} | {r['mentions']:,} | "
            f"{r['peak_rss_mb']:.0f} | {r['wall_s']:.1f} |"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        info = {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "repeats": 1,
            "command": "python -m mluke link FILE --lang en --jsonl OUT --no-progress --method " + args.method,
        }
        args.out.write_text(json.dumps({**info, "runs": results}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
