"""Every speed ratio the README and docs/ quote is one that benchmarks/RESULTS.md measures like-for-like.

A ratio such as ``12.3x`` or ``0.85-0.91x`` next to a word of speed (faster, slower, speed, throughput, time,
per second, baseline, runs, ...) is a speed claim; each of its numbers must appear in the ratio column of the
table under RESULTS' "Headline speed figures" heading, where every baseline does the same work the same way
(same inputs, batching, threads, precision; outputs checked equal). That table holds the same ratios as the full
one of the like-for-like page (docs/benchmarks/like-for-like.md). The benchmark pages under docs/benchmarks/ are
the measurements themselves (every run, labelled), not claims, so they are not scanned. Ratios that are not
speed claims are listed in :data:`NOT_SPEED` with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
#: the topic page with the full like-for-like table
LIKE_FOR_LIKE = ROOT / "docs" / "benchmarks" / "like-for-like.md"
#: the heading of RESULTS' headline table, that of the like-for-like page's table, and the header of their ratio column
TABLE_HEADING = "## Headline speed figures"
PAGE_HEADING = "## Like-for-like"
RATIO_COLUMN = "like-for-like ratio"

#: a ratio: a number (or a range of two) written right against ``x`` or ``×`` ("4.x", "768 x 256" are not)
RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*[-–]\s*(\d+(?:\.\d+)?))?[x×](?![\w])")
#: words that make a nearby ratio a speed claim
SPEED_WORDS = re.compile(
    r"faster|slower|speed|throughput|\btimes?\b|per (?:cpu-)?second|/s\b|baseline|\bruns?\b|latency|quicker",
    re.IGNORECASE,
)
#: characters either side of a ratio searched for a speed word
CONTEXT = 160

#: (file, ratio as written) -> why it is not a speed claim
NOT_SPEED: dict[tuple[str, str], str] = {
    ("docs/guides/mentions.md", "3.3x"): "memory: 3.3x less memory than the dict baseline, beside a speed figure",
}


def quoted_ratios(text: str) -> list[tuple[str, list[str], str]]:
    """``(ratio as written, its numbers, context)`` of each ratio in ``text`` with a speed word near it."""
    flat = re.sub(r"\s+", " ", text)
    found = []
    for m in RATIO.finditer(flat):
        context = flat[max(0, m.start() - CONTEXT) : m.end() + CONTEXT]
        if SPEED_WORDS.search(context):
            found.append((m.group(0), [g for g in m.groups() if g is not None], context))
    return found


def like_for_like_ratios(results: str, heading: str = TABLE_HEADING) -> set[str]:
    """The ratios (numbers, as written) of the ratio column of the first table under ``heading``."""
    lines = results.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    except StopIteration:
        raise AssertionError(f"{RESULTS}: no heading starting with {heading!r}") from None
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    columns = [c.strip().strip("*").lower() for c in lines[header].strip().strip("|").split("|")]
    matching = [i for i, c in enumerate(columns) if RATIO_COLUMN in c]
    assert len(matching) == 1, f"{RESULTS}: expected one {RATIO_COLUMN!r} column in the table, got {columns}"
    ratios: set[str] = set()
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip().strip("|").split("|")
        if len(cells) > matching[0]:
            for m in RATIO.finditer(cells[matching[0]]):
                ratios.update(g for g in m.groups() if g is not None)
    assert ratios, f"{RESULTS}: the {RATIO_COLUMN!r} column holds no ratios"
    return ratios


def quoted_pages() -> list[Path]:
    """README and the docs pages, less the benchmark pages (the measurements, with every run, not claims)."""
    docs = (p for p in sorted((ROOT / "docs").rglob("*.md")) if "benchmarks" not in p.relative_to(ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def unsupported_claims(text: str, page: str, table: set[str]) -> list[str]:
    """The speed ratios of ``text`` (from ``page``) whose numbers the like-for-like table does not hold."""
    return [
        f"{page}: {ratio!r} in ...{context}..."
        for ratio, numbers, context in quoted_ratios(text)
        if (page, ratio) not in NOT_SPEED and not set(numbers) <= table
    ]


def test_every_quoted_speed_ratio_is_in_the_like_for_like_table() -> None:
    table = like_for_like_ratios(RESULTS.read_text(encoding="utf-8"))
    bad = []
    for path in quoted_pages():
        page = path.relative_to(ROOT).as_posix()
        bad += unsupported_claims(path.read_text(encoding="utf-8"), page, table)
    assert not bad, "speed ratios not in RESULTS' like-for-like table:\n" + "\n".join(bad)


def test_the_headline_table_holds_the_like_for_like_pages_ratios() -> None:
    """RESULTS' headline table and the like-for-like page's full table give the same ratios."""
    headline = like_for_like_ratios(RESULTS.read_text(encoding="utf-8"))
    page = like_for_like_ratios(LIKE_FOR_LIKE.read_text(encoding="utf-8"), PAGE_HEADING)
    assert headline == page, f"only in RESULTS: {sorted(headline - page)}; only on the page: {sorted(page - headline)}"


def test_the_benchmark_pages_are_not_scanned_but_the_guides_are() -> None:
    pages = {p.relative_to(ROOT).as_posix() for p in quoted_pages()}
    assert "docs/guides/probing.md" in pages and "README.md" in pages
    assert not any(p.startswith("docs/benchmarks/") for p in pages)


def test_the_allow_list_names_ratios_that_are_still_quoted() -> None:
    for (page, ratio), why in NOT_SPEED.items():
        assert why and ratio in (ROOT / page).read_text(encoding="utf-8"), f"{page} no longer quotes {ratio}: drop it"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HNSW is 43-100x faster at ef_search 32-64", [("43-100x", ["43", "100"])]),
        ("typed querying runs 14.1x the reference", [("14.1x", ["14.1"])]),
        ("a speed-up of 12.6× per core", [("12.6×", ["12.6"])]),
        ("transformers 4.x and 5.x", []),
        ("a 768 x 256 table, 1.2M x 256 float32", []),
        ("spans x candidates, whatever the kb's size", []),
        ("0x1F is a byte; 2x2 grids", []),
        ("3 rows in 2x more memory", []),  # no speed word near it
    ],
)
def test_ratio_extraction(text: str, expected: list[tuple[str, list[str]]]) -> None:
    assert [(r, n) for r, n, _ in quoted_ratios(text)] == expected


def test_the_guard_rejects_a_ratio_the_table_lacks_and_accepts_one_it_holds() -> None:
    table = {"0.85", "0.91", "2.80"}
    assert unsupported_claims("HNSW is 43-100x faster than brute force.", "x.md", table)
    assert unsupported_claims("0.85-1.10x the baseline's speed", "x.md", table)
    assert not unsupported_claims("FAISS runs 0.85-0.91x scikit-learn's speed; 2.80x in fp32.", "x.md", table)


def test_the_table_is_found_by_its_heading() -> None:
    results = "\n".join(
        [
            "## Other",
            "| a | ratio |",
            "|---|---|",
            "| x | 9.9x |",
            "## Headline speed figures",
            "",
            "| work | ours | **like-for-like ratio** (rounds) | as run by default |",
            "|---|---|---:|---|",
            "| cloze | ours | **2.80x** (2.08, 3.27) | 5.0x |",
            "| search | ours | **0.85x** random, **0.91x** near | 2.3x |",
            "",
            "after the table: 7.7x",
        ]
    )
    assert like_for_like_ratios(results) == {"2.80", "0.85", "0.91"}
