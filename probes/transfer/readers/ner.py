"""Reading and writing named-entity data: CoNLL-2002, CoNLL-2003 and WikiANN (PAN-X) files.

(The tag schemes are in :mod:`probes.transfer.readers.ner_tags`.)

Layouts, one token a line, a blank line between sentences::

    CoNLL-2003 English   word POS chunk tag          IOB1, "-DOCSTART- -X- -X- O" lines, ASCII
    CoNLL-2003 German    word lemma POS chunk tag    IOB1, "-DOCSTART- ..." lines, latin-1
    CoNLL-2002 Spanish   word tag                    IOB2, latin-1
    CoNLL-2002 Dutch     word POS tag                IOB2, "-DOCSTART- -DOCSTART- O" lines, latin-1
    WikiANN / PAN-X      lang:word<TAB>tag           IOB2, UTF-8 ("en:Paris\\tB-LOC")

CoNLL columns are separated by spaces (or tabs); the first column is the word
and the last the tag, so every CoNLL variant reads alike. A file is read as
UTF-8 when it is valid UTF-8, else as latin-1 (:attr:`NerDataset.encoding`
says which). Entities become word spans ``(first, end, type)``, whatever the
tag scheme of the file (IOB1, IOB2 or BIOES, detected or given).

Bad lines (a wrong number of columns, a tag that is not O/B-X/I-X/E-X/S-X, a
WikiANN line without its ``lang:`` prefix) are counted and never fatal: the
sentence holding one is dropped whole (so no gold entity is silently lost or
cut), the sentences around it are kept. Tags that are readable but break the
scheme (an ``I-`` continuing nothing in IOB2) are counted and repaired. A
missing file, a file without any sentence, or a scheme that cannot be the
file's (``scheme="iob2"`` for a file with ``E-`` tags) is a
:class:`kb.errors.InputFormatError`.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kb.errors import InputFormatError, OptionError, option
from probes.reading import ReadSet, Skips, read_data_lines
from probes.transfer.readers.ner_tags import (
    Span,
    check_scheme,
    decode_tags,
    detect_scheme,
    parse_tag,
    spans_to_tags,
)

#: The file layouts read; ``"auto"`` detects one of them from the lines.
FORMATS = ("conll", "wikiann")
#: Other spellings accepted for ``fmt``.
FORMAT_ALIASES = {"conll2002": "conll", "conll2003": "conll", "panx": "wikiann", "pan-x": "wikiann"}
DOCSTART = "-DOCSTART-"

_COLUMNS = re.compile(r"[ \t]+")
_LANG = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")  # en, zh, zh-min-nan, be-x-old, simple


@dataclass(frozen=True)
class NerSentence:
    """One sentence: its words and entity spans ``(first word, end word exclusive, type)``, sorted, non-overlapping."""

    words: tuple[str, ...]
    spans: tuple[Span, ...]
    lang: str | None = None

    def entity_text(self, span: Span, sep: str = " ") -> str:
        """The words of one span joined by ``sep`` (``""`` for ja/zh, one character a word)."""
        return sep.join(self.words[span[0] : span[1]])


@dataclass
class NerDataset(ReadSet[NerSentence]):
    """Sentences read from one file, with what was skipped on the way.

    ``skipped`` maps a reason to how many lines it concerned (bad lines, whose
    sentence is dropped, and repaired tags, whose sentence is kept); ``examples``
    are the first few of each as ``path:line: reason (detail)``;
    ``dropped_sentences`` counts the sentences left out because of a bad line.
    """

    sentences: list[NerSentence]
    types: tuple[str, ...]
    scheme: str
    skipped: dict[str, int]
    examples: list[str]
    path: str | None = None
    encoding: str = "utf-8"
    fmt: str = "conll"
    dropped_sentences: int = 0

    def records(self) -> list[NerSentence]:
        return self.sentences

    @property
    def n_entities(self) -> int:
        return sum(len(s.spans) for s in self.sentences)

    def __repr__(self) -> str:
        head = (
            f"NerDataset({len(self.sentences):,} sentences, {self.n_entities:,} entities, "
            f"types={', '.join(self.types) or '-'}, scheme={self.scheme}, fmt={self.fmt}, "
            f"encoding={self.encoding}, {sum(self.skipped.values()):,} bad or repaired lines, "
            f"dropped {self.dropped_sentences:,} sentences)"
        )
        return self._described(head, self.examples)


# -- reading -------------------------------------------------------------------------------------------------------


@dataclass
class _Raw:
    """A sentence as read: (line number, word, tag) rows, its language, whether a line of it was bad."""

    rows: list[tuple[int, str, str]] = field(default_factory=list)
    lang: str | None = None
    bad: bool = False


def _is_wikiann_line(line: str) -> bool:
    fields = line.split("\t")
    lang, colon, _ = fields[0].partition(":")
    return len(fields) == 2 and bool(colon) and bool(_LANG.match(lang))


def detect_format(lines: Sequence[str]) -> str:
    """The layout of a named-entity file.

    Args:
        lines: the file's lines.

    Returns:
        ``"wikiann"`` when most of the first data lines are ``lang:word<TAB>tag``, else ``"conll"``.
    """
    sample = [line for line in lines if line.strip()][:200]
    wikiann = sum(_is_wikiann_line(line) for line in sample)
    return "wikiann" if sample and wikiann * 2 > len(sample) else "conll"


def _check_format(fmt: str) -> str:
    name = fmt.lower() if isinstance(fmt, str) else fmt
    name = FORMAT_ALIASES.get(name, name)
    if name not in ("auto", *FORMATS):
        raise OptionError(f"unknown format {fmt!r}; valid formats: auto, {', '.join(FORMATS)}")
    return name


def _conll_width(lines: Sequence[str]) -> int:
    """The usual number of columns of the file's token lines (the widest when tied), at least 2."""
    widths = Counter(
        len(_COLUMNS.split(line.strip(" \t")))
        for line in lines
        if line.strip(" \t") and not line.lstrip().startswith(DOCSTART)
    )
    widths.pop(1, None)
    if not widths:
        return 2
    top = max(widths.values())
    return max(w for w, n in widths.items() if n == top)


