"""int8 against fp32 on the CPU (``dtype="int8"``: the encoder's linear layers quantized to dynamic int8, see
``mluke.models.devices``): speed and agreement, like for like.

Speed, at the mluke-base shape (random weights; ``--checkpoint``, default ``<work>/mluke-base-random``, made by
``benchmarks/common.py``'s ``make_checkpoint``; 1.2M entities). Each of fp32 and int8 runs in its own fresh
process, interleaved, ``--repeats`` times, with the same inputs, batches and threads (``$BENCH_THREADS``):

- probing: ``run_cloze`` in entity mode (``mluke.probe``'s core) on ``--facts`` prompts of
  ``probe_speed.py``'s template, 100 candidates of 1-5 pieces each, 32 prompts a batch; end to end (tokenizing,
  encoder, candidate scoring) and encoder only (``encode_entities`` on the same prompts, tokenized beforehand);
- linking: ``Linker.link`` (method ``combined``, NIL threshold 0, so that every detected mention is linked) on
  ``--texts`` generated English texts of ~60 words, over a generated kb (``<work>/int8-kb.sqlite``: 2,000 names, 5
  candidates each drawn from Q4..Q1200000, anchor counts drawn at random); end to end (detection, candidates,
  encoder, scores) and encoder only (``encode`` on the texts with every detected mention as an entity [MASK],
  8 texts a batch).

Agreement (on the same runs): the share of prompts with the same top-1 answer, of mentions linked to the same
entity, each also on the confident half (the half of the items with the largest fp32 top-1 - top-2 margin: random
weights make near-ties). Then on the trained demo model (real weights, in this process): its held-out evaluation
(``probes.demo_eval.evaluate_demo``, ``--demo-train`` training subjects per cell, as ``bf16_agreement.py``)
in fp32 and int8, and its linking test set (gold mentions, methods ``model`` and ``combined``).

Prints tables; writes ``benchmarks/results/int8_speed.json`` (or ``--out``).

    python benchmarks/int8_speed.py [--facts 512] [--texts 96] [--repeats 2] [--checkpoint DIR] [--smoke]

``--smoke``: a 2-layer checkpoint made in a temporary folder, 40 prompts, 8 texts, one round, the tiny demo model.
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from common import bench_threads, benchmark_parser, demo_folder, make_checkpoint, run_interleaved, smoke_folder

TEMPLATE = "[X] is located in [Y] ."
METHODS = ("fp32", "int8")
NAMES, PER_NAME = 2_000, 5  # surfaces of the generated kb, candidates per surface
FILLERS = ("the", "council", "of", "met", "with", "near", "and", "after", "a", "visit", "to", "where", "people")


# -- inputs --------------------------------------------------------------------------------
def fake_names(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct two-word names of made-up syllables ("Korva Telin")."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    out: set[str] = set()
    while len(out) < n:
        out.add(" ".join("".join(rng.sample(syllables, 2)).capitalize() + rng.choice("nrs") for _ in range(2)))
    return sorted(out)


def make_kb(path: Path, entities: int, seed: int = 0) -> Path:
    """A kb of :data:`NAMES` English surfaces, each an anchor to :data:`PER_NAME` entities of ``Q4..Q{entities-1}``
    (the checkpoint's vocabulary) with random counts; written once."""
    import kb

    if path.exists():
        return path
    rng = random.Random(seed)
    names = fake_names(NAMES, seed)
    keys = rng.sample(range(4, entities), min(entities - 4, NAMES * PER_NAME))
    tmp = path.with_suffix(".partial")
    tmp.unlink(missing_ok=True)
    with kb.EntityDB.create(tmp, provenance={"builder": "benchmarks/int8_speed.py"}) as w:
        w.add_languages(["en"])
        for i, name in enumerate(names):
            for j in range(PER_NAME):
                key = f"Q{keys[(i * PER_NAME + j) % len(keys)]}"
                w.add_entity(key)
                w.add_label(key, "en", f"{name} {j}")
                w.add_anchor("en", name, key, rng.randint(1, 100))
            w.add_surface("en", name, link_docs=90, text_docs=100)
    tmp.rename(path)
    return path


def make_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` English texts of ~60 words, about one in five words a name of the kb."""
    rng = random.Random(seed)
    names = fake_names(NAMES)
    out = []
    for _ in range(n):
        words: list[str] = []
        while len(words) < 60:
            words += [*rng.sample(FILLERS, 3), rng.choice(names)]
        out.append(" ".join(words) + ".")
    return out


def probe_inputs(tokenizer, n: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The ``n`` subjects and 100 candidates of the probing workload (``probe_speed.py``'s candidates)."""
    from probe_speed import _candidates

    return [(f"Q{5000 + i}", f"Country {i}") for i in range(n)], _candidates(tokenizer)


# -- one measuring process -----------------------------------------------------------------
def measure(method: str, folder: Path, kb_path: Path, n_facts: int, n_texts: int) -> dict:
    """Time and record what ``method`` (fp32 or int8) answers; one JSON line for the parent."""
    import torch

    import mluke
    from kb.db.templates import parse_template
    from mluke.linking.linker import Linker
    from mluke.probing.runs import run_cloze

    torch.set_num_threads(bench_threads())
    started = time.perf_counter()
    bundle = mluke.open_model(folder)
    loaded = time.perf_counter()
    mluke.open_model(bundle, dtype=None if method == "fp32" else method)
    placed = time.perf_counter()
    model, tok = bundle.model, bundle.tokenizer
    subjects, cands = probe_inputs(tok, n_facts)
    template = parse_template(TEMPLATE)
    out: dict = {"method": method, "load_s": loaded - started, "quantize_s": placed - loaded}

    def probe(subjects: list[tuple[str, str]]) -> list:
        result = run_cloze(template, "en", subjects, cands, {}, model=bundle, top_k=2, batch_size=32)
        return [[(p.key, p.score) for p in r.predictions] for r in result.rows]

    probe(subjects[:32])  # warm-up: first forward pass, candidate tables
    t = time.perf_counter()
    ranked = probe(subjects)
    out["probe_s"] = time.perf_counter() - t
    out["probe_top"] = [r[0][0] for r in ranked]
    out["probe_margin"] = [r[0][1] - r[1][1] for r in ranked]

    prompts = [template.fill(label, "<mask>") for _, label in subjects]
    batches = [
        tok(
            prompts[i : i + 32],
            entity_spans=[[(p.index("<mask>"), p.index("<mask>") + 6)] for p in prompts[i : i + 32]],
        )
        for i in range(0, len(prompts), 32)
    ]
    with torch.inference_mode():
        model.encode_entities(**batches[0])
        t = time.perf_counter()
        for enc in batches:
            model.encode_entities(**enc)
    out["probe_encoder_s"] = time.perf_counter() - t

    linker = Linker(bundle, kb_path, languages=["en"])
    texts = make_texts(n_texts)
    linker.link(texts[:2], "en", nil_threshold=0.0)  # warm-up: index pages, first pass
    t = time.perf_counter()
    linked = linker.link(texts, "en", nil_threshold=0.0, candidates=True)
    out["link_s"] = time.perf_counter() - t
    mentions = [m for found in linked for m in found]
    out["link_keys"] = [m.key for m in mentions]
    out["link_margin"] = [_margin([c["score"] for c in m.candidates or []]) for m in mentions]
    spans = [[(m.start, m.end) for m in found] for found in linked]
    batches = [tok(texts[i : i + 8], entity_spans=spans[i : i + 8]) for i in range(0, len(texts), 8)]
    with torch.inference_mode():
        model.encode(**batches[0])
        t = time.perf_counter()
        for enc in batches:
            model.encode(**enc)
    out["link_encoder_s"] = time.perf_counter() - t
    return out


def _margin(scores: list[float]) -> float:
    """Top-1 minus top-2 score (a lone candidate: infinitely sure)."""
    top = sorted(scores, reverse=True)
    return top[0] - top[1] if len(top) > 1 else float("inf")


# -- agreement --------------------------------------------------------------------------------
def agreement(base: list, other: list, margins: list[float]) -> dict:
    """The share of equal items, overall and on the half with the largest ``margins`` (fp32's)."""
    order = sorted(range(len(base)), key=lambda i: margins[i], reverse=True)
    sure = order[: max(1, len(order) // 2)]
    return {
        "items": len(base),
        "same": sum(a == b for a, b in zip(base, other, strict=True)) / max(1, len(base)),
        "same_confident_half": sum(base[i] == other[i] for i in sure) / len(sure),
    }


def demo_agreement(folder: Path, per_cell: int) -> dict:
    """fp32 against int8 on the trained demo model: its held-out probing evaluation and its linking test set."""
    from kb.sources.embedded import default_db
    from mluke.linking.linker import Linker
    from probes.demo_eval import demo_linking_docs, evaluate_demo

    runs = {}
    for name, dtype in (("fp32", None), ("int8", "int8")):
        outcomes: list = []
        started = time.perf_counter()
        evaluate_demo(folder, progress=False, dtype=dtype, outcomes=outcomes, max_train_per_cell=per_cell)
        runs[name] = {"probe_s": time.perf_counter() - started, "outcomes": outcomes}
        print(f"demo probing, {name}: {runs[name]['probe_s']:.1f} s", flush=True)
    full = {(o.relation, o.lang, o.subject, o.mode): o for o in runs["fp32"]["outcomes"]}
    small = {(o.relation, o.lang, o.subject, o.mode): o for o in runs["int8"]["outcomes"]}
    shared = sorted(set(full) & set(small))
    held = [k for k in shared if full[k].split == "held-out"]
    out: dict = {
        "probe_items": len(shared),
        "probe_same_top1": sum(full[k].prediction == small[k].prediction for k in shared) / len(shared),
        "heldout_p_at_1": {
            "items": len(held),
            "fp32": 100 * sum(full[k].correct for k in held) / len(held),
            "int8": 100 * sum(small[k].correct for k in held) / len(held),
        },
        "probe_seconds": {n: r["probe_s"] for n, r in runs.items()},
    }
    docs = demo_linking_docs(folder)
    langs = sorted({d.lang for d in docs})
    db = default_db()
    linkers = {n: Linker(folder, db, languages=langs, dtype=d) for n, d in (("fp32", None), ("int8", "int8"))}
    for method in ("model", "combined"):
        keys: dict[str, list] = {n: [] for n in linkers}
        gold: list = []
        for doc in docs:
            spans = [(g.start, g.end) for g in doc.mentions]
            gold += [g.key for g in doc.mentions]
            for name, linker in linkers.items():
                keys[name] += [m.key for m in linker.link(doc.text, doc.lang, spans=spans, method=method)]
        out[f"link_{method}"] = {
            "mentions": len(gold),
            "same": sum(a == b for a, b in zip(keys["fp32"], keys["int8"], strict=True)) / max(1, len(gold)),
            "accuracy": {
                n: sum(a == g for a, g in zip(k, gold, strict=True)) / max(1, len(gold)) for n, k in keys.items()
            },
        }
    return out


def main() -> None:
    ap = benchmark_parser(__doc__, Path(__file__).parent / "work")
    ap.add_argument("--facts", type=int, default=512, help="probing prompts")
    ap.add_argument("--texts", type=int, default=96, help="texts to link")
    ap.add_argument(
        "--checkpoint", type=Path, help="the mluke-base-shaped checkpoint (default: <work>/mluke-base-random)"
    )
    ap.add_argument("--demo-train", type=int, default=5, help="training subjects per cell of the demo evaluation")
    ap.add_argument("--skip-demo", action="store_true", help="leave out the demo model's agreement")
    ap.add_argument("--demo-only", action="store_true", help="only the demo model's agreement")
    ap.add_argument("--out", type=Path, help="where to write the JSON (default: benchmarks/results/int8_speed.json)")
    args = ap.parse_args()
    if args.smoke:
        args.work, args.repeats, args.facts, args.texts, args.demo_train = smoke_folder(), 1, 40, 8, 1
        args.checkpoint, args.out = args.work / "mluke-base-random", args.work / "int8_speed.json"
        if not args.measure:
            make_checkpoint(args.checkpoint, smoke=True)
    folder = args.checkpoint or args.work / "mluke-base-random"
    kb_path = args.work / "int8-kb.sqlite"
    if args.measure:
        print(json.dumps(measure(args.measure, folder, kb_path, args.facts, args.texts)))
        sys.exit(0)
    if args.demo_only:
        demo = demo_agreement(demo_folder(args.smoke, progress=False), args.demo_train)
        print(json.dumps(demo, indent=1))
        path = args.out or Path(__file__).parent / "results" / "int8_demo_agreement.json"
        path.write_text(json.dumps({"demo_train_per_cell": args.demo_train, **demo}, indent=1) + "\n", encoding="utf-8")
        return
    if not (folder / "config.json").exists():
        raise SystemExit(
            f"{folder}: no checkpoint; make one with benchmarks/common.py make_checkpoint (or --checkpoint)"
        )
    from common import checkpoint_entities

    args.work.mkdir(parents=True, exist_ok=True)
    make_kb(kb_path, checkpoint_entities(folder))
    counts = ["--facts", str(args.facts), "--texts", str(args.texts), "--work", str(args.work)]
    counts += ["--checkpoint", str(folder)]
    runs = run_interleaved(__file__, list(METHODS), counts, args.repeats)
    timed = ("probe_s", "probe_encoder_s", "link_s", "link_encoder_s", "quantize_s", "load_s")
    median = {m: {k: statistics.median(r[k] for r in runs[m]) for k in timed} for m in METHODS}
    fp32, int8 = runs["fp32"][0], runs["int8"][0]
    if any(json.dumps(r["probe_top"]) != json.dumps(fp32["probe_top"]) for r in runs["fp32"]):
        raise SystemExit("fp32 answered differently between its rounds: the comparison would not be like for like")
    agree = {
        "probe_top1": agreement(fp32["probe_top"], int8["probe_top"], fp32["probe_margin"]),
        "link_entity": agreement(fp32["link_keys"], int8["link_keys"], fp32["link_margin"]),
    }
    out = {
        "machine": f"{platform.machine()}, {bench_threads()} threads",
        "checkpoint": str(folder),
        "facts": args.facts,
        "texts": args.texts,
        "mentions": len(fp32["link_keys"]),
        "median_seconds": median,
        "ratio_fp32_over_int8": {k: median["fp32"][k] / median["int8"][k] for k in timed[:4]},
        "agreement": agree,
        "rounds": {m: [{k: r[k] for k in timed} for r in runs[m]] for m in METHODS},
    }
    print("\n| workload | fp32 s | int8 s | fp32 / int8 |\n|---|---:|---:|---:|")
    for key, name in zip(
        timed[:4], ("probe, end to end", "probe, encoder only", "link, end to end", "link, encoder only")
    ):
        print(
            f"| {name} | {median['fp32'][key]:.2f} | {median['int8'][key]:.2f} "
            f"| {out['ratio_fp32_over_int8'][key]:.2f}x |"
        )
    for name, a in agree.items():
        print(
            f"{name}: same {100 * a['same']:.1f}% of {a['items']}, confident half {100 * a['same_confident_half']:.1f}%"
        )
    if not args.skip_demo:
        out["demo"] = demo_agreement(demo_folder(args.smoke, progress=False), args.demo_train)
        print(json.dumps(out["demo"], indent=1))
    path = args.out or Path(__file__).parent / "results" / "int8_speed.json"
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
