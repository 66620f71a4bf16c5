"""Character offsets as a browser counts them: JavaScript strings index UTF-16 code units, so a character outside
the Basic Multilingual Plane (an emoji, a rare CJK ideograph) counts two there and one in Python."""

from __future__ import annotations

import re
from bisect import bisect_left

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Utf16:
    """Maps the character offsets of one text to UTF-16 code-unit offsets (and back)."""

    def __init__(self, text: str) -> None:
        self.astral = [m.start() for m in _ASTRAL.finditer(text)]  #: character offsets of astral characters

    def __call__(self, offset: int) -> int:
        """The UTF-16 offset of character offset ``offset``."""
        return offset + bisect_left(self.astral, offset)


def lone_surrogate(text: str) -> int | None:
    """The character offset of the first lone surrogate of ``text`` (not valid Unicode text), else ``None``."""
    found = _SURROGATE.search(text)
    return None if found is None else found.start()
