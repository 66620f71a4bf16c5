"""Wikipedia title normalisation, as MediaWiki does it for links and look-ups."""

from __future__ import annotations

import re

_SPACES_RE = re.compile(r"[\s_]+")


def normalize_title(title: str) -> str:
    """Canonical form of a page title: ``_`` is a space, runs of spaces collapse,
    ends are stripped and the first letter is upper-case (MediaWiki's default
    first-letter case-insensitivity). ``"tokyo_tower"`` -> ``"Tokyo tower"``.
    """
    title = _SPACES_RE.sub(" ", title).strip()
    if not title:
        return title
    first = title[0]
    upper = first.upper()
    # Characters whose upper case is longer ("ß" -> "SS") keep their form, as MediaWiki does.
    if len(upper) != 1:
        upper = first
    return upper + title[1:]
