"""AIDA-CoNLL (Hoffart et al., 2011): the AIDA-YAGO2 TSV layout, and entity linking scored on it.

The file (``AIDA-YAGO2-dataset.tsv``) is CoNLL 2003 with links: a document starts at a line
``-DOCSTART- (947testa CRICKET)``, then one token a line, a blank line between sentences. A token inside a mention
has tab-separated columns::

    token  B|I  mention  YAGO2-title  Wikipedia-URL  Wikipedia-id  Freebase-mid
    token  B|I  mention  --NME--

``B`` starts a mention and ``I`` continues it; ``--NME--`` marks a mention of an entity outside YAGO2 (out of
the kb: NIL); the URL and ids may be missing. YAGO2 titles are Wikipedia titles with ``_`` for spaces and
``\\uXXXX`` escapes; they are read as titles. The split is in the document id: ``testa`` (947-1162, the
development set), ``testb`` (1163-1393, the test set), else ``train``.

The text of a document is its tokens joined by spaces, its sentences by line breaks; mentions are character
spans in it. Titles become entity keys (QIDs) through the kb's titles of ``en`` (redirects followed,
:meth:`kb.EntityDB.resolve_title`); a kb without a title table cannot map them, and a gold title the kb lacks
stays a gold link no system can get (its key is ``"title:<title>"``).

The scoring and the two linking passes (:func:`score_aida`, :func:`link_and_score`) take any documents with a
``text`` and ``mentions`` that have ``start`` and ``end`` (:class:`GoldDocument`): :mod:`probes.nif_eval` scores
GERBIL's NIF corpora with them.

Scores (:func:`score_aida`), as GERBIL computes them, strong annotation match, NIL handled the AIDA way:

- **A2KB** (GERBIL's experiment type for end-to-end linking: the system finds the mentions and links them): a
  predicted (span, entity) pair is correct when a gold mention has the same span and entity. Gold ``--NME--``
  mentions are not gold annotations, and predicted links on a gold ``--NME--`` span are left out (neither
  right nor wrong), as AIDA's evaluations and GERBIL's NIL-ignoring setting do; predicted NIL mentions are not
  annotations. Micro P/R/F1 sum true positives, false positives and false negatives over documents; macro
  P/R/F1 average each document's three figures (GERBIL: a document with no gold and no predicted annotation
  scores 1/1/1; otherwise a zero denominator gives 0).
- **D2KB** (GERBIL's disambiguation-only type: the gold mentions are given): in-kb accuracy, the share of
  gold mentions whose entity is in the kb that are linked to it (a NIL answer is wrong), micro over mentions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from kb.errors import InputFormatError, OptionError
from probes.reading import ReadSet, Skips, read_data_lines

NME = "--NME--"
SPLITS = ("train", "testa", "testb")
Split = Literal["train", "testa", "testb"]
_DOCSTART = re.compile(r"^-DOCSTART-\s*\((.*)\)\s*$")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass(frozen=True)
class AidaMention:
    """One gold mention: its character span in the document text, surface, YAGO2 title (None: ``--NME--``)
    and the Wikipedia URL, Wikipedia id and Freebase mid where given."""

    start: int
    end: int
    surface: str
    title: str | None
    url: str | None = None
    wikipedia_id: str | None = None
    mid: str | None = None

    @property
    def nil(self) -> bool:
        return self.title is None


@dataclass
class AidaDocument:
    """One document: its id (``947testa CRICKET``), split, text and gold mentions."""

    id: str
    split: str
    text: str
    mentions: list[AidaMention] = field(default_factory=list)


@dataclass
class AidaDataset(ReadSet[AidaDocument]):
    """Documents read from one file and the lines skipped (``path:line: reason``)."""

    documents: list[AidaDocument]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None

    def records(self) -> list[AidaDocument]:
        return self.documents

    def split(self, name: str) -> list[AidaDocument]:
        """The documents of one split (``train``, ``testa``, ``testb``)."""
        if name not in SPLITS:
            raise OptionError(f"split {name!r}: expected one of {', '.join(SPLITS)}")
        return [d for d in self.documents if d.split == name]

    def __repr__(self) -> str:
        mentions = sum(len(d.mentions) for d in self.documents)
        head = f"AidaDataset({len(self.documents):,} documents, {mentions:,} mentions)"
        return self._described(head, self.examples_skipped)


def yago_title(name: str) -> str:
    """A YAGO2 entity name as a Wikipedia title: ``\\uXXXX`` escapes decoded, ``_`` as spaces."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name).replace("_", " ")


