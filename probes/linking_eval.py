"""Entity-linking evaluation: reading Mewsli-9 and scoring a :class:`mluke.linking.Linker` on it.

Layout written by the Mewsli-9 extraction script (Botha et al., 2020)::

    dataset/<lang>/docs.tsv       docid  title  curid  revid  url  text_md5
    dataset/<lang>/mentions.tsv   docid  position  length  mention  url  lang  qid  qid_in_refs  freq_bin
    dataset/<lang>/text/<docid>   the clean text of one document (UTF-8)

Both TSV files have a header row; columns are found by name. ``position`` and
``length`` count Unicode characters of the clean text. Rows that cannot be used
(a bad integer, a wrong number of fields, a span outside the text or not
matching the mention, an unknown document, a document without text file) are
counted and skipped, never fatal; :class:`LinkingSet` keeps the counts and the
first few examples (``file:line: reason``). A missing TSV file, a missing
column or a folder without language folders is a :class:`kb.InputFormatError`.

:func:`evaluate_linking` scores each method of the linker per language:

- **in-KB accuracy**: the gold spans are given to the linker (``spans=``); a
  mention is correct when the chosen entity is the gold one. The denominator is
  the gold mentions whose entity is in the kb (``in_kb``); the others can never
  be right and are only counted (``mentions``).
- **ambiguous accuracy**: the same, restricted to the in-KB mentions whose
  surface has at least two candidates in the linker's mention index.
- **end to end** (``end_to_end=True``): the linker detects mentions itself; the
  non-NIL ones are compared with every gold mention on exact (start, end,
  entity): precision, recall and F1, micro-averaged over the documents.

The ``"all"`` rows are micro averages over every mention of every language.
"""

from __future__ import annotations

import csv
import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db import chunked
from kb.errors import InputFormatError, MlukeError, OptionError
from kb.files import json_text, write_json

#: Columns the reader needs (others are ignored).
DOC_COLUMNS = ("docid",)
MENTION_COLUMNS = ("docid", "position", "length", "mention", "qid")
#: How many examples of each skip reason :class:`LinkingSet` keeps.
MAX_EXAMPLES = 3
METRIC_COLUMNS = ("lang", "method", "docs", "mentions", "in_kb", "correct", "accuracy", "ambiguous", "ambiguous_correct",
                  "ambiguous_accuracy", "detected", "true_positives", "precision", "recall", "f1")


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

class _Skips:
    """Counts of skipped records per reason and the first few examples of each."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def add(self, path: Path, line: int, reason: str, detail: str = "") -> None:
        self.counts[reason] += 1
        if self.counts[reason] <= MAX_EXAMPLES:
            self.examples.append(f"{path}:{line}: {reason}" + (f" ({detail})" if detail else ""))


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


def _rows(path: Path, required: Sequence[str], skips: _Skips) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: value}) for every well-formed data row of a TSV file with a header row."""
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader)
        except StopIteration:
            raise InputFormatError(f"{path}: empty file; expected a header row with {', '.join(required)}") from None
        except csv.Error as exc:
            raise InputFormatError(f"{path}, line 1: unreadable header ({exc})") from None
        header = [h.strip() for h in header]
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
            if len(row) != len(header):
                skips.add(path, reader.line_num, "wrong number of fields", f"{len(row)} instead of {len(header)}")
                continue
            yield reader.line_num, dict(zip(header, row))


def _read_language(folder: Path, skips: _Skips) -> list[LinkDoc]:
    lang = folder.name
    docs_path, mentions_path = folder / "docs.tsv", folder / "mentions.tsv"
    texts: dict[str, str] = {}
    no_text: set[str] = set()
    for line, row in _rows(docs_path, DOC_COLUMNS, skips):
        docid = row["docid"].strip()
        if not docid or Path(docid).name != docid or docid in (".", ".."):
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
    skips = _Skips()
    docs: list[LinkDoc] = []
    for lang_folder in _language_folders(Path(folder), languages):
        docs += _read_language(lang_folder, skips)
    return LinkingSet(tuple(docs), dict(skips.counts), tuple(skips.examples))


# -- evaluation ------------------------------------------------------------------------------------------------------

def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


@dataclass
class _Counts:
    docs: int = 0
    mentions: int = 0
    in_kb: int = 0
    correct: int = 0
    ambiguous: int = 0
    ambiguous_correct: int = 0
    detected: int = 0
    true_positives: int = 0

    def add(self, other: _Counts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def row(self, lang: str, method: str, end_to_end: bool) -> dict[str, Any]:
        precision = _ratio(self.true_positives, self.detected) if end_to_end else None
        recall = _ratio(self.true_positives, self.mentions) if end_to_end else None
        f1 = None
        if precision is not None and recall is not None:
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"lang": lang, "method": method, "docs": self.docs, "mentions": self.mentions, "in_kb": self.in_kb,
                "correct": self.correct, "accuracy": _ratio(self.correct, self.in_kb), "ambiguous": self.ambiguous,
                "ambiguous_correct": self.ambiguous_correct,
                "ambiguous_accuracy": _ratio(self.ambiguous_correct, self.ambiguous),
                "detected": self.detected if end_to_end else None,
                "true_positives": self.true_positives if end_to_end else None,
                "precision": precision, "recall": recall, "f1": f1}


