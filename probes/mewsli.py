"""Reading Mewsli-9 (Botha et al., 2020), the multilingual entity-linking benchmark, into :class:`LinkingSet`.

Layout written by the Mewsli-9 extraction script (Botha et al., 2020)::

    dataset/<lang>/docs.tsv       docid  title  curid  revid  url  text_md5
    dataset/<lang>/mentions.tsv   docid  position  length  mention  url  lang  qid  qid_in_refs  freq_bin
    dataset/<lang>/text/<docid>   the clean text of one document (UTF-8)

Both TSV files have a header row; columns are found by name. ``position`` and
``length`` count Unicode characters of the clean text. Rows that cannot be used
(bytes that are not UTF-8, a bad integer, a wrong number of fields, a span outside
the text or not matching the mention, a bad or unknown document id, a document
without text file) are counted and skipped, never fatal; :class:`LinkingSet` keeps
the counts and the first few examples (``file:line: reason``). A missing TSV file,
a missing column or a folder without language folders is a :class:`kb.InputFormatError`.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kb.errors import InputFormatError
from probes.reading import Skips

#: Columns the reader needs (others are ignored).
DOC_COLUMNS = ("docid",)
MENTION_COLUMNS = ("docid", "position", "length", "mention", "qid")
#: The characters ``errors="surrogateescape"`` decodes bytes that are not UTF-8 to.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class GoldMention:
    """A gold mention: character span ``[start, end)``, its surface (``text[start:end]``) and entity key (QID or kb key)."""

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
        return f"LinkDoc({self.docid!r}, lang={self.lang!r}, {len(self.text):,} characters, {len(self.mentions)} mentions)"


@dataclass(frozen=True)
class LinkingSet:
    """Documents read from a Mewsli-9 folder, with the records skipped on the way.

    Iterating over it (or ``len``) goes over :attr:`docs`. ``skipped`` maps a
    reason ("bad integer", "mention does not match the text", ...) to how many
    records it skipped; ``examples`` are the first few as ``file:line: reason (detail)``.
    """

    docs: tuple[LinkDoc, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[LinkDoc]:
        return iter(self.docs)

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted({d.lang for d in self.docs}))

    @property
    def mentions(self) -> int:
        return sum(len(d.mentions) for d in self.docs)

    def __repr__(self) -> str:
        head = (f"LinkingSet({len(self.docs):,} documents, {self.mentions:,} mentions, "
                f"languages={', '.join(self.languages) or '-'}, skipped {sum(self.skipped.values()):,} records)")
        return "\n".join([head, *(f"  {reason}: {n:,}" for reason, n in self.skipped.items()),
                          *(f"  e.g. {e}" for e in self.examples)])


# -- reading ---------------------------------------------------------------------------------------------------------

def _is_language_folder(path: Path) -> bool:
    return any((path / name).exists() for name in ("docs.tsv", "mentions.tsv", "text"))


def _language_folders(folder: Path, languages: Sequence[str] | None) -> list[Path]:
    if not folder.is_dir():
        raise InputFormatError(f"{folder}: no such folder (expected the Mewsli-9 dataset folder or one of its language folders)")
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
            raise InputFormatError(f"{folder}: no language folders inside; expected the Mewsli-9 layout "
                                "<lang>/docs.tsv, <lang>/mentions.tsv, <lang>/text/<docid>")
    if languages:
        have = {d.name: d for d in found}
        missing = [l for l in languages if l not in have]
        if missing:
            raise InputFormatError(f"{folder}: no folder for language {', '.join(missing)}; "
                                f"languages here: {', '.join(sorted(have))}")
        found = [have[l] for l in sorted(set(languages))]
    for d in found:
        for name in ("docs.tsv", "mentions.tsv"):
            if not (d / name).is_file():
                raise InputFormatError(f"{d / name}: missing; every Mewsli-9 language folder has docs.tsv, mentions.tsv and text/")
    return found


def _rows(path: Path, required: Sequence[str], skips: Skips) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: value}) for every well-formed data row of a TSV file with a header row.

    A row with bytes that are not UTF-8 is skipped like any other bad row (the rest of the file is read)."""
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader)
        except StopIteration:
            raise InputFormatError(f"{path}: empty file; expected a header row with {', '.join(required)}") from None
        except csv.Error as exc:
            raise InputFormatError(f"{path}, line 1: unreadable header ({exc})") from None
        header = [h.strip() for h in header]
        if _NOT_UTF8.search("".join(header)):
            raise InputFormatError(f"{path}, line 1: the header row has bytes that are not UTF-8")
        missing = [c for c in required if c not in header]
        if missing:
            raise InputFormatError(f"{path}: no column {', '.join(map(repr, missing))} in the header row "
                                f"(found {', '.join(header)}); expected at least {', '.join(required)}")
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                skips.add(path, reader.line_num, "unreadable row", str(exc))
                continue
            if not row:
                continue
            if _NOT_UTF8.search("\t".join(row)):
                skips.add(path, reader.line_num, "bytes that are not UTF-8")
                continue
            if len(row) != len(header):
                skips.add(path, reader.line_num, "wrong number of fields", f"{len(row)} instead of {len(header)}")
                continue
            yield reader.line_num, dict(zip(header, row))


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
            with text_path.open(encoding="utf-8", newline="") as f:  # newline="": offsets count every character
                texts[docid] = f.read()
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
            skips.add(mentions_path, line, "mention does not match the text",
                      f"text has {text[start:end]!r}, mention {row['mention']!r}")
            continue
        key = row["qid"].strip()
        if not key:
            skips.add(mentions_path, line, "missing qid")
            continue
        gold[docid].append(GoldMention(start, end, row["mention"], key))
    return [LinkDoc(docid, lang, text, tuple(sorted(gold.get(docid, ()), key=lambda m: (m.start, m.end))))
            for docid, text in sorted(texts.items())]


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
