"""BEAR (Wiland et al., 2024; the lm-pub-quiz package): multiple-choice statements ranked by their log-likelihood.

The dataset folder holds one ``P*.jsonl`` a relation (``{"predicate_id", "sub_id", "sub_label", "obj_id",
"obj_label", ...}``) and ``metadata_relations.json``::

    {"P30": {"templates": ["[X] is located in [Y]."], "answer_space": ["Asia", "Antarctica", ...]}}

For each instance, the template (``template_index``, 0 by default, as lm-pub-quiz) is filled with the subject
and each answer of the relation's answer space (:func:`fill_statement`: one pass, the first letter upper-cased
as lm-pub-quiz does by default) (``answer_space`` as labels; lm-pub-quiz's
``answer_space_labels``/``answer_space_ids`` layout is read too); each statement is scored by its log-likelihood
and the answer of the best statement is the prediction. A masked LM's statement score is lm-pub-quiz's default
pseudo-log-likelihood, ``within_word_l2r`` (Kauf and Ivanova, 2023): for each piece that is not a special token,
that piece and the pieces of the same word to its right are masked, and the piece's log-probability counts;
the statement's score is their sum.

Any masked LM scores (an mLUKE checkpoint, or BERT, XLM-R, RoBERTa, DistilBERT, ... as
:mod:`mluke.models.word_models` loads them), each through its own tokenizer. Which pieces form a word is what
lm-pub-quiz takes: for another masked LM, the word ids of its fast tokenizer (its pre-tokenizer's words:
whitespace runs for XLM-R's SentencePiece, whitespace and punctuation apart for BERT's WordPiece, GPT-2's
pattern for byte-level BPE), and the pieces scored are those its special-tokens mask leaves (``[CLS]``/``<s>``
and ``[SEP]``/``</s>`` are not scored); for an mLUKE checkpoint, whose tokenizer is XLM-R's, the text's
whitespace-separated runs, the words XLM-R's pre-tokenizer gives. :func:`compare_bear` puts several models side
by side.

Reported: accuracy per relation (the table lm-pub-quiz prints per relation), the accuracy over all instances,
and the mean of the relations' accuracies.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kb.errors import InputFormatError
from mluke.models.errors import CheckpointError

if TYPE_CHECKING:
    from mluke.models.word_models import WordTokenizer
    from mluke.opening import ModelSource
    from probes.comparison import Comparison


@dataclass
class BearRelation:
    """One relation: its template, its answer space (labels; ids where given) and its instances."""

    pid: str
    template: str
    answers: list[str]
    answer_ids: list[str] = field(default_factory=list)
    instances: list[dict[str, Any]] = field(default_factory=list)


def read_bear(folder: str | os.PathLike[str], *, template_index: int = 0) -> list[BearRelation]:
    """The relations of a BEAR dataset folder (see the module docs), sorted by id.

    Raises:
        InputFormatError: no ``metadata_relations.json``, a relation without templates or answer space, or an
            instance whose object is not in the answer space.
    """
    folder = Path(folder)
    meta_path = folder / "metadata_relations.json"
    if not meta_path.is_file():
        raise InputFormatError(f"{meta_path}: missing; expected a BEAR dataset folder (P*.jsonl and this file)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    out = []
    for pid in sorted(meta, key=lambda p: int(re.sub(r"\D", "", p) or 0)):
        info = meta[pid]
        path = folder / f"{pid}.jsonl"
        if not path.is_file():
            continue
        templates = info.get("templates") or []
        answers = info.get("answer_space_labels") or info.get("answer_space") or []
        if not templates or not answers:
            raise InputFormatError(f"{meta_path}: {pid} needs templates and an answer space")
        if template_index >= len(templates):
            raise InputFormatError(f"{meta_path}: {pid} has {len(templates)} templates, no index {template_index}")
        rel = BearRelation(pid, templates[template_index], list(answers), list(info.get("answer_space_ids") or []))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                item = json.loads(line)
                if item["obj_label"] not in rel.answers:
                    raise InputFormatError(f"{path}:{number}: object {item['obj_label']!r} not in the answer space")
                rel.instances.append(item)
        out.append(rel)
    if not out:
        raise InputFormatError(f"{folder}: no relation file (P*.jsonl) named in metadata_relations.json")
    return out


def word_ids(text: str, offsets: Sequence[tuple[int, int]]) -> list[int | None]:
    """Per piece, the index of the whitespace-separated word its first non-space character is in (None: special
    pieces, whose offsets are (0, 0))."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    out: list[int | None] = []
    for a, b in offsets:
        if a == b:
            out.append(None)
            continue
        while a < b - 1 and text[a].isspace():  # a piece's offsets may take in the space before its word
            a += 1
        k = 0
        while k + 1 < len(starts) and starts[k + 1] <= a:
            k += 1
        out.append(k)
    return out