def split_of(doc_id: str) -> str:
    """The split of a document id: ``testa``/``testb`` when the id's number carries it, else ``train``."""
    head = doc_id.split(" ", 1)[0]
    return "testa" if head.endswith("testa") else "testb" if head.endswith("testb") else "train"


class _Builder:
    """Collects one document's text and mentions as its lines are read."""

    def __init__(self, doc_id: str) -> None:
        self.id, self.length = doc_id, 0
        self.parts: list[str] = []
        self.mentions: list[AidaMention] = []
        self.open: list[Any] | None = None  # [start, end, surface, title, url, wikipedia_id, mid]
        self.line_start = True

    def token(self, token: str) -> tuple[int, int]:
        if self.parts:
            sep = "\n" if self.line_start else " "
            self.parts.append(sep)
            self.length += 1
        self.line_start = False
        start = self.length
        self.parts.append(token)
        self.length += len(token)
        return start, self.length

    def close(self) -> None:
        if self.open is not None:
            start, end, surface, title, url, wid, mid = self.open
            self.mentions.append(AidaMention(start, end, surface, title, url, wid, mid))
            self.open = None

    def document(self) -> AidaDocument:
        self.close()
        return AidaDocument(self.id, split_of(self.id), "".join(self.parts), self.mentions)


def read_aida(path: str | os.PathLike[str]) -> AidaDataset:
    """Documents of an AIDA-YAGO2 TSV file (see the module docs).

    Bad lines (a mention line with a tag other than ``B``/``I``, an ``I`` without a mention before it, token
    lines before the first ``-DOCSTART-``) are counted and skipped.

    Raises:
        InputFormatError: a missing file or one without any document.
    """
    path = Path(path)
    lines, _encoding = read_data_lines(path)
    skips = Skips()
    docs: list[AidaDocument] = []
    doc: _Builder | None = None
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        start = _DOCSTART.match(line)
        if start:
            if doc is not None:
                docs.append(doc.document())
            doc = _Builder(start.group(1).strip())
            continue
        if not line.strip():
            if doc is not None:
                doc.close()
                doc.line_start = True
            continue
        if doc is None:
            skips.add(path, number, "token before the first -DOCSTART-")
            continue
        cols = line.split("\t")
        if len(cols) == 1:
            doc.close()
            doc.token(cols[0])
            continue
        tag = cols[1]
        if tag not in ("B", "I") or len(cols) < 4:
            skips.add(path, number, "bad mention line", "expected token, B or I, mention, title (4 to 7 columns)")
            doc.close()
            doc.token(cols[0])
            continue
        if tag == "I" and doc.open is None:
            skips.add(path, number, "I without a mention before it")
        if tag == "B":
            doc.close()
        span = doc.token(cols[0])
        if tag == "B" or doc.open is None:
            title = None if cols[3] == NME else yago_title(cols[3])
            extra = [c or None for c in cols[4:7]] + [None] * (7 - max(len(cols), 4))
            doc.open = [span[0], span[1], cols[2], title, *extra[:3]]
        else:
            doc.open[1] = span[1]
    if doc is not None:
        docs.append(doc.document())
    if not docs:
        raise InputFormatError(skips.nothing_read(path, "AIDA document (a -DOCSTART- line)"))
    return AidaDataset(docs, dict(skips.counts), skips.examples, str(path))


# -- scoring -------------------------------------------------------------------------------------------------------

#: A prediction: (start, end, entity key), NIL predictions left out.
Link = tuple[int, int, str]

#: How a gold key starts when the kb lacks its entity (AIDA: ``"title:<title>"``; NIF: ``"iri:<IRI>"``): a gold
#: link no linker can get.
UNMAPPED_PREFIXES = ("title:", "iri:")


