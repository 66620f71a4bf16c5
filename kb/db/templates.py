"""Relation templates: cloze sentences with one ``[X]`` (subject) and one ``[Y]`` (object)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from kb.errors import InputFormatError, TemplateError

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
            raise TemplateError(f"{where}: {ph} {what} in {text!r}; expected exactly one [X] and one [Y]")
    stray = _PLACEHOLDER_RE.sub("", text)
    if "[" in stray or "]" in stray:
        raise TemplateError(f"{where}: unbalanced bracket in {text!r}")
    return Template(text)


#: Google-RE relation names in mLAMA's template files, and their Wikidata properties.
GOOGLE_RE = {"place_of_birth": "P19", "place_of_death": "P20", "date_of_birth": "P569"}
_PID_RE = re.compile(r"^P[1-9][0-9]*$")


def read_templates(
    source: str | os.PathLike[str], *, lang: str | None = None, skipped: dict[str, int] | None = None
) -> dict[tuple[str, str], str]:
    """Cloze templates from files in mLAMA's layout: ``{(pid, lang): template}``.

    ``source`` is a ``templates.jsonl`` (one ``{"relation": "P19", "template": "..."}``
    per line; its language is ``lang`` or the name of its folder) or a folder holding
    ``<lang>/templates.jsonl`` files (mLAMA's ``mlama1.1``, or the folder above it).
    Google-RE names become their properties (``place_of_birth`` -> P19); other
    relations without a Wikidata id are counted in ``skipped["relations_without_pid"]``.
    A line that is not JSON or lacks a field, or a template without exactly one [X]
    and one [Y], is an error naming the file and line.
    """
    path = Path(source)
    if path.is_dir():
        data = path / "mlama1.1" if (path / "mlama1.1").is_dir() else path
        files = sorted(data.glob("*/templates.jsonl"))
        if not files:
            raise InputFormatError(
                f"{path}: no <lang>/templates.jsonl inside; expected mLAMA's layout (mlama1.1/<lang>/...)"
            )
        out: dict[tuple[str, str], str] = {}
        for file in files:
            out.update(read_templates(file, lang=file.parent.name, skipped=skipped))
        return out
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file or folder (expected templates.jsonl or an mLAMA folder)")
    code = lang or path.parent.name
    out = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                relation, text = str(row["relation"]), row["template"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InputFormatError(
                    f'{path}, line {n}: expected {{"relation": ..., "template": ...}} ({exc!r})'
                ) from None
            pid = GOOGLE_RE.get(relation, relation)
            if not _PID_RE.match(pid):
                if skipped is not None:
                    skipped["relations_without_pid"] = skipped.get("relations_without_pid", 0) + 1
                continue
            out[(pid, code)] = parse_template(text, where=f"{path}, line {n}").text
    return out
