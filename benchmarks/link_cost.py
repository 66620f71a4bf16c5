"""What ``Linker.link`` costs next to the bare encoder at the mluke-base shape: the same windows through the
encoder alone (``model.encode``, the full forward), and through ``Linker.link`` with the confidence's
normaliser over the whole entity table exact (float32) or from its int8 copy (the default,
:mod:`mluke.models.normaliser`).

The model is a random mluke-base-shaped checkpoint (1,200,001 entities x 256, ``common.make_checkpoint``:
entity keys Q4 ... named "Entity i"); the kb is generated here: ``--surfaces`` made-up names, each
anchored to 3 entities of the checkpoint's vocabulary (keys spread over the whole table, priors 0.6/0.3/0.1),
and ``--sentences`` sentences naming about two of them each. Each method runs in a fresh process,
interleaved (``--repeats`` rounds), timed in wall and in CPU seconds of the process (on a shared machine
the CPU seconds of a one-thread process are the steadier measure); the linker is built and warmed up (one
call, which also makes the int8 copy of the table: its time is reported) before the clock starts; medians.
The int8 and exact runs' outputs are checked: the same top entity and NIL decision (at the calibration's
threshold) for every mention, and the largest confidence difference.

    BENCH_THREADS=1 python benchmarks/link_cost.py [MODEL_DIR] [--sentences 300] [--repeats 3]

MODEL_DIR: default ``benchmarks/work/mluke-base-random`` (made there if missing). ``--smoke``: the smallest random
checkpoint and 12 sentences, one round.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from common import (
    add_smoke,
    bench_threads,
    checkpoint_entities,
    linker_windows,
    make_checkpoint,
    run_interleaved,
    smoke_folder,
)

METHODS = ("encoder", "link-exact", "link-int8")
SYLLABLES = ("ka", "lo", "mer", "tan", "vi", "dor", "su", "rel", "an", "by", "qua", "zen", "pho", "ris", "gal", "tem")
FRAMES = (
    "{a} met {b} in the spring.",
    "The report from {a} mentions {b} twice.",
    "{a} and {b} signed the agreement yesterday.",
    "After the storm, {a} sent help to {b}.",
    "Visitors to {a} often ask about {b}.",
)


def surfaces(n: int) -> list[str]:
    """``n`` distinct made-up capitalised names of two or three syllables."""
    rng, out, seen = random.Random(0), [], set()
    while len(out) < n:
        name = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize()
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def make_kb(path: Path, names: list[str], entities: int) -> None:
    """A kb where each name is an anchor of 3 entities of the checkpoint's vocabulary (Q4 ... Q<entities-1>)."""
    from kb.db import EntityDB

    rng = random.Random(1)
    with EntityDB.create(path, overwrite=True, provenance={"builder": "benchmarks/link_cost.py"}) as w:
        w.add_languages(["en"])
        for name in names:
            keys = [f"Q{rng.randrange(4, entities)}" for _ in range(3)]
            for key, count in zip(keys, (60, 30, 10)):
                w.add_entity(key)
                w.add_label(key, "en", f"Entity {key[1:]}")
                w.add_anchor("en", name, key, count)
                w.add_entity_links(key, "en", count)
            w.add_surface("en", name, link_docs=90, text_docs=100)
        w.add_source("benchmark", "link_cost", lang="en")


def make_texts(names: list[str], n: int) -> list[str]:
    rng = random.Random(2)
    return [rng.choice(FRAMES).format(a=rng.choice(names), b=rng.choice(names)) for _ in range(n)]


