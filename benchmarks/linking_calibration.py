"""Fit the linker's confidence calibration on the demo model and measure NIL and context (issue 28).

    python benchmarks/linking_calibration.py [MODEL_DIR] [--json out.json]

MODEL_DIR: a demo model folder (default: the cached demo, trained on first use). Prints the fitted
:class:`mluke.confidence.Calibration` fitted with and without the kb-coherence features
:data:`mluke.confidence.KB_FEATURES` (to paste into ``mluke/confidence.py``: without them as
``DEFAULT_CALIBRATION``, with them as ``KB_COHERENCE_CALIBRATION``), NIL
precision / recall / accuracy at its threshold on each evaluation set
(:func:`probes.linking_calibration.calibrate`), the hand-written common-word sentences, and the
accuracy of each method on the demo's ambiguous-city sentences in the training templates and in
held-out free wording (:func:`probes.linking_calibration.free_wording_docs`), gold mentions given.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kb import open_db
from mluke.confidence import KB_FEATURES
from mluke.linker import Linker
from probes.demo_eval import demo_linking_docs
from probes.linking_calibration import COMMON_WORD_SENTENCES, calibrate, free_wording_docs
from probes.linking_eval import evaluate_linking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from mluke.demo import demo_model

    model_dir = Path(args.model) if args.model else demo_model()
    db = open_db(None)
    started = time.perf_counter()
    docs = demo_linking_docs(model_dir)
    free = free_wording_docs(model_dir, db)
    langs = sorted({d.lang for d in docs} | {d.lang for d in free} | {s[0] for s in COMMON_WORD_SENTENCES})
    linker = Linker(model_dir, db, languages=langs)
    out: dict[str, Any] = {"context": {}}
    for label, drop in (("with kb coherence", ()), ("without kb coherence", KB_FEATURES)):
        report = calibrate(model_dir, db, linker=linker, drop=drop)
        cal = report.calibration
        print(f"\n## {label}\nCalibration(weights={cal.weights!r}, threshold={cal.threshold!r})")
        print(json.dumps(cal.provenance, indent=1))
        print(
            "\n| set | decisions | should be NIL | predicted NIL | NIL precision | NIL recall | accuracy "
            "| right ambiguous links kept |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, s in report.scores.items():
            print("| " + " | ".join([name, *map(str, s.row())]) + " |")
        print("\ncommon-word sentences:", report.common_words)
        out[label] = {
            "calibration": cal.to_dict(),
            "nil": {k: vars(v) for k, v in report.scores.items()},
            "common_words": report.common_words,
        }
    methods = ("prior", "model", "combined", "global")
    for name, which in (("template wording (demo linking set)", docs), ("free wording (held-out)", free)):
        rep = evaluate_linking(which, linker, methods=methods, end_to_end=False, progress=False)
        rows = {r["method"]: r for r in rep.rows if r["lang"] == "all"}
        out["context"][name] = {m: rows[m] for m in methods}
        print(f"\n{name}: {len(which)} sentences, ambiguous mentions {rows['prior']['ambiguous']}")
        print("| language | ambiguous | " + " | ".join(methods) + " | combined - prior |")
        print("|---|---:|" + "---:|" * (len(methods) + 1))
        for lang in sorted({r["lang"] for r in rep.rows}, key=lambda l: (l == "all", l)):
            by = {r["method"]: r for r in rep.rows if r["lang"] == lang}
            acc = {m: 100 * (by[m]["ambiguous_accuracy"] or 0.0) for m in methods}
            print(
                f"| {lang} | {by['prior']['ambiguous']} | "
                + " | ".join(f"{acc[m]:.1f}" for m in methods)
                + f" | {acc['combined'] - acc['prior']:+.1f} |"
            )
    print(f"\n{time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
