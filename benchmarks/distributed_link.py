"""Linking a dataset on a local Ray cluster (``mluke.distributed.link_dataset``) with 1 and 2 workers, beside
``mluke link CORPUS --jsonl`` in one process (``link_corpus``, 1 worker): documents/s and the ratios.

All three do the same work: the same model and kb, 1 torch thread per worker, the same chunks
(``chunk_texts``, and chunks never straddle a shard's edge), fp32; the distributed rows are checked equal to
the one-process output, mention for mention, and to each other. Runs are interleaved (baseline, 1 worker,
2 workers, then again). For each run:

- ``linking_s``: the baseline's seconds of linking (its model load excluded, reported apart); a Ray run's wall
  seconds from the first shard handed out to the last written, which include each worker's model load (a
  worker loads when it starts; ``startup_s`` is the time to the first finished shard);
- ``steady_docs_per_s``: documents linked between the ``workers``-th and the last finished shard, over those
  seconds (start-up left out, what a long job runs at; a shard that began before that window counts only
  for its share of seconds inside it, :func:`steady_rate`);
- ``busy_s_per_doc``: the seconds the workers spent in their shards (model load excluded) per document.

Model and kb: as ``benchmarks/link_corpus.py`` (default: the random mluke-base-shaped checkpoint with a
generated kb of ``--entities`` entities and ``--docs`` documents of ~300 words; ``--demo``: the trained demo
model; ``--smoke``: the tiny demo model and 12 short documents, one round).

    python benchmarks/distributed_link.py [--docs 48] [--shard-lines 4] [--entities 50000] [--model DIR]
                                          [--demo] [--repeats 2] [--out results.json] [--smoke]
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from common import benchmark_parser, smoke_demo, smoke_folder
from link_corpus import BASE_MODEL, _cpu_seconds, make_corpus, make_demo_corpus, make_kb


def flattened(jsonl: Path, source: str) -> list[dict]:
    """The one-process output's mentions as the distributed job's rows."""
    rows = []
    for record in map(json.loads, jsonl.read_text(encoding="utf-8").splitlines()):
        for k, m in enumerate(record["mentions"]):
            doc_id = record.get("id")
            doc_id = doc_id if doc_id is None or isinstance(doc_id, str) else json.dumps(doc_id)
            rows.append({"source": source, "line": record["line"], "id": doc_id, "lang": "en", "mention": k, **m})
    return rows


def baseline(corpus: Path, out: Path, model: str, db: str | None, options: object) -> dict:
    from mluke.linking.corpus import link_corpus
    from mluke.linking.knowbert import open_linker

    started = time.perf_counter()
    linker = open_linker(model, db, options, languages=None)  # type: ignore[arg-type]
    loaded = time.perf_counter() - started
    cpu = _cpu_seconds()
    run = link_corpus(corpus, out, "en", threads=1, linker=linker, options=options, progress=False)  # type: ignore[arg-type]
    cpu = _cpu_seconds() - cpu
    return {
        "run": "mluke link (1 process)",
        "workers": 1,
        "documents": run.documents,
        "startup_s": round(loaded, 2),
        "linking_s": round(run.seconds, 2),
        "docs_per_s": round(run.docs_per_second, 3),
        "steady_docs_per_s": round(run.docs_per_second, 3),
        "busy_s_per_doc": round(cpu / max(1, run.documents), 3),
    }


def distributed(corpus: Path, out: Path, model: str, db: str | None, options: object, workers: int) -> dict:
    from mluke.distributed import link_dataset

    finished: list[tuple[float, int]] = []
    busy: list[float] = []
    started = time.perf_counter()
    run = link_dataset(
        corpus,
        out,
        model=model,
        db=db,
        workers=workers,
        threads=1,
        options=options,  # type: ignore[arg-type]
        progress=False,
        on_shard=lambda done: (
            finished.append((time.perf_counter() - started, done.documents)),
            busy.append(done.seconds),
        ),
    )
    steady = steady_rate([(end - seconds, end, docs) for (end, docs), seconds in zip(finished, busy)], workers)
    return {
        "run": f"Ray, {workers} worker{'s' if workers > 1 else ''}",
        "workers": workers,
        "documents": run.documents,
        "startup_s": round(finished[0][0], 2) if finished else 0.0,
        "linking_s": round(run.seconds, 2),
        "docs_per_s": round(run.docs_per_second, 3),
        "steady_docs_per_s": round(steady, 3),
        "busy_s_per_doc": round(sum(busy) / max(1, run.documents), 3),
    }


def steady_rate(shards: list[tuple[float, float, int]], workers: int) -> float:
    """Documents per second between the ``workers``-th finished shard and the last (start-up left out).

    ``shards``: (start, end, documents) of each shard in the order they finished. A shard that began before
    the window counts only for the share of its seconds inside it, so the work done before the window is
    not credited to it (counting such a shard whole overstates the rate when the workers start at
    different times).
    """
    if len(shards) <= workers:
        return 0.0
    ends = sorted(end for _, end, _ in shards)
    low, high = ends[workers - 1], ends[-1]
    docs = 0.0
    for start, end, n in shards:
        inside = min(end, high) - max(start, low)
        if inside > 0:
            docs += n * inside / max(1e-9, end - start)
    return docs / max(1e-9, high - low)


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--docs", type=int, default=48, help="documents in the corpus")
    ap.add_argument("--shard-lines", type=int, default=4, help="documents per shard (one task)")
    ap.add_argument("--chunk-texts", type=int, default=4, help="documents per chunk (the same in every run)")
    ap.add_argument("--entities", type=int, default=50_000, help="entities in the generated kb")
    ap.add_argument("--model", type=Path, help=f"mLUKE checkpoint (default: {BASE_MODEL})")
    ap.add_argument("--demo", action="store_true", help="the trained demo model and embedded kb instead")
    ap.add_argument("--out", type=Path, help="write the figures to this JSON file")
    args = ap.parse_args()
    import ray

    from mluke.distributed.parts import read_parts
    from mluke.options import LinkOptions

    work = args.work / "distributed-link"
    if args.smoke:
        work, args.repeats, args.docs, args.shard_lines = smoke_folder(), 1, 12, 3
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus-{'demo-' if args.demo or args.smoke else ''}{args.docs}.jsonl"
    db: str | None = None
    if args.smoke or args.demo:
        from mluke.demo.model import demo_model

        model = str(smoke_demo()) if args.smoke else str(args.model or demo_model())
        make_demo_corpus(corpus, args.docs, words=30 if args.smoke else 300)
    else:
        model = str(args.model or BASE_MODEL)
        db = str(work / f"kb-{args.entities}.sqlite")
        names_path = work / f"kb-{args.entities}.names.json"
        if not names_path.exists():
            Path(db).unlink(missing_ok=True)
            names_path.write_text(json.dumps(make_kb(Path(db), args.entities)))
        if not corpus.exists():
            make_corpus(corpus, json.loads(names_path.read_text()), args.docs)
    options = LinkOptions(chunk_texts=args.chunk_texts, shard_lines=args.shard_lines)
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    rows: list[dict] = []
    want = None
    for round_ in range(args.repeats):
        for workers in (0, 1, 2):
            out = work / f"out-{workers}"
            shutil.rmtree(out, ignore_errors=True)
            load = os.getloadavg()[0]
            if workers == 0:
                row = baseline(corpus, work / "baseline.jsonl", model, db, options)
                want = flattened(work / "baseline.jsonl", corpus.name)
                (work / "baseline.jsonl").unlink()
            else:
                row = distributed(corpus, out, model, db, options, workers)
                if read_parts(out).to_pylist() != want:
                    raise SystemExit(f"the rows of {workers} Ray workers differ from mluke link's")
            row.update(round=round_, load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2))
            rows.append(row)
            print(json.dumps(row), flush=True)
    ray.shutdown()
    ray_rows = [r for r in rows if r["run"].startswith("Ray")]
    best = {w: max((r for r in ray_rows if r["workers"] == w), key=lambda r: r["steady_docs_per_s"]) for w in (1, 2)}
    base = max((r for r in rows if r not in ray_rows), key=lambda r: r["docs_per_s"])
    sizes = f"{args.docs} documents, {args.shard_lines} a shard, {args.chunk_texts} a chunk"
    print(f"\n{sizes}; model {model}; rows equal: yes")
    print("run                       docs/s  steady docs/s  vs one process  busy s/doc  start-up s")
    for r in (base, best[1], best[2]):
        print(
            f"{r['run']:<24}  {r['docs_per_s']:>6.3f}  {r['steady_docs_per_s']:>13.3f}"
            f"  {r['steady_docs_per_s'] / base['docs_per_s']:>13.2f}x  {r['busy_s_per_doc']:>10.2f}"
            f"  {r['startup_s']:>10.1f}"
        )
    print(f"2 workers against 1 (steady): {best[2]['steady_docs_per_s'] / best[1]['steady_docs_per_s']:.2f}x")
    if args.out:
        args.out.write_text(json.dumps({"corpus": str(corpus), "model": model, "db": db, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
