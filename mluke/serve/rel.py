"""REL's shapes at ``/disambiguate``: spans as ``[start, length]`` pairs, and its answer, a list of ``[start, length,
mention, title, md_score, ed_score, tag]`` per mention."""

from __future__ import annotations

from typing import Any

from mluke.results import LinkedMention
from mluke.serve.service import RequestError, Service


def check_spans(
    service: Service, texts: list[str], spans: list[Any], single: bool
) -> list[list[tuple[int, int]]] | None:
    """The ``[start, length]`` spans of each text, checked against it; ``None`` when no text has any (then the
    mentions are detected, as REL does for an empty list)."""
    per_text = [spans] if single else spans
    if not single and spans and len(spans) != len(texts):
        raise RequestError("spans", f"{len(spans)} lists for {len(texts)} texts; give one list of spans per text")
    if not any(per_text):
        return None
    out: list[list[tuple[int, int]]] = []
    for t, (text, given) in enumerate(zip(texts, per_text)):
        where = "spans" if single else f"spans[{t}]"
        if not isinstance(given, list) or (given and not isinstance(given[0], list)):
            raise RequestError(where, "expected a list of [start, length] pairs")
        service.check_count(where, len(given), service.limits.max_spans)
        pairs = []
        for k, span in enumerate(given):
            if len(span) != 2:
                raise RequestError(f"{where}[{k}]", f"expected [start, length], got {len(span)} numbers")
            start, length = span
            if start < 0 or length < 1 or start + length > len(text):
                raise RequestError(
                    f"{where}[{k}]", f"[{start}, {length}] is not a span of the text (length {len(text)} characters)"
                )
            pairs.append((start, length))
        out.append(pairs)
    return out


def rel_rows(service: Service, found: list[LinkedMention]) -> list[list[Any]]:
    """REL's answer for one text: ``[start, length, mention, title, md_score, ed_score, tag]`` per mention; ``title``
    is the entity's page title in the text's language with ``_`` for spaces ("NIL" for a NIL mention), ``tag``
    the kb's kind of the entity ("NULL" when it has none)."""
    rows = []
    for m in found:
        title = "NIL" if m.nil or not m.title else m.title.replace(" ", "_")
        kind = service.kind(m.key) if m.key else None
        rows.append(
            [m.start, m.end - m.start, m.surface, title, m.link_probability or 0.0, m.confidence, kind or "NULL"]
        )
    return rows
