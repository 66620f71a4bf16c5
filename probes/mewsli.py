"""Reading Mewsli-9 (Botha et al., 2020), the multilingual entity-linking benchmark, into :class:`LinkingSet`.

Layout written by the Mewsli-9 extraction script (Botha et al., 2020)::

    dataset/<lang>/docs.tsv       docid  title  curid  revid  url  text_md5
    dataset/<lang>/mentions.tsv   docid  position  length  mention  url  lang  qid  qid_in_refs  freq_bin
    dataset/<lang>/text/<docid>   the clean text of one document (UTF-8)

Both TSV files are written by pandas (``DataFrame.to_csv(sep="\\t")``): a header row
(columns are found by name), and CSV quoting: a field holding a tab, a quote or a line
break is quoted and its quotes are doubled, so the mention ``"Bugün."`` is written
``\"\"\"Bugün.\"\"\"``. ``position`` and ``length`` count Unicode characters of the clean
text. ``text_md5`` is the MD5 of the text file's UTF-8 bytes, as the extraction script
computes it: a document whose text does not match is kept (each of its mentions is still
checked against the text) and counted under "text does not match text_md5", with the file,
line and document id. Rows that cannot be used (bytes that are not UTF-8, an unclosed
quote, a bad integer, a wrong number of fields, a span outside the text or not matching
the mention, a bad or unknown document id, a document without text file) are counted
and skipped, never fatal; :class:`LinkingSet` keeps
the counts and the first few examples (``file:line: reason``). A missing TSV file,
a missing column or a folder without language folders is a :class:`kb.InputFormatError`.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kb.errors import InputFormatError
from probes.reading import ReadSet, Skips

#: Columns the reader needs (others are ignored).
DOC_COLUMNS = ("docid",)
MENTION_COLUMNS = ("docid", "position", "length", "mention", "qid")
#: The reason under which a document whose text is not the one of ``text_md5`` is counted (it is kept).
TEXT_MD5_MISMATCH = "text does not match text_md5"
#: The characters ``errors="surrogateescape"`` decodes bytes that are not UTF-8 to.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class GoldMention:
    """A gold mention: character span ``[start, end)``, its surface (``text[start:end]``) and entity key
    (QID or kb key)."""

    start: int
    end: int
    surface: str
    key: str


@dataclass(frozen=True)
class LinkDoc:
    """One document: id, language, clean text and gold mentions (sorted by position)."""

    docid: str
    lang: str
    text: str
    mentions: tuple[GoldMention, ...] = ()

    def __repr__(self) -> str:
        return (
            f"LinkDoc({self.docid!r}, lang={self.lang!r}, {len(self.text):,} characters, {len(self.mentions)} mentions)"
        )


@dataclass(frozen=True)
class LinkingSet(ReadSet[LinkDoc]):
    """Documents read from a Mewsli-9 folder, with the records skipped on the way.

    Iterating over it (or ``len``) goes over :attr:`docs`. ``skipped`` maps a
    reason ("bad integer", "mention does not match the text", ...) to how many
    records it skipped (and "text does not match text_md5" to the documents kept although
    their text is not the official one); ``examples`` are the first few as
    ``file:line: reason (detail)``.
    """

    docs: tuple[LinkDoc, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()

    def records(self) -> tuple[LinkDoc, ...]:
        return self.docs

    @property
    def mentions(self) -> int:
        return sum(len(d.mentions) for d in self.docs)

    def __repr__(self) -> str:
        head = (
            f"LinkingSet({len(self.docs):,} documents, {self.mentions:,} mentions, "
            f"languages={', '.join(self.languages) or '-'}, skipped {sum(self.skipped.values()):,} records)"
        )
        return self._described(head, self.examples)


# -- reading ---------------------------------------------------------------------------------------------------------


def _is_language_folder(path: Path) -> bool:
    return any((path / name).exists() for name in ("docs.tsv", "mentions.tsv", "text"))


def _language_folders(folder: Path, languages: Sequence[str] | None) -> list[Path]:
    if not folder.is_dir():
        raise InputFormatError(
            f"{folder}: no such folder (expected the Mewsli-9 dataset folder or one of its language folders)"
        )
    if _is_language_folder(folder):
        found = [folder]
    else:
        base = folder
        subdirs = [d for d in sorted(base.iterdir()) if d.is_dir()]
        if not any(_is_language_folder(d) for d in subdirs) and (folder / "dataset").is_dir():
            base = folder / "dataset"  # the extraction script's output folder
            subdirs = [d for d in sorted(base.iterdir()) if d.is_dir()]
        found = [d for d in subdirs if _is_language_folder(d)]
        if not found:
            raise InputFormatError(
                f"{folder}: no language folders inside; expected the Mewsli-9 layout "
                "<lang>/docs.tsv, <lang>/mentions.tsv, <lang>/text/<docid>"
            )
    if languages:
        have = {d.name: d for d in found}
        missing = [l for l in languages if l not in have]
        if missing:
            raise InputFormatError(
                f"{folder}: no folder for language {', '.join(missing)}; languages here: {', '.join(sorted(have))}"
            )
        found = [have[l] for l in sorted(set(languages))]
    for d in found:
        for name in ("docs.tsv", "mentions.tsv"):
            if not (d / name).is_file():
                raise InputFormatError(
                    f"{d / name}: missing; every Mewsli-9 language folder has docs.tsv, mentions.tsv and text/"
                )
    return found


#: A quoted field may hold line breaks (pandas quotes such a field); a record whose quote is still open
#: after this many lines is reported as one unreadable line and reading goes on at the next line.
MAX_RECORD_LINES = 16


def _parse_record(text: str) -> list[str]:
    return next(csv.reader([text], delimiter="\t", strict=True))


def _records(path: Path, lines: list[str], skips: Skips, first: int, width: int) -> Iterator[tuple[int, list[str]]]:
    """(line number of its first line, ``lines[0]`` being line ``first``; fields) of each record, read as
    pandas' ``to_csv(sep="\\t")`` writes it: fields holding a tab, a quote or a line break are quoted, quotes
    inside doubled (``\"\"\"Bugün.\"\"\"``).

    A record that spans lines (a quoted line break) is taken only when it parses into ``width`` fields;
    otherwise its first line is reported as an unreadable row (an unclosed quote) and reading goes on at
    the next line, so that a stray ``"`` costs one line, not the rest of the file."""
    i = 0
    while i < len(lines):
        end = i + 1
        fields: list[str] | None = None
        while True:
            try:
                fields = _parse_record("".join(lines[i:end]))
            except csv.Error as exc:
                if "unexpected end of data" in str(exc) and end < len(lines) and end - i < MAX_RECORD_LINES:
                    end += 1  # perhaps a quoted field that holds a line break
                    continue
                fields = None
                detail = "unclosed quote" if "unexpected end of data" in str(exc) else str(exc)
            if fields is not None and end > i + 1 and len(fields) != width:
                fields, detail = None, "unclosed quote"
            break
        if fields is None:
            skips.add(path, first + i, "unreadable row", detail)
            i += 1
            continue
        yield first + i, fields
        i = end


def _rows(path: Path, required: Sequence[str], skips: Skips) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: value}) for every well-formed data row of a TSV file with a header row,
    written by pandas as the Mewsli-9 scripts do (quoting: see :func:`_records`).

    A row with bytes that are not UTF-8 is skipped like any other bad row (the rest of the file is read)."""
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        lines = list(f)  # split at \n, \r\n or \r only, line ends kept (a quoted field may hold them)
    if not lines:
        raise InputFormatError(f"{path}: empty file; expected a header row with {', '.join(required)}")
    try:
        header = _parse_record(lines[0])
    except csv.Error as exc:
        raise InputFormatError(f"{path}, line 1: unreadable header ({exc})") from None
    header = [h.strip() for h in header]
    if _NOT_UTF8.search("".join(header)):
        raise InputFormatError(f"{path}, line 1: the header row has bytes that are not UTF-8")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputFormatError(
            f"{path}: no column {', '.join(map(repr, missing))} in the header row "
            f"(found {', '.join(header)}); expected at least {', '.join(required)}"
        )
    for line, row in _records(path, lines[1:], skips, first=2, width=len(header)):
        if not row or row == [""]:
            continue
        if _NOT_UTF8.search("\t".join(row)):
            skips.add(path, line, "bytes that are not UTF-8")
            continue
        if len(row) != len(header):
            skips.add(path, line, "wrong number of fields", f"{len(row)} instead of {len(header)}")
            continue
        yield line, dict(zip(header, row))


def _read_language(folder: Path, skips: Skips) -> list[LinkDoc]:
    lang = folder.name
    docs_path, mentions_path = folder / "docs.tsv", folder / "mentions.tsv"
    texts: dict[str, str] = {}
    no_text: set[str] = set()
    for line, row in _rows(docs_path, DOC_COLUMNS, skips):
        docid = row["docid"].strip()
        if not docid or Path(docid).name != docid or docid in (".", "..") or "\x00" in docid:
            skips.add(docs_path, line, "bad docid", repr(docid))
            continue
        if docid in texts or docid in no_text:
            skips.add(docs_path, line, "duplicate docid", docid)
            continue
        text_path = folder / "text" / docid
        try:
            raw = text_path.read_bytes()
            texts[docid] = raw.decode("utf-8")  # as bytes: offsets count every character, "\r" included
            expected, found = row.get("text_md5", "").strip().lower(), hashlib.md5(raw).hexdigest()
            if expected and found != expected:
                skips.add(
                    docs_path,
                    line,
                    TEXT_MD5_MISMATCH,
                    f"document {docid}: {text_path} has MD5 {found}, docs.tsv says {expected}",
                )
        except FileNotFoundError:
            no_text.add(docid)
            skips.add(docs_path, line, "document without text file", str(text_path))
        except (OSError, UnicodeDecodeError) as exc:
            no_text.add(docid)
            skips.add(docs_path, line, "unreadable text file", f"{text_path}: {exc}")
    gold: dict[str, list[GoldMention]] = defaultdict(list)
    for line, row in _rows(mentions_path, MENTION_COLUMNS, skips):
        docid = row["docid"].strip()
        try:
            start, length = int(row["position"]), int(row["length"])
        except ValueError:
            skips.add(mentions_path, line, "bad integer", f"position {row['position']!r}, length {row['length']!r}")
            continue
        if docid in no_text:
            skips.add(mentions_path, line, "mention of a document without text file", docid)
            continue
        text = texts.get(docid)
        if text is None:
            skips.add(mentions_path, line, "unknown docid", f"{docid!r} is not in docs.tsv")
            continue
        end = start + length
        if start < 0 or length <= 0 or end > len(text):
            skips.add(mentions_path, line, "span outside the text", f"{start}+{length}, text length {len(text)}")
            continue
        if text[start:end] != row["mention"]:
            skips.add(
                mentions_path,
                line,
                "mention does not match the text",
                f"text has {text[start:end]!r}, mention {row['mention']!r}",
            )
            continue
        key = row["qid"].strip()
        if not key:
            skips.add(mentions_path, line, "missing qid")
            continue
        gold[docid].append(GoldMention(start, end, row["mention"], key))
    return [
        LinkDoc(docid, lang, text, tuple(sorted(gold.get(docid, ()), key=lambda m: (m.start, m.end))))
        for docid, text in sorted(texts.items())
    ]


def read_mewsli(folder: str | Path, languages: Sequence[str] | None = None) -> LinkingSet:
    """Documents and gold mentions of a Mewsli-9 folder, sorted by language then docid.

    ``folder``: the ``dataset`` folder holding one folder per language (or the
    extraction script's output folder holding ``dataset``), or one language
    folder. ``languages``: the languages to read (default: all). Unusable rows
    are skipped and counted (see :class:`LinkingSet`).
    """
    skips = Skips()
    docs: list[LinkDoc] = []
    for lang_folder in _language_folders(Path(folder), languages):
        docs += _read_language(lang_folder, skips)
    return LinkingSet(tuple(docs), dict(skips.counts), tuple(skips.examples))


# -- evaluation ------------------------------------------------------------------------------------------------------
