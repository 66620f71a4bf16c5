"""Fit the linker's confidence calibration on the demo model and measure NIL and context (issue 28).

    python benchmarks/linking_calibration.py [MODEL_DIR] [--json out.json]

MODEL_DIR: a demo model folder (default: the cached demo, trained on first use). Prints the sizes of the
calibration sets (:mod:`probes.linking_calibration_data`: template, free wording, unrelated country, no
country; fit and held-out halves by (city, language) pair), the :class:`mluke.linking.calibration.Calibration` fitted
with and without the kb-coherence features :data:`mluke.linking.calibration.KB_FEATURES`, and the shipped
``DEFAULT_CALIBRATION`` / ``KB_COHERENCE_CALIBRATION``: NIL precision / recall / accuracy and right ambiguous
links kept at each one's threshold on every held-out half, the hand-written common-word sentences, and which
fit the default rule (:func:`probes.linking_calibration.choose_default`) picks. Then the accuracy of each
method on the demo's ambiguous-city sentences in the training templates and in held-out free wording
(:func:`probes.linking_calibration_data.free_wording_docs`), gold mentions given. ``--smoke``: the same with the
tiny demo model, ``--json`` into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common import add_smoke, demo_folder, smoke_folder

from kb import open_db
from mluke.linking.calibration import DEFAULT_CALIBRATION, FEATURES, KB_COHERENCE_CALIBRATION, KB_FEATURES
from mluke.linking.linker import Linker
from probes.demo_eval import demo_linking_docs
from probes.linking_calibration import (
    COMMON_WORD_SENTENCES,
    CalibrationReport,
    calibrate,
    calibration_instances,
    choose_default,
    held_out_recall,
    score_calibration,
)
from probes.linking_calibration_data import FREE_TEMPLATES, calibration_sets, set_sizes, split_halves
from probes.linking_eval import evaluate_linking


def _print_report(label: str, report: CalibrationReport) -> dict[str, Any]:
    cal = report.calibration
    print(f"\n## {label}\nCalibration(weights={cal.weights!r}, threshold={cal.threshold!r})")
    print(
        "\n| set | decisions | should be NIL | predicted NIL | NIL precision | NIL recall | accuracy "
        "| right ambiguous links kept |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in report.scores.items():
        print("| " + " | ".join([name, *map(str, s.row())]) + " |")
    print(f"\nheld-out NIL recall (all halves): {100 * held_out_recall(report):.1f}")
    print("common-word sentences:", report.common_words)
    return {
        "calibration": cal.to_dict(),
        "nil": {k: vars(v) for k, v in report.scores.items()},
        "common_words": report.common_words,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", default=None)
    parser.add_argument("--json", default=None)
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.json = smoke_folder() / "linking_calibration.json"
    model_dir = Path(args.model) if args.model else demo_folder(args.smoke)
    db = open_db(None)
    started = time.perf_counter()
    docs = demo_linking_docs(model_dir)
    langs = sorted({d.lang for d in docs} | set(FREE_TEMPLATES) | {s[0] for s in COMMON_WORD_SENTENCES})
    linker = Linker(model_dir, db, languages=langs)
    countries = list(db.keys(kind="country"))
    sets = calibration_sets(model_dir, db)
    instances = calibration_instances(linker, model_dir, db)
    conflict = FEATURES.index("kb_conflict")
    out: dict[str, Any] = {"sets": {}, "context": {}}
    print(
        "| set | half | sentences | (city, language) pairs | languages | sentences naming a country | decisions "
        "| should be NIL | should link | should link, ambiguous "
        "| kb_conflict where it should link | kb_conflict where NIL |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, set_docs in sets.items():
        for half, part, inst in zip(("fit", "held-out"), split_halves(set_docs, countries), instances[name]):
            comb = [i for i in inst if i.method == "combined"]
            row = {
                **set_sizes(part, countries),
                "decisions (combined)": len(comb),
                "should be NIL": sum(i.truth is None for i in comb),
                "should link": sum(i.truth is not None for i in comb),
                "should link, ambiguous": sum(i.truth is not None and i.ambiguous for i in comb),
                "kb_conflict where it should link": sum(i.truth is not None and i.x[conflict] > 0 for i in comb),
                "kb_conflict where NIL": sum(i.truth is None and i.x[conflict] > 0 for i in comb),
            }
            out["sets"][f"{name}, {half}"] = row
            print(f"| {name} | {half} | " + " | ".join(str(v) for v in row.values()) + " |")
    reports = {
        "fit with kb coherence": calibrate(model_dir, db, linker=linker, instances=instances),
        "fit without kb coherence": calibrate(model_dir, db, linker=linker, drop=KB_FEATURES, instances=instances),
    }
    for label, report in reports.items():
        out[label] = _print_report(label, report)
        print(json.dumps(report.calibration.provenance, indent=1))
    for label, shipped in (
        ("shipped DEFAULT_CALIBRATION", DEFAULT_CALIBRATION),
        ("shipped KB_COHERENCE_CALIBRATION", KB_COHERENCE_CALIBRATION),
    ):
        out[label] = _print_report(label, score_calibration(shipped, instances, linker))
    chosen, failed = choose_default(reports)
    out["default rule"] = {"chosen": chosen, "fails": failed}
    print(f"\ndefault rule picks: {chosen}; fails: {failed or 'nothing'}")
    free = sets["free"]
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
