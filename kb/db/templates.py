"""Relation templates: cloze sentences with one ``[X]`` (subject) and one ``[Y]`` (object)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.errors import TemplateError

_PLACEHOLDER_RE = re.compile(r"\[[^\[\]]*\]")


@dataclass(frozen=True)
class Template:
    """A validated template. ``x_first`` is False for templates like ``"[Y] ... [X]"``."""

    text: str

    @property
    def x_first(self) -> bool:
        return self.text.index("[X]") < self.text.index("[Y]")

    def fill(self, x: str | None = None, y: str | None = None) -> str:
        """Replace ``[X]`` and/or ``[Y]``; a placeholder given ``None`` stays in place.

        Both are replaced in one pass, so a label that itself contains "[Y]" is safe.
        """
        return self.fill_spans(x, y)[0]

    def fill_spans(self, x: str | None = None, y: str | None = None) -> tuple[str, tuple[int, int], tuple[int, int]]:
        """Fill like :meth:`fill` and also return the character spans of [X] and [Y] in the result."""
        parts = re.split(r"(\[X\]|\[Y\])", self.text)
        values = {"[X]": x, "[Y]": y}
        out: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        pos = 0
        for part in parts:
            value = values.get(part)
            piece = part if value is None else value
            if part in values:
                spans[part] = (pos, pos + len(piece))
            out.append(piece)
            pos += len(piece)
        return "".join(out), spans["[X]"], spans["[Y]"]


def parse_template(text: str, *, where: str = "template") -> Template:
    """Validate ``text``: exactly one ``[X]``, exactly one ``[Y]``, no other ``[...]``.

    ``where`` names the template in the error ("template P36/ja", "line 3 of
    templates.jsonl") so the user can find it.
    """
    if not isinstance(text, str) or not text.strip():
        raise TemplateError(f"{where}: empty template; expected a sentence with [X] and [Y]")
    found = _PLACEHOLDER_RE.findall(text)
    unknown = sorted({p for p in found if p not in ("[X]", "[Y]")})
    if unknown:
        raise TemplateError(
            f"{where}: unknown placeholder(s) {', '.join(unknown)} in {text!r}; "
            "only [X] (subject) and [Y] (object) are allowed"
        )
    for ph in ("[X]", "[Y]"):
        n = found.count(ph)
        if n != 1:
            what = "missing" if n == 0 else f"appears {n} times"
            raise TemplateError(
                f"{where}: {ph} {what} in {text!r}; expected exactly one [X] and one [Y]"
            )
    stray = _PLACEHOLDER_RE.sub("", text)
    if "[" in stray or "]" in stray:
        raise TemplateError(f"{where}: unbalanced bracket in {text!r}")
    return Template(text)