def masked_requests(
    ids: Sequence[int], words: Sequence[int | None], mask_id: int, scored: Sequence[bool] | None = None
) -> list[tuple[list[int], int]]:
    """``within_word_l2r``: per scored piece, the input with it and the scored pieces of its word that follow it
    masked, and its position.

    ``scored``: which pieces are scored (default: those with a word); a scored piece without a word is masked
    alone, and the word's run ends at the first scored piece of another word, as in lm-pub-quiz."""
    if scored is None:
        scored = [w is not None for w in words]
    positions = [i for i, s in enumerate(scored) if s]
    out = []
    for k, i in enumerate(positions):
        row = list(ids)
        row[i] = mask_id
        if words[i] is not None:
            for j in positions[k + 1 :]:
                if words[j] != words[i]:
                    break
                row[j] = mask_id
        out.append((row, i))
    return out


def _word_model_requests(tokenizer: WordTokenizer, texts: Sequence[str]) -> list[tuple[int, list[int], int, int]]:
    """The masked inputs of each text for a word model (see the module docs): (text, input, position, label)."""
    hf = tokenizer.hf
    if not getattr(hf, "is_fast", False):
        raise CheckpointError(
            f"{tokenizer.source_dir}: a slow tokenizer ({type(hf).__name__}); BEAR's within_word_l2r takes the word "
            "of each piece from a fast tokenizer (tokenizer.json), as lm-pub-quiz does"
        )
    enc = hf(list(texts), return_special_tokens_mask=True)
    requests: list[tuple[int, list[int], int, int]] = []
    for t, text in enumerate(texts):
        ids = list(enc["input_ids"][t])
        if len(ids) > tokenizer.max_length:
            raise InputFormatError(
                f"BEAR statement {text!r}: {len(ids)} pieces, more than the {tokenizer.max_length} positions "
                f"of {tokenizer.source_dir}"
            )
        scored = [not special for special in enc["special_tokens_mask"][t]]
        for row, i in masked_requests(ids, enc.word_ids(t), tokenizer.mask_id, scored):
            requests.append((t, row, i, ids[i]))
    return requests


def _mluke_requests(tokenizer: Any, texts: Sequence[str]) -> list[tuple[int, list[int], int, int]]:
    """The masked inputs of each text for an mLUKE tokenizer (words: whitespace runs): (text, input, position,
    label)."""
    enc = tokenizer(list(texts), return_tensors=None)
    requests: list[tuple[int, list[int], int, int]] = []
    for t, (text, ids, mask, offsets) in enumerate(zip(texts, enc["input_ids"], enc["attention_mask"], enc.offsets)):
        n = sum(mask)
        words = word_ids(text, offsets[:n])
        requests += [(t, row, i, ids[i]) for row, i in masked_requests(ids[:n], words, tokenizer.mask_id)]
    return requests


@torch.inference_mode()
def statement_scores(model: Any, tokenizer: Any, texts: Sequence[str], *, batch_size: int = 64) -> list[float]:
    """The ``within_word_l2r`` pseudo-log-likelihood of each text (see the module docs).

    ``model``: ``encode(input_ids=, attention_mask=)`` and ``word_scores(states)`` (log-probabilities);
    ``tokenizer``: a :class:`~mluke.models.word_models.WordTokenizer` (any masked LM's), or an mLUKE tokenizer
    (``tokenizer(texts, return_tensors=None)`` with ``.offsets``, ``mask_id``, ``pad_id``).

    Raises:
        CheckpointError: a word model whose tokenizer is not a fast one (no word ids).
        InputFormatError: a statement longer than the word model's positions.
    """
    from mluke.models.word_models import WordTokenizer  # transformers, only when statements are scored

    if isinstance(tokenizer, WordTokenizer):
        requests = _word_model_requests(tokenizer, texts)
    else:
        requests = _mluke_requests(tokenizer, texts)
    scores = [0.0] * len(texts)
    pad = tokenizer.pad_id
    for start in range(0, len(requests), batch_size):
        part = requests[start : start + batch_size]
        width = max(len(r[1]) for r in part)
        ids_t = torch.tensor([r[1] + [pad] * (width - len(r[1])) for r in part])
        att = torch.tensor([[1] * len(r[1]) + [0] * (width - len(r[1])) for r in part])
        states, _ = model.encode(input_ids=ids_t, attention_mask=att)
        at = states[
            torch.arange(len(part), device=states.device), torch.tensor([r[2] for r in part], device=states.device)
        ]
        logp = model.word_scores(at).float().cpu()
        for (t, _, _, label), row in zip(part, logp):
            scores[t] += float(row[label])
    return scores


#: The labels of the report's two overall rows.
ALL, MEAN = "all (instances)", "mean of relations"


