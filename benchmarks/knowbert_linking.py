"""End-to-end linking with KnowBert's integrated linker next to our linkers, in the demo world (issue 32).

One report (:func:`probes.linking_eval.evaluate_linking` with one linker per method): the demo's linking test set
(:func:`probes.demo_eval.demo_linking_docs`: sentences naming a city whose name a city in another country shares,
gold mentions = the city and its country), scored

- with the gold spans given: accuracy (``KnowBert``'s NULL decisions count as wrong; the other methods run with
  NIL threshold 0, so they always answer), and on the ambiguous (city) mentions;
- end to end: each linker detects the mentions itself; precision, recall and F1 of its non-NIL (span, entity)
  pairs against the gold ones (a detected name that is no gold mention, e.g. a third place named in the
  sentence, costs precision to every method alike).

``knowbert`` is :class:`mluke.KnowBertLinker` over a KnowBert model folder (``benchmarks/knowbert_demo.py``
trains one from the same demo model: stage 1 300 steps + stage 2 60 steps, seed 0); ``prior``, ``combined`` and
``global`` are :class:`mluke.Linker` over the demo model.

    python benchmarks/knowbert_linking.py --knowbert-model /tmp/knowbert-demo/model \
        [--model ~/.cache/mluke/demo-model-v4] [--methods prior,combined,global] [--threads 2]

Writes ``benchmarks/results/knowbert_linking.json`` and prints the markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(args: argparse.Namespace) -> dict:
    import torch

    import mluke
    from kb import open_db
    from probes.demo_eval import demo_linking_docs
    from probes.linking_eval import evaluate_linking

    torch.set_num_threads(args.threads)
    db = open_db(None)
    docs = demo_linking_docs(args.model)
    languages = sorted({d.lang for d in docs})
    plain = mluke.Linker(str(args.model), db, languages=languages)
    linkers = dict.fromkeys(args.methods.split(","), plain)
    linkers["knowbert"] = mluke.KnowBertLinker(str(args.knowbert_model), db, index=plain.index)
    t0 = time.perf_counter()
    report = evaluate_linking(docs, linkers, end_to_end=True, progress=False)
    return {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "documents": len(docs),
        "seconds": time.perf_counter() - t0,
        "report": report.to_dict(),
        "markdown": report.to_markdown(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--knowbert-model", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=Path.home() / ".cache/mluke/demo-model-v4")
    parser.add_argument("--methods", default="prior,combined,global")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    result = run(args)
    out = HERE / "results" / "knowbert_linking.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(result["markdown"])
    print(f"{result['documents']} documents, {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
