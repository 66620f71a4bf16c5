"""Word frequencies from ``wordfreq`` for the link-probability estimates (:mod:`kb.mentions.linkability`):
the small list of each language, read as it is stored (``get_frequency_dict``), so Japanese and Chinese need
no MeCab or jieba; ``None`` for a language without a list (sw, te, th) or without ``wordfreq``."""

from __future__ import annotations

import functools
import math

from kb.mentions.surfaces import fold

#: A compound at least this frequent (Zipf 3.0) counts as a word (:data:`kb.mentions.linkability.INSIDE_WORD`).
COMPOUND_ZIPF = 3.0


@functools.cache
def _frequencies(lang: str) -> dict[str, float] | None:
    """``wordfreq``'s small list of ``lang`` (word -> frequency), or ``None`` where it has none."""
    try:
        import wordfreq
    except ImportError:  # an optional speed-up of evidence, not a requirement to link
        return None
    if lang not in wordfreq.available_languages("small"):
        return None
    return wordfreq.get_frequency_dict(lang, "small")


def zipf(word: str, lang: str) -> float | None:
    """Zipf frequency of ``word`` (folded) in ``lang``: log10 of occurrences per billion words; 0.0 for an
    unknown word, ``None`` when there is no list for ``lang``."""
    table = _frequencies(lang)
    if table is None:
        return None
    f = table.get(fold(word))
    return math.log10(f) + 9.0 if f else 0.0


def has_frequencies(lang: str) -> bool:
    """Whether ``wordfreq`` has a word list for ``lang`` (and is installed)."""
    return _frequencies(lang) is not None
