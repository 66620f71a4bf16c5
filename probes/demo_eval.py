"""Cross-lingual knowledge transfer in the demo model: held-out vs training (fact, language) pairs.

The demo model (``mluke.demo.model``) saw each (relation, subject) in a few languages
and never in its held-out language. Probing it there in word mode, entity [Y]
mode and entity [X]&[Y] mode, beside the random and most-common-answer
baselines, is a miniature of the mLUKE paper's claim that entity-based prompts
carry knowledge across languages.

:func:`evaluate_demo_linking` scores the linker on the demo's linking test set:
sentences naming a city whose name a city in another country shares, in
languages the model never saw that city's sentence in, where only the country
in the sentence tells the cities apart.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import open_db
from kb.db import EntityDB
from kb.renamed import renamed_keyword
from mluke.options import Mode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kb.jsontypes import JsonObject
    from mluke.models.devices import DType
    from probes.linking_eval import LinkingReport
    from probes.mewsli import LinkDoc

MODES: tuple[tuple[str, Mode, bool], ...] = (
    ("word", "word", False),
    ("entity [Y]", "entity", False),
    ("entity [X]&[Y]", "entity", True),
)


@dataclass
class Outcome:
    relation: str
    lang: str
    split: str  # "held-out" or "train"
    mode: str
    correct: bool
    random_p: float  # chance of a random candidate being correct
    most_common: bool  # the relation's most common object is correct
    subject: str = ""
    prediction: str | None = None  # the top-1 answer


def evaluate_demo(
    model_dir: str | Path | None = None,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    max_train_per_cell: int = 20,
    seed: int = 0,
    progress: bool = True,
    dtype: DType = None,
    outcomes: list[Outcome] | None = None,
    modes: Sequence[str] | None = None,
    probe_model: str | os.PathLike[str] | None = None,
    knowledge: bool = True,
) -> dict[str, Any]:
    """Probe the demo model on its held-out and (a sample of) its training pairs; returns tables.

    ``dtype``: the model's precision (e.g. ``"bf16"``); ``outcomes``: a list that receives every probed
    (relation, language, subject, mode) with its top-1 answer (to compare two runs); ``modes``: names of
    :data:`MODES` to probe (default all). ``probe_model``: probe this model folder on the demo's pairs instead
    of the demo model itself (a KnowBert folder trained from it: word mode only), with its knowledge layer on or
    off (``knowledge``)."""
    from tqdm import tqdm

    import mluke
    from mluke.demo.model import demo_model
    from mluke.knowbert.word_model import open_probe_model
    from mluke.options import ProbeOptions
    from mluke.probing.cloze import probe

    model_dir = Path(model_dir) if model_dir is not None else demo_model(progress=progress)
    info = json.loads((model_dir / "demo.json").read_text(encoding="utf-8"))
    db = open_db(os.fspath(db) if isinstance(db, os.PathLike) else db)
    unknown = sorted(set(modes or ()) - {name for name, _, _ in MODES})
    if unknown:
        raise ValueError(f"unknown demo probing modes {unknown}; expected some of {[m for m, _, _ in MODES]}")
    asked = [m for m in MODES if modes is None or m[0] in modes]
    if probe_model is None:
        bundle = mluke.open_model(model_dir, dtype=dtype)
    else:
        bundle = open_probe_model(probe_model, db=db, knowledge=knowledge, dtype=dtype)
    rng = random.Random(seed)
    cells: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: {"held-out": set(), "train": set()})
    for f in info["heldout"]:
        cells[(f["property"], f["lang"])]["held-out"].add(f["subject"])
    for f in info["train"]:
        cells[(f["property"], f["lang"])]["train"].add(f["subject"])
    most_common = {
        p: Counter(f["object"] for f in info["train"] if f["property"] == p).most_common(1)[0][0]
        for p in {f["property"] for f in info["train"]}
    }
    outcomes = outcomes if outcomes is not None else []
    for (pid, lang), split in tqdm(sorted(cells.items()), desc="evaluate", disable=not progress):
        train = sorted(split["train"])
        train = rng.sample(train, min(max_train_per_cell, len(train)))
        which = dict.fromkeys(split["held-out"], "held-out") | dict.fromkeys(train, "train")
        if not split["held-out"] and not train:
            continue
        for name, mode, subject_entity in asked:
            result = probe(
                db.template(pid, lang).text,
                lang,
                subjects=sorted(which),
                relation=pid,
                options=ProbeOptions(mode=mode, use_subject_entity=subject_entity, top_k=1, knowledge=knowledge),
                model=bundle,
                db=db,
            )
            n_cands = len(
                {f.object for f in db.facts(property=pid)}
                & set(db.labels(sorted({f.object for f in db.facts(property=pid)}), lang))
            )
            for row in result.rows:
                if not row.gold:
                    continue
                assert isinstance(row.subject, str)  # probed by subject key (``subjects=``), never free text
                outcomes.append(
                    Outcome(
                        pid,
                        lang,
                        which[row.subject],
                        name,
                        row.rank == 1,
                        len(row.gold) / max(1, n_cands),
                        most_common.get(pid) in row.gold,
                        row.subject,
                        row.predictions[0].key if row.predictions else None,
                    )
                )
    return summarise(outcomes, info)


def summarise(outcomes: list[Outcome], info: dict[str, Any] | None = None) -> dict[str, Any]:
    """P@1 per relation and per language, held-out and train, for each probed mode and baseline."""
    names = [name for name, _, _ in MODES if any(o.mode == name for o in outcomes)] or [MODES[0][0]]

    def table(key: str) -> dict[str, dict[str, dict[str, float | int]]]:
        groups: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
        for o in outcomes:
            groups[getattr(o, key)][o.split].append(o)
            groups["all"][o.split].append(o)
        out: dict[str, dict[str, dict[str, float | int]]] = {}
        for group, splits in sorted(groups.items()):
            out[group] = {}
            for split, items in splits.items():
                row: dict[str, float | int] = {}
                for name in names:
                    sel = [o for o in items if o.mode == name]
                    row[name] = sum(o.correct for o in sel) / len(sel) if sel else float("nan")
                    row["pairs"] = len(sel)
                first = [o for o in items if o.mode == names[0]]
                row["random"] = sum(o.random_p for o in first) / len(first) if first else float("nan")
                row["most common"] = sum(o.most_common for o in first) / len(first) if first else float("nan")
                out[group][split] = row
        return out

    return {
        "by_relation": table("relation"),
        "by_language": table("lang"),
        "model": {k: info[k] for k in ("tokenizer", "documents", "steps", "seconds")} if info else {},
    }


def to_markdown(summary: dict[str, Any], key: str = "by_relation") -> str:
    """A markdown table of P@1 (x100) for held-out and training pairs (the modes the summary holds)."""
    rows = [row for splits in summary[key].values() for row in splits.values()]
    cols = [m for m, _, _ in MODES if any(m in row for row in rows)] + ["random", "most common"]
    lines = [
        f"| {key.split('_')[1]} | split | pairs | " + " | ".join(cols) + " |",
        "|---|---|---:|" + "---:|" * len(cols),
    ]
    for group, splits in summary[key].items():
        for split in ("held-out", "train"):
            row = splits.get(split)
            if row:
                lines.append(
                    f"| {group} | {split} | {row['pairs']} | " + " | ".join(f"{100 * row[c]:.1f}" for c in cols) + " |"
                )
    return "\n".join(lines)


@dataclass
class DemoReport:
    """The demo model's evaluation: probing P@1 tables (:func:`evaluate_demo`) and linking accuracy
    (:func:`evaluate_demo_linking`); what ``mluke eval-demo`` prints."""

    probing: dict[str, Any]
    linking: LinkingReport

    def to_dict(self) -> JsonObject:
        return {**self.probing, "linking": self.linking.to_dict()}

    def to_markdown(self) -> str:
        """P@1 by relation and by language, then linking accuracy per language and method."""
        return "\n\n".join(
            [
                to_markdown(self.probing, "by_relation"),
                to_markdown(self.probing, "by_language"),
                self.linking.to_markdown(),
            ]
        )


@renamed_keyword("kb", "db")
def eval_demo(
    model_dir: str | Path | None = None,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    max_train_per_cell: int = 20,
    progress: bool = True,
) -> DemoReport:
    """Probe the demo model on held-out and training pairs and link its ambiguous-city sentences:
    what ``mluke eval-demo`` does (default model: the cached demo, trained on first use)."""
    return DemoReport(
        evaluate_demo(model_dir, db=db, max_train_per_cell=max_train_per_cell, progress=progress),
        evaluate_demo_linking(model_dir, db=db, progress=progress),
    )


def demo_linking_docs(model_dir: str | Path) -> list[LinkDoc]:
    """The demo's linking test set as :class:`probes.linking_eval.LinkDoc` objects (gold: city and country)."""
    from probes.mewsli import GoldMention, LinkDoc

    info = json.loads((Path(model_dir) / "demo.json").read_text(encoding="utf-8"))
    return [
        LinkDoc(
            f"demo-{i}",
            item["lang"],
            item["text"],
            tuple(GoldMention(a, b, item["text"][a:b], key) for a, b, key in item["mentions"]),
        )
        for i, item in enumerate(info.get("linking", []))
    ]


def evaluate_demo_linking(
    model_dir: str | Path | None = None,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    methods: tuple[str, ...] = ("prior", "model", "combined", "global"),
    progress: bool = True,
) -> LinkingReport:
    """Accuracy of each linking method on the demo's linking test set, per language (gold mentions given).

    Returns a :class:`probes.linking_eval.LinkingReport`; its ``ambiguous``
    columns are the cities (the mentions with two or more candidates).
    """
    from mluke.demo.model import demo_model
    from mluke.linking.linker import Linker
    from probes.linking_eval import evaluate_linking

    model_dir = Path(model_dir) if model_dir is not None else demo_model(progress=progress)
    docs = demo_linking_docs(model_dir)
    db = open_db(os.fspath(db) if isinstance(db, os.PathLike) else db)
    linker = Linker(model_dir, db, languages=sorted({d.lang for d in docs}))
    return evaluate_linking(docs, linker, methods=methods, end_to_end=False, progress=progress)
