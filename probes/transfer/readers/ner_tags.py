"""Tag schemes of named-entity data (IOB1, IOB2, BIOES): tags to word spans and back, and detecting a scheme.

Entities are word spans ``(first, end exclusive, type)`` whatever the scheme; tags that break the scheme are
repaired the usual way and reported by :func:`decode_tags` (the readers count them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kb.errors import OptionError

#: The tag schemes read; ``"auto"`` (readers only) detects one of them from the tags.
SCHEMES = ("iob1", "iob2", "bioes")

Span = tuple[int, int, str]

_TAG = re.compile(r"^(?:O|([BIES])-(\S+))$")


def check_scheme(scheme: str, *, allow_auto: bool = False) -> str:
    """The scheme in lower case, checked.

    Args:
        scheme: the scheme asked for.
        allow_auto: also accept ``"auto"`` (readers detect the scheme).

    Returns:
        The scheme.

    Raises:
        OptionError: a scheme not in :data:`SCHEMES` (nor ``"auto"`` with ``allow_auto``).
    """
    valid = ("auto", *SCHEMES) if allow_auto else SCHEMES
    name = scheme.lower() if isinstance(scheme, str) else scheme
    if name not in valid:
        raise OptionError(f"unknown tag scheme {scheme!r}; valid schemes: {', '.join(valid)}")
    return name


def parse_tag(tag: str) -> tuple[str, str | None] | None:
    """The prefix and type of one tag.

    Args:
        tag: a tag such as ``B-PER`` or ``O``.

    Returns:
        ``("B", "PER")`` for ``B-PER``, ``("O", None)`` for ``O``, None for anything else.
    """
    match = _TAG.match(tag)
    if not match:
        return None
    return ("O", None) if tag == "O" else (match.group(1), match.group(2))


def decode_tags(tags: Sequence[str], scheme: str) -> tuple[list[Span], list[tuple[int, str]]]:
    """Spans of a valid tag sequence under ``scheme``, and each tag breaking the scheme.

    Problems are repaired the usual way: an ``I-``/``E-`` continuing nothing starts an entity (as ``B-``/``S-``);
    a BIOES entity without ``E-`` ends where the next tag does not continue it.

    Args:
        tags: one sentence's tags.
        scheme: ``"iob1"``, ``"iob2"`` or ``"bioes"``.

    Returns:
        ``(spans, problems)``: spans ``(first, end exclusive, type)`` and ``(position, problem)`` pairs.

    Raises:
        OptionError: a tag that is not O/B-X/I-X/E-X/S-X, or an E-/S- tag outside BIOES.
    """
    spans: list[Span] = []
    problems: list[tuple[int, str]] = []
    start, open_type = -1, None

    def close(end: int) -> None:
        nonlocal start, open_type
        closing = open_type
        if closing is not None:
            if scheme == "bioes":
                problems.append((end - 1, "entity not closed with E- (closed there)"))
            spans.append((start, end, closing))
        start, open_type = -1, None

    for i, tag in enumerate(tags):
        parsed = parse_tag(tag)
        if parsed is None:
            raise OptionError(f"not a tag: {tag!r} at position {i}; tags are O, B-X, I-X, E-X or S-X")
        prefix, typ = parsed
        if typ is None:  # O
            close(i)
            continue
        if prefix in "ES" and scheme != "bioes":
            raise OptionError(f"tag {tag!r} at position {i} is BIOES, not {scheme.upper()}; use scheme='bioes'")
        if prefix == "I" and open_type == typ:
            continue
        if prefix == "E" and open_type == typ:
            spans.append((start, i + 1, typ))
            start, open_type = -1, None
            continue
        close(i)
        if prefix == "I" and scheme != "iob1":
            problems.append((i, "I- continuing nothing (read as B-)"))
        if prefix == "E":
            problems.append((i, "E- continuing nothing (read as S-)"))
        if prefix in "ES":
            spans.append((i, i + 1, typ))
        else:
            start, open_type = i, typ
    close(len(tags))
    return spans, problems


def tags_to_spans(tags: Sequence[str], scheme: str) -> list[Span]:
    """Entity spans of one sentence's tags, lenient like the usual evaluation scripts.

    An ``I-X`` after nothing of type X starts an entity.

    Args:
        tags: one sentence's tags.
        scheme: ``"iob1"``, ``"iob2"`` or ``"bioes"``.

    Returns:
        Spans ``(first, end exclusive, type)``.

    Raises:
        OptionError: an unknown scheme, a tag that is not O/B-X/I-X/E-X/S-X, or an E-/S- tag outside BIOES.
    """
    return decode_tags(tags, check_scheme(scheme))[0]


def sorted_spans(n_words: int, spans: Iterable[Sequence]) -> list[Span]:
    """Spans as ``(int, int, str)`` triples sorted by position, checked.

    Args:
        n_words: the sentence's length in words.
        spans: ``(first, end exclusive, type)`` spans.

    Returns:
        The sorted spans.

    Raises:
        OptionError: a span empty, outside the sentence or overlapping another.
    """
    result = sorted((int(s), int(e), str(t)) for s, e, t in spans)
    previous_end = 0
    for s, e, t in result:
        if not 0 <= s < e <= n_words:
            raise OptionError(f"span {(s, e, t)} is empty or outside a sentence of {n_words} words")
        if s < previous_end:
            raise OptionError(f"span {(s, e, t)} overlaps the span before it; spans must not overlap")
        previous_end = e
    return result


def spans_to_tags(n_words: int, spans: Iterable[Sequence]) -> list[str]:
    """IOB2 tags (``B-X`` starts every entity) of a sentence of ``n_words`` words with these spans.

    Args:
        n_words: the sentence's length in words.
        spans: ``(first, end exclusive, type)`` spans.

    Returns:
        One tag per word.

    Raises:
        OptionError: spans outside the sentence, empty or overlapping.
    """
    tags = ["O"] * n_words
    for s, e, t in sorted_spans(n_words, spans):
        tags[s] = f"B-{t}"
        tags[s + 1 : e] = [f"I-{t}"] * (e - s - 1)
    return tags


def detect_scheme(tag_sequences: Iterable[Sequence[str]]) -> str:
    """The tag scheme of a file's tag sequences.

    An entity starts with ``I-X`` when the tag before it is ``O``, of another type, or there is none (sentence
    start). Unreadable tags are ignored.

    Args:
        tag_sequences: the tags of each sentence.

    Returns:
        ``"bioes"`` when some tag is E-/S-, ``"iob1"`` when some entity starts with ``I-``, else ``"iob2"``.
    """
    iob1 = False
    for tags in tag_sequences:
        previous: str | None = None
        for tag in tags:
            parsed = parse_tag(tag)
            if parsed is None:
                continue
            prefix, typ = parsed
            if prefix in "ES":
                return "bioes"
            if prefix == "I" and typ != previous:
                iob1 = True
            previous = typ
    return "iob1" if iob1 else "iob2"
