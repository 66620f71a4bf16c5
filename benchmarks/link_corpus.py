"""Linking a corpus with worker processes: documents/s and memory of 1 and 2 workers, side by side.

Each run is ``mluke.linking.corpus.link_corpus(CORPUS, OUT, workers=N, threads=1, chunk_texts=C)`` in a fresh
process (the same code as ``mluke link CORPUS --jsonl OUT --workers N``); the runs are interleaved (1, 2, 1, 2,
...); a chunk (``--chunk-texts`` documents) is what one worker links at a time, the same in every run. The
linker is built once per run, before the workers are forked; documents/s counts the linking only (the
documents over the seconds from the first chunk sent to the last line written), start-up is reported apart.
While a run goes, this process samples the memory of its process tree every 2 s (``SAMPLE_SECONDS``) from
``/proc/PID/smaps_rollup``: the peak of the sum of PSS (a page shared by k processes counts 1/k in each, so
the sum counts the shared weights once; but a process of another job that maps the same checkpoint file takes
its share too, so PSS then undercounts), the peak of the sum of RSS (a shared page counts in every process
that maps it: what ``top`` adds up), and the peak of the tree's own memory: the private pages of every process
(USS) plus the shared pages of the first one once (the workers' shared pages are the pages they inherited
from it), which other jobs do not change. The outputs of every run must be byte-identical (checked). CPU
seconds per document (of the run's process and its workers, while linking) say what a document costs whatever
share of the cores the scheduler gives the run. The 1-minute load average before and after each run is
recorded, and the share of the machine's CPU that other processes took during the run (``/proc/stat``, less
the run's own processes and this one's sampling): on a shared machine other jobs take cores away from the
workers. ``--encoder-baseline`` adds runs of the encoder alone over the same chunks' windows (the same
forward passes, in the same batches, with the same worker processes), interleaved with the linking runs:
their speed-up from 1 to 2 workers is what the machine's two cores give the forward passes, the ceiling of the
linking's.

Model and kb:

- default: the random mluke-base-shaped checkpoint ``--model`` (default ``/work/bench-shared/mluke-base-random``,
  1.2M entities Q4..Q1200000; ``common.make_checkpoint`` makes one) with a kb generated here
  (``--entities`` entities whose keys are drawn from Q4..Q1200000, so the checkpoint knows them; made-up
  names, one in ten shared by two entities) and a JSONL corpus of ``--docs`` documents of ~300 words
  (``{"id", "text"}``; about one mention every 20 words);
- ``--demo``: the trained demo model and embedded kb (``$MLUKE_HOME``, or ``--model`` and ``--db``), on
  documents of ~300 words made of the embedded kb's facts through its relation templates;
- ``--smoke``: the tiny demo model, 12 short documents, one round (a check that the script runs).

    python benchmarks/link_corpus.py [--docs 120] [--entities 50000] [--model DIR] [--demo] [--workers 1,2]
                                     [--repeats 2] [--out results.json] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import benchmark_parser, cpu_seconds, linker_windows, smoke_demo, smoke_folder

BASE_MODEL = Path("/work/bench-shared/mluke-base-random")
#: Seconds between two samples of the memory of a run's processes. Reading ``/proc/PID/smaps_rollup`` walks
#: the page tables of the process: ~50 ms of CPU for a process that maps the 4.4 GB checkpoint, so sampling the
#: three processes of a 2-worker run every 0.2 s took about 40% of a core from the workers.
SAMPLE_SECONDS = 2.0
FILLER = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "one",
    "all",
    "we",
    "their",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
]
SYLLABLES = [
    "ka",
    "ri",
    "to",
    "mo",
    "na",
    "se",
    "lu",
    "vi",
    "de",
    "ro",
    "pa",
    "zu",
    "fe",
    "li",
    "ga",
    "no",
    "ten",
    "bar",
    "sol",
    "mir",
    "dan",
    "vel",
    "kor",
    "tas",
    "len",
    "gor",
]


def make_kb(path: Path, entities: int, seed: int = 0) -> list[str]:
    """A kb of ``entities`` entities keyed Q4..Q1200000 with made-up English names (one in ten shared by two
    entities, each name with anchors and link statistics); returns the names, for the corpus."""
    from kb.db import EntityDB

    rng = random.Random(seed)
    keys = [f"Q{k}" for k in rng.sample(range(4, 1_200_001), entities)]
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < entities:
        name = " ".join(
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
            for _ in range(rng.randint(1, 2))
        )
        if name not in seen:
            seen.add(name)
            names.append(name)
    with EntityDB.create(path, provenance={"builder": "benchmarks/link_corpus.py", "seed": seed}) as w:
        w.add_languages(["en"])
        for k, (key, name) in enumerate(zip(keys, names)):
            w.add_entity(key, "thing")
            w.add_title("en", name, key)
            w.add_label(key, "en", name)
            w.add_anchor("en", name, key, 10 + k % 50)
            w.add_surface("en", name, link_docs=90, text_docs=100)
            w.add_entity_links(key, "en", 10 + k % 50)
            if k % 10 == 0 and k + 1 < entities:  # the next entity's name is also this one's
                w.add_aliases(key, "en", [names[k + 1]])
                w.add_anchor("en", names[k + 1], key, 3)
        w.add_source("benchmark", "generated", lang="en", note="made-up names")
    return names


def make_corpus(path: Path, names: list[str], docs: int, words: int = 300, seed: int = 1) -> None:
    """``docs`` JSONL documents of ~``words`` words: filler words with a kb name about every 20 words."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for d in range(docs):
            parts: list[str] = []
            count = 0
            while count < words:
                if rng.random() < 0.05:
                    name = rng.choice(names)
                    parts.append(name)
                    count += len(name.split())
                else:
                    parts.append(rng.choice(FILLER))
                    count += 1
            text = " ".join(parts).capitalize() + "."
            f.write(json.dumps({"id": f"doc-{d}", "text": text}) + "\n")