def _split_sentences(lines: Sequence[str], fmt: str, path: Path, skips: Skips) -> list[_Raw]:
    """Group the token lines into sentences, marking those with a bad line."""
    width = _conll_width(lines) if fmt == "conll" else 2
    sentences: list[_Raw] = []
    current = _Raw()

    def flush() -> None:
        nonlocal current
        if current.rows or current.bad:
            sentences.append(current)
        current = _Raw()

    for number, line in enumerate(lines, start=1):
        if not line.strip():
            flush()
            continue
        if fmt == "conll":
            fields = _COLUMNS.split(line.strip(" \t"))
            if fields[0] == DOCSTART:
                flush()
                continue
            if len(fields) != width:
                skips.add(path, number, "wrong number of columns", f"{len(fields)} instead of {width}")
                current.bad = True
                continue
            word, tag, lang = fields[0], fields[-1], None
        else:
            fields = line.split("\t")
            if len(fields) != 2:
                skips.add(path, number, "wrong number of columns", f"{len(fields)} tab-separated instead of 2")
                current.bad = True
                continue
            lang, colon, word = fields[0].partition(":")
            if not colon or not _LANG.match(lang) or not word:
                skips.add(path, number, "no lang: prefix", repr(fields[0]))
                current.bad = True
                continue
            tag = fields[1].strip()
            if current.lang is None:
                current.lang = lang
            elif lang != current.lang:
                skips.add(path, number, "language changes inside a sentence", f"{current.lang} then {lang}")
                current.bad = True
                continue
        if parse_tag(tag) is None:
            skips.add(path, number, "bad tag", repr(tag))
            current.bad = True
            continue
        current.rows.append((number, word, tag))
    flush()
    return sentences


def _resolve_scheme(raws: Sequence[_Raw], scheme: str, path: Path) -> str:
    """The scheme to read the file with: detected for ``"auto"``, else the given one if the tags allow it."""
    found = detect_scheme([tag for _, _, tag in raw.rows] for raw in raws)
    if scheme == "auto":
        return found
    if found == "bioes" and scheme != "bioes":
        raise InputFormatError(
            f"{path}: the file has E-/S- tags (BIOES) but scheme={scheme!r} was given; use {{scheme}}",
            options={"scheme": option("scheme", "bioes")},
        )
    if scheme == "bioes" and found != "bioes" and any(tag != "O" for raw in raws for _, _, tag in raw.rows):
        raise InputFormatError(
            f"{path}: scheme='bioes' was given but the file has no E-/S- tag, so it is not "
            f"BIOES (its tags look {found.upper()}); use {{scheme}}",
            options={"scheme": option("scheme", "auto")},
        )
    return scheme


