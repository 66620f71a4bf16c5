"""Span retrieval speed: top-10 cosine search over ``--n`` (1M) random 768-d vectors for ``--queries`` (1,000)
queries, with our :func:`probes.retrieval.build_index` (FAISS exact inner product over unit vectors, and HNSW)
against scikit-learn's ``NearestNeighbors(metric="cosine", algorithm="brute")`` (as people run it: it
normalises the base vectors at every query batch) and, like for like, ``sklearn-unit``: the base vectors
normalised once at build time as ``build_index`` does for FAISS, each query batch once, then
``NearestNeighbors(metric="euclidean", algorithm="brute")`` (the same ranking as cosine on unit vectors);
one process, side by side, the exact searches interleaved for ``--repeats`` rounds (medians).

Vectors: seeded standard normal, float32. Two query sets: ``random`` (independent draws from the same
distribution: the hard case, every base vector is almost equally far) and ``near`` (base vectors plus noise
of a fifth of their norm: each query has a true match, as a translated span does). Reported per method:
build seconds, memory added by the index (VmRSS after minus before, MB), queries/s, and for HNSW recall@10
against FAISS exact at several ``ef_search`` values; FAISS exact and sklearn must return the same top-10 ids
for at least 99.9% of (query, rank) slots (float ties aside), else the script fails.

    python benchmarks/retrieval_speed.py [--n 1000000] [--queries 1000] [--threads 2] [--skip-hnsw] [--repeats 3]
        [--out results/retrieval_speed.json] [--smoke]

``--smoke``: 2,000 vectors of 32 dimensions, 20 queries, one round, into a temporary folder.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from common import add_smoke, bench_threads, script_parser, smoke_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.retrieval import build_index, faiss_module


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


def main() -> None:
    ap = script_parser(
        __doc__, n=1_000_000, dim=768, queries=1000, k=10, threads=bench_threads(), hnsw_m=32, ef_construction=80
    )
    ap.add_argument("--ef-search", default="64,128,256,512,1024")
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--skip-hnsw", action="store_true", help="exact search only (FAISS flat and the sklearn baselines)")
    ap.add_argument("--repeats", type=int, default=1, help="interleaved rounds of the exact searches (medians kept)")
    ap.add_argument("--out", type=Path, default=None)
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.n, args.dim, args.queries, args.hnsw_m, args.ef_construction = 2000, 32, 20, 8, 16
        args.ef_search, args.repeats, args.out = "16,32", 1, smoke_folder() / "retrieval_speed.json"
    faiss = faiss_module()
    faiss.omp_set_num_threads(args.threads)
    from sklearn.neighbors import NearestNeighbors
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    base = rng.standard_normal((args.n, args.dim), dtype=np.float32)
    picks = rng.choice(args.n, args.queries, replace=False)
    noise = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    queries = {
        "random": rng.standard_normal((args.queries, args.dim), dtype=np.float32),
        "near": base[picks] + 0.2 * noise,
    }
    out: dict = {
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "k": args.k,
        "threads": args.threads,
        "machine": f"{platform.processor() or platform.machine()}, {args.threads} threads",
        "faiss": faiss.__version__,
        "methods": {},
    }

    before = rss_mb()
    flat, secs = timed(lambda: build_index(base, kind="flat", use_gpu=False))
    out["methods"]["faiss-flat"] = {"build_s": round(secs, 2), "memory_mb": round(rss_mb() - before)}
    searchers = {"faiss-flat": lambda q: flat.search(q, args.k)[1]}
    if not args.skip_sklearn:
        with threadpool_limits(args.threads):
            before = rss_mb()
            nn, secs = timed(lambda: NearestNeighbors(n_neighbors=args.k, metric="cosine", algorithm="brute").fit(base))
            out["methods"]["sklearn-brute"] = {"build_s": round(secs, 2), "memory_mb": round(rss_mb() - before)}
            # like for like: the base vectors normalised once at build time, as build_index does for FAISS; each
            # query batch normalised once; euclidean distance between unit vectors ranks as cosine does
            before = rss_mb()
            unit_nn, secs = timed(
                lambda: NearestNeighbors(n_neighbors=args.k, metric="euclidean", algorithm="brute").fit(
                    base / np.linalg.norm(base, axis=1, keepdims=True)
                )
            )
            out["methods"]["sklearn-unit"] = {"build_s": round(secs, 2), "memory_mb": round(rss_mb() - before)}
        searchers["sklearn-brute"] = lambda q: nn.kneighbors(q, args.k)[1]
        searchers["sklearn-unit"] = lambda q: unit_nn.kneighbors(q / np.linalg.norm(q, axis=1, keepdims=True), args.k)[
            1
        ]
    exact: dict[str, np.ndarray] = {}
    times: dict[tuple[str, str], list[float]] = {}
    with threadpool_limits(args.threads):
        for _ in range(args.repeats):  # interleaved: every method once per round, on the same queries
            for name, q in queries.items():
                for method, search in searchers.items():
                    ids, secs = timed(lambda: search(q))
                    times.setdefault((method, name), []).append(secs)
                    exact.setdefault(name, ids)  # FAISS flat runs first: the exact answer
                    same = float(np.mean(ids == exact[name]))
                    out["methods"][method][f"{name}_same_ids_as_faiss"] = same
                    print(name, method, round(secs, 2), "s, same ids as FAISS flat", same, flush=True)
                    if same < 0.999:
                        raise SystemExit(
                            f"{method} and FAISS exact disagree on {1 - same:.4%} of the top-{args.k} slots"
                        )
    for (method, name), secs in times.items():
        out["methods"][method][f"{name}_queries_per_s"] = round(args.queries / float(np.median(secs)), 1)
        out["methods"][method][f"{name}_seconds_per_round"] = [round(x, 3) for x in secs]
    if not args.skip_sklearn:
        for name in queries:
            for base_method in ("sklearn-brute", "sklearn-unit"):
                out[f"{name}_flat_vs_{base_method}"] = round(
                    out["methods"]["faiss-flat"][f"{name}_queries_per_s"]
                    / out["methods"][base_method][f"{name}_queries_per_s"],
                    2,
                )
        nn = unit_nn = None
        print({k: v for k, v in out.items() if "_flat_vs_" in k}, flush=True)
    if args.skip_hnsw:
        print(json.dumps(out, indent=1))
        if args.out:
            args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        return
    flat = None  # free its memory before HNSW

    before = rss_mb()
    hnsw, secs = timed(
        lambda: build_index(base, kind="hnsw", hnsw_m=args.hnsw_m, ef_construction=args.ef_construction, use_gpu=False)
    )
    entry = out["methods"]["faiss-hnsw"] = {
        "build_s": round(secs, 2),
        "memory_mb": round(rss_mb() - before),
        "hnsw_m": args.hnsw_m,
        "ef_construction": args.ef_construction,
        "ef_search": {},
    }
    print("hnsw build", round(secs, 1), "s", flush=True)
    for ef in (int(e) for e in args.ef_search.split(",")):
        hnsw.index.hnsw.efSearch = ef
        row = entry["ef_search"][ef] = {}
        for name, q in queries.items():
            (_, ids), secs = timed(lambda: hnsw.search(q, args.k))
            row[f"{name}_recall_at_{args.k}"] = round(recall(ids, exact[name]), 4)
            row[f"{name}_queries_per_s"] = round(args.queries / secs, 1)
            if "sklearn-brute" in out["methods"]:
                row[f"{name}_vs_sklearn"] = round(
                    row[f"{name}_queries_per_s"] / out["methods"]["sklearn-brute"][f"{name}_queries_per_s"], 1
                )
        print("ef", ef, row, flush=True)
    print(json.dumps(out, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
