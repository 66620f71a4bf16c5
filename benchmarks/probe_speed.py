"""Facts/s of ``mluke.probe``'s entity mode vs the reference typed querying (mLAMA's way: word
masks, one forward pass per candidate length, full word logits), same model at the mluke-base
shape with random weights, 100 candidates of 1-5 pieces, all in the entity vocabulary.

Ours runs with its default scores (log-probabilities over the candidates, no full-vocabulary
normaliser needed) and with ``normalize="vocabulary"`` (MEP log-probabilities over the whole
entity vocabulary); both must give the same top predictions. ``--bf16`` adds the same methods with the
model cast to bfloat16 (``dtype="bf16"``; the reference too), and reports how many top predictions match fp32.

``word`` is ``mluke.probe``'s word mode, which computes what the reference computes (the like-for-like
row); entity mode scores candidates with the entity head instead, so it is a different computation:
the script reports, against the reference on the same prompts, the share of facts with the same top-1
and with the same order of all 100 candidates (agreement %). Medians of the interleaved rounds.

Uses the random checkpoint made by ``benchmarks/model_scoring.py`` (run that first).
Each method runs in its own fresh process, interleaved, twice.

    python benchmarks/probe_speed.py [--facts 64] [--bf16] [--smoke]

``--smoke``: 40 facts on a 2-layer checkpoint that it makes in a temporary folder, one round.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path

from common import base_shape_args, bench_threads, run_counted

TEMPLATE = "[X] is located in [Y] ."


def _candidates(tokenizer, n: int = 100) -> list[tuple[str, str]]:
    """100 (key, label) candidates whose labels are 1-5 pieces, 20 of each length: n whole-word pieces."""
    rng = random.Random(0)
    words = [
        t[1:]
        for t in (tokenizer.words.id_to_token(i) for i in range(1000, 60000))
        if t and t.startswith("\u2581") and t[1:].isalpha() and t[1:].isascii() and len(t) > 4
    ]
    out: dict[int, list[str]] = {k: [] for k in range(1, 6)}
    for k in out:
        while len(out[k]) < n // 5:
            label = " ".join(w.capitalize() for w in rng.sample(words, k))
            if len(tokenizer.encode_words([label])[0]) == k and label not in out[k]:
                out[k].append(label)
    labels = [l for k in sorted(out) for l in out[k]]
    return [(f"Q{1000 + i}", label) for i, label in enumerate(labels)]


def measure(method: str, folder: Path, n_facts: int) -> dict:
    import torch

    import mluke
    from kb.db.templates import parse_template
    from mluke.probing.runs import run_cloze

    torch.set_num_threads(bench_threads())
    bf16 = method.endswith("-bf16")
    method = method.removesuffix("-bf16")
    bundle = mluke.open_model(folder, dtype="bf16" if bf16 else None)
    tok = bundle.tokenizer
    cands = _candidates(tok)
    subjects = [(f"Q{5000 + i}", f"Country {i}") for i in range(n_facts)]
    template = parse_template(TEMPLATE)
    t = time.perf_counter()
    if method.startswith(("entity", "word")):
        normalize = "vocabulary" if method == "entity-vocabulary" else "candidates"
        mode = "word" if method == "word" else "entity"
        result = run_cloze(
            template,
            "en",
            subjects,
            cands,
            {},
            model=bundle,
            mode=mode,
            top_k=len(cands),
            batch_size=32,
            normalize=normalize,
        )
        assert all(p.source == mode for r in result.rows for p in r.predictions)
        ranking = [[p.key for p in r.predictions] for r in result.rows]
    else:  # the reference: full forward passes, one per candidate length, word logits at every position
        from transformers import LukeForMaskedLM

        ref = LukeForMaskedLM.from_pretrained(folder).eval()
        if bf16:
            ref.to(torch.bfloat16)
        t = time.perf_counter()
        pieces = tok.encode_words([label for _, label in cands])
        scores = torch.full((len(subjects), len(cands)), float("-inf"))
        with torch.inference_mode():
            for n in sorted({len(p) for p in pieces}):
                idx = [c for c, p in enumerate(pieces) if len(p) == n]
                table = torch.tensor([pieces[c] for c in idx])
                for start in range(0, len(subjects), 32):
                    batch = [template.fill(s, "<mask>" * n) for _, s in subjects[start : start + 32]]
                    enc = tok(batch)
                    logp = torch.log_softmax(ref(**enc).logits.float(), -1)
                    where = enc["input_ids"] == tok.mask_id
                    lp = logp[where].view(len(batch), n, -1)
                    got = torch.stack([lp[:, i, table[:, i]] for i in range(n)], -1).mean(-1)
                    scores[start : start + len(batch), idx] = got
        ranking = [[cands[int(i)][0] for i in row] for row in scores.argsort(dim=1, descending=True, stable=True)]
    seconds = time.perf_counter() - t
    return {
        "method": method + ("-bf16" if bf16 else ""),
        "facts_per_s": n_facts / seconds,
        "seconds": seconds,
        "top": [r[0] for r in ranking],
        "ranking": ranking,
    }


def main() -> None:
    args, folder = base_shape_args(__doc__, __file__, measure, "--facts", 64, smoke=40)
    if not (folder / "entity_vocab.sqlite").exists():
        raise SystemExit(f"{folder} is missing: run benchmarks/model_scoring.py first")
    methods = ["reference", "word", "entity", "entity-vocabulary"]
    if args.bf16:
        methods += [f"{m}-bf16" for m in methods]
    results = run_counted(__file__, methods, args, "--facts")
    tops = {json.dumps(r["top"]) for m in ("entity", "entity-vocabulary") for r in results[m]}
    if len(tops) != 1:
        raise SystemExit(f"the two score normalisations ranked differently: {tops}")
    median = {m: statistics.median(r["facts_per_s"] for r in results[m]) for m in methods}
    median["reference"]
    names = {
        "reference": "reference typed querying (word masks, 1 pass per length, full logits)",
        "word": "`mluke.probe` word mode (the same typed querying)",
        "entity": "`mluke.probe` entity mode, default scores (over the candidates)",
        "entity-vocabulary": '`mluke.probe` entity mode, `normalize="vocabulary"` (full normaliser)',
    }
    names |= {f"{m}-bf16": f"{names[m]}, bf16" for m in list(names)}
    fp32_top = results["entity"][0]["top"]
    for m in methods:
        if m.startswith("entity") and m.endswith("-bf16"):
            agree = sum(a == b for a, b in zip(fp32_top, results[m][0]["top"])) / len(fp32_top)
            print(f"{m}: same top-1 as fp32 for {100 * agree:.1f}% of the facts")
    print(
        "\n| method | facts/s (median) | x reference | same top-1 as reference | same order of all candidates |"
        "\n|---|---:|---:|---:|---:|"
    )
    for m in methods:
        base = "reference-bf16" if m.endswith("-bf16") else "reference"
        a, b = results[m][0]["ranking"], results[base][0]["ranking"]
        top1 = 100 * sum(x[0] == y[0] for x, y in zip(a, b)) / len(a)
        order = 100 * sum(x == y for x, y in zip(a, b)) / len(a)
        print(f"| {names[m]} | {median[m]:.2f} | {median[m] / median[base]:.2f}x | {top1:.1f}% | {order:.1f}% |")
    for i in range(args.repeats):
        print(
            f"round {i + 1}: "
            + ", ".join(f"{m} {results[m][i]['facts_per_s']:.2f}" for m in methods)
            + f" ({results['entity'][i]['facts_per_s'] / results['reference'][i]['facts_per_s']:.1f}x)"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    m: [{k: v for k, v in r.items() if k not in ("top", "ranking")} for r in rs]
                    for m, rs in results.items()
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
