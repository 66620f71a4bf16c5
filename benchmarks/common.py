"""Helpers shared by the benchmark scripts: peak memory and interleaved fresh-process runs."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

#: the fixed part of XLM-R's config layout (positions, one token type, its layer-norm epsilon)
XLMR_LAYOUT = {"max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5}


def xlmr_shape(hidden: int, layers: int, heads: int, intermediate: int) -> dict[str, Any]:
    """Keyword arguments of an XLM-R-layout transformer config (``XLMRobertaConfig``, ``LukeConfig``) of this size."""
    shape = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads}
    return {**shape, "intermediate_size": intermediate, **XLMR_LAYOUT}


def bench_threads() -> int:
    """Threads per measuring process: 2 (the machine's cores), or ``$BENCH_THREADS`` (e.g. 1 on a machine
    shared with other jobs, where 2-thread parallel regions wait on descheduled threads); the same for
    every method of a run."""
    import os

    return int(os.environ.get("BENCH_THREADS", "2"))


def peak_rss_mb() -> float:
    """VmHWM of this process (reset at exec, unlike ru_maxrss, which a child inherits from its parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_interleaved(script: str, methods: list[str], args: list[str], repeats: int) -> dict[str, list[dict]]:
    """Run ``script --measure METHOD *args`` in a fresh process for each method, ``repeats`` times,
    interleaved so every method sees the same machine load; each child prints one JSON line."""
    results: dict[str, list[dict]] = {m: [] for m in methods}
    for _ in range(repeats):
        for m in methods:
            proc = subprocess.run([sys.executable, script, "--measure", m, *args], capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(proc.stderr[-3000:])
            results[m].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[m][-1]), flush=True)
    return results


def run_counted(script: str, methods: list[str], args: argparse.Namespace, count: str) -> dict[str, list[dict]]:
    """:func:`run_interleaved` passing this run's ``count`` option (e.g. ``"--prompts"``) and ``--work``,
    ``args.repeats`` times."""
    n = getattr(args, count.lstrip("-").replace("-", "_"))
    return run_interleaved(script, methods, [count, str(n), "--work", str(args.work)], args.repeats)


def best_runs(results: dict[str, list[dict]], key: str) -> dict[str, dict]:
    """Per method, the run with the highest ``key`` (e.g. ``"prompts_per_s"``)."""
    return {m: max(runs, key=lambda r: r[key]) for m, runs in results.items()}


def script_parser(doc: str | None, **counts: int) -> argparse.ArgumentParser:
    """An argument parser that shows the script's docstring as written, with an integer option per keyword (its
    default; underscores become hyphens): ``script_parser(__doc__, queries=1000, hnsw_m=32)``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in counts.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    return ap


def benchmark_parser(doc: str | None, work: Path) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark has: --work, --repeats and the hidden --measure."""
    ap = script_parser(doc)
    ap.add_argument("--work", type=Path, default=work, help="folder for generated data")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved runs per method")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    return ap


def base_shape_args(doc: str | None, script: str, measure: Any, count: str, default: int) -> tuple[Any, Path]:
    """Arguments of a benchmark on the random mluke-base-shaped checkpoint (``<work>/mluke-base-random``),
    with a ``count`` option (e.g. ``--prompts``). In a measuring child (``--measure``) it runs
    ``measure(method, folder, n)``, prints its JSON line and exits; else it returns ``(args, folder)``."""
    ap = benchmark_parser(doc, Path(script).parent / "work")
    ap.add_argument(count, type=int, default=default)
    ap.add_argument("--bf16", action="store_true", help="also run every method with the model in bfloat16")
    ap.add_argument("--out", type=Path, help="write every run's figures to this JSON file")
    ap.add_argument("--only", help="comma-separated methods to run (default: all)")
    args = ap.parse_args()
    folder = args.work / "mluke-base-random"
    if args.measure:
        print(json.dumps(measure(args.measure, folder, getattr(args, count.lstrip("-")))))
        sys.exit(0)
    return args, folder


