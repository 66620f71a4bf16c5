"""X-FACTR (Jiang et al., EMNLP 2020): its data layout, its templates' marks, and probing scored by its rule.

The layout of the repository's ``data/`` folder (the ``mlamaf`` set)::

    mTRExf/sub/P19.jsonl          facts: {"sub_uri": "Q..", "sub_label": .., "obj_uri": "Q..", "obj_label": ..}
    mTRExf_unicode_escape.txt     names: QID<TAB>"label"@lang<TAB>"label"@lang ... (``\\uXXXX`` escapes)
    mTRExf_gender.txt             QID<TAB>gender (optional)
    mTRExf_instanceof.txt         QID<TAB>Qclass,label<TAB>... (optional)
    lang_resource/<lang>/articles.txt  word<TAB>KEY (optional; fr and el, beside data/ in X-FACTR's repository)
    alias/mTRExf/<lang>.txt       aliases: QID<TAB>alias<TAB>alias ...
    TREx_prompts.csv              templates: pid,relation,en,zh,fr,... with [X] and [Y]

A fact's subject and object are named in the asked language, else in English (as X-FACTR's probe does).

Templates carry marks that agree with the subject or the object (articles, prepositions, gender and number choices,
case marks): :mod:`probes.xfactr_marks` fills them by X-FACTR's rules, with the genders of ``mTRExf_gender.txt``,
the classes of ``mTRExf_instanceof.txt`` and the article tables the folder ships (``data/lang_resource/``) or
the embedded ones. What X-FACTR does with trained inflection models (the case of a name in el, ru, tr, hu, bn) is
not done, and :attr:`XfactrReport.notes` names the relations per language.

Scoring, X-FACTR's rule: a prediction (the best of 1..``max_pieces`` masks, decoded by
:func:`mluke.probing.decoding.decode`, ``independent``, ``left-to-right`` or ``confidence``) is right when it
equals the object's label or one of its aliases in the language exactly (surrounding spaces aside), each in the
form the template asks (Turkish ``[Y;be]``: ``Ankara'dır``). Accuracy
per relation, then the macro average over the relations of each language.

Any masked LM probes (an mLUKE checkpoint, or BERT, XLM-R, ... as :mod:`mluke.models.word_models` loads them);
:func:`compare_xfactr` puts several side by side.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import InputFormatError
from probes.xfactr_marks import Entity, Filled, Marks

if TYPE_CHECKING:
    from mluke.opening import ModelSource
    from probes.comparison import Comparison

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass(frozen=True)
class XfactrFact:
    """One fact, named in the probed language: the subject, the object and the object's aliases there; the
    genders (``MASC``, ``FEM`` or None) and instance-of lines of both, which the template's marks agree with."""

    subject_id: str
    subject: str
    object_id: str
    object: str
    aliases: tuple[str, ...] = ()
    subject_gender: str | None = None
    object_gender: str | None = None
    subject_types: str = ""
    object_types: str = ""

    def fill(self, marks: Marks, template: str) -> Filled:
        """``template`` with its marks filled for this fact (:meth:`probes.xfactr_marks.Marks.fill`)."""
        return marks.fill(
            template,
            Entity(self.subject, self.subject_gender, self.subject_types),
            Entity(self.object, self.object_gender, self.object_types),
        )


@dataclass
class XfactrRelation:
    """One relation in one language: its template (marks as in the file) and its facts."""

    pid: str
    lang: str
    template: str
    facts: list[XfactrFact] = field(default_factory=list)


def unescape(text: str) -> str:
    """``\\uXXXX`` escapes decoded."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def read_names(path: Path) -> dict[str, dict[str, str]]:
    """QID -> {lang: label} of ``mTRExf_unicode_escape.txt``."""
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, *labels = line.rstrip("\n").split("\t")
        for item in labels:
            label, at, lang = item.rpartition("@")
            if at:
                out.setdefault(qid, {})[lang] = unescape(label.strip('"'))
    return out


def read_table(path: Path) -> dict[str, list[str]]:
    """QID -> the other columns of a tab-separated file (aliases, gender); {} for a missing file."""
    if not path.is_file():
        return {}
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, *rest = line.split("\t")
        if qid:
            out[qid] = [unescape(r) for r in rest if r]
    return out


def _gender(value: str | None) -> str | None:
    v = (value or "").lower()
    return "FEM" if v in ("female", "fem", "f") else "MASC" if v in ("male", "masc", "m") else None


def data_folder(root: str | os.PathLike[str]) -> Path:
    """X-FACTR's ``data/`` folder: ``root/data`` when it holds the templates, else ``root``."""
    root = Path(root)
    return root / "data" if (root / "data" / "TREx_prompts.csv").is_file() else root