class GoldSpan(Protocol):
    """A gold mention as the scorer sees it: its character span."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


class GoldDocument(Protocol):
    """A gold document as the scorer sees it: its text and its mentions, in the order of their keys."""

    @property
    def text(self) -> str: ...

    @property
    def mentions(self) -> Sequence[GoldSpan]: ...


def unmapped(key: str) -> bool:
    """Whether a gold key names an entity the kb lacks (see :data:`UNMAPPED_PREFIXES`)."""
    return key.startswith(UNMAPPED_PREFIXES)


def gold_keys(documents: Sequence[AidaDocument], db: Any, lang: str = "en") -> list[list[str | None]]:
    """Each gold mention's entity key: the kb's key of its title (None for ``--NME--``; ``"title:<title>"`` when the
    kb lacks the title).

    Raises:
        OptionError: a kb without titles in ``lang`` (the titles cannot be mapped; build the kb with its
            Wikipedia titles, ``mluke kb build``, or give one that has them).
    """
    if lang not in getattr(db, "languages", (lang,)):
        raise OptionError(
            f"the kb has no titles in {lang!r}: AIDA's gold entities are {lang} Wikipedia titles; give a kb "
            "built with them (--db)"
        )
    out = []
    for d in documents:
        keys: list[str | None] = []
        for m in d.mentions:
            if m.title is None:
                keys.append(None)
            else:
                key = db.resolve_title(lang, m.title)
                keys.append(key if key is not None else f"title:{m.title}")
        out.append(keys)
    return out


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """GERBIL's per-document figures: 1/1/1 with nothing gold and nothing predicted, else 0 for a zero
    denominator."""
    if tp + fp == 0 and tp + fn == 0:
        return 1.0, 1.0, 1.0
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class AidaScores:
    """A2KB micro and macro strong-match P/R/F1, D2KB in-kb accuracy, and the counts behind them."""

    micro: dict[str, float]
    macro: dict[str, float]
    counts: dict[str, int]
    in_kb_accuracy: float | None = None
    documents: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a2kb_micro": self.micro,
            "a2kb_macro": self.macro,
            "d2kb_in_kb_accuracy": self.in_kb_accuracy,
            "counts": self.counts,
            "documents": self.documents,
            "notes": self.notes,
        }

    def table(self) -> tuple[list[str], list[list[Any]]]:
        rows: list[list[Any]] = [
            ["A2KB micro"] + [round(self.micro[k], 4) for k in ("precision", "recall", "f1")],
            ["A2KB macro"] + [round(self.macro[k], 4) for k in ("precision", "recall", "f1")],
        ]
        if self.in_kb_accuracy is not None:
            rows.append(["D2KB in-kb accuracy", "", "", round(self.in_kb_accuracy, 4)])
        return ["score", "precision", "recall", "F1 / accuracy"], rows


def score_aida(
    documents: Sequence[GoldDocument],
    keys: Sequence[Sequence[str | None]],
    predicted: Sequence[Iterable[Link]],
    disambiguated: Sequence[Sequence[str | None]] | None = None,
) -> AidaScores:
    """Score predicted links against the gold mentions (see the module docs).

    Args:
        documents: the gold documents (AIDA's, or any :class:`GoldDocument`).
        keys: each gold mention's entity key (:func:`gold_keys`; None: NIL; :func:`unmapped`: not in the kb).
        predicted: per document, the predicted (start, end, key) links (A2KB; NIL mentions left out).
        disambiguated: per document, the key predicted for each gold mention given as a span (D2KB; None: NIL).
    """
    if not len(documents) == len(keys) == len(predicted):
        raise OptionError("documents, keys and predictions pair up one per document")
    tp_all = fp_all = fn_all = 0
    per_doc = []
    for doc, gold_k, links in zip(documents, keys, predicted):
        gold = {(m.start, m.end, k) for m, k in zip(doc.mentions, gold_k) if k is not None}
        nil_spans = {(m.start, m.end) for m, k in zip(doc.mentions, gold_k) if k is None}
        pred = {(s, e, k) for s, e, k in links if (s, e) not in nil_spans}
        tp, fp, fn = len(pred & gold), len(pred - gold), len(gold - pred)
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
        per_doc.append(_prf(tp, fp, fn))
    p, r, f = _prf(tp_all, fp_all, fn_all) if per_doc else (0.0, 0.0, 0.0)
    n = len(per_doc)
    macro = [sum(x[i] for x in per_doc) / n if n else 0.0 for i in range(3)]
    counts = {"true_positives": tp_all, "false_positives": fp_all, "false_negatives": fn_all}
    counts["gold_nil"] = sum(1 for ks in keys for k in ks if k is None)
    counts["gold_not_in_kb"] = sum(1 for ks in keys for k in ks if k is not None and unmapped(k))
    scores = AidaScores(
        {"precision": p, "recall": r, "f1": f},
        {"precision": macro[0], "recall": macro[1], "f1": macro[2]},
        counts,
        documents=n,
    )
    if disambiguated is not None:
        right = total = 0
        for gold_k, got in zip(keys, disambiguated):
            for k, g in zip(gold_k, got):
                if k is not None and not unmapped(k):
                    total += 1
                    right += g == k
        scores.in_kb_accuracy = right / total if total else None
        counts["in_kb_mentions"] = total
    return scores


#: Links a list of texts: ``linker(texts, spans)`` gives, per text, mentions with ``start``, ``end``, ``key``
#: and ``nil`` (``spans``: link these spans, one list per text; None: find the mentions).
Linker = Callable[[list[str], "list[list[tuple[int, int]]] | None"], Sequence[Sequence[Any]]]


def eval_aida(
    path: str | os.PathLike[str],
    *,
    split: str = "testb",
    db: Any = None,
    model: Any = None,
    limit: int | None = None,
    linker: Linker | None = None,
    **link_options: Any,
) -> AidaScores:
    """Link the documents of one split with :func:`mluke.link` and score them (what ``mluke eval-aida`` does):
    A2KB end to end, then D2KB with the gold mentions.

    Args:
        path: the AIDA-YAGO2 TSV file.
        split: ``testb`` (the test set), ``testa`` (development) or ``train``.
        db: the kb (its ``en`` titles map the gold titles to keys); default: the embedded kb.
        model: the linking model (default: the embedded demo model).
        limit: only the first documents of the split.
        linker: link with this instead of :func:`mluke.link` (see :data:`Linker`).
        **link_options: the fields of :class:`mluke.LinkOptions` (``method="prior"``, ...).
    """
    import kb as kb_package

    data = read_aida(path)
    documents = data.split(split)[:limit] if limit is not None else data.split(split)
    if not documents:
        raise InputFormatError(f"{path}: no document of split {split!r}")
    database = kb_package.open_db(db) if not hasattr(db, "resolve_title") else db
    keys = gold_keys(documents, database)
    scores = link_and_score(documents, keys, "en", db=database, model=model, linker=linker, **link_options)
    if data.skipped:
        scores.notes.insert(0, f"{sum(data.skipped.values())} lines skipped: {', '.join(data.examples_skipped[:3])}")
    return scores


def link_and_score(
    documents: Sequence[GoldDocument],
    keys: Sequence[Sequence[str | None]],
    lang: str,
    *,
    db: Any,
    model: Any = None,
    linker: Linker | None = None,
    **link_options: Any,
) -> AidaScores:
    """Link the documents twice and score them with :func:`score_aida`: once end to end (A2KB), once with the gold
    mentions given as spans (D2KB); a note counts the gold keys the kb lacks.

    Args:
        documents: the gold documents.
        keys: each gold mention's key (None: NIL).
        lang: the language of the texts.
        db: the open kb the keys come from.
        model: the linking model (default: the embedded demo model).
        linker: link with this instead of :func:`mluke.link` (see :data:`Linker`).
        **link_options: the fields of :class:`mluke.LinkOptions`.
    """
    if linker is None:
        import mluke

        def link_with_mluke(texts: list[str], spans: list[list[tuple[int, int]]] | None) -> Sequence[Sequence[Any]]:
            return cast(
                "Sequence[Sequence[Any]]",
                mluke.link(texts, lang, db=db, model=model, spans=spans, **link_options),
            )

        linker = link_with_mluke

    texts = [d.text for d in documents]
    found = linker(texts, None)
    predicted = [[(m.start, m.end, m.key) for m in ms if not m.nil and m.key] for ms in found]
    gold_spans = [[(m.start, m.end) for m in d.mentions] for d in documents]
    given = linker(texts, gold_spans)
    disambiguated = [_by_span(d, ms) for d, ms in zip(documents, given)]
    scores = score_aida(documents, keys, predicted, disambiguated)
    if missing := scores.counts["gold_not_in_kb"]:
        scores.notes.append(f"{missing} gold entities are not in the kb: counted as gold links no linker can get")
    return scores


def _by_span(doc: GoldDocument, mentions: Sequence[Any]) -> list[str | None]:
    """The key linked at each gold mention's span (None: NIL or not returned)."""
    got = {(m.start, m.end): (None if m.nil else m.key) for m in mentions}
    return [got.get((m.start, m.end)) for m in doc.mentions]
