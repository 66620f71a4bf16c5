"""mLAMA 1.1: evaluating models on the released folder (read by :mod:`probes.mlama`) with typed querying.

P@1 is macro-averaged over relations per language, then over languages; with a threshold, answer sets are
scored by precision, recall and F1 as well. :func:`compare_mlama` puts several models side by side.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb.errors import InputFormatError
from kb.files import string_list
from probes.mlama import MlamaRelation, read_mlama

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject
    from mluke.models.devices import Device, DType
    from mluke.opening import ModelSource
    from mluke.options import Mode

#: The answer-set metrics of a report with a threshold (see :mod:`mluke.object_sets`).
SET_METRICS = ("precision", "recall", "F1")


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

    def to_dict(self) -> JsonObject:
        out: dict[str, Any] = {
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

    def to_dict(self) -> JsonObject:
        return {"models": [r.to_dict() for r in self.reports]}


def eval_mlama(
    path: str | Path,
    model: ModelSource = None,
    langs: str | list[str] | tuple[str, ...] = ("en",),
    *,
    mode: Mode | None = None,
    use_subject_entity: bool = False,
    relations: str | list[str] | None = None,
    exclude_subject: bool = True,
    batch_size: int = 64,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    threshold: float | None = None,
    knowledge: bool = True,
) -> MlamaReport:
    """Typed querying on mLAMA for each language (what ``mluke eval-mlama`` does).

    Args:
        path: the mLAMA 1.1 folder (or its parent).
        model: the demo model when None; an mLUKE checkpoint or any Hugging Face masked LM (folder or hub name).
        langs: the languages to evaluate.
        mode: the cloze mode (see :func:`mluke.probing.runs.run_cloze`); default entity mode for mLUKE and word mode
            for other models. Entity modes asked of a model without an entity vocabulary fall back to word
            mode, and the report's mode and notes say so.
        use_subject_entity: also give the subject as an entity token.
        relations: only these relations (default: all but the date ones).
        exclude_subject: leave a subject out of its own candidates; False keeps it, as the reference mLAMA
            evaluation does (P47 "shares border with" is where it matters).
        batch_size: queries per forward pass.
        progress: show a progress bar.
        device: where the model runs.
        dtype: the precision it runs in.
        threshold: each subject also answers with every candidate whose probability (over the candidates)
            is at least this, possibly none, scored by precision, recall and F1 against all its true objects
            (see :mod:`mluke.object_sets`), macro-averaged over the relation's subjects and then, like P@1,
            over relations (:attr:`MlamaReport.macro_sets`).
        knowledge: a KnowBert model: run its knowledge layer (prompts' spans from the embedded kb); ``False``:
            the bare encoder.

    Returns:
        The :class:`MlamaReport`.

    Raises:
        MlukeError: a bad threshold (before any model is loaded), or an unreadable mLAMA folder.
        InputFormatError: nothing to evaluate (no relation of ``langs`` with a facts file that holds facts);
            relations whose facts file is empty are left out, and a note says so.
    """
    from mluke.options import check_threshold

    check_threshold(threshold)  # before loading anything
    langs, relations = string_list(langs, "langs") or [], string_list(relations, "relations")
    notes: list[str] = []
    work: list[tuple[str, MlamaRelation]] = []
    empty: list[tuple[str, MlamaRelation]] = []
    for lang in langs:
        for rel in read_mlama(path, lang, relations):
            (work if rel.subjects else empty).append((lang, rel))
    if not work:
        raise InputFormatError(
            f"{path}: nothing to evaluate in {', '.join(langs) or 'no language'}: "
            + (
                f"the facts files of {', '.join(f'{l}/{r.relation}' for l, r in empty)} hold no facts"
                if empty
                else "no relation with a facts file" + (f" among {', '.join(relations)}" if relations else "")
            )
        )
    if empty:
        notes.append(
            f"left out (their facts files hold no facts): {', '.join(f'{l}/{r.relation}.jsonl' for l, r in empty)}"
        )
    # the model code (torch, transformers: seconds to import) once the folder has been read
    from tqdm import tqdm

    from mluke.knowbert.word_model import open_probe_model
    from mluke.probing.runs import run_cloze
    from probes.bias import language_bias
    from probes.comparison import model_name

    bundle = open_probe_model(model, knowledge=knowledge, device=device, dtype=dtype)
    if bundle.tokenizer.entity_vocab is None and mode in ("entity", "both"):
        notes.append(f"{model_name(model)} has no entity vocabulary: evaluated in word mode")
        mode, use_subject_entity = "word", False
    mode = mode or ("word" if bundle.tokenizer.entity_vocab is None else "entity")
    p_at_1: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    bias = []
    sets: dict[str, dict[str, dict[str, float]]] = {}
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
            top_k=1,
            exclude_subject=exclude_subject,
            batch_size=batch_size,
            gold_labels=rel.object_labels,
            threshold=threshold,
            knowledge=knowledge,
        )
        # every mLAMA subject comes with its gold objects (gold_labels): the scores are numbers, never None
        metrics = cast("dict[str, float]", result.metrics)
        p_at_1.setdefault(lang, {})[rel.relation] = metrics["P@1"]
        if threshold is not None:
            sets.setdefault(lang, {})[rel.relation] = {m: metrics[m] for m in SET_METRICS}
        counts.setdefault(lang, {})[rel.relation] = cast(int, result.metrics["with_gold"])
        bias.append(language_bias(result))  # with a threshold: top answers of non-empty answer sets
    notes += [rel.note for _, rel in work if rel.note]
    return MlamaReport(
        p_at_1,
        counts,
        bias,
        mode + ("+subject" if use_subject_entity else ""),
        notes,
        model_name(model),
        threshold,
        sets,
    )


def compare_mlama(
    path: str | Path, models: Sequence[ModelSource], langs: str | list[str] | tuple[str, ...] = ("en",), **options: Any
) -> MlamaComparison:
    """:func:`eval_mlama` for each model in turn (one model in memory at a time), side by side: what
    ``mluke eval-mlama DIR --model A --model B`` prints.

    Args:
        path: the mLAMA 1.1 folder.
        models: the models, in the order of the table's rows.
        langs: the languages to evaluate.
        **options: the other keyword arguments of :func:`eval_mlama`.

    Returns:
        The :class:`MlamaComparison`.
    """
    if isinstance(models, (str, os.PathLike)):
        models = [models]  # one model, not the letters of its name
    return MlamaComparison([eval_mlama(path, m, langs, **options) for m in models])
