"""Reading and writing relation-extraction data in the KBP37 layout (also RELX's test sets).

One example a block, blocks separated by blank lines (SemEval-2010 task 8 style)::

    0<TAB>" <e1> Thom Yorke </e1> of <e2> Radiohead </e2> has included the + for ... . "
    per:employee_of(e1,e2)
    <blank line>

The sentence is quoted and marks the two entities with ``<e1>...</e1>`` and
``<e2>...</e2>`` (in either order, with or without spaces around the markers).
The label is ``no_relation`` or ``type(e1,e2)`` / ``type(e2,e1)``, the direction
saying which marked entity is the subject. A ``Comment:`` line (SemEval-2010)
after the label is ignored; ``\\r\\n`` line ends are read like ``\\n``.

An entity marked with nothing inside (``<e1> </e1>``, one sentence of RELX's test sets) is kept with an
empty span (``start == end``) where its markers stand, as RELX's and LUKE's readers keep it: the markers still
go into the model's input and the example is scored.

Bad blocks (no ``id<TAB>`` sentence line, a marker missing, repeated or closed
before it is opened, overlapping entities, a bad label line) are counted and
skipped, never fatal. A missing file or one without any example is a
:class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kb.errors import InputFormatError, OptionError
from probes.reading import ReadSet, Skips, read_data_lines

NO_RELATION = "no_relation"
#: The layouts :func:`read_re` reads.
RE_FORMATS = ("kbp37", "tacred")
MARKERS = ("<e1>", "</e1>", "<e2>", "</e2>")

_MARKER = re.compile(r"</?e[12]>")
_LABEL = re.compile(r"^([^\s()]+)\((e1,e2|e2,e1)\)$")


@dataclass(frozen=True)
class ReExample:
    """One sentence without markers, the character spans of the marked entities and the label as in the file.

    ``head`` is the span of ``<e1>`` and ``tail`` of ``<e2>``: the label's direction,
    not the order in the sentence, says which one is the subject. A span is empty (``start == end``) where
    the file marks nothing (``<e1> </e1>``).
    """

    id: str
    text: str
    head: tuple[int, int]
    tail: tuple[int, int]
    label: str
    lang: str | None = None
    head_type: str | None = None
    tail_type: str | None = None

    @property
    def head_text(self) -> str:
        return self.text[self.head[0] : self.head[1]]

    @property
    def tail_text(self) -> str:
        return self.text[self.tail[0] : self.tail[1]]


@dataclass
class ReDataset(ReadSet[ReExample]):
    """Examples read from one file, the labels seen (sorted) and the blocks skipped (``path:line: reason``);
    ``layout`` is ``"kbp37"`` or ``"tacred"``."""

    examples: list[ReExample]
    labels: tuple[str, ...]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None
    encoding: str = "utf-8"
    layout: str = "kbp37"

    def records(self) -> list[ReExample]:
        return self.examples

    @property
    def relation_types(self) -> tuple[str, ...]:
        """The relation types of the labels seen (directions and no_relation left out)."""
        if self.layout == "tacred":
            return tuple(l for l in self.labels if l != NO_RELATION)
        return tuple(sorted({t for t in map(relation_type, self.labels) if t}))

    def __repr__(self) -> str:
        head = (
            f"ReDataset({len(self.examples):,} examples, {len(self.labels)} labels, "
            f"encoding={self.encoding}, skipped {sum(self.skipped.values()):,} "
            f"{'records' if self.layout == 'tacred' else 'blocks'})"
        )
        return self._described(head, self.examples_skipped)


# -- labels ----------------------------------------------------------------------------------------------------------


def parse_label(label: str) -> tuple[str, str] | None:
    """The relation and direction of a KBP37 label.

    Args:
        label: a label such as ``per:employee_of(e1,e2)`` or ``no_relation``.

    Returns:
        ``("per:employee_of", "e1,e2")``, or None for ``no_relation``.

    Raises:
        OptionError: a label of neither form.
    """
    if label == NO_RELATION:
        return None
    match = _LABEL.match(label) if isinstance(label, str) else None
    if not match:
        raise OptionError(f"not a relation label: {label!r}; expected {NO_RELATION!r} or type(e1,e2) / type(e2,e1)")
    return match.group(1), match.group(2)


def relation_type(label: str) -> str | None:
    """The relation type of a label, without its direction: ``per:employee_of(e1,e2)`` -> ``per:employee_of``.

    Args:
        label: a KBP37 label.

    Returns:
        The type, or None for ``no_relation``.

    Raises:
        OptionError: a label of neither form.
    """
    parsed = parse_label(label)
    return parsed[0] if parsed else None


# -- reading -----------------------------------------------------------------------------------------------------------


class _BadBlock(Exception):
    """A block that cannot be read: ``reason`` and ``detail`` for the skip report."""

    def __init__(self, reason: str, detail: str = "", line: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.detail, self.line = reason, detail, line


def _normalise(raw: str) -> tuple[str, list[int]]:
    """``raw`` with whitespace runs made one space and stripped, and for each raw character its new offset."""
    out: list[str] = []
    offsets = [0] * (len(raw) + 1)
    space = False
    for i, char in enumerate(raw):
        if char.isspace():
            space = bool(out)
        else:
            if space:
                out.append(" ")
                space = False
            out.append(char)
        offsets[i] = len(out) - 1 if not char.isspace() else len(out)
    offsets[len(raw)] = len(out)
    return "".join(out), offsets


def _marker_positions(sentence: str) -> tuple[str, dict[str, int]]:
    """The sentence without markers and where each marker was in it; raises :class:`_BadBlock`."""
    parts: list[str] = []
    positions: dict[str, int] = {}
    length, last = 0, 0
    for match in _MARKER.finditer(sentence):
        parts.append(sentence[last : match.start()])
        length += match.start() - last
        last = match.end()
        if match.group() in positions:
            raise _BadBlock("duplicated marker", match.group())
        positions[match.group()] = length
    parts.append(sentence[last:])
    for n in ("1", "2"):
        opened, closed = f"<e{n}>" in positions, f"</e{n}>" in positions
        if not opened and not closed:
            raise _BadBlock("missing marker", f"no <e{n}>...</e{n}>")
        if opened != closed or positions[f"</e{n}>"] < positions[f"<e{n}>"]:
            raise _BadBlock("unbalanced markers", f"<e{n}> and </e{n}>")
    return "".join(parts), positions


def _unmark(sentence: str) -> tuple[str, tuple[int, int], tuple[int, int]]:
    """Text without markers (spaces normalised) and the character spans of e1 and e2 in it."""
    raw, positions = _marker_positions(sentence)
    text, offsets = _normalise(raw)
    spans = []
    for n in ("1", "2"):
        start, end = positions[f"<e{n}>"], positions[f"</e{n}>"]
        while start < end and raw[start].isspace():
            start += 1
        while end > start and raw[end - 1].isspace():
            end -= 1
        if start == end:  # `<e1> </e1>`: kept as an empty span where the markers stand, as RELX and LUKE read it
            spans.append((offsets[start], offsets[start]))
            continue
        spans.append((offsets[start], offsets[end - 1] + 1))
    (h0, h1), (t0, t1) = spans
    if h0 < h1 and t0 < t1 and h0 < t1 and t0 < h1:
        raise _BadBlock("entities overlap", f"{text[h0:h1]!r} and {text[t0:t1]!r}")
    return text, spans[0], spans[1]


def _unquote(sentence: str) -> str:
    sentence = sentence.strip()
    if len(sentence) >= 2 and sentence[0] == sentence[-1] == '"':
        return sentence[1:-1]
    return sentence


def _blocks(lines: Sequence[str]) -> Iterator[list[tuple[int, str]]]:
    """Blocks of (line number, line): runs of non-blank lines, a new one also at each ``id<TAB>`` line.

    Starting a block at each line with a tab keeps the examples apart where a blank line is missing.
    """
    block: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if block and (not line.strip() or "\t" in line):
            yield block
            block = []
        if line.strip():
            block.append((number, line))
    if block:
        yield block


def _example(block: list[tuple[int, str]], lang: str | None) -> ReExample:
    """The example of one block; raises :class:`_BadBlock`."""
    (_first, sentence_line), *rest = block
    rest = [(n, line) for n, line in rest if not line.strip().lower().startswith("comment")]
    ident, tab, sentence = sentence_line.partition("\t")
    if not tab or not ident.strip():
        raise _BadBlock("no id<TAB>sentence line", sentence_line[:60])
    if not rest:
        raise _BadBlock("no label line")
    if len(rest) > 1:
        raise _BadBlock("extra lines in the block", f"{len(block)} lines; missing blank line?")
    label_number, label = rest[0][0], rest[0][1].strip()
    try:
        parse_label(label)
    except OptionError:
        raise _BadBlock("bad label", repr(label[:60]), label_number) from None
    text, head, tail = _unmark(_unquote(sentence))
    return ReExample(ident.strip(), text, head, tail, label, lang)


def read_re(path: str | os.PathLike[str], *, lang: str | None = None) -> ReDataset:
    """Examples of a KBP37 / RELX file (see the module docs; TACRED files:
    :func:`probes.transfer.readers.tacred.read_tacred`).

    UTF-8 is read when the file is valid UTF-8, else latin-1. Bad blocks are skipped and counted, with the line
    where each starts.

    Args:
        path: the file.
        lang: stored on each example.

    Returns:
        The :class:`ReDataset`.

    Raises:
        InputFormatError: a missing file or one without any example.
    """
    path = Path(path)
    lines, encoding = read_data_lines(path)
    skips = Skips()
    examples: list[ReExample] = []
    for block in _blocks(lines):
        try:
            examples.append(_example(block, lang))
        except _BadBlock as bad:
            skips.add(path, bad.line or block[0][0], bad.reason, bad.detail)
    if not examples:
        raise InputFormatError(skips.nothing_read(path, "example"))
    labels = tuple(sorted({e.label for e in examples}))
    return ReDataset(examples, labels, dict(skips.counts), skips.examples, str(path), encoding)


# -- writing -------------------------------------------------------------------------------------------------------


def _marked(example: ReExample) -> str:
    """The sentence with markers: spaced (`` <e1> x </e1> ``) where the text has a space or ends, else tight.

    Padding is only added next to an existing space or the text's ends, so that
    removing the markers and normalising spaces gives back ``example.text``.
    """
    text = example.text
    inserts: dict[int, list[str]] = {}
    for (start, end), n in sorted([(example.head, "1"), (example.tail, "2")]):
        inserts.setdefault(start, []).append(f"<e{n}>")
        inserts.setdefault(end, []).insert(0, f"</e{n}>")
    pieces, last = [], 0
    for point in sorted(inserts):
        pieces.append(text[last:point])
        spaced = point in (0, len(text)) or text[point - 1] == " " or text[point] == " "
        markers = " ".join(inserts[point]) if spaced else "".join(inserts[point])
        pieces.append(f" {markers} " if spaced else markers)
        last = point
    pieces.append(text[last:])
    return re.sub(" {2,}", " ", "".join(pieces)).strip()


def _check_writable(example: ReExample) -> None:
    text = example.text
    problems = []
    if any(c in example.id for c in "\t\r\n") or not example.id.strip():
        problems.append("an empty id or one with a tab or line break")
    if any(c in text for c in "\r\n") or _MARKER.search(text):
        problems.append("a line break or a <e1>-style marker in the text")
    for name, (start, end) in (("head", example.head), ("tail", example.tail)):
        if not 0 <= start < end <= len(text) or text[start].isspace() or text[end - 1].isspace():
            problems.append(f"{name} span {(start, end)} empty, outside the text or starting/ending with a space")
    if not problems and example.head[0] < example.tail[1] and example.tail[0] < example.head[1]:
        problems.append("overlapping head and tail")
    try:
        parse_label(example.label)
    except OptionError as exc:
        problems.append(str(exc))
    if problems:
        raise OptionError(f"cannot write example {example.id!r} in the KBP37 layout: {'; '.join(problems)}")


def write_kbp37(examples: Iterable[ReExample], path: str | Path) -> Path:
    """Write examples in the KBP37 layout (UTF-8, ``\\n``) that :func:`read_re` reads back to the same examples.

    Args:
        examples: examples with texts normalised as :func:`read_re` makes them (single spaces, stripped).
        path: the file to write.

    Returns:
        The path written.

    Raises:
        OptionError: an example that cannot be written faithfully.
    """
    path = Path(path)
    blocks = []
    for example in examples:
        _check_writable(example)
        blocks.append(f'{example.id}\t" {_marked(example)} "\n{example.label}\n\n')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(blocks), encoding="utf-8", newline="\n")
    return path