def make_demo_corpus(path: Path, docs: int, words: int = 300, seed: int = 1, db_path: Path | None = None) -> None:
    """``docs`` JSONL documents of ~``words`` words of a kb's facts (labels through templates; default: the
    embedded kb)."""
    from kb.db import EntityDB
    from kb.sources.embedded import default_db

    db = EntityDB(db_path) if db_path else default_db()
    rng = random.Random(seed)
    relations = ("P17", "P36", "P30", "P37", "P38", "P47")
    facts = [f for pid in relations for f in db.facts(property=pid)]
    labels = db.labels(sorted({k for f in facts for k in (f.subject, f.object)}), "en")
    facts = [f for f in facts if f.subject in labels and f.object in labels]
    template = {pid: db.template(pid, "en") for pid in relations}
    with path.open("w", encoding="utf-8") as f:
        for d in range(docs):
            parts: list[str] = []
            while len(" ".join(parts).split()) < words:
                fact = rng.choice(facts)
                parts.append(template[fact.property].fill(labels[fact.subject], labels[fact.object]))
            f.write(json.dumps({"id": f"doc-{d}", "text": " ".join(parts)}) + "\n")


def measure(corpus: str, out: str, model: str, db: str | None, workers: int, chunk_texts: int, mode: str) -> dict:
    """One run in this process (the child): link the corpus (``mode="link"``), or run only the encoder over the
    same chunks' windows (``"encoder"``); start-up and linking seconds, documents/s."""
    started = time.perf_counter()
    from mluke.linking.corpus import link_corpus
    from mluke.linking.knowbert import open_linker
    from mluke.options import LinkOptions

    options = LinkOptions(chunk_texts=chunk_texts)
    linker = open_linker(model, db, options, languages=["en"])
    loaded = time.perf_counter() - started
    cpu_before = _cpu_seconds()
    if mode == "encoder":
        documents, mentions, seconds = encode_corpus(corpus, linker, options, workers)
    else:
        run = link_corpus(corpus, out, "en", workers=workers, threads=1, linker=linker, options=options, progress=False)
        documents, mentions, seconds = run.documents, run.tally.mentions, run.seconds
    cpu = _cpu_seconds() - cpu_before
    return {
        "mode": mode,
        "workers": workers,
        "threads": 1,
        "documents": documents,
        "mentions": mentions,
        "startup_s": round(loaded, 2),
        "linking_s": round(seconds, 2),
        "docs_per_s": round(documents / seconds, 3),
        "cpu_s": round(cpu, 1),
        "cpu_s_per_doc": round(cpu / max(1, documents), 3),
    }


def encode_chunk(job: tuple, chunk) -> int:
    """The encoder alone over the windows the linker makes of ``chunk``, in its batches: the same forward
    passes as linking the chunk, without candidate scoring, confidence, coherence or output. Its mentions."""
    import torch

    linker, options = job
    jobs, batches = linker_windows(linker, [d.text for d in chunk.documents], chunk.lang, options)
    with torch.inference_mode():
        for batch in batches:
            linker.bundle.model.encode(**batch)
    return sum(len(j.mentions) for j in jobs)