def read_xfactr(
    root: str | os.PathLike[str], lang: str, relations: Sequence[str] | None = None
) -> list[XfactrRelation]:
    """The relations of ``lang`` with a template, each with its facts (see the module docs).

    Raises:
        InputFormatError: a folder without the files of the layout, or no template for ``lang``.
    """
    data = data_folder(root)
    prompts, names_file, facts_dir = (
        data / "TREx_prompts.csv",
        data / "mTRExf_unicode_escape.txt",
        data / "mTRExf" / "sub",
    )
    for need in (prompts, names_file, facts_dir):
        if not need.exists():
            raise InputFormatError(
                f"{need}: missing; expected X-FACTR's data folder (TREx_prompts.csv, mTRExf/sub/, ...)"
            )
    with prompts.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or lang not in rows[0]:
        langs = ", ".join(k for k in (rows[0] if rows else {}) if k not in ("pid", "relation"))
        raise InputFormatError(f"{prompts}: no templates for {lang!r} (it has {langs})")
    names = read_names(names_file)
    aliases = read_table(data / "alias" / "mTRExf" / f"{lang}.txt")
    genders = read_table(data / "mTRExf_gender.txt")
    classes = {qid: ",".join(cols) for qid, cols in read_table(data / "mTRExf_instanceof.txt").items()}
    out = []
    for row in rows:
        pid, template = row["pid"], (row.get(lang) or "").strip()
        path = facts_dir / f"{pid}.jsonl"
        if not template or not path.is_file() or (relations and pid not in relations):
            continue
        rel = XfactrRelation(pid, lang, template)
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            fact = json.loads(line)
            s, o = fact["sub_uri"], fact["obj_uri"]
            s_names, o_names = names.get(s, {}), names.get(o, {})
            subject = s_names.get(lang) or s_names.get("en") or fact.get("sub_label", "")
            obj = o_names.get(lang) or o_names.get("en") or fact.get("obj_label", "")
            s_gender, o_gender = (_gender(next(iter(genders.get(q, [])), None)) for q in (s, o))
            rel.facts.append(
                XfactrFact(
                    s,
                    subject,
                    o,
                    obj,
                    tuple(aliases.get(o, [])),
                    s_gender,
                    o_gender,
                    classes.get(s, ""),
                    classes.get(o, ""),
                )
            )
        out.append(rel)
    return out


def is_correct(prediction: str, fact: XfactrFact, form: Callable[[str], str] | None = None) -> bool:
    """X-FACTR's rule: the prediction equals the object's label or one of its aliases, each through ``form`` (the
    form the template asks of the answer, :meth:`probes.xfactr_marks.Marks.answer`) when given."""
    p = prediction.strip()
    golds = {(form(a) if form else a).strip() for a in (fact.object, *fact.aliases)}
    return bool(p) and p in golds


@dataclass
class XfactrReport:
    """Accuracy per (language, relation), the macro average per language, and notes."""

    accuracy: dict[str, dict[str, float]] = field(default_factory=dict)
    facts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def macro(self) -> dict[str, float]:
        """Per language, the mean accuracy over its relations."""
        return {lang: sum(r.values()) / len(r) for lang, r in self.accuracy.items() if r}

    def to_dict(self) -> dict[str, Any]:
        return {"macro": self.macro, "accuracy": self.accuracy, "facts": self.facts, "notes": self.notes}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        rows: list[list[Any]] = []
        for lang, rels in self.accuracy.items():
            rows += [[lang, pid, self.facts[lang][pid], round(100 * acc, 2)] for pid, acc in rels.items()]
            rows.append([lang, "macro", sum(self.facts[lang].values()), round(100 * self.macro[lang], 2)])
        return ["lang", "relation", "facts", "accuracy"], rows

    def scores(self) -> dict[tuple[str, ...], float]:
        """Accuracy per (language, relation), each language's macro average after its relations: the rows of a
        :class:`probes.comparison.Comparison`."""
        macro = self.macro
        out: dict[tuple[str, ...], float] = {}
        for lang, rels in self.accuracy.items():
            out.update({(lang, pid): acc for pid, acc in rels.items()})
            if lang in macro:
                out[(lang, "macro")] = macro[lang]
        return out


