"""KnowBert in the demo world (issue 32): masked-LM perplexity and word-mode probing P@1 with and without the
knowledge layer, over KnowBert models trained with different seeds from the same demo model.

**Perplexity** (KnowBert's Table 1, in miniature): the demo's linking-set sentences
(:func:`probes.demo_eval.demo_linking_docs`; none of them is a training document), each masked ``--rounds``
times BERT's way (:func:`mluke.knowbert.mask_window`: 15% of the pieces in whole words and whole candidate spans,
80% ``<mask>`` / 10% random / 10% unchanged; spans over masked pieces get only the [MASK] entity), with one
``numpy`` generator seeded by ``--mask-seed``: the same masked sentences for every model and both settings.
Spans and candidates come from the kb's mention index as at inference (:meth:`CandidateSelector.encode`, no gold).
Perplexity = exp(mean cross-entropy over the masked pieces). ``layer on``: the KnowBert model with its
candidates; ``layer off``: the same model without them (its encoder alone, fine-tuned by stage 2); ``demo
encoder``: the demo model's encoder before any KnowBert training (seed-independent).

**Probing**: :func:`probes.demo_eval.evaluate_demo` on the demo's held-out and (sampled) training pairs: word
mode of each KnowBert model with the layer on and off, beside the demo model's own word, entity [Y] and
entity [X]&[Y] modes (seed-independent), P@1 per split.

    python benchmarks/knowbert_perplexity_probing.py --knowbert-model /tmp/kb-seed0/model [...] \\
        [--model DEMO_MODEL_DIR] [--rounds 4] [--mask-seed 0] [--threads 2] [--skip-probing]

Writes ``benchmarks/results/knowbert_perplexity_probing.json`` and prints markdown tables. ``--smoke``: two
KnowBert models trained for one step per stage from the tiny demo model, one masking round, 2 training pairs per
cell, everything in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from common import add_smoke, bench_threads, knowbert_models, smoke_folder
from knowbert_linking import mean_sd

HERE = Path(__file__).resolve().parent


def masked_windows(model, tokenizer, docs: list, rounds: int, seed: int) -> list:
    """Every sentence masked ``rounds`` times, in order, from one generator seeded with ``seed``."""
    import numpy as np

    from kb import open_db
    from kb.mentions import MentionIndex
    from mluke.knowbert import CandidateSelector, MaskVocabulary, mask_window

    selector = CandidateSelector(tokenizer, MentionIndex.for_db(open_db(None)), model.entities.key_to_row)
    vocab = MaskVocabulary.from_tokenizer(tokenizer)
    rng = np.random.default_rng(seed)
    windows = [selector.encode([d.text], d.lang)[0] for d in docs]
    return [mask_window(w, rng, vocab, model.entities.mask_row) for _ in range(rounds) for w in windows]


def perplexity(model, pad_id: int, windows: list, knowledge: bool, batch: int = 64) -> tuple[float, int]:
    """exp(mean cross-entropy at the masked pieces) and the number of masked pieces."""
    import torch
    import torch.nn.functional as F

    from mluke.knowbert import collate
    from mluke.knowbert.candidates import mlm_labels

    total, count = 0.0, 0
    for i in range(0, len(windows), batch):
        part = windows[i : i + batch]
        ids, mask, cands = collate(part, pad_id)
        labels = mlm_labels(part, ids.shape[1])
        with torch.no_grad():
            hidden = model(ids, mask, cands if knowledge else None).hidden_states
            logits = model.mlm_logits(hidden)
        total += F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="sum").item()
        count += int((labels != -100).sum())
    return math.exp(total / count), count


def run_perplexity(args: argparse.Namespace, docs: list) -> dict:
    from mluke.knowbert.run import open_knowbert

    out: dict = {"sentences": len(docs), "rounds": args.rounds, "mask_seed": args.mask_seed, "seeds": []}
    reference = None
    for folder in args.knowbert_model:
        model, tokenizer = open_knowbert(folder)
        model.eval()
        windows = masked_windows(model, tokenizer, docs, args.rounds, args.mask_seed)
        labels = [w.labels for w in windows]
        assert reference is None or labels == reference, "the masked pieces differ between models"
        reference = labels
        on, pieces = perplexity(model, tokenizer.pad_id, windows, knowledge=True)
        off, _ = perplexity(model, tokenizer.pad_id, windows, knowledge=False)
        out["seeds"].append({"model": str(folder), "layer on": on, "layer off": off, "masked pieces": pieces})
    bare, tokenizer = open_knowbert(args.model)  # the demo model's encoder (its new layer never runs here)
    bare.eval()
    out["demo encoder"], _ = perplexity(bare, tokenizer.pad_id, windows, knowledge=False)
    for setting in ("layer on", "layer off"):
        out[setting] = mean_sd([s[setting] for s in out["seeds"]])
    return out


def run_probing(args: argparse.Namespace) -> dict:
    from probes.demo_eval import evaluate_demo

    def p_at_1(summary: dict) -> dict:
        return dict(summary["by_relation"]["all"])

    asked = {"max_train_per_cell": args.train_sample, "progress": False}
    out: dict = {"demo model": p_at_1(evaluate_demo(args.model, **asked)), "seeds": []}
    print("demo model:", out["demo model"], flush=True)
    for folder in args.knowbert_model:
        row = {"model": str(folder)}
        for setting, knowledge in (("layer off", False), ("layer on", True)):
            summary = evaluate_demo(args.model, modes=["word"], probe_model=folder, knowledge=knowledge, **asked)
            row[setting] = {split: r["word"] for split, r in p_at_1(summary).items()}
            print(folder, setting, row[setting], flush=True)
        out["seeds"].append(row)
    for setting in ("layer on", "layer off"):
        out[setting] = {split: mean_sd([s[setting][split] for s in out["seeds"]]) for split in out["seeds"][0][setting]}
    return out


def to_markdown(result: dict) -> str:
    runs = len(result["settings"]["knowbert_model"])
    ms = lambda v: f"{v[0]:.2f} ± {v[1]:.2f}"  # noqa: E731
    ppl = result["perplexity"]
    lines = [
        (
            f"Masked-LM perplexity, {ppl['sentences']} held-out sentences x {ppl['rounds']} maskings "
            f"({ppl['seeds'][0]['masked pieces']} masked pieces), mean ± sd over {runs} KnowBert seeds:"
        ),
        "",
        "| model | perplexity |",
        "|---|---:|",
        f"| KnowBert, layer on | {ms(ppl['layer on'])} |",
        f"| KnowBert, layer off (its encoder) | {ms(ppl['layer off'])} |",
        f"| demo encoder (before KnowBert training) | {ppl['demo encoder']:.2f} |",
    ]
    probing = result.get("probing")
    if probing:
        pct = lambda v: f"{100 * v[0]:.1f} ± {100 * v[1]:.1f}"  # noqa: E731
        demo = probing["demo model"]
        lines += ["", "Probing P@1 (x100), all relations:", "", "| model, mode | held-out | train |", "|---|---:|---:|"]
        for setting in ("layer on", "layer off"):
            got = probing[setting]
            cells = [pct(got[split]) if split in got else "-" for split in ("held-out", "train")]
            lines.append(f"| KnowBert word, {setting} | " + " | ".join(cells) + " |")
        for mode in ("word", "entity [Y]", "entity [X]&[Y]", "random", "most common"):
            cells = [f"{100 * demo[split][mode]:.1f}" if split in demo else "-" for split in ("held-out", "train")]
            lines.append(f"| demo model {mode} | " + " | ".join(cells) + " |")
        pairs = ", ".join(f"{split} {row['pairs']}" for split, row in demo.items())
        lines.append(f"\npairs: {pairs}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--knowbert-model", type=Path, nargs="+", help="one folder per seed (required)")
    parser.add_argument("--model", type=Path, help="the demo model folder (default: the demo model of $MLUKE_HOME)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--mask-seed", type=int, default=0)
    parser.add_argument("--train-sample", type=int, default=20, help="training pairs probed per cell")
    parser.add_argument("--threads", type=int, default=bench_threads())
    parser.add_argument("--skip-probing", action="store_true")
    parser.add_argument("--probing-only", action="store_true", help="keep the perplexity of the last run's JSON")
    add_smoke(parser)
    args = parser.parse_args()
    knowbert_models(parser, args)
    if args.smoke:
        args.rounds, args.train_sample, args.skip_probing, args.probing_only = 1, 2, False, False
    import torch

    from probes.demo_eval import demo_linking_docs

    torch.set_num_threads(args.threads)
    result: dict = {"settings": {k: json.loads(json.dumps(v, default=str)) for k, v in vars(args).items()}}
    out = (smoke_folder() if args.smoke else HERE / "results") / "knowbert_perplexity_probing.json"
    t0 = time.perf_counter()
    if args.probing_only:
        last = json.loads(out.read_text(encoding="utf-8"))
        result["perplexity"], result["seconds"] = last["perplexity"], last["seconds"]
    else:
        result["perplexity"] = run_perplexity(args, demo_linking_docs(args.model))
        result["seconds"] = {"perplexity": time.perf_counter() - t0}
    if not args.skip_probing:
        t0 = time.perf_counter()
        result["probing"] = run_probing(args)
        result["seconds"]["probing"] = time.perf_counter() - t0
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(to_markdown(result))
    print(json.dumps(result["seconds"]))


if __name__ == "__main__":
    main()
