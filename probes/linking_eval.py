"""Entity-linking evaluation: scoring a :class:`mluke.Linker` on gold-annotated documents
(:mod:`probes.mewsli` reads Mewsli-9).

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

Linkers of different models compare in one report: ``evaluate_linking(docs, {"knowbert": KnowBertLinker(...),
"combined": linker, "global": linker})`` scores each method with its own linker (a KnowBert model's
integrated linker, :mod:`mluke.linking.knowbert`, next to the mLUKE methods); :func:`eval_link` does it with
``knowbert_model=``.
"""

from __future__ import annotations

import functools
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb.db import chunked
from kb.errors import InputFormatError, MlukeError, OptionError, option
from kb.files import json_text, string_list, write_json
from kb.renamed import renamed_keyword
from mluke.options import LinkOptions, check_methods

if TYPE_CHECKING:
    import pandas as pd

    from kb.db import EntityDB
    from kb.jsontypes import JsonObject
    from mluke.linking.linker import Linker
    from mluke.models.checkpoint import Mluke
from probes.mewsli import LinkDoc, LinkingSet, read_mewsli

METRIC_COLUMNS = (
    "lang",
    "method",
    "docs",
    "mentions",
    "in_kb",
    "correct",
    "accuracy",
    "ambiguous",
    "ambiguous_correct",
    "ambiguous_accuracy",
    "detected",
    "true_positives",
    "precision",
    "recall",
    "f1",
)


#: The methods :func:`evaluate_linking` compares by default (with one linker).
DEFAULT_METHODS: tuple[str, ...] = ("prior", "model", "combined", "global")


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


