"""Ray or Spark for linking a sharded corpus: each engine's own fixed costs for the same work pattern.

The pattern is that of distributed linking: a model held once per worker, each task one shard of the corpus
(a Parquet file) that the worker reads, runs the model over in batches of 32, and writes as a Parquet part
file. The model here is a stand-in of fixed cost (a 2-layer transformer encoder of width 256, built with a fixed
seed, one thread per worker) so that what differs between the runs is the engine. Both engines get 2 local
workers (the machine's 2 cores):

- Ray: ``ray.init(num_cpus=2, include_dashboard=False)``, two actors (``num_cpus=1``, ``max_restarts=2``,
  ``max_task_retries=2``) that build the model on their first shard of a job, shards handed out by an
  ``ActorPool``;
- Spark: ``local-cluster[2,1,1024]`` (two executor JVMs of one core, as on a cluster; ``local[2,4]``, one JVM
  with task retries, when ``--spark-master`` says so), ``spark.read.parquet`` of the shard folder,
  ``mapInPandas`` with the model cached per Python worker process, ``write.parquet``.

Measured per engine, in a fresh process per round (rounds interleaved Ray, Spark, Ray, ...):

a. start: the init call (``ray.init`` / ``SparkSession.getOrCreate``), then "ready": 2 workers that have run a
   first trivial call (Ray: 2 actors answer; Spark: a 2-task job); shutdown (``ray.shutdown`` / ``spark.stop``);
b. per-task overhead: ``--tasks`` tiny tasks (a no-op over a 10-row pandas batch), after a warm-up; Ray both as
   remote functions and as calls on the 2 actors; Spark as ``mapInPandas`` over ``--tasks`` partitions;
c. the linking job over ``--texts`` texts of fixed synthetic token ids in ``--shards`` shards, run twice (the
   first run, then again with the engine warm; each run builds its models anew inside the job): wall time,
   outputs checked equal (bit for bit) to a plain single-process loop over the same shards and batches, and the
   number of model builds per worker process (each build appends a line to a file named by its process id);
d. peak RSS summed over the engine's processes (the driver and all its descendants, sampled every 50 ms with
   psutil) during (c), beside the plain loop's peak RSS;
e. the job of (c) a third time, with the first worker process to build the model killed (SIGKILL) 0.3 s after
   that build (``--kill-after``), mid-shard: whether the job completes with every output right, its wall time,
   and the builds (the replacement worker's included).

    python benchmarks/engine_choice.py [--repeats 3] [--texts 2000] [--tasks 200] [--shards 8]
                                       [--out benchmarks/results/engine_choice.json]

Needs ``ray``, ``pyspark`` (with Java 17+), ``pyarrow``, ``pandas``, ``psutil`` and ``torch`` in the running
Python; they are not project dependencies. ``--smoke``: 64 texts, 10 tasks, 2 shards, one round, with the engines
that are installed (an engine that is not is reported as skipped; without torch, pyarrow, pandas or psutil the
whole run is), everything in a temporary folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENGINES = ("ray", "spark")
#: the stand-in model and its input: vocabulary, width, layers, heads, feed-forward width, tokens per text
VOCAB, WIDTH, LAYERS, HEADS, FFN, LENGTH = 1000, 256, 2, 4, 1024, 32
BATCH = 32
#: the linking job's runs in each round: the first, the same again (engine warm), and again with a worker killed
JOBS = ("job", "again", "kill")


# -- the work: the same code for the plain loop and both engines -------------------------------------------
def build_model(builds: str) -> Any:
    """The stand-in model (fixed seed, eval mode, one thread); appends a line to ``<builds>/<pid>`` so that the
    driver can count the builds per worker process."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, FFN, dropout=0.0, batch_first=True)
    model = torch.nn.ModuleDict(
        {
            "embed": torch.nn.Embedding(VOCAB, WIDTH),
            "encoder": torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False),
        }
    ).eval()
    with open(Path(builds) / str(os.getpid()), "a") as f:
        f.write(f"{time.time()}\n")
    return model


def link_rows(model: Any, ids: Any, tokens: Any) -> tuple[Any, Any]:
    """Run ``model`` over one shard's rows (sorted by id here) in batches of :data:`BATCH`; returns (ids, vectors):
    the mean over positions of the encoder's output, float32, shape (rows, WIDTH)."""
    import numpy as np
    import torch

    order = np.argsort(ids, kind="stable")
    ids = np.asarray(ids)[order]
    tokens = np.stack([np.asarray(tokens[i], dtype=np.int64) for i in order])
    out = []
    with torch.inference_mode():
        for start in range(0, len(ids), BATCH):
            x = torch.from_numpy(tokens[start : start + BATCH])
            out.append(model["encoder"](model["embed"](x)).mean(dim=1).numpy())
    return ids, np.concatenate(out) if out else np.zeros((0, WIDTH), np.float32)