@dataclass
class BearReport:
    """Per relation: instances and accuracy; the accuracy over all instances and the mean over relations."""

    relations: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """Correct over all instances."""
        n = sum(r["instances"] for r in self.relations.values())
        return sum(r["correct"] for r in self.relations.values()) / n if n else 0.0

    @property
    def macro_accuracy(self) -> float:
        """The mean of the relations' accuracies."""
        return sum(r["accuracy"] for r in self.relations.values()) / len(self.relations) if self.relations else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "macro_accuracy": self.macro_accuracy, "relations": self.relations}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        rows: list[list[Any]] = [
            [pid, int(r["instances"]), int(r["answers"]), round(100 * r["accuracy"], 2)]
            for pid, r in self.relations.items()
        ]
        n = sum(int(r["instances"]) for r in self.relations.values())
        rows.append([ALL, n, "", round(100 * self.accuracy, 2)])
        rows.append([MEAN, n, "", round(100 * self.macro_accuracy, 2)])
        return ["relation", "instances", "answers", "accuracy"], rows

    def scores(self) -> dict[tuple[str, ...], float]:
        """Accuracy per relation, then over all instances and the mean of relations: the rows of a
        :class:`probes.comparison.Comparison`."""
        out: dict[tuple[str, ...], float] = {(pid,): r["accuracy"] for pid, r in self.relations.items()}
        return {**out, (ALL,): self.accuracy, (MEAN,): self.macro_accuracy}


def score_choices(relation: BearRelation, statement_scores_: Sequence[Sequence[float]]) -> dict[str, float]:
    """A relation's row of the report from each instance's statement scores (one per answer, in answer order);
    ties go to the first answer."""
    correct = 0
    for item, scores in zip(relation.instances, statement_scores_):
        best = max(range(len(scores)), key=lambda k: (scores[k], -k))
        correct += relation.answers[best] == item["obj_label"]
    n = len(relation.instances)
    return {"instances": n, "answers": len(relation.answers), "correct": correct, "accuracy": correct / n if n else 0.0}


_PLACEHOLDER = re.compile(r"\[X\]|\[Y\]")


def fill_statement(template: str, subject: str, answer: str, *, capitalize: bool = True) -> str:
    """``template`` with ``[X]`` and ``[Y]`` replaced in one pass (a label that itself holds ``[Y]`` stays as
    written), the first letter upper-cased unless ``capitalize`` is false: lm-pub-quiz's statements."""
    text = _PLACEHOLDER.sub(lambda m: subject if m.group() == "[X]" else answer, template)
    return text[:1].upper() + text[1:] if capitalize else text


def eval_bear(
    folder: str | os.PathLike[str],
    model: ModelSource = None,
    *,
    template_index: int = 0,
    relations: Sequence[str] | None = None,
    limit: int | None = None,
    batch_size: int = 64,
    capitalize: bool = True,
) -> BearReport:
    """Score a BEAR dataset with a masked LM (what ``mluke eval-bear`` does; see the module docs).

    Args:
        folder: the BEAR dataset folder.
        model: an mLUKE checkpoint, any masked LM (folder or hub name, see :mod:`mluke.models.word_models`) or a
            loaded bundle (default: the demo model).
        template_index: which template of each relation.
        relations: only these relation ids.
        limit: only the first instances of each relation.
        batch_size: masked inputs per forward pass.
        capitalize: upper-case each statement's first letter, as lm-pub-quiz does by default.
    """
    from mluke.opening import open_model

    bundle = open_model(model, word_models=True)
    report = BearReport()
    for rel in read_bear(folder, template_index=template_index):
        if relations and rel.pid not in relations:
            continue
        if limit is not None:
            rel.instances = rel.instances[:limit]
        texts = [
            fill_statement(rel.template, item["sub_label"], answer, capitalize=capitalize)
            for item in rel.instances
            for answer in rel.answers
        ]
        flat = statement_scores(bundle.model, bundle.tokenizer, texts, batch_size=batch_size)
        k = len(rel.answers)
        report.relations[rel.pid] = score_choices(rel, [flat[i * k : (i + 1) * k] for i in range(len(rel.instances))])
    return report


def compare_bear(
    folder: str | os.PathLike[str], models: Sequence[ModelSource], **options: Any
) -> Comparison[BearReport]:
    """:func:`eval_bear` for each model in turn, side by side (what ``mluke eval-bear --model A --model B``
    prints): a column per model, a row per relation, then the accuracy over all instances and the mean of
    relations.

    Args:
        folder: the BEAR dataset folder.
        models: the models, in the order of the table's columns.
        **options: the other keyword arguments of :func:`eval_bear`.
    """
    from probes.comparison import compare

    return compare(models, lambda m: eval_bear(folder, m, **options), ["relation"])
