"""Per-call cost of small linking and probing calls with the demo model: ``mluke.link`` and ``mluke.probe``
called in a loop (each call one short text or one subject), and ``Linker.link`` on a linker built once.

Each (source tree, method) runs in a fresh process, interleaved, ``--repeats`` rounds; medians of the per-call
wall and CPU seconds after one warm-up call (not counted). ``--baseline DIR``: also run every method with the
package imported from ``DIR`` (a checkout of another commit, e.g. ``git archive <commit> | tar -x -C DIR``),
the same texts, model and kb; every call's outputs are checked equal between the two trees (entity keys
exactly, scores and confidences within 1e-3: the default normaliser may differ in the last digits).

    BENCH_THREADS=1 python benchmarks/link_calls.py [--calls 30] [--repeats 3] [--baseline DIR]

``--smoke``: the tiny demo model, 3 calls, one round, no baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import add_smoke, bench_threads, demo_folder

METHODS = ("mluke.link", "mluke.probe", "Linker.link")
HERE = Path(__file__).resolve().parent


def measure(method: str, calls: int, model: str) -> dict:
    import torch

    import mluke
    from kb.sources.embedded import default_db

    sys.path.insert(0, str(HERE))
    from link_speed import make_texts

    torch.set_num_threads(bench_threads())
    db = default_db()
    texts = make_texts(db, "en", calls + 1, seed=5)
    subjects = db.subjects("P36")[: calls + 1]
    if method == "Linker.link":
        linker = mluke.Linker(model, db)
        run = lambda i: [(m.start, m.key, round(m.confidence, 9)) for m in linker.link(texts[i], "en")]  # noqa: E731
    elif method == "mluke.link":
        run = lambda i: [  # noqa: E731
            (m.start, m.key, round(m.confidence, 9)) for m in mluke.link(texts[i], "en", model=model)
        ]
    else:
        run = lambda i: [  # noqa: E731
            (p.key, round(p.score, 6))
            for r in mluke.probe("The capital of [X] is [Y].", "en", subjects=[subjects[i]], model=model).rows
            for p in r.predictions
        ]
    run(0)  # warm-up: the first call builds what later calls may reuse
    wall, cpu, outputs = [], [], []
    for i in range(1, calls + 1):
        t, c = time.perf_counter(), time.process_time()
        outputs.append(run(i))
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"method": method, "wall": statistics.median(wall), "cpu": statistics.median(cpu), "outputs": outputs}


#: scores may differ this much between trees (the int8 normaliser, float32 rounding); keys and order may not
TOLERANCE = 1e-3


def same(a: list, b: list) -> bool:
    """Whether two runs' outputs are equal, numbers within :data:`TOLERANCE`."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= TOLERANCE
    return bool(a == b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="a source tree to compare with (its package directories)")
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    add_smoke(ap)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.calls, args.model)))
        return
    if args.smoke:
        args.calls, args.repeats, args.baseline = 3, 1, None
    model = str(demo_folder(args.smoke))
    trees = {"ours": None, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    runs: dict[tuple[str, str], list[dict]] = {(t, m): [] for t in trees for m in METHODS}
    for _ in range(args.repeats):
        for tree, src in trees.items():
            for method in METHODS:
                env = {**os.environ, **({"PYTHONPATH": str(src)} if src else {})}
                cmd = [sys.executable, __file__, "--measure", method, "--calls", str(args.calls), "--model", model]
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE)
                if proc.returncode:
                    raise SystemExit(proc.stderr[-3000:])
                runs[(tree, method)].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                print(tree, method, f"{runs[(tree, method)][-1]['wall']:.4f} s per call", flush=True)
    if args.baseline:
        for method in METHODS:
            if not same(runs[("ours", method)][0]["outputs"], runs[("baseline", method)][0]["outputs"]):
                raise SystemExit(f"{method}: outputs differ from the baseline's")
        print(f"outputs equal to the baseline's for every call (scores within {TOLERANCE})")
    print(f"\n{args.calls} calls per process, {bench_threads()} thread(s), medians over {args.repeats} rounds")
    print("| call | tree | wall s per call | CPU s per call |" + (" x baseline (wall) |" if args.baseline else ""))
    print("|---|---|---:|---:|" + ("---:|" if args.baseline else ""))
    for method in METHODS:
        for tree in trees:
            w = statistics.median(r["wall"] for r in runs[(tree, method)])
            c = statistics.median(r["cpu"] for r in runs[(tree, method)])
            ratio = ""
            if args.baseline:
                base = statistics.median(r["wall"] for r in runs[("baseline", method)])
                ratio = f" {w / base:.2f} |"
            print(f"| {method} | {tree} | {w:.4f} | {c:.4f} |{ratio}")


if __name__ == "__main__":
    main()
