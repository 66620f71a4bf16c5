"""Language codes: the 24 mLUKE languages and validation of user-given codes."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.errors import UnknownLanguageError

#: The 24 languages mLUKE was pretrained on (Ri et al., 2022), in alphabetical order.
MLUKE_LANGUAGES: tuple[str, ...] = (
    "ar", "bn", "de", "el", "en", "es", "fi", "fr", "hi", "id", "it", "ja",
    "ko", "nl", "pl", "pt", "ru", "sv", "sw", "te", "th", "tr", "vi", "zh",
)  # fmt: skip

# Wikipedia language codes: "en", "ceb", "zh-yue", "be-tarask", "simple".
_CODE_RE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$|^simple$")


def check_language(lang: str, allowed: Iterable[str] | None = None) -> str:
    """Return ``lang`` if it is a well-formed code (and in ``allowed``), else raise.

    The error names the bad code and lists the valid ones, so a typo such as
    ``"jp"`` for ``"ja"`` is obvious.
    """
    if not isinstance(lang, str) or not _CODE_RE.match(lang):
        raise UnknownLanguageError(
            f"{lang!r} is not a language code: expected a lower-case Wikipedia code such as 'en', 'ja' or 'zh'"
        )
    if allowed is not None:
        allowed = tuple(allowed)
        if lang not in allowed:
            raise UnknownLanguageError(f"unknown language {lang!r}: expected one of {', '.join(sorted(allowed))}")
    return lang


def check_languages(langs: Iterable[str], allowed: Iterable[str] | None = None) -> tuple[str, ...]:
    """Validate several codes (see :func:`check_language`); keeps order, drops repeats."""
    allowed_t = tuple(allowed) if allowed is not None else None
    out: list[str] = []
    for lang in langs:
        check_language(lang, allowed_t)
        if lang not in out:
            out.append(lang)
    return tuple(out)
