"""mLAMA 1.1: reading the released folder and evaluating a model on it.

Layout (Kassner et al., 2021)::

    mlama1.1/<lang>/templates.jsonl           {"relation": "P19", "template": "[X] was born in [Y] ."}
    mlama1.1/<lang>/<relation>.jsonl          {"sub_label", "obj_label", "sub_uri", "obj_uri", "lineid", ...}
    TREx_multilingual_objects/<lang>.json     {"P19": {"objects": ["Paris", ...]}, ...}
    GoogleRE_objects/<lang>.json              {"place_of_birth": {"objects": [...]}, ...}

Subjects and gold objects are entities identified by their QIDs (``sub_uri``,
``obj_uri``), not by label strings; a subject with several objects (N-M
relations) keeps them all. The Google-RE relations (``place_of_birth.jsonl``,
``place_of_death.jsonl``) have labels only: a label is given the QID it has in the
language's other relation files when that QID is the only one it has there;
the others stay labels (a subject keyed ``label:<sub_label>``, an object scored
with word masks), and :attr:`MlamaRelation.note` says how many were matched.
Candidates come from the object files; a candidate label is mapped to the QID it
has in that language's facts (labels with no QID are kept as word-only candidates). Relations about dates are skipped, as in the
reference evaluation. P@1 is macro-averaged over relations per language. The
data is CC BY-NC: it is never shipped with mluke.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db import Template, parse_template
from kb.errors import InputFormatError
from kb.files import is_plain_name

#: Skipped like in the reference evaluation: objects are dates, not entities.
DATE_RELATIONS = frozenset({"date_of_birth", "date_of_death", "P569", "P570", "P571", "P577", "P580", "P582", "P585"})


@dataclass
class MlamaRelation:
    """One relation in one language: its template, subjects with gold objects, candidates."""

    lang: str
    relation: str
    template: Template
    subjects: dict[str, str]  # sub_uri (or "label:" + sub_label, Google-RE) -> sub_label
    gold: dict[str, set[str]]  # subject key -> obj_uris (or obj_labels of objects without QID)
    candidates: list[tuple[str | None, str]]  # (obj_uri or None, label)
    object_labels: dict[str, str] = field(default_factory=dict)  # obj_uri -> label
    note: str = ""  # how a relation without URIs (Google-RE) was matched by label; "" otherwise


#: The key of a subject that has no QID (a Google-RE subject whose label matched none).
LABEL_KEY = "label:"

#: The answer-set metrics of a report with a threshold (see :mod:`mluke.object_sets`).
SET_METRICS = ("precision", "recall", "F1")


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line; bytes that are not UTF-8 or a line that is
    not JSON are an :class:`InputFormatError` naming the line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(f"{path}, line {line}: bytes that are not UTF-8 ({exc.reason})") from None
    rows = []
    for lineno, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        try:
            rows.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{path}, line {lineno}: not valid JSON ({exc})") from None
    return rows


def _candidate_files(root: Path, lang: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for folder in ("TREx_multilingual_objects", "GoogleRE_objects"):
        path = root / folder / f"{lang}.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"{path}: bytes that are not UTF-8 at byte {exc.start}") from None
            except json.JSONDecodeError as exc:
                raise InputFormatError(f"{path}: not valid JSON ({exc})") from None
            if not isinstance(data, dict):
                raise InputFormatError(
                    f"{path}: a JSON {type(data).__name__}; expected an object of relations, "
                    '{"P19": {"objects": [...]}, ...}'
                )
            for rel, value in data.items():
                objects = value.get("objects") if isinstance(value, dict) else None
                if not isinstance(objects, list):
                    raise InputFormatError(f'{path}: relation {rel!r} should map to {{"objects": [...]}}')
                out[rel] = [str(o) for o in objects]
    return out


def _check_fact(fact: Any, path: Path, line: int, uris: bool = True) -> None:
    """A fact is an object whose subject and object URIs (``uris``; not in Google-RE files) and labels are
    strings (an :class:`InputFormatError` if not)."""
    expected = (
        "expected sub_label, obj_label, sub_uri, obj_uri"
        if uris
        else "expected sub_label, obj_label (a file without sub_uri / obj_uri, the Google-RE layout)"
    )
    if not isinstance(fact, dict):
        raise InputFormatError(f"{path}, line {line}: a JSON {type(fact).__name__}, not an object; {expected}")
    for key in ("sub_uri", "obj_uri", "sub_label", "obj_label") if uris else ("sub_label", "obj_label"):
        if key not in fact:
            raise InputFormatError(f"{path}, line {line}: missing {key!r}; {expected}")
        if not isinstance(fact[key], str):
            raise InputFormatError(
                f"{path}, line {line}: {key!r} is a JSON {type(fact[key]).__name__}, expected a string"
            )


def find_root(path: str | Path) -> tuple[Path, Path]:
    """(the folder holding the candidate files, the folder holding one folder per language)."""
    path = Path(path)
    if not path.is_dir():
        raise InputFormatError(f"{path}: no such folder (expected the mLAMA data folder)")
    for data in (path / "mlama1.1", path):
        if data.is_dir() and any((d / "templates.jsonl").is_file() for d in data.iterdir() if d.is_dir()):
            return (path if data != path else path.parent), data
    raise InputFormatError(
        f"{path}: no <lang>/templates.jsonl inside; expected the mLAMA 1.1 layout (mlama1.1/<lang>/...)"
    )


def _has_uris(rows: list[tuple[int, Any]]) -> bool:
    """Whether a facts file carries QIDs (T-REx layout); Google-RE files have none in any record."""
    return any(isinstance(f, dict) and ("sub_uri" in f or "obj_uri" in f) for _, f in rows)


def _label_qids(folder: Path, relations: list[str], read: dict[str, list[tuple[int, Any]]]) -> dict[str, str]:
    """Label -> QID over the subjects and objects of the language's facts files that carry QIDs, for the
    labels that have a single QID there. A file that cannot be read contributes nothing (it is reported
    when it is evaluated)."""
    qids: dict[str, set[str]] = defaultdict(set)
    for rel in relations:
        if rel not in read:
            try:
                read[rel] = _read_jsonl(folder / f"{rel}.jsonl") if (folder / f"{rel}.jsonl").is_file() else []
            except InputFormatError:
                read[rel] = []
        for _, fact in read[rel]:
            if not isinstance(fact, dict):
                continue
            for uri, label in (("sub_uri", "sub_label"), ("obj_uri", "obj_label")):
                if isinstance(fact.get(uri), str) and isinstance(fact.get(label), str):
                    qids[fact[label]].add(fact[uri])
    return {label: next(iter(found)) for label, found in qids.items() if len(found) == 1}


def read_mlama(path: str | Path, lang: str, relations: list[str] | None = None) -> list[MlamaRelation]:
    """Every (non-date) relation of ``lang`` with its template, facts and candidates.

    A record that cannot be read (bytes that are not UTF-8, a line that is not JSON, a template
    without its strings, a fact without its four string fields, or without its two labels in a
    Google-RE file) is an :class:`InputFormatError` naming its file and line. Google-RE files (no
    ``sub_uri`` / ``obj_uri``) are matched by label (see the module docs) and never stop the other
    relations of the language."""
    root, data = find_root(path)
    folder = data / lang
    if not (folder / "templates.jsonl").is_file():
        have = sorted(d.name for d in data.iterdir() if (d / "templates.jsonl").is_file())
        raise InputFormatError(f"{folder}: no templates.jsonl; languages here: {', '.join(have)}")
    candidates = _candidate_files(root, lang)
    templates: list[tuple[str, Template]] = []
    all_relations: list[str] = []
    for i, row in _read_jsonl(folder / "templates.jsonl"):
        rel = row.get("relation") if isinstance(row, dict) else None
        if not rel or not isinstance(rel, str) or not isinstance(row.get("template"), str):
            raise InputFormatError(
                f"{folder / 'templates.jsonl'}, line {i}: expected an object with the strings 'relation' and 'template'"
            )
        if not is_plain_name(f"{rel}.jsonl"):  # it names the facts file, <rel>.jsonl
            raise InputFormatError(
                f"{folder / 'templates.jsonl'}, line {i}: relation {rel!r} is not a file name "
                "inside the language folder"
            )
        all_relations.append(rel)
        if rel in DATE_RELATIONS or (relations and rel not in relations):
            continue
        if not (folder / f"{rel}.jsonl").is_file():
            continue
        templates.append((rel, parse_template(row["template"], where=f"{folder / 'templates.jsonl'} ({rel})")))
    read: dict[str, list[tuple[int, Any]]] = {rel: _read_jsonl(folder / f"{rel}.jsonl") for rel, _ in templates}
    label_qids: dict[str, str] | None = None
    out = []
    for rel, template in templates:
        facts_path = folder / f"{rel}.jsonl"
        uris = _has_uris(read[rel]) or not read[rel]  # an empty file has nothing to match
        if not uris and label_qids is None:
            label_qids = _label_qids(folder, all_relations, read)  # files without QIDs add nothing
        subjects: dict[str, str] = {}
        gold: dict[str, set[str]] = defaultdict(set)
        object_labels: dict[str, str] = {}
        label_only: set[str] = set()  # gold objects kept as labels (Google-RE, no QID found)
        for j, fact in read[rel]:
            _check_fact(fact, facts_path, j, uris)
            if uris:
                s, o, qid = fact["sub_uri"], fact["obj_uri"], None
            else:
                s = (label_qids or {}).get(fact["sub_label"], LABEL_KEY + fact["sub_label"])
                qid = (label_qids or {}).get(fact["obj_label"])
                o = qid if qid is not None else fact["obj_label"]
                if qid is None:
                    label_only.add(o)
            subjects.setdefault(s, fact["sub_label"])
            if uris or qid is not None:
                object_labels.setdefault(o, fact["obj_label"])
            gold[s].add(o)
        by_label = {**({} if uris else (label_qids or {})), **{label: uri for uri, label in object_labels.items()}}
        labels = candidates.get(rel) or sorted(set(object_labels.values()) | label_only)
        cands = [(by_label.get(label), label) for label in dict.fromkeys(labels)]
        known = {k if k is not None else label for k, label in cands}
        cands += [(uri, label) for uri, label in sorted(object_labels.items()) if uri not in known]
        cands += [(None, label) for label in sorted(label_only) if label not in known]
        note = ""
        if not uris:
            matched_s = sum(not k.startswith(LABEL_KEY) for k in subjects)
            note = (
                f"{lang}/{rel}: no sub_uri/obj_uri (Google-RE layout); matched by label to the QIDs of the "
                f"language's other relations: {matched_s} of {len(subjects)} subjects, {len(object_labels)} of "
                f"{len(object_labels) + len(label_only)} objects (the rest kept as labels, scored with word masks)"
            )
        out.append(MlamaRelation(lang, rel, template, subjects, dict(gold), cands, object_labels, note))
    return out


@dataclass
class MlamaReport:
    """P@1 per (language, relation), macro averages per language, and language-bias rows."""

    p_at_1: dict[str, dict[str, float]]  # lang -> relation -> P@1
    counts: dict[str, dict[str, int]]  # lang -> relation -> subjects
    bias: list[dict[str, Any]]
    mode: str
    notes: list[str] = field(default_factory=list)  # one line per relation read by label (Google-RE)
    model: str | None = None  # the model's folder or hub name ("demo" for the demo model)
    threshold: float | None = None  # answer sets: every candidate with probability >= threshold
    #: with a threshold: lang -> relation -> macro precision, recall and F1 of the answer sets over its subjects
    sets: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    @property
    def macro(self) -> dict[str, float]:
        return {lang: sum(r.values()) / len(r) for lang, r in self.p_at_1.items() if r}

    @property
    def macro_sets(self) -> dict[str, dict[str, float]]:
        """With a threshold: lang -> precision, recall and F1 macro-averaged over relations (like :attr:`macro`)."""
        return {
            lang: {m: sum(s[m] for s in rels.values()) / len(rels) for m in SET_METRICS}
            for lang, rels in self.sets.items()
            if rels
        }

    def rows(self) -> list[dict[str, Any]]:
        """P@1 per (language, relation); with a threshold, also the answer sets' precision, recall and F1."""
        return [
            {
                "lang": lang,
                "relation": rel,
                "subjects": self.counts[lang][rel],
                "P@1": p,
                **(self.sets[lang][rel] if self.threshold is not None else {}),
            }
            for lang, rels in self.p_at_1.items()
            for rel, p in rels.items()
        ]

    @property
    def average(self) -> float | None:
        """The macro-average over languages of the per-language macro P@1 (the paper's "avg" column)."""
        macro = self.macro
        return sum(macro.values()) / len(macro) if macro else None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "mode": self.mode,
            "macro_p_at_1": self.macro,
            "average": self.average,
            "relations": self.rows(),
            "language_bias": self.bias,
            "notes": self.notes,
        }
        if self.threshold is not None:
            out.update(threshold=self.threshold, macro_sets=self.macro_sets)
        return out