def encode_corpus(corpus: str, linker, options, workers: int) -> tuple[int, int, float]:
    """:func:`encode_chunk` over the corpus's chunks with ``workers`` processes forked like ``link_corpus``'s
    (:class:`mluke.linking.workers.WorkerPool`; 1: in this process), timed the same way: documents, mentions,
    seconds from before the workers are forked to the last chunk's result."""
    from mluke.linking.documents import iter_chunks, iter_documents
    from mluke.linking.workers import WorkerPool, set_threads

    chunks = list(iter_chunks(iter_documents(corpus, "en"), options))
    started = time.perf_counter()
    if workers == 1:
        set_threads(1)
        mentions = [encode_chunk((linker, options), c) for c in chunks]
    else:
        with WorkerPool(encode_chunk, (linker, options), workers, threads=1) as pool:
            mentions = list(pool.map(chunks))
    return sum(len(c.documents) for c in chunks), sum(mentions), time.perf_counter() - started


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its finished (joined) workers."""
    return cpu_seconds() + cpu_seconds(resource.RUSAGE_CHILDREN)


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def memory_kb(pid: int) -> tuple[int, int, int]:
    """(PSS, RSS, USS) of a process in kB, from ``/proc/PID/smaps_rollup``; zeros once it is gone. USS: its
    private pages (``Private_Clean`` + ``Private_Dirty``), which no other process maps."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0, 0
    values = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()[1:] if line.endswith("kB")}
    uss = values.get("Private_Clean", 0) + values.get("Private_Dirty", 0)
    return values.get("Pss", 0), values.get("Rss", 0), uss