def e_vs_w_table(score: dict[tuple[str, int, str], float], metric: str = "") -> str:
    """Markdown: per language, mean (standard deviation) over seeds of ``score[(features, seed, lang)]`` for
    entity (E) and word (W) features and E - W, then the average over the languages other than English."""
    import statistics

    langs = sorted({k[2] for k in score}, key=lambda lang: (lang != "en", lang))
    seeds = sorted({k[1] for k in score})

    def cell(features: str, lang: str | None) -> tuple[float, float]:
        values = (
            [score[(features, s, lang)] for s in seeds]
            if lang
            else [statistics.mean(score[(features, s, x)] for x in langs if x != "en") for s in seeds]
        )
        return statistics.mean(values), statistics.pstdev(values)

    lines = [f"| language | mLUKE-E{metric} | mLUKE-W{metric} | E - W |", "|---|---:|---:|---:|"]
    for lang in [*langs, None]:
        (e, es), (w, ws) = cell("entity", lang), cell("word", lang)
        lines.append(
            f"| {lang or '**average (23, zero-shot)**'} | {e:.1f} ({es:.1f}) | {w:.1f} ({ws:.1f}) | {e - w:+.1f} |"
        )
    return "\n".join(lines)


def miniature_parser(
    doc: str | None, name: str, *, train_size: int | None = None, learning_rate: float = 1e-3, threads: int = 2
) -> argparse.ArgumentParser:
    """The options of a miniature fine-tuning benchmark ``name`` (``"qa"``, ``"record"``, ``"typing"``): --work
    (``work/<name>``), --output (``results/<name>_miniature.json``), --model, --seeds, --epochs, --learning-rate,
    --batch-size, --train-size (where the benchmark draws its own training set), --threads and --table-only."""
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=here / "work" / name)
    ap.add_argument("--output", type=Path, default=here / "results" / f"{name}_miniature.json")
    ap.add_argument("--model", help="pretrained checkpoint (default: the demo model)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--learning-rate", type=float, default=learning_rate)
    ap.add_argument("--batch-size", type=int, default=16)
    if train_size is not None:
        ap.add_argument("--train-size", type=int, default=train_size)
    ap.add_argument("--threads", type=int, default=threads)
    ap.add_argument("--table-only", action="store_true", help="print the tables of an earlier run's JSON")
    return ap


def log_run(results: dict, output: Path, label: str, rows: dict[str, dict], metrics: tuple[str, ...] = ("f1",)) -> None:
    """Print one fine-tuning run of a miniature benchmark (English ``metrics`` and their zero-shot averages over the
    other languages of ``rows``, x100; the run's seconds) and save the ``results`` so far to ``output``."""
    import statistics

    from kb.files import write_json

    en = " ".join(f"{m} {100 * rows['en'][m]:.1f}" for m in metrics)
    zero = " ".join(f"{m} {100 * statistics.mean(r[m] for k, r in rows.items() if k != 'en'):.1f}" for m in metrics)
    print(f"{label}: en {en}, zero-shot average {zero} ({results['runs'][-1]['seconds']} s)", flush=True)
    write_json(results, output, overwrite=True)


def finetune_config(args: argparse.Namespace, seed: int) -> Any:
    """The ``FineTuneConfig`` of one run of a miniature benchmark: its ``--learning-rate``, ``--batch-size`` and
    ``--epochs``, and ``seed``."""
    from mluke.finetuning import FineTuneConfig

    return FineTuneConfig(learning_rate=args.learning_rate, batch_size=args.batch_size, epochs=args.epochs, seed=seed)


def run_entry(report: Any, scores: Any, started: float, **keys: Any) -> dict[str, Any]:
    """One fine-tuning run of a miniature benchmark as its JSON keeps it: ``keys`` (seed, features, ...), the
    seconds since ``started``, the ``FineTuneReport``'s history and the ``TransferReport``'s rows and average."""
    import time

    return {
        **keys,
        "seconds": round(time.perf_counter() - started, 1),
        "history": report.history,
        "languages": scores.rows,
        "average": scores.average,
    }