class _Counts(Counter[str]):
    """What one (language, method) pass counted (a missing count is 0): ``docs``, ``mentions``, ``in_kb``,
    ``correct``, ``ambiguous``, ``ambiguous_correct``; end to end, ``detected`` and ``true_positives``."""

    def row(self, lang: str, method: str, end_to_end: bool) -> dict[str, Any]:
        precision = _ratio(self["true_positives"], self["detected"]) if end_to_end else None
        recall = _ratio(self["true_positives"], self["mentions"]) if end_to_end else None
        f1 = None
        if precision is not None and recall is not None:
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "lang": lang,
            "method": method,
            **{k: self[k] for k in ("docs", "mentions", "in_kb", "correct")},
            "accuracy": _ratio(self["correct"], self["in_kb"]),
            "ambiguous": self["ambiguous"],
            "ambiguous_correct": self["ambiguous_correct"],
            "ambiguous_accuracy": _ratio(self["ambiguous_correct"], self["ambiguous"]),
            **{k: self[k] if end_to_end else None for k in ("detected", "true_positives")},
            "precision": precision,
            "recall": recall,
            "f1": f1,
        }


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

    def to_dict(self) -> JsonObject:
        return {
            "methods": list(self.methods),
            "end_to_end": self.end_to_end,
            "nil_threshold": self.nil_threshold,
            "rows": self.rows,
            "skipped": self.skipped,
            "skipped_examples": self.skipped_examples,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkingReport:
        """The inverse of :meth:`to_dict` (e.g. ``LinkingReport.from_dict(json.loads(text))``)."""
        return cls(
            [dict(r) for r in data["rows"]],
            tuple(data["methods"]),
            data.get("end_to_end", True),
            data.get("nil_threshold"),
            dict(data.get("skipped", {})),
            list(data.get("skipped_examples", [])),
        )

    def to_json(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """The report as JSON; also written to ``path`` when given (an existing file only with ``overwrite``)."""
        if path is not None:
            write_json(self.to_dict(), path, overwrite=overwrite)
        return json_text(self.to_dict())

    def to_pandas(self) -> pd.DataFrame:
        """One row per (language, method), the columns of :attr:`rows`."""
        import pandas as pd

        # pandas-stubs types DataFrame(list of rows) as Any
        return cast("pd.DataFrame", pd.DataFrame(self.rows, columns=list(METRIC_COLUMNS)))

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing: counts, then scores x100 rounded to one decimal ('-': undefined)."""
        columns = ["lang", "method", "mentions", "in KB", "acc", "ambiguous", "amb. acc"]
        if self.end_to_end:
            columns += ["P", "R", "F1"]
        rows = []
        for r in self.rows:
            row = [
                r["lang"],
                r["method"],
                r["mentions"],
                r["in_kb"],
                _pct(r["accuracy"]),
                r["ambiguous"],
                _pct(r["ambiguous_accuracy"]),
            ]
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
        head = (
            f"LinkingReport({len(self.languages)} languages, methods {', '.join(self.methods)}, {total:,} gold mentions"
            f"{'' if self.end_to_end else ', no end-to-end'}"
            f"{f', nil_threshold={self.nil_threshold}' if self.nil_threshold is not None else ''}"
            f"{f', skipped {sum(self.skipped.values()):,} records' if self.skipped else ''})"
        )
        return head + "\n" + self.to_markdown()


@renamed_keyword("kb", "db")
def eval_link(
    folder: str | os.PathLike[str],
    *,
    langs: str | Sequence[str] | None = None,
    methods: str | Sequence[str] = ("prior", "model", "combined", "global"),
    model: Mluke | str | os.PathLike[str] | None = None,
    db: EntityDB | str | os.PathLike[str] | None = None,
    end_to_end: bool = True,
    nil_threshold: float | None = None,
    progress: bool = True,
    knowbert_model: str | os.PathLike[str] | None = None,
) -> LinkingReport:
    """Evaluate linking on a Mewsli-9 folder: what ``mluke eval-link`` does.

    Reads the folder (:func:`read_mewsli`), links its documents with a :class:`mluke.Linker` of
    ``model`` and ``db`` (method "knowbert": a :class:`mluke.KnowBertLinker` of ``knowbert_model``)
    and scores each method (:func:`evaluate_linking`).

    Args:
        folder: the Mewsli-9 ``dataset`` folder, or one language folder.
        langs: some languages only (one string: one language; default: every language folder found).
        methods: the linking methods to compare (one string: one method).
        model: a loaded bundle, checkpoint folder or hub name; default: the demo model.
        db: an :class:`kb.EntityDB` or its path; default: the embedded kb (``kb=``: deprecated).
        end_to_end: also score the linker's own mentions (precision, recall, F1).
        nil_threshold: mentions below this confidence are NIL (see :func:`evaluate_linking`).
        progress: a progress bar.
        knowbert_model: the KnowBert model folder method "knowbert" links with (``mluke knowbert train``'s
            ``RUN/model``).

    Returns:
        The :class:`LinkingReport`.

    Raises:
        InputFormatError: a folder with no usable document (counting what was skipped).
        OptionError: an unknown method, or "knowbert" without ``knowbert_model``.
    """
    from mluke.linking.knowbert import open_linker

    methods = check_methods(methods, "methods")
    if "knowbert" in methods and knowbert_model is None:
        raise OptionError(
            "method 'knowbert' needs {knowbert_model} (the folder 'mluke knowbert train' writes: RUN/model)",
            options={"knowbert_model": option("knowbert_model", "RUN/model")},
        )
    data = read_mewsli(os.fspath(folder), string_list(langs, "langs"))
    if not data.docs:
        raise InputFormatError(f"{folder}: no usable documents ({sum(data.skipped.values())} records skipped)")
    languages = list(data.languages)
    linkers: dict[str, Linker] = {}
    if any(m != "knowbert" for m in methods):
        plain = open_linker(model, db, "combined", languages=languages)
        linkers |= {m: plain for m in methods if m != "knowbert"}
    if "knowbert" in methods:
        linkers["knowbert"] = open_linker(knowbert_model, db, "knowbert", languages=languages)
    return evaluate_linking(
        data, linkers, methods=methods, end_to_end=end_to_end, nil_threshold=nil_threshold, progress=progress
    )


def evaluate_linking(
    docs: LinkingSet | Iterable[LinkDoc],
    linker: Linker | Mapping[str, Linker],
    *,
    methods: Sequence[str] | None = None,
    end_to_end: bool = True,
    nil_threshold: float | None = None,
    progress: bool = True,
    batch_docs: int = 16,
) -> LinkingReport:
    """Score ``linker`` (a :class:`mluke.Linker`) on gold-annotated documents; see the module docs.

    ``linker`` may also map each method to its own linker (``{"knowbert": KnowBertLinker(...), "combined":
    Linker(...)}``: models compared in one report); the first one's kb and mention index decide which gold
    entities are in the kb and which mentions are ambiguous. ``methods``: the methods to compare (default
    with a mapping: its keys). A KnowBert linker's NULL decisions are NIL whatever ``nil_threshold``.
    ``end_to_end``: also let the linker detect the mentions itself and report precision / recall / F1 against
    every gold mention (exact span and entity). ``nil_threshold`` (a confidence in
    [0, 1]) is passed to the linker (a NIL prediction is never correct); ``None``
    scores the choice of entity alone: no mention with a candidate is NIL (threshold 0).
    ``batch_docs`` documents go to :meth:`Linker.link` at a time.
    """
    from tqdm import tqdm

    if methods is None:
        methods = list(linker) if isinstance(linker, Mapping) else DEFAULT_METHODS
    methods = check_methods(methods, "methods")
    linkers = _linkers(linker, methods)
    linker = linkers[methods[0]]
    threshold = 0.0 if nil_threshold is None else nil_threshold
    if batch_docs < 1:
        raise OptionError(f"batch_docs={batch_docs}: expected at least 1")
    skipped = dict(docs.skipped) if isinstance(docs, LinkingSet) else {}
    examples = list(docs.examples) if isinstance(docs, LinkingSet) else []
    by_lang: dict[str, list[LinkDoc]] = defaultdict(list)
    for doc in docs:
        if not isinstance(doc, LinkDoc):
            raise MlukeError(f"evaluate_linking expects LinkDoc objects (see read_mewsli), got {type(doc).__name__}")
        by_lang[doc.lang].append(doc)
    for each in {id(lk): lk for lk in linkers.values()}.values():
        indexed: list[str] | None = getattr(each.index, "languages", None)
        missing = [l for l in by_lang if indexed is not None and l not in indexed]
        if missing:
            raise MlukeError(
                f"the linker's mention index has no language {', '.join(missing)} (it has "
                f"{', '.join(indexed or [])}); build the Linker with languages=[...] that include them"
            )

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
                options = LinkOptions(method=method, nil_threshold=threshold)  # type: ignore[arg-type]
                bar.set_description(f"{lang} {method}")
                for part in chunked(with_gold, batch_docs):
                    found = linkers[method].link(
                        [d.text for d in part],
                        lang,
                        options=options,
                        spans=[[(m.start, m.end) for m in d.mentions] for d in part],
                    )
                    for doc, predicted in zip(part, found):
                        for gold, pred in zip(doc.mentions, predicted):
                            c["mentions"] += 1
                            if not known(gold.key):
                                continue
                            hit = not pred.nil and pred.key == gold.key
                            c["in_kb"] += 1
                            c["correct"] += hit
                            if is_ambiguous(lang, gold.surface):
                                c["ambiguous"] += 1
                                c["ambiguous_correct"] += hit
                    bar.update(len(part))
                bar.update(len(lang_docs) - len(with_gold))  # documents without gold mentions: nothing to link
                if not end_to_end:
                    continue
                bar.set_description(f"{lang} {method} end to end")
                for part in chunked(lang_docs, batch_docs):
                    found = linkers[method].link([d.text for d in part], lang, options=options)
                    for doc, predicted in zip(part, found):
                        got = Counter((m.start, m.end, m.key) for m in predicted if not m.nil)
                        want: Counter[tuple[int, int, str | None]] = Counter(
                            (m.start, m.end, m.key) for m in doc.mentions
                        )
                        c["detected"] += sum(got.values())
                        c["true_positives"] += sum((got & want).values())
                    bar.update(len(part))
    rows = []
    for lang in sorted(by_lang):
        rows += [counts[(lang, m)].row(lang, m, end_to_end) for m in methods]
    for method in methods:
        overall = _Counts()
        for lang in by_lang:
            overall.update(counts[(lang, method)])
        rows.append(overall.row("all", method, end_to_end))
    return LinkingReport(rows, methods, end_to_end, nil_threshold, skipped, examples)


def _linkers(linker: Linker | Mapping[str, Linker], methods: Sequence[str]) -> dict[str, Linker]:
    """The linker of each method: the one given, or each method's own from a mapping (all there)."""
    if not isinstance(linker, Mapping):
        return dict.fromkeys(methods, linker)
    missing = [m for m in methods if m not in linker]
    if missing:
        raise OptionError(f"no linker for method {', '.join(missing)} (the mapping has {', '.join(linker)})")
    return {m: linker[m] for m in methods}