def run_child(args: list[str], every: float = SAMPLE_SECONDS) -> dict:
    """Run ``--measure`` in a child process, sampling its tree's memory every ``every`` seconds; its figures
    with the peaks, and the CPU seconds the sampling took (``sampler_cpu_s``)."""
    peak = {"pss_mb": 0.0, "rss_mb": 0.0, "uss_mb": 0.0, "tree_mb": 0.0, "processes": 0}
    load_before = os.getloadavg()[0]
    busy_before, ours_before, wall_before = _machine_busy(), cpu_seconds(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    done = threading.Event()

    def sample() -> None:
        cpu = time.thread_time()
        while not done.is_set():
            pids = tree(proc.pid)
            figures = [memory_kb(p) for p in pids]
            pss, rss, uss = (sum(v) for v in zip(*figures))
            own = uss + figures[0][1] - figures[0][2]  # private pages of all, the shared ones of the root once
            if pss / 1024 > peak["pss_mb"]:
                peak["pss_mb"], peak["processes"] = round(pss / 1024, 1), len(pids)
            peak["rss_mb"] = max(peak["rss_mb"], round(rss / 1024, 1))
            peak["uss_mb"] = max(peak["uss_mb"], round(uss / 1024, 1))
            peak["tree_mb"] = max(peak["tree_mb"], round(own / 1024, 1))
            done.wait(every)
        peak["sampler_cpu_s"] = round(time.thread_time() - cpu, 2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"run failed: {' '.join(args)}")
    row = json.loads(out.strip().splitlines()[-1])
    ours = cpu_seconds(resource.RUSAGE_CHILDREN) - ours_before
    others = (_machine_busy() - busy_before) - ours - peak["sampler_cpu_s"]
    share = max(0.0, others) / ((time.perf_counter() - wall_before) * (os.cpu_count() or 1))
    row["others_cpu_share"] = round(share, 4)  # of all the cores, taken by other processes during the run
    return {**row, **peak, "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def _machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all cores, ``/proc/stat``: all but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def summary(mode: str, rows: list[dict], counts: list[int]) -> None:
    """Print the best docs/s and lowest memory of each worker count of one mode, against the first count."""
    best = {w: max((r for r in rows if r["workers"] == w), key=lambda r: r["docs_per_s"]) for w in counts}
    low = {w: min((r for r in rows if r["workers"] == w), key=lambda r: r["pss_mb"]) for w in counts}
    base = counts[0]
    print(
        f"\n{mode}: workers  docs/s  speed-up  CPU s/doc  PSS sum MB  ratio  RSS sum MB  ratio  own MB  ratio  "
        "others' CPU share  load before/after"
    )
    for w in counts:
        b, m = best[w], low[w]
        print(
            f"{w:>7}  {b['docs_per_s']:>6.2f}  {b['docs_per_s'] / best[base]['docs_per_s']:>7.2f}x"
            f"  {b['cpu_s_per_doc']:>9.2f}"
            f"  {m['pss_mb']:>10.0f}  {m['pss_mb'] / low[base]['pss_mb']:>4.2f}x"
            f"  {m['rss_mb']:>10.0f}  {m['rss_mb'] / low[base]['rss_mb']:>4.2f}x"
            f"  {m['tree_mb']:>6.0f}  {m['tree_mb'] / low[base]['tree_mb']:>4.2f}x"
            f"  {b['others_cpu_share']:>5.1%}  {b['load_before']:.1f}/{b['load_after']:.1f}"
        )


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--docs", type=int, default=120, help="documents in the corpus")
    ap.add_argument("--entities", type=int, default=50_000, help="entities in the generated kb")
    ap.add_argument("--model", type=Path, help=f"mLUKE checkpoint (default: {BASE_MODEL}; --demo: the demo model)")
    ap.add_argument("--db", type=Path, help="kb (default: one generated here; --demo: the embedded kb)")
    ap.add_argument("--demo", action="store_true", help="the trained demo model and embedded kb instead")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts to compare")
    ap.add_argument("--out", type=Path, help="write the figures to this JSON file")
    ap.add_argument(
        "--chunk-texts", type=int, default=4, help="documents per chunk, the unit a worker links (same for every run)"
    )
    ap.add_argument(
        "--encoder-baseline",
        action="store_true",
        help="also run the encoder alone over the same chunks' windows with each worker count (interleaved): "
        "what the machine's cores give the forward passes, the ceiling of the linking's speed-up",
    )
    ap.add_argument("--measure-args", nargs=7, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure_args:
        corpus, out, model, db, workers, chunk_texts, mode = args.measure_args
        db_arg = None if db == "-" else db
        print(json.dumps(measure(corpus, out, model, db_arg, int(workers), int(chunk_texts), mode)))
        return
    work = args.work / "link-corpus"
    if args.smoke:
        work, args.repeats, args.docs, args.encoder_baseline = smoke_folder(), 1, 12, True
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / (f"demo-{args.docs}.jsonl" if args.demo or args.smoke else f"corpus-{args.docs}.jsonl")
    db = "-"
    if args.smoke:
        model = str(smoke_demo())
        make_demo_corpus(corpus, args.docs, words=30)
    elif args.demo:
        from mluke.demo.model import demo_model

        model = str(args.model or demo_model())
        db = str(args.db) if args.db else "-"
        if not corpus.exists():
            make_demo_corpus(corpus, args.docs, db_path=args.db)
    else:
        model = str(args.model or BASE_MODEL)
        kb_path = work / f"kb-{args.entities}.sqlite"
        names_path = work / f"kb-{args.entities}.names.json"
        if not kb_path.exists():
            names_path.write_text(json.dumps(make_kb(kb_path, args.entities)))
        db = str(args.db or kb_path)
        if not corpus.exists():
            make_corpus(corpus, json.loads(names_path.read_text()), args.docs)
    counts = [int(w) for w in args.workers.split(",")]
    modes = ["link", "encoder"] if args.encoder_baseline else ["link"]
    rows: list[dict] = []
    outputs: dict[int, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeats):
            for workers in counts:
                for mode in modes:
                    dest = Path(tmp) / f"out-{workers}-{round_}.jsonl"
                    cmd = [sys.executable, __file__, "--measure-args", str(corpus), str(dest), model, db]
                    row = run_child([*cmd, str(workers), str(args.chunk_texts), mode])
                    rows.append({**row, "round": round_})
                    print(json.dumps(row), flush=True)
                    if mode != "link":
                        continue
                    data = dest.read_bytes()
                    if outputs and data != next(iter(outputs.values())):
                        raise SystemExit(f"the output of {workers} workers differs from that of {next(iter(outputs))}")
                    outputs[workers] = data
    print(
        f"\ncorpus {corpus.name}: {args.docs} documents, {args.chunk_texts} a chunk; model {model}; "
        "outputs identical: yes"
    )
    for mode in modes:
        summary(mode, [r for r in rows if r["mode"] == mode], counts)
    print("ReFinED (published, roberta-base, another CPU and model): 231 AIDA documents in 29.7 s = 7.8 docs/s")
    if args.out:
        args.out.write_text(json.dumps({"corpus": str(corpus), "model": model, "db": db, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
