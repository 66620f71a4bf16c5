"""Shared pieces of the fuzz tests: example budgets, text strategies and file mutations."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import settings, strategies as st

#: The ``max_examples`` of the "ci" profile, against which :func:`examples` scales.
CI_EXAMPLES = 100


def examples(n: int) -> int:
    """``n`` examples under the "ci" profile, proportionally more under "long" (a test's budget)."""
    return max(1, n * settings().max_examples // CI_EXAMPLES)


#: Samples of every script the kb covers, symbols and characters outside the BMP (emoji, CJK extension B,
#: a private-use plane), so that every strategy mixes them in whatever else it draws.
SCRIPT_SAMPLES = (
    "Tokyo",
    "Köln",
    "Straße",
    "İstanbul",
    "Ελλάδα",
    "Москва",
    "القاهرة",
    "ירושלים",
    "दिल्ली",
    "ঢাকা",
    "తెలుగు",
    "กรุงเทพ",
    "東京",
    "とうきょう",
    "カタカナ",
    "서울",
    "Hà Nội",
    "Łódź",
    "Zürich",
    "😂",
    "🇯🇵",
    "𠮷野家",
    "𝔘𝔫𝔦",
    "\U000f0000",
    "\U000f0001",
    "\ue000",
    "ﬁ",
    "Å",
    "e\u0301",
    "1914",
    "½",
    "€",
    "№",
)


def unicode_text(min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Any text (every plane, no lone surrogates), biased towards the samples of real scripts:
    ``min_size`` to ``max_size`` pieces of at least one character."""
    piece = st.one_of(st.sampled_from(SCRIPT_SAMPLES), st.text(min_size=1, max_size=6), st.sampled_from(" \n\t,.;"))
    return st.lists(piece, min_size=min_size, max_size=max_size).map("".join)


def skip_report_lines(skipped: list[str], path: Path) -> list[int]:
    """The line numbers of a reader's skip report (``path:line: reason``), each entry checked to name ``path``."""
    found = [re.match(re.escape(str(path)) + r":(\d+): ", e) for e in skipped]
    assert all(found), skipped
    return [int(m.group(1)) for m in found]  # type: ignore[union-attr]