def write_part(ids: Any, vectors: Any, path: Path) -> None:
    """Write one part file (id, vec) atomically: a retried task replaces it whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    vec = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), WIDTH)
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "vec": vec}), tmp)
    os.replace(tmp, path)


def read_outputs(folder: Path) -> tuple[Any, Any]:
    """All part files of ``folder`` as (ids, vectors) sorted by id."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(folder).sort_by("id")
    ids = table["id"].to_numpy()
    vectors = np.array(table["vec"].to_pylist(), dtype=np.float32).reshape(len(ids), WIDTH)
    return ids, vectors


def make_input(folder: Path, texts: int, shards: int) -> None:
    """``texts`` rows (id, shard, tokens) of fixed synthetic token ids, as ``shards`` Parquet files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=(texts, LENGTH), dtype=np.int32)
    for shard in range(shards):
        rows = np.arange(shard, texts, shards)
        toks = pa.FixedSizeListArray.from_arrays(pa.array(tokens[rows].reshape(-1)), LENGTH)
        table = pa.table({"id": pa.array(rows, pa.int64()), "shard": pa.array([shard] * len(rows), pa.int32())})
        pq.write_table(table.append_column("tokens", toks), folder / f"shard-{shard:04d}.parquet")


def link_shard_file(model: Any, shard: Path, out: Path) -> int:
    """Read one shard file, link it, write its part file into ``out``; the number of rows."""
    import pyarrow.parquet as pq

    table = pq.read_table(shard)
    ids, vectors = link_rows(model, table["id"].to_numpy(), table["tokens"].to_pylist())
    write_part(ids, vectors, out / f"part-{shard.stem.split('-')[1]}.parquet")
    return len(ids)


#: the Spark side's model per Python worker process, by builds folder (module level: Spark reuses its worker
#: processes; each job has its own folder, so each job builds and counts its own models)
_SPARK_MODELS: dict[str, Any] = {}


def spark_link(builds: str, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInPandas`` function: the rows of one partition, linked shard by shard with the worker's cached model."""
    import numpy as np
    import pandas as pd

    if builds not in _SPARK_MODELS:
        _SPARK_MODELS[builds] = build_model(builds)
    frames = list(batches)
    if not frames:
        return
    rows = pd.concat(frames, ignore_index=True)
    for _, shard in rows.groupby("shard", sort=True):
        ids, vectors = link_rows(_SPARK_MODELS[builds], shard["id"].to_numpy(), list(shard["tokens"]))
        yield pd.DataFrame({"id": ids, "vec": list(vectors.astype(np.float32))})