def read_ner(
    path: str | os.PathLike[str], *, lang: str | None = None, scheme: str = "auto", fmt: str = "auto"
) -> NerDataset:
    """Sentences and entity spans of a CoNLL-2002/2003 or WikiANN file (see the module docs).

    Args:
        path: the file.
        lang: the language of a CoNLL file's sentences; for a WikiANN file, whose lines name their language,
            only the sentences in ``lang`` are kept.
        scheme: "auto" (detected, see :func:`~probes.transfer.readers.ner_tags.detect_scheme`), "iob1", "iob2"
            or "bioes".
        fmt: "auto", "conll" or "wikiann".

    Returns:
        The :class:`NerDataset`, with the bad lines and repaired tags it counted.

    Raises:
        InputFormatError: a missing file, a file without any sentence, or a scheme that cannot be the file's.
    """
    scheme = check_scheme(scheme, allow_auto=True)
    fmt = _check_format(fmt)
    path = Path(path)
    lines, encoding = read_data_lines(path)
    if fmt == "auto":
        fmt = detect_format(lines)
    skips = Skips()
    raws = _split_sentences(lines, fmt, path, skips)
    dropped = sum(raw.bad for raw in raws)
    raws = [raw for raw in raws if not raw.bad]
    if fmt == "wikiann" and lang is not None:
        languages = sorted({raw.lang for raw in raws if raw.lang})
        raws = [raw for raw in raws if raw.lang == lang]
        if not raws and languages:
            raise InputFormatError(
                f"{path}: no sentence in language {lang!r}; languages in the file: {', '.join(languages)}"
            )
    if not raws:
        raise InputFormatError(skips.nothing_read(path, "sentence"))
    scheme = _resolve_scheme(raws, scheme, path)
    sentences = [_sentence(raw, scheme, lang, path, skips) for raw in raws]
    types = tuple(sorted({t for s in sentences for _, _, t in s.spans}))
    return NerDataset(sentences, types, scheme, dict(skips.counts), skips.examples, str(path), encoding, fmt, dropped)


def _sentence(raw: _Raw, scheme: str, lang: str | None, path: Path, skips: Skips) -> NerSentence:
    spans, problems = decode_tags([tag for _, _, tag in raw.rows], scheme)
    for position, problem in problems:
        skips.add(path, raw.rows[position][0], problem, raw.rows[position][2])
    return NerSentence(tuple(word for _, word, _ in raw.rows), tuple(spans), raw.lang or lang)


# -- writing -------------------------------------------------------------------------------------------------------


def write_conll(
    dataset_or_sentences: NerDataset | Iterable[NerSentence], path: str | Path, *, fmt: str = "wikiann"
) -> Path:
    """Write sentences as a UTF-8 file in IOB2 that :func:`read_ner` reads back to the same sentences.

    Sentences without words are left out.

    Args:
        dataset_or_sentences: a :class:`NerDataset` or sentences.
        path: the file to write.
        fmt: ``"wikiann"``: ``lang:word<TAB>tag`` lines (every sentence needs a ``lang``); ``"conll"``:
            ``word tag`` lines like CoNLL-2002 Spanish.

    Returns:
        The path written.
    """
    fmt = _check_format(fmt)
    if fmt == "auto":
        raise OptionError("write_conll needs fmt='wikiann' or fmt='conll', not 'auto'")
    path = Path(path)
    blocks = [_sentence_lines(sentence, fmt) for sentence in dataset_or_sentences if sentence.words]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("".join(block) + "\n" for block in blocks), encoding="utf-8", newline="\n")
    return path


def _sentence_lines(sentence: NerSentence, fmt: str) -> list[str]:
    tags = spans_to_tags(len(sentence.words), sentence.spans)
    if fmt == "wikiann" and not (sentence.lang and _LANG.match(sentence.lang)):
        raise OptionError(
            f"fmt='wikiann' needs a language code for every sentence; got {sentence.lang!r} "
            f"for {' '.join(sentence.words)[:60]!r} (or write fmt='conll')"
        )
    forbidden = "\t\n\r" if fmt == "wikiann" else " \t\n\r"
    for word in sentence.words:
        if not word or any(c in word for c in forbidden) or (fmt == "conll" and word == DOCSTART):
            raise OptionError(f"cannot write the word {word!r} in fmt={fmt!r}: empty or has a column separator")
    if fmt == "wikiann":
        return [f"{sentence.lang}:{word}\t{tag}\n" for word, tag in zip(sentence.words, tags)]
    return [f"{word} {tag}\n" for word, tag in zip(sentence.words, tags)]
