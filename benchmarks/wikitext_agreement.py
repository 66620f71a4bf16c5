"""Agreement of ``parse_wikitext``'s links with mwparserfromhell's on generated pages.

For each language, ``--pages`` seeded pages from tests/kb/sources/wikitext_oracle.py (tables,
indented tables, nested templates, galleries, references, files, categories, interwiki, trails
cut by markup...): the share of the oracle's article links (target, anchor) that we keep too,
and the links we keep that the oracle does not. ``--baseline-rev REV`` also scores the parser
of that git revision (e.g. ``main``) on the same pages.

    python benchmarks/wikitext_agreement.py --pages 400 --baseline-rev main --rounds 5 \
        --out benchmarks/results/wikitext_agreement.json
    python benchmarks/wikitext_agreement.py --smoke   # 5 pages per language against HEAD, 2 rounds, in a temp folder
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kb.sources.wikitext_oracle import (
    _INDENTED_TABLE_RE,
    MEDIAWIKI_TRAILS,
    SITE_NAMESPACES,
    PageGenerator,
    missing,
    oracle_links,
)


def _parser_at(rev: str):
    """``parse_wikitext`` and ``LinkRules`` of kb/sources/wikitext.py at git revision ``rev``."""
    source = subprocess.run(
        ["git", "show", f"{rev}:kb/sources/wikitext.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "wikitext_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("wikitext_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.parse_wikitext, module.LinkRules


def _score(parse, rules_cls, pages: dict[str, list[str]], oracle: dict[str, list[list]]) -> dict:
    out: dict = {"languages": {}}
    total = kept = extra = found = 0
    examples: Counter = Counter()
    for lang, lang_pages in pages.items():
        rules = rules_cls(lang, SITE_NAMESPACES[lang])
        n_links = n_kept = n_extra = n_found = 0
        for page, expected in zip(lang_pages, oracle[lang]):
            text, spans = parse(page, rules)
            ours = [(t, " ".join(text[s:e].split())) for s, e, t in spans]
            lost = missing(expected, ours)
            n_found += len(ours)
            n_links += len(expected)
            n_kept += len(expected) - len(lost)
            n_extra += len(missing(ours, expected))
            for target, anchor in lost:
                examples[f"{lang}: {target} / {anchor}"] += 1
        out["languages"][lang] = {
            "links": n_links,
            "kept": n_kept,
            "agreement_pct": round(100 * n_kept / max(1, n_links), 2),
            "extra_links": n_extra,
            "found": n_found,
        }
        total, kept, extra = total + n_links, kept + n_kept, extra + n_extra
        found += n_found
    # found: all the article links the parser returned (kept ones, plus extra ones the oracle does not have)
    out.update(
        links=total,
        kept=kept,
        agreement_pct=round(100 * kept / max(1, total), 2),
        extra_links=extra,
        found=found,
        most_common_lost=examples.most_common(10),
    )
    return out


def _time(pages: dict[str, list[str]], parsers: dict, rounds: int) -> dict:
    """CPU seconds of each parser over all pages, in alternating rounds (A, B, A, B...); medians.

    The tables' ``:`` indentation is removed first, so that the baseline, which lost the rest
    of a page after an indented table, does the same work as ours.
    """
    pages = {lang: [_INDENTED_TABLE_RE.sub(r"\1", p) for p in ps] for lang, ps in pages.items()}
    seconds: dict[str, list[float]] = {name: [] for name in parsers}
    for _ in range(rounds):
        for name, (parse, rules_cls) in parsers.items():
            rules = {lang: rules_cls(lang, SITE_NAMESPACES[lang]) for lang in pages}
            start = time.process_time()
            for lang, lang_pages in pages.items():
                for page in lang_pages:
                    parse(page, rules[lang])
            seconds[name].append(time.process_time() - start)
    med = {name: statistics.median(v) for name, v in seconds.items()}
    n = sum(map(len, pages.values()))
    return {
        "rounds": rounds,
        "cpu_seconds": seconds,
        "pages_per_cpu_second": {k: round(n / v) for k, v in med.items()},
        "ours_over_baseline_time": round(med["ours"] / med["baseline"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=400, help="pages per language")
    ap.add_argument("--baseline-rev", help="also score kb/sources/wikitext.py at this git revision")
    ap.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="also time ours vs the baseline: CPU seconds over all pages, alternating rounds, medians",
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="5 pages per language, the baseline HEAD's parser, 2 rounds; --out goes to a temporary folder",
    )
    args = ap.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="wikitext_agreement_smoke_") as tmp:
            args.pages, args.baseline_rev, args.rounds = 5, args.baseline_rev or "HEAD", 2
            args.out = Path(tmp) / "wikitext_agreement.json"
            run(args)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    """Score (and time) the parsers as ``args`` asks; print the JSON and write it to ``args.out``."""

    from kb.sources.wiki_links import LinkRules
    from kb.sources.wikitext import parse_wikitext

    pages = {lang: [PageGenerator(lang, seed).page() for seed in range(args.pages)] for lang in MEDIAWIKI_TRAILS}
    oracle = {lang: [oracle_links(p, lang) for p in ps] for lang, ps in pages.items()}
    result = {
        "pages": sum(map(len, pages.values())),
        "pages_per_language": args.pages,
        "ours": _score(parse_wikitext, LinkRules, pages, oracle),
    }
    if args.baseline_rev:
        parse, rules_cls = _parser_at(args.baseline_rev)
        result["baseline"] = {"rev": args.baseline_rev, **_score(parse, rules_cls, pages, oracle)}
        if args.rounds:
            result["timing"] = _time(
                pages, {"ours": (parse_wikitext, LinkRules), "baseline": (parse, rules_cls)}, args.rounds
            )
    print(json.dumps(result, ensure_ascii=False, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