def spark_noop(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInPandas`` function of the per-task overhead: one row per batch, its length."""
    import pandas as pd

    for batch in batches:
        yield pd.DataFrame({"n": [len(batch)]})


# -- measuring --------------------------------------------------------------------------------------------------
class RssSampler:
    """Peak of the RSS summed over this process and its descendants, sampled every ``every`` seconds."""

    def __init__(self, every: float = 0.05) -> None:
        self.every, self.peak, self.processes = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            total, count = 0, 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                    count += 1
                except psutil.Error:
                    pass
            if total > self.peak:
                self.peak, self.processes = total, count
            self._stop.wait(self.every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def builds_per_process(folder: Path) -> dict[str, int]:
    """Model builds recorded in ``folder``, per process id."""
    return {p.name: len(p.read_text().splitlines()) for p in sorted(folder.iterdir())}


def killer(builds: Path, after: float, record: dict[str, Any]) -> threading.Event:
    """Start a thread that SIGKILLs the first worker process to build the model, ``after`` seconds after that
    build (mid-shard), and records its pid and when (from the thread's start); setting the returned event (at
    the end of the job) stops it."""
    import psutil

    stop = threading.Event()
    record["killed_pid"] = None

    def run() -> None:
        start = time.perf_counter()
        while not stop.is_set():
            names = sorted(p.name for p in builds.iterdir())
            if names:
                if stop.wait(after) or not psutil.pid_exists(int(names[0])):
                    return
                os.kill(int(names[0]), signal.SIGKILL)
                record.update(killed_pid=int(names[0]), killed_at_s=time.perf_counter() - start)
                return
            stop.wait(0.01)

    threading.Thread(target=run, daemon=True).start()
    return stop


def check(folder: Path, reference: Path) -> dict[str, Any]:
    """Outputs of a job beside the plain loop's: row count and whether ids and vectors are equal bit for bit."""
    import numpy as np

    ids, vectors = read_outputs(folder)
    ref = np.load(reference)
    same = len(ids) == len(ref["ids"]) and bool(np.array_equal(ids, ref["ids"]))
    same = same and bool(np.array_equal(vectors, ref["vectors"]))
    diff = float(np.abs(vectors - ref["vectors"]).max()) if len(ids) == len(ref["ids"]) and len(ids) else None
    return {"outputs": len(ids), "equal_to_plain_loop": same, "max_abs_diff": diff}


def measure_plain(work: Path) -> dict[str, Any]:
    """The plain single-process loop over the same shards and batches: the reference outputs, wall, peak RSS."""
    import numpy as np

    builds, out = work / "builds-plain", work / "out-plain"
    builds.mkdir()
    out.mkdir()
    with RssSampler() as rss:
        start = time.perf_counter()
        model = build_model(str(builds))
        for shard in sorted((work / "input").glob("*.parquet")):
            link_shard_file(model, shard, out)
        wall = time.perf_counter() - start
    ids, vectors = read_outputs(out)
    np.savez(work / "reference.npz", ids=ids, vectors=vectors)
    return {"job_s": wall, "peak_rss_mb": rss.peak / 2**20, "processes": rss.processes, "outputs": len(ids)}


def run_job(name: str, job: Any, builds: Path, out: Path, work: Path, kill_after: float, r: dict[str, Any]) -> None:
    """Run ``job()`` (a linking job of either engine) as variant ``name`` of :data:`JOBS` (``"kill"``: a worker
    killed mid-job), and record its wall time, whether it completed with the right outputs, the model builds per
    process and (the first job) the peak memory into ``r``."""
    kill: dict[str, Any] = {}
    stop = killer(builds, kill_after, kill) if name == "kill" else threading.Event()
    with RssSampler() as rss:
        t = time.perf_counter()
        try:
            job()
            completed, error = True, None
        except Exception as e:  # the job failing is a result here
            completed, error = False, f"{type(e).__name__}: {str(e)[:300]}"
        wall = time.perf_counter() - t
        stop.set()
    result = {"job_s": wall, "completed": completed, "error": error, **kill}
    result.update(check(out, work / "reference.npz") if completed else {})
    result["builds_per_process"] = builds_per_process(builds)
    if name == "job":
        result.update(peak_rss_mb=rss.peak / 2**20, processes=rss.processes)
        r.update(result)
    else:
        r[name] = result


def measure_ray(work: Path, tasks: int, kill_after: float) -> dict[str, Any]:
    """One round of (a)-(e) with Ray."""
    import pandas as pd
    import ray
    from ray.util import ActorPool

    r: dict[str, Any] = {"version": ray.__version__}
    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    r["init_s"] = time.perf_counter() - t

    @ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)
    class Linker:
        """A worker holding the model."""

        def __init__(self) -> None:
            self.models: dict[str, Any] = {}  # by builds folder: each job builds and counts its own

        def ping(self) -> int:
            return os.getpid()

        def noop(self, batch: Any) -> int:
            return len(batch)

        def link(self, shard: str, out: str, builds: str) -> int:
            if builds not in self.models:
                self.models[builds] = build_model(builds)
            return link_shard_file(self.models[builds], Path(shard), Path(out))

    @ray.remote(num_cpus=1)
    def noop(batch: Any) -> int:
        return len(batch)

    def start_actors() -> list[Any]:
        actors = [Linker.remote() for _ in range(2)]  # type: ignore[attr-defined]
        ray.get([a.ping.remote() for a in actors])
        return actors

    actors = start_actors()
    r["ready_s"] = time.perf_counter() - t

    batch = pd.DataFrame({"id": range(10), "text": ["x" * 20] * 10})
    ray.get([actors[i % 2].noop.remote(batch) for i in range(10)])  # warm-up
    t = time.perf_counter()
    assert sum(ray.get([actors[i % 2].noop.remote(batch) for i in range(tasks)])) == 10 * tasks
    r["actor_call_s"] = (time.perf_counter() - t) / tasks
    for actor in actors:  # their CPUs go to the remote functions
        ray.kill(actor)
    ray.get([noop.remote(batch) for _ in range(10)])  # warm-up: the task workers start
    t = time.perf_counter()
    assert sum(ray.get([noop.remote(batch) for _ in range(tasks)])) == 10 * tasks
    r["task_s"] = (time.perf_counter() - t) / tasks

    shards = [str(p) for p in sorted((work / "input").glob("*.parquet"))]
    actors = start_actors()  # the job's workers, as Spark's Python workers: started, the model not yet built
    for name in JOBS:
        builds, out = work / f"builds-ray-{name}", work / f"out-ray-{name}"
        builds.mkdir()
        out.mkdir()
        run_job(
            name,
            lambda: list(ActorPool(actors).map_unordered(lambda a, s: a.link.remote(s, str(out), str(builds)), shards)),
            builds,
            out,
            work,
            kill_after,
            r,
        )
    t = time.perf_counter()
    ray.shutdown()
    r["shutdown_s"] = time.perf_counter() - t
    return r