def measure(method: str, model: Path, kb_path: Path, sentences: int, surfaces_n: int) -> dict:
    import torch

    from mluke.linking.linker import Linker
    from mluke.options import LinkOptions

    torch.set_num_threads(bench_threads())
    texts = make_texts(surfaces(surfaces_n), sentences)
    linker = Linker(model, kb_path, normaliser="exact" if method == "link-exact" else "int8")
    t = time.perf_counter()
    linker.link(texts[:2], "en")  # warm-up: kb pages, first forward pass, the int8 copy of the table
    warm = time.perf_counter() - t
    out: dict = {"method": method, "warm_up_s": round(warm, 2), "threads": torch.get_num_threads()}
    if method == "encoder":  # the same windows and batches as the linker's, through the encoder alone
        jobs, encoded = linker_windows(linker, texts, "en", LinkOptions())
        t, c = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            for enc in encoded:
                linker.bundle.model.encode(**enc)
        out |= {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c}
        out |= {"windows": len(jobs), "mentions": sum(len(j.mentions) for j in jobs)}
        return out
    t, c = time.perf_counter(), time.process_time()
    linked = linker.link(texts, "en", nil_threshold=0.0)  # every top candidate shown; NIL decided below
    out |= {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c}
    out["mentions"] = sum(len(x) for x in linked)
    nil = linker.calibration.threshold
    out["linked"] = [[m.key, m.confidence < nil, m.confidence] for row in linked for m in row]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", type=Path, default=Path(__file__).parent / "work" / "mluke-base-random")
    ap.add_argument("--sentences", type=int, default=300)
    ap.add_argument("--surfaces", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    add_smoke(ap)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.model, args.kb, args.sentences, args.surfaces)))
        sys.exit(0)
    work = smoke_folder()
    if args.smoke:
        args.model, args.sentences, args.surfaces, args.repeats = work / "checkpoint", 12, 20, 1
    if not (args.model / "config.json").exists():
        make_checkpoint(args.model, smoke=args.smoke)
    kb_path = work / "kb.sqlite"
    make_kb(kb_path, surfaces(args.surfaces), checkpoint_entities(args.model))
    passed = ["--sentences", str(args.sentences), "--surfaces", str(args.surfaces), "--kb", str(kb_path)]
    runs = run_interleaved(__file__, list(METHODS), [str(args.model), *passed], args.repeats)
    exact, fast = runs["link-exact"][0]["linked"], runs["link-int8"][0]["linked"]
    same = sum(a[0] == b[0] and a[1] == b[1] for a, b in zip(exact, fast))
    worst = max((abs(a[2] - b[2]) for a, b in zip(exact, fast)), default=0.0)
    for method in ("link-exact", "link-int8"):  # each process's outputs the same in every round
        if any(r["linked"] != runs[method][0]["linked"] for r in runs[method]):
            raise SystemExit(f"{method}: outputs differ between rounds")
    med = {m: statistics.median(r["seconds"] for r in runs[m]) for m in METHODS}
    cpu = {m: statistics.median(r["cpu_seconds"] for r in runs[m]) for m in METHODS}
    first = runs["encoder"][0]
    print(
        f"\n{args.sentences} sentences, {first['windows']} windows, {first['mentions']} mentions scored, "
        f"{checkpoint_entities(args.model):,} entities, {bench_threads()} thread(s), medians of {args.repeats}"
    )
    print("| run | median wall s | x bare encoder | median CPU s | x bare encoder |")
    print("|---|---:|---:|---:|---:|")
    for m in METHODS:
        print(f"| {m} | {med[m]:.2f} | {med[m] / med['encoder']:.2f} | {cpu[m]:.2f} | {cpu[m] / cpu['encoder']:.2f} |")
    warm = statistics.median(r["warm_up_s"] for r in runs["link-int8"])
    print(
        f"warm-up call (2 texts; int8: includes making the int8 table): int8 {warm:.1f} s, exact "
        f"{statistics.median(r['warm_up_s'] for r in runs['link-exact']):.1f} s"
    )
    print(
        f"int8 vs exact: same entity and NIL decision for {same}/{len(exact)} mentions; "
        f"largest confidence difference {worst:.2e}"
    )
    if same != len(exact) or len(exact) != len(fast):
        raise SystemExit("the int8 normaliser changed a linking decision")


if __name__ == "__main__":
    main()