def _pct(value: float | None) -> float | str:
    return "-" if value is None else round(100 * value, 1)


@dataclass
class LinkingReport:
    """Per (language, method) linking scores (see the module docs), with the ``"all"`` micro-average rows.

    ``rows``: dicts with lang, method, docs, mentions, in_kb, correct, accuracy,
    ambiguous, ambiguous_correct, ambiguous_accuracy, detected, true_positives,
    precision, recall, f1 (ratios in [0, 1]; ``None`` where undefined or not
    measured). ``skipped`` / ``skipped_examples``: what the reader skipped.
    """

    rows: list[dict[str, Any]]
    methods: tuple[str, ...]
    end_to_end: bool = True
    nil_threshold: float | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[str] = field(default_factory=list)

    def row(self, lang: str, method: str) -> dict[str, Any]:
        """The row of one language (or ``"all"``) and method."""
        for r in self.rows:
            if r["lang"] == lang and r["method"] == method:
                return r
        raise MlukeError(f"no row for language {lang!r} and method {method!r} in this report")

    @property
    def languages(self) -> list[str]:
        return list(dict.fromkeys(r["lang"] for r in self.rows if r["lang"] != "all"))

    @property
    def documents(self) -> int:
        """Documents evaluated (all languages)."""
        return next((r["docs"] for r in self.rows if r["lang"] == "all"), 0)

    def to_dict(self) -> dict[str, Any]:
        return {"methods": list(self.methods), "end_to_end": self.end_to_end, "nil_threshold": self.nil_threshold,
                "rows": self.rows, "skipped": self.skipped, "skipped_examples": self.skipped_examples}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkingReport:
        """The inverse of :meth:`to_dict` (e.g. ``LinkingReport.from_dict(json.loads(text))``)."""
        return cls([dict(r) for r in data["rows"]], tuple(data["methods"]), data.get("end_to_end", True),
                   data.get("nil_threshold"), dict(data.get("skipped", {})), list(data.get("skipped_examples", [])))

    def to_json(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """The report as JSON; also written to ``path`` when given (an existing file only with ``overwrite``)."""
        if path is not None:
            write_json(self.to_dict(), path, overwrite=overwrite)
        return json_text(self.to_dict())

    def to_pandas(self) -> Any:
        """One row per (language, method), the columns of :attr:`rows`."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(METRIC_COLUMNS))

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing: counts, then scores x100 rounded to one decimal ('-': undefined)."""
        columns = ["lang", "method", "mentions", "in KB", "acc", "ambiguous", "amb. acc"]
        if self.end_to_end:
            columns += ["P", "R", "F1"]
        rows = []
        for r in self.rows:
            row = [r["lang"], r["method"], r["mentions"], r["in_kb"], _pct(r["accuracy"]), r["ambiguous"],
                   _pct(r["ambiguous_accuracy"])]
            if self.end_to_end:
                row += [_pct(r["precision"]), _pct(r["recall"]), _pct(r["f1"])]
            rows.append(row)
        return columns, rows

    def to_markdown(self) -> str:
        """A markdown table: in-KB accuracy, ambiguous accuracy and end-to-end P/R/F1 (x100)."""
        columns, rows = self.table()
        lines = ["| " + " | ".join(columns) + " |", "|---|---|" + "---:|" * (len(columns) - 2)]
        lines += ["| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row) + " |" for row in rows]
        return "\n".join(lines)

    def __repr__(self) -> str:
        total = next((r["mentions"] for r in self.rows if r["lang"] == "all"), 0)
        head = (f"LinkingReport({len(self.languages)} languages, methods {', '.join(self.methods)}, {total:,} gold mentions"
                f"{'' if self.end_to_end else ', no end-to-end'}"
                f"{f', nil_threshold={self.nil_threshold}' if self.nil_threshold is not None else ''}"
                f"{f', skipped {sum(self.skipped.values()):,} records' if self.skipped else ''})")
        return head + "\n" + self.to_markdown()


def eval_link(folder: str | Path, *, langs: Sequence[str] | None = None,
              methods: Sequence[str] = ("prior", "model", "combined", "global"), model: Any = None, kb: Any = None,
              end_to_end: bool = True, nil_threshold: float | None = None, progress: bool = True) -> LinkingReport:
    """Evaluate linking on a Mewsli-9 folder: what ``mluke eval-link`` does.

    Reads the folder (:func:`read_mewsli`; ``langs``: some languages only), links
    its documents with a :class:`mluke.linking.Linker` of ``model`` and ``kb``
    (defaults: the demo model and the embedded kb) and scores each method
    (:func:`evaluate_linking`). A folder with no usable document is an error
    that counts what was skipped.
    """
    from mluke.linking import Linker, check_methods

    methods = check_methods(methods, "methods")
    data = read_mewsli(folder, langs)
    if not data.docs:
        raise InputFormatError(f"{folder}: no usable documents ({sum(data.skipped.values())} records skipped)")
    linker = Linker(model, kb, languages=list(data.languages))
    return evaluate_linking(data, linker, methods=methods, end_to_end=end_to_end, nil_threshold=nil_threshold,
                            progress=progress)


def evaluate_linking(docs: LinkingSet | Iterable[LinkDoc], linker: Any, *,
                     methods: Sequence[str] = ("prior", "model", "combined", "global"), end_to_end: bool = True,
                     nil_threshold: float | None = None, progress: bool = True, batch_docs: int = 16) -> LinkingReport:
    """Score ``linker`` (a :class:`mluke.linking.Linker`) on gold-annotated documents; see the module docs.

    ``methods``: the linker's methods to compare. ``end_to_end``: also let the
    linker detect the mentions itself and report precision / recall / F1 against
    every gold mention (exact span and entity). ``nil_threshold`` is passed to
    the linker (a NIL prediction is never correct). ``batch_docs`` documents go
    to :meth:`Linker.link` at a time.
    """
    from tqdm import tqdm

    from mluke.linking import check_methods

    methods = check_methods(methods, "methods")
    if batch_docs < 1:
        raise OptionError(f"batch_docs={batch_docs}: expected at least 1")
    skipped = dict(docs.skipped) if isinstance(docs, LinkingSet) else {}
    examples = list(docs.examples) if isinstance(docs, LinkingSet) else []
    by_lang: dict[str, list[LinkDoc]] = defaultdict(list)
    for doc in docs:
        if not isinstance(doc, LinkDoc):
            raise MlukeError(f"evaluate_linking expects LinkDoc objects (see read_mewsli), got {type(doc).__name__}")
        by_lang[doc.lang].append(doc)
    indexed = getattr(linker.index, "languages", None)
    missing = [l for l in by_lang if indexed is not None and l not in indexed]
    if missing:
        raise MlukeError(f"the linker's mention index has no language {', '.join(missing)} (it has {', '.join(indexed)}); "
                         "build the Linker with languages=[...] that include them")

    db = linker.db

    @functools.cache
    def known(key: str) -> bool:
        return key in db

    @functools.cache
    def is_ambiguous(lang: str, surface: str) -> bool:
        return len(linker.index.candidates(lang, surface)) >= 2

    passes = len(methods) * (2 if end_to_end else 1)
    total = sum(len(v) for v in by_lang.values()) * passes
    counts: dict[tuple[str, str], _Counts] = {}
    with tqdm(total=total, desc="linking", unit="doc", disable=not progress) as bar:
        for lang in sorted(by_lang):
            lang_docs = by_lang[lang]
            with_gold = [d for d in lang_docs if d.mentions]
            for method in methods:
                c = counts[(lang, method)] = _Counts(docs=len(lang_docs))
                bar.set_description(f"{lang} {method}")
                for part in chunked(with_gold, batch_docs):
                    found = linker.link([d.text for d in part], lang, method=method, nil_threshold=nil_threshold,
                                        spans=[[(m.start, m.end) for m in d.mentions] for d in part])
                    for doc, predicted in zip(part, found):
                        for gold, pred in zip(doc.mentions, predicted):
                            c.mentions += 1
                            if not known(gold.key):
                                continue
                            hit = not pred.nil and pred.key == gold.key
                            c.in_kb += 1
                            c.correct += hit
                            if is_ambiguous(lang, gold.surface):
                                c.ambiguous += 1
                                c.ambiguous_correct += hit
                    bar.update(len(part))
                bar.update(len(lang_docs) - len(with_gold))  # documents without gold mentions: nothing to link
                if not end_to_end:
                    continue
                bar.set_description(f"{lang} {method} end to end")
                for part in chunked(lang_docs, batch_docs):
                    found = linker.link([d.text for d in part], lang, method=method, nil_threshold=nil_threshold)
                    for doc, predicted in zip(part, found):
                        got = Counter((m.start, m.end, m.key) for m in predicted if not m.nil)
                        want = Counter((m.start, m.end, m.key) for m in doc.mentions)
                        c.detected += sum(got.values())
                        c.true_positives += sum((got & want).values())
                    bar.update(len(part))
    rows = []
    for lang in sorted(by_lang):
        rows += [counts[(lang, m)].row(lang, m, end_to_end) for m in methods]
    for method in methods:
        overall = _Counts()
        for lang in by_lang:
            overall.add(counts[(lang, method)])
        rows.append(overall.row("all", method, end_to_end))
    return LinkingReport(rows, methods, end_to_end, nil_threshold, skipped, examples)