def measure_spark(work: Path, tasks: int, kill_after: float, master: str) -> dict[str, Any]:
    """One round of (a)-(e) with Spark."""
    import functools

    import pyspark
    from pyspark.sql import SparkSession

    # the workers import this file as a module, so the cached model of spark_link lives on between tasks
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import engine_choice as module

    r: dict[str, Any] = {"version": pyspark.__version__, "master": master}
    t = time.perf_counter()
    spark = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .config("spark.executorEnv.OMP_NUM_THREADS", "1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.files.openCostInBytes", str(128 * 2**20))  # one partition (task) per shard file
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("FATAL")
    r["init_s"] = time.perf_counter() - t
    assert spark.range(0, 2, 1, 2).mapInPandas(module.spark_noop, "n long").count() == 2
    r["ready_s"] = time.perf_counter() - t

    ten = spark.range(0, 10 * tasks, 1, tasks).selectExpr("id", "repeat('x', 20) as text")
    spark.range(0, 100, 1, 10).mapInPandas(module.spark_noop, "n long").collect()  # warm-up
    t = time.perf_counter()
    rows = ten.mapInPandas(module.spark_noop, "n long").collect()
    r["task_s"] = (time.perf_counter() - t) / tasks
    assert sum(row.n for row in rows) == 10 * tasks, rows

    source = spark.read.parquet(str(work / "input"))
    r["partitions"] = source.rdd.getNumPartitions()
    for name in JOBS:
        builds, out = work / f"builds-spark-{name}", work / f"out-spark-{name}"
        builds.mkdir()
        fn = functools.partial(module.spark_link, str(builds))
        run_job(
            name,
            lambda: source.mapInPandas(fn, "id long, vec array<float>").write.parquet(str(out)),
            builds,
            out,
            work,
            kill_after,
            r,
        )
    t = time.perf_counter()
    spark.stop()
    r["shutdown_s"] = time.perf_counter() - t
    return r


# -- driver ------------------------------------------------------------------------------------------------------
def child(args: argparse.Namespace) -> None:
    """A measuring process: one engine's round (or the plain loop), its figures as one JSON line."""
    os.environ["OMP_NUM_THREADS"] = "1"
    work = Path(tempfile.mkdtemp(prefix=f"engine-{args.measure}-", dir=args.work))
    for name in ("input", "reference.npz"):
        (work / name).symlink_to(args.work / name)
    if args.measure == "plain":
        (work / "reference.npz").unlink()
        result = measure_plain(work)
        (work / "reference.npz").rename(args.work / "reference.npz")
    elif args.measure == "ray":
        result = measure_ray(work, args.tasks, args.kill_after)
    else:
        result = measure_spark(work, args.tasks, args.kill_after, args.spark_master)
    result["load_1min"] = os.getloadavg()[0]
    print(json.dumps(result), flush=True)