@dataclass
class MlamaComparison:
    """Several models on the same mLAMA languages: one :class:`MlamaReport` per model, in the order given."""

    reports: list[MlamaReport]

    @property
    def langs(self) -> list[str]:
        return list(dict.fromkeys(lang for r in self.reports for lang in r.macro))

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Models as rows, languages as columns (macro P@1 x 100), then the average over languages:
        the layout of the mLUKE paper's Table 5. "-" where a model has no figure for a language."""
        langs = self.langs
        rows = [
            [
                r.model or "?",
                r.mode,
                *(f"{100 * r.macro[l]:.1f}" if l in r.macro else "-" for l in langs),
                f"{100 * r.average:.1f}" if r.average is not None else "-",
            ]
            for r in self.reports
        ]
        return ["model", "mode", *langs, "avg"], rows

    def set_table(self) -> tuple[list[str], list[list[Any]]]:
        """With a threshold: like :meth:`table` with the answer sets' macro F1 x 100 instead of P@1."""
        langs = self.langs
        rows = []
        for r in self.reports:
            f1 = {lang: m["F1"] for lang, m in r.macro_sets.items()}
            avg = sum(f1.values()) / len(f1) if f1 else None
            rows.append(
                [
                    r.model or "?",
                    r.mode,
                    *(f"{100 * f1[l]:.1f}" if l in f1 else "-" for l in langs),
                    f"{100 * avg:.1f}" if avg is not None else "-",
                ]
            )
        return ["model", "mode", *langs, "avg"], rows

    def rows(self) -> list[dict[str, Any]]:
        """P@1 per (model, language, relation)."""
        return [{"model": r.model, "mode": r.mode, **row} for r in self.reports for row in r.rows()]

    def to_dict(self) -> dict[str, Any]:
        return {"models": [r.to_dict() for r in self.reports]}


