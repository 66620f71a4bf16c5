"""How the linker treats news-style text: famous names at a sentence start, "City, Region/Country", and place
names inside common words and person names (:mod:`probes.news_linking_data`).

    python benchmarks/news_linking.py [--model MODEL_DIR] [--set test|dev|first|third|fourth|fifth]
        [--method combined] [--json out.json]
    python benchmarks/news_linking.py --smoke

Links every sentence of the set with the embedded kb and the model (default: the cached demo model, trained
on first use) and prints, per kind and language, the share of cases handled right, then every wrong case.
``--smoke``: the ``tiny`` demo preset trained into a temporary folder (with the kb cache there too), one case
per kind and language, nothing written outside that folder.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from probes.news_linking_data import (
    DEV,
    FIFTH_TEST,
    FIRST_TEST,
    FOURTH_TEST,
    KINDS,
    TEST,
    THIRD_TEST,
    NewsCase,
    news_summary,
    score_news,
)


def _smallest(cases: list[NewsCase]) -> list[NewsCase]:
    seen: set[tuple[str, str]] = set()
    out = []
    for c in cases:
        if (c.lang, c.kind) not in seen:
            seen.add((c.lang, c.kind))
            out.append(c)
    return out


def run(model: str | None, cases: list[NewsCase], method: str) -> dict[str, Any]:
    """Score ``cases`` with ``model`` (``None``: the cached demo model); the summary and the wrong cases."""
    from kb import default_db
    from mluke.linking.linker import Linker

    started = time.perf_counter()
    linker = Linker(model, default_db(), languages=sorted({c.lang for c in cases}))
    results = score_news(linker, cases, method=method)
    summary = news_summary(results)
    wrong = [
        {"lang": r.case.lang, "kind": r.case.kind, "text": r.case.text, "surface": r.case.surface,
         "gold": r.case.gold, "linked": r.key, "mention": r.surface}
        for r in results
        if not r.right
    ]  # fmt: skip
    return {"cases": len(cases), "method": method, "seconds": round(time.perf_counter() - started, 1),
            "summary": summary, "wrong": wrong}  # fmt: skip


def _print(report: dict[str, Any]) -> None:
    summary = report["summary"]
    langs = sorted({lang for kind in KINDS for lang in summary.get(kind, {}) if lang != "all"})
    print(f"{report['cases']} cases, method {report['method']}, {report['seconds']} s\n")
    print("| kind | all | " + " | ".join(langs) + " |")
    print("|---|---:|" + "---:|" * len(langs))
    for kind in KINDS:
        row = summary.get(kind, {})
        cells = [
            f"{row[k]['share']} ({row[k]['right']}/{row[k]['cases']})" if k in row else "-" for k in ["all", *langs]
        ]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    if report["wrong"]:
        print("\nwrong:")
        for w in report["wrong"]:
            print(f"  {w['lang']} {w['kind']:8} {w['surface']!r} -> {w['linked']} (gold {w['gold']}): {w['text']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model folder (default: the cached demo model)")
    parser.add_argument(
        "--set",
        choices=["test", "dev", "first", "third", "fourth", "fifth"],
        default="test",
        help="test: the second held-out set; third: the third held-out set (probes.news_linking_heldout3); "
        "fourth: the fourth (probes.news_linking_heldout4); fifth: the fifth (probes.news_linking_heldout5); "
        "dev: the tuning set; first: the first held-out set (now part of dev)",
    )
    parser.add_argument("--method", default="combined")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--smoke", action="store_true", help="tiny model, one case per kind and language, temp dir")
    args = parser.parse_args()
    cases = {
        "test": TEST,
        "dev": DEV,
        "first": FIRST_TEST,
        "third": THIRD_TEST,
        "fourth": FOURTH_TEST,
        "fifth": FIFTH_TEST,
    }[args.set]
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="news-linking-") as tmp:
            os.environ["MLUKE_HOME"] = tmp
            from kb import default_db
            from mluke.demo.model import train_demo

            smoke = [c for c in _smallest(cases) if c.lang in ("en", "ja", "de", "fr")]
            model = train_demo(Path(tmp) / "tiny", preset="tiny", db=default_db(), progress=False)
            report = run(str(model), smoke, args.method)
            _print(report)
            if args.json:
                print("--smoke writes nothing outside its temporary folder: --json ignored")
        return
    report = run(args.model, cases, args.method)
    _print(report)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