def run_child(args: argparse.Namespace, measure: str) -> dict[str, Any]:
    """Run one measuring process and return its JSON line."""
    cmd = [sys.executable, __file__, "--measure", measure, "--work", str(args.work), "--tasks", str(args.tasks)]
    cmd += ["--spark-master", args.spark_master, "--kill-after", str(args.kill_after)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise SystemExit(f"engine_choice.py --measure {measure} failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - t
    print(measure, json.dumps(result), flush=True)
    return result


def spread(values: list[float]) -> dict[str, float]:
    """Median, min and max of a timed figure over the rounds."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


FIGURES = (
    ("init_s", "init call (s)", 2, 1),
    ("ready_s", "2 workers ready (s)", 2, 1),
    ("task_s", "per tiny task (ms)", 2, 1000),
    ("actor_call_s", "per actor call (ms)", 2, 1000),
    ("job_s", "linking job, first (s)", 2, 1),
    ("again.job_s", "linking job, again (s)", 2, 1),
    ("peak_rss_mb", "peak RSS, all processes (MB)", 0, 1),
    ("kill.job_s", "job with a worker killed (s)", 2, 1),
    ("shutdown_s", "shutdown (s)", 2, 1),
)


def figure(run: dict[str, Any], key: str) -> float | None:
    """A figure of one round (``kill.job_s`` reads the kill run's)."""
    for part in key.split("."):
        run = run.get(part) if isinstance(run, dict) else None  # type: ignore[assignment]
    return run  # type: ignore[return-value]


def table(summary: dict[str, Any]) -> str:
    """Markdown: each figure's median (min-max) per engine."""
    engines = [e for e in ENGINES if e in summary["engines"]]
    lines = ["| figure | " + " | ".join(engines) + " |", "|---|" + "---:|" * len(engines)]
    for key, label, digits, scale in FIGURES:
        cells = []
        for e in engines:
            s = summary["engines"][e]["figures"].get(key)
            cells.append(
                f"{s['median'] * scale:.{digits}f} ({s['min'] * scale:.{digits}f}-{s['max'] * scale:.{digits}f})"
                if s
                else "-"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="rounds per engine, interleaved")
    ap.add_argument("--texts", type=int, default=2000, help="texts of the linking job")
    ap.add_argument("--tasks", type=int, default=200, help="tiny tasks of the per-task overhead")
    ap.add_argument("--shards", type=int, default=8, help="shards (input files, tasks) of the linking job")
    ap.add_argument("--kill-after", type=float, default=0.3, help="seconds from a model build to the kill (e)")
    ap.add_argument("--spark-master", default="local-cluster[2,1,1024]", help="Spark master of the Spark rounds")
    ap.add_argument("--out", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--work", type=Path, help="folder for generated data (default: a temporary one)")
    ap.add_argument("--smoke", action="store_true", help="64 texts, 10 tasks, 2 shards, one round, in a temp folder")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        child(args)
        return
    if args.smoke:
        args.texts, args.tasks, args.shards, args.repeats, args.out, args.kill_after = 64, 10, 2, 1, None, 0.01
    missing = [m for m in ("torch", "pyarrow", "pandas", "psutil") if not importlib.util.find_spec(m)]
    engines = [e for e in ENGINES if importlib.util.find_spec("pyspark" if e == "spark" else e)]
    skipped = [e for e in ENGINES if e not in engines]
    if (missing or skipped) and not args.smoke:
        raise SystemExit(
            f"engine_choice.py: {', '.join(missing + skipped)} not installed in {sys.executable}; the engines are "
            "not project dependencies: pip install ray pyspark pyarrow pandas psutil (pyspark needs Java 17+)"
        )
    if missing:
        print(f"skipped: {', '.join(missing)} not installed in {sys.executable}")
        return
    for name in skipped:
        print(f"{name}: skipped (not installed in {sys.executable})")
    with tempfile.TemporaryDirectory(prefix="engine-choice-") as tmp:
        args.work = (args.work or Path(tmp)).resolve()
        args.work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        make_input(args.work / "input", args.texts, args.shards)
        plain = run_child(args, "plain")
        runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
        for _ in range(args.repeats):
            for e in engines:
                runs[e].append(run_child(args, e))
        total = time.perf_counter() - start
    summary: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "sizes": {k: getattr(args, k) for k in ("repeats", "texts", "tasks", "shards", "spark_master")},
        "model": {"vocab": VOCAB, "width": WIDTH, "layers": LAYERS, "heads": HEADS, "ffn": FFN, "length": LENGTH},
        "batch": BATCH,
        "plain_loop": plain,
        "total_s": total,
        "engines": {},
    }
    for e in engines:
        figures = {}
        for key, *_ in FIGURES:
            values = [figure(run, key) for run in runs[e]]
            if all(isinstance(v, (int, float)) for v in values):
                figures[key] = spread(values)  # type: ignore[arg-type]
        summary["engines"][e] = {"figures": figures, "runs": runs[e]}
    print(table(summary))
    bad = [
        f"{e} round {i} ({part})"
        for e in engines
        for i, run in enumerate(runs[e])
        for part, r in (("job", run), ("again", run["again"]), ("kill", run["kill"]))
        if not r.get("equal_to_plain_loop") or (part == "kill" and r["killed_pid"] is None)
    ]
    if bad:
        print("outputs not equal to the plain loop's, job not completed, or no worker killed:", ", ".join(bad))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"total {total:.0f} s")


if __name__ == "__main__":
    main()