def eval_mlama(
    path: str | Path,
    model: Any = None,
    langs: list[str] | tuple[str, ...] = ("en",),
    *,
    mode: str | None = None,
    use_subject_entity: bool = False,
    relations: list[str] | None = None,
    exclude_subject: bool = True,
    batch_size: int = 64,
    progress: bool = True,
    device: Any = None,
    dtype: Any = None,
    threshold: float | None = None,
) -> MlamaReport:
    """Typed querying on mLAMA for each language (what ``mluke eval-mlama`` does); see
    :func:`mluke.cloze.run_cloze` for the modes. ``model``: default the demo model; an mLUKE checkpoint
    or any Hugging Face masked LM (folder or hub name). ``mode``: default entity mode for mLUKE and word
    mode for other models; entity modes asked of a model without an entity vocabulary fall back to word
    mode, and the report's mode and notes say so.

    ``exclude_subject=False`` keeps a subject among its own candidates, as the
    reference mLAMA evaluation does (P47 "shares border with" is where it matters).

    ``threshold``: each subject also answers with every candidate whose probability (over the candidates)
    is at least this, possibly none, scored by precision, recall and F1 against all its true objects
    (N-M relations such as P47 have several; see :mod:`mluke.object_sets`), macro-averaged over the
    relation's subjects and then, like P@1, over relations (:attr:`MlamaReport.macro_sets`)."""
    from tqdm import tqdm

    from mluke.cloze import check_threshold, run_cloze
    from mluke.opening import open_model

    check_threshold(threshold)  # before loading anything
    from probes.bias import language_bias

    bundle = open_model(model, device=device, dtype=dtype, word_models=True)
    notes = []
    if bundle.tokenizer.entity_vocab is None and mode in ("entity", "both"):
        notes.append(f"{_name(model, bundle)} has no entity vocabulary: evaluated in word mode")
        mode, use_subject_entity = "word", False
    mode = mode or ("word" if bundle.tokenizer.entity_vocab is None else "entity")
    p_at_1: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    bias = []
    sets: dict[str, dict[str, dict[str, float]]] = {}
    work = [(lang, rel) for lang in langs for rel in read_mlama(path, lang, relations)]
    for lang, rel in tqdm(work, desc="mLAMA", unit="relation", disable=not progress):
        result = run_cloze(
            rel.template,
            lang,
            sorted(rel.subjects.items()),
            rel.candidates,
            rel.gold,
            model=bundle,
            relation=rel.relation,
            mode=mode,
            use_subject_entity=use_subject_entity,
            top_k=1,  # type: ignore[arg-type]
            exclude_subject=exclude_subject,
            batch_size=batch_size,
            gold_labels=rel.object_labels,
            threshold=threshold,
        )
        metrics = result.metrics
        p_at_1.setdefault(lang, {})[rel.relation] = metrics["P@1"]
        if threshold is not None:
            sets.setdefault(lang, {})[rel.relation] = {m: metrics[m] for m in SET_METRICS}
        counts.setdefault(lang, {})[rel.relation] = result.metrics["with_gold"]
        bias.append(language_bias(result))  # with a threshold: top answers of non-empty answer sets
    notes += [rel.note for _, rel in work if rel.note]
    return MlamaReport(
        p_at_1,
        counts,
        bias,
        mode + ("+subject" if use_subject_entity else ""),
        notes,
        _name(model, bundle),
        threshold,
        sets,
    )


def compare_mlama(
    path: str | Path, models: list[Any], langs: list[str] | tuple[str, ...] = ("en",), **options: Any
) -> MlamaComparison:
    """:func:`eval_mlama` for each model in turn (one model in memory at a time), side by side: what
    ``mluke eval-mlama DIR --model A --model B`` prints. ``options`` go to :func:`eval_mlama`."""
    return MlamaComparison([eval_mlama(path, m, langs, **options) for m in models])


def _name(model: Any, bundle: Any) -> str:
    """How a report names its model: the folder or hub name given, else the loaded one's folder."""
    if model is None:
        return "demo"
    if isinstance(model, (str, Path)):
        return str(model)
    source = getattr(bundle.tokenizer, "source_dir", None)
    return str(source) if source is not None else "model"
