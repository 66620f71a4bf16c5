"""The mLUKE paper's analyses on the embedded demo model: contextual word retrieval (Table 2), modularity
(Table 4) and language bias of cloze predictions (the mLAMA section), written to
``benchmarks/results/analysis_miniature.json`` (read by notebooks 04-06).

- **Retrieval**: :func:`probes.parallel.parallel_spans` (``--sentences`` kb facts rendered with the same
  pattern in all 24 languages; two spans per sentence: subject and object names), English queries, pool = all
  spans of the target language, MRR per language for mLUKE-E (mean piece vector with entity tokens over the
  names that the library's own linker finds and links in the sentence: ``probes.evaluate_cwr``'s default),
  mLUKE-E with [MASK] entity tokens, mLUKE-W (words only), and, as an oracle row only, mLUKE-E given the
  gold kb entities of both names (the query and its translation then share the answer's entity); plus how
  many spans the linker linked, and linked to the gold entity.
- **Modularity**: the same mentions, English + each other language, k-NN graph (``--k``), communities =
  languages; features: the entity token's vector ([MASK] over each mention, as a relation model's [HEAD] and
  [TAIL]), the mean piece vector with those tokens, and the mean piece vector without entities.
- **Language bias**: ``mluke.probe`` over the demo relations' kb templates in ``--langs``, all subjects with
  facts, word mode, entity [Y] and entity [X]&[Y]; P@1 per language and mode; and
  :func:`probes.bias.bias_by_language` (entity [Y] and word) for the most over-predicted objects.

    python benchmarks/analysis_miniature.py [--sentences 200] [--k 3] [--parts retrieval,modularity,bias]
        [--model DIR] [--out benchmarks/results/analysis_miniature.json]

``--parts``: run only these analyses and keep the others' figures from ``--out``; ``--model``: another
checkpoint than the demo model; ``--smoke``: 6 sentences, bias in en and de, the tiny demo model, written into
a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from common import add_smoke, bench_threads, demo_folder, smoke_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kb
import mluke
from kb.languages import MLUKE_LANGUAGES
from mluke.demo.data import DEMO_RELATIONS
from probes.bias import bias_by_language
from probes.cwr import evaluate_cwr, linked_entities
from probes.modularity import modularity_by_language
from probes.parallel import parallel_spans

BIAS_LANGS = "en,de,fr,es,ru,ar,ja,zh"
BIAS_RELATIONS = [p for p in DEMO_RELATIONS if p not in ("P17", "P1376")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--langs", default=BIAS_LANGS, help="languages of the bias study")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "analysis_miniature.json")
    ap.add_argument("--parts", default="retrieval,modularity,bias", help="analyses to run (the rest kept from --out)")
    ap.add_argument("--model", type=Path, help="checkpoint folder (default: the demo model)")
    add_smoke(ap)
    args = ap.parse_args()
    if args.smoke:
        args.sentences, args.langs, args.out = 6, "en,de", smoke_folder() / "analysis_miniature.json"
    parts = set(args.parts.split(","))
    torch.set_num_threads(bench_threads())
    db = kb.open_db(None)
    folder = args.model or demo_folder(args.smoke)
    bundle = mluke.load(folder)
    keep = parts != {"retrieval", "modularity", "bias"} and args.out.exists()
    out: dict = json.loads(args.out.read_text(encoding="utf-8")) if keep else {}
    out |= {
        "model": "demo" if args.model is None else str(args.model),
        "demo": json.loads((folder / "demo.json").read_text())["preset"],
    }
    items = parallel_spans(db, MLUKE_LANGUAGES, size=args.sentences)
    if "retrieval" in parts:
        retrieval(out, bundle, items)
    if "modularity" in parts:
        modularity(out, bundle, items, args.k)
    if "bias" in parts:
        bias(out, bundle, db, args.langs)
    args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out)


def retrieval(out: dict, bundle, items) -> None:
    """CWR MRR per language: entities linked by the library (default), [MASK], gold (oracle), words only."""
    started = time.perf_counter()
    linked = evaluate_cwr(bundle, items, features=("entity", "word"))  # entity tokens from our own linker
    masked = evaluate_cwr(bundle, items, features=("entity",), entities="mask")
    gold = evaluate_cwr(bundle, items, features=("entity",), entities="gold")  # the oracle row
    found = linked_entities(bundle, items)
    coverage: dict[str, dict[str, int]] = {}
    for item, mentions in zip(items, found):
        own = {(s, e): k for s, e, k in mentions}.get(item.span)
        gold_key = {(s, e): k for s, e, k in item.entities}.get(item.span)
        c = coverage.setdefault(item.lang, {"spans": 0, "linked": 0, "linked_to_gold": 0})
        c["spans"] += 1
        c["linked"] += own is not None
        c["linked_to_gold"] += own is not None and own == gold_key
    out["retrieval"] = {
        "sentences": len({i.id for i in items}) // 2,
        "spans_per_language": len(items) // len(MLUKE_LANGUAGES),
        "entities": "linked (default); mask; gold = oracle",
        "languages": [
            {**row, "mrr_entity_mask": m["mrr_entity"], "mrr_entity_gold": g["mrr_entity"], **coverage[row["lang"]]}
            for row, m, g in zip(linked.rows, masked.rows, gold.rows)
        ],
        "seconds": round(time.perf_counter() - started, 1),
    }
    rows = out["retrieval"]["languages"]
    out["retrieval"]["average"] = {
        k: float(np.mean([r[k] for r in rows]))
        for k in ("mrr_entity", "mrr_entity_mask", "mrr_entity_gold", "mrr_word")
    }
    out["retrieval"]["entity_above_word"] = sum(r["mrr_entity"] > r["mrr_word"] for r in rows)
    out["retrieval"]["entity_gold_above_word"] = sum(r["mrr_entity_gold"] > r["mrr_word"] for r in rows)
    out["retrieval"]["coverage"] = {
        k: sum(c[k] for c in coverage.values()) for k in ("spans", "linked", "linked_to_gold")
    }
    print(json.dumps(out["retrieval"]["average"]), json.dumps(out["retrieval"]["coverage"]), flush=True)


def modularity(out: dict, bundle, items, k: int) -> None:
    """Modularity of en + each language for the entity-token, entity and word features."""
    started = time.perf_counter()
    frame = modularity_by_language(bundle, items, features=("entity-token", "entity", "word"), k=k)
    out["modularity"] = {
        "k": k,
        "languages": frame.to_dict(orient="records"),
        "average": {f: float(frame[f].mean()) for f in ("entity-token", "entity", "word")},
        "entity_token_below_word": int((frame["entity-token"] < frame["word"]).sum()),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(out["modularity"]["average"]), flush=True)


def bias(out: dict, bundle, db, langs: str) -> None:
    """P@1 per language and mode, and the most over-predicted objects."""
    started = time.perf_counter()
    p_at_1, results = [], []
    for lang in langs.split(","):
        templates = db.templates(lang)
        for pid in BIAS_RELATIONS:
            if (pid, lang) not in templates:
                continue
            for mode, subject_entity in (("word", False), ("entity [Y]", False), ("entity [X]&[Y]", True)):
                result = mluke.probe(
                    templates[(pid, lang)],
                    lang,
                    relation=pid,
                    mode="word" if mode == "word" else "entity",
                    use_subject_entity=subject_entity,
                    model=bundle,
                    db=db,
                    top_k=1,
                )
                p_at_1.append(
                    {
                        "lang": lang,
                        "relation": pid,
                        "mode": mode,
                        "subjects": sum(1 for r in result.rows if r.gold),
                        "p_at_1": result.metrics["P@1"],
                    }
                )
                if mode != "entity [X]&[Y]":
                    results.append(result)
    over = bias_by_language(results, top=5)
    out["bias"] = {
        "relations": BIAS_RELATIONS,
        "p_at_1": p_at_1,
        "over_predicted": over.to_dict(orient="records"),
        "seconds": round(time.perf_counter() - started, 1),
    }


if __name__ == "__main__":
    main()