def score_relation(
    facts: Sequence[XfactrFact],
    predictions: Sequence[str],
    forms: Sequence[Callable[[str], str] | None] | None = None,
) -> float:
    """The share of facts whose prediction is right (:func:`is_correct`, each fact's answer through its form)."""
    if len(facts) != len(predictions):
        raise InputFormatError(f"{len(predictions)} predictions for {len(facts)} facts")
    chosen = forms if forms is not None else [None] * len(facts)
    right = sum(is_correct(p, f, form) for p, f, form in zip(predictions, facts, chosen))
    return right / len(facts) if facts else 0.0


_UNRESOLVED = {
    "case": "names not inflected for case (X-FACTR inflects them with trained models)",
    "article": "article/preposition marks without a table entry dropped",
}


def _answer_form(marks: Marks, form: str) -> Callable[[str], str] | None:
    return (lambda name: marks.answer(form, name)) if form else None


def eval_xfactr(
    root: str | os.PathLike[str],
    model: ModelSource = None,
    langs: Sequence[str] = ("en",),
    *,
    relations: Sequence[str] | None = None,
    method: str = "confidence",
    max_pieces: int = 5,
    beam: int = 5,
    limit: int | None = None,
    batch_size: int = 64,
) -> XfactrReport:
    """Probe each relation of each language and score it by X-FACTR's rule (what ``mluke eval-xfactr`` does).

    Args:
        root: X-FACTR's repository or its ``data/`` folder.
        model: an mLUKE checkpoint, any masked LM, or a loaded bundle (default: the demo model).
        langs: the languages.
        relations: only these (default: all with a template and facts).
        method: the decoding (``independent``, ``left-to-right``, ``confidence``).
        max_pieces: the most masks an answer takes.
        beam: the beam of the decoding.
        limit: only the first facts of each relation.
        batch_size: answers per forward pass.
    """
    from kb.db import Template
    from mluke.opening import open_model
    from mluke.probing.decoding import decode

    bundle = open_model(model, word_models=True)
    tok = bundle.tokenizer
    specials = [getattr(tok, n, None) for n in ("bos_id", "pad_id", "eos_id", "unk_id", "mask_id", "ent_id", "ent2_id")]
    report = XfactrReport()
    for lang in langs:
        report.accuracy[lang], report.facts[lang] = {}, {}
        marks = Marks.for_folder(data_folder(root), lang)
        unresolved: dict[str, list[str]] = {}
        for rel in read_xfactr(root, lang, relations):
            facts = rel.facts[:limit] if limit is not None else rel.facts
            if not facts:
                continue
            predictions = [""] * len(facts)
            filled = [fact.fill(marks, rel.template) for fact in facts]
            for what in dict.fromkeys(w for f in filled for w in f.unresolved):
                unresolved.setdefault(what, []).append(rel.pid)
            by_template: dict[str, list[int]] = {}
            for i, done in enumerate(filled):
                by_template.setdefault(done.template, []).append(i)
            for text, rows in by_template.items():
                answers = decode(
                    bundle.model,
                    tok,
                    Template(text),
                    [filled[i].subject for i in rows],
                    max_pieces=max_pieces,
                    method=method,  # type: ignore[arg-type]
                    beam=beam,
                    top_k=1,
                    exclude=[i for i in specials if i is not None],
                    batch_size=batch_size,
                )
                for i, found in zip(rows, answers):
                    predictions[i] = found[0].text if found else ""
            forms = [_answer_form(marks, f.answer_form) for f in filled]
            report.accuracy[lang][rel.pid] = score_relation(facts, predictions, forms)
            report.facts[lang][rel.pid] = len(facts)
        for what, pids in unresolved.items():
            report.notes.append(f"{lang}: {_UNRESOLVED[what]} in {', '.join(pids)}")
    return report


def compare_xfactr(
    root: str | os.PathLike[str], models: Sequence[ModelSource], langs: Sequence[str] = ("en",), **options: Any
) -> Comparison[XfactrReport]:
    """:func:`eval_xfactr` for each model in turn, side by side (what ``mluke eval-xfactr --model A --model B``
    prints): a column per model, a row per (language, relation), then each language's macro average.

    Args:
        root: X-FACTR's repository or its ``data/`` folder.
        models: the models, in the order of the table's columns.
        langs: the languages.
        **options: the other keyword arguments of :func:`eval_xfactr`.
    """
    from probes.comparison import compare

    return compare(models, lambda m: eval_xfactr(root, m, langs, **options), ["lang", "relation"])
