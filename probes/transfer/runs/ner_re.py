"""Whole runs for NER, relation extraction and entity typing: fine-tune on one language's data (``finetune``, what
``mluke finetune`` does) and evaluate zero-shot on others (``evaluate``, what ``mluke evaluate`` does)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from kb.errors import OptionError, option
from kb.files import check_output
from mluke.finetuning import (
    FineTuneConfig,
    FineTuner,
    load_transfer,
    new_model,
    predict_relations,
    predict_spans,
    predict_types,
    save_transfer,
)
from mluke.finetuning.inputs import Row, ner_rows, relation_rows, typing_rows
from mluke.finetuning.knowledge import KNOWBERT, attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.models import Features, TransferModel
from mluke.models.devices import check_trainable, place
from mluke.opening import open_model
from probes.report import TableReport
from probes.transfer.metrics.ner_re import ner_scores, re_scores
from probes.transfer.metrics.tacred import tacred_scores
from probes.transfer.metrics.typing import typing_scores
from probes.transfer.readers.ner import NerSentence, read_ner
from probes.transfer.readers.relations import RE_FORMATS, ReExample, read_re
from probes.transfer.readers.tacred import read_tacred
from probes.transfer.readers.typing import TypingExample, read_typing

if TYPE_CHECKING:
    from mluke.models.devices import Device, DType
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource

Task = Literal["ner", "re", "typing"]


class RunKeywords(TypedDict, total=False):
    """The options of a fine-tuning run that :func:`probes.transfer.finetune_record` takes as keyword arguments (those
    of :func:`finetune`): ``features`` (``"entity"``, the default, ``"word"`` or ``"knowbert"``), ``model``
    (anything :func:`mluke.open_model` takes, or a KnowBert folder for ``"knowbert"``; default: the demo model),
    ``lang`` (stored on the examples), ``config`` (a :class:`~mluke.finetuning.FineTuneConfig`; the paper's
    settings by default), ``overwrite`` (replace an existing output), ``restart`` (start over instead of continuing
    an interrupted run), ``progress`` (show progress bars; on by default) and ``device`` (where to train)."""

    features: Features
    model: ModelSource
    lang: str | None
    config: FineTuneConfig | None
    overwrite: bool
    restart: bool
    progress: bool
    device: Device


class EvaluateKeywords(TypedDict, total=False):
    """The options of an evaluation that :func:`probes.transfer.evaluate_record` takes as keyword arguments (those
    of :func:`evaluate`): ``batch_size`` (examples per forward pass, 16), ``progress`` (a progress bar; on),
    ``device`` (where the model runs) and ``dtype`` (its precision)."""

    batch_size: int
    progress: bool
    device: Device
    dtype: DType


def _check_task(task: str) -> str:
    if task == "qa":
        raise OptionError("QA runs are probes.transfer.finetune_qa and evaluate_qa")
    if task not in ("ner", "re", "typing"):
        raise OptionError("{task}: expected 'ner', 're', 'typing' or 'qa'", options={"task": option("task", task)})
    return task


def _read(
    task: str, path: str | os.PathLike[str], lang: str | None, all_labels: bool = False, fmt: str = "kbp37"
) -> Any:
    if task == "typing":
        return read_typing(path, lang=lang, all_labels=all_labels)
    if task == "re":
        return read_tacred(path, lang=lang) if fmt == "tacred" else read_re(path, lang=lang)
    return read_ner(path, lang=lang)


def _check_format(task: str, fmt: str | None) -> str:
    """The relation data layout (``"kbp37"`` unless given); an error for an unknown one or one given to NER or
    typing."""
    if fmt is not None and task != "re":
        raise OptionError(f"a data format ({fmt!r}) is for relation extraction ('re'), not {task!r}")
    if fmt is not None and fmt not in RE_FORMATS:
        raise OptionError(f"relation data format {fmt!r}: expected one of {', '.join(RE_FORMATS)}")
    return fmt or "kbp37"


def file_identity(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies a data file in a run's work folder (path, size, modification time): a resumed run refuses a
    file that changed."""
    st = Path(path).stat()
    return {"path": str(Path(path).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def resumable_run(
    net: TransferModel,
    rows: Sequence[Row],
    *,
    tokenizer: MlukeTokenizer,
    output: Path,
    files: tuple[str | os.PathLike[str], str | os.PathLike[str]],
    identity: dict[str, Any],
    config: FineTuneConfig,
    restart: bool,
    evaluate: Callable[[TransferModel], float],
) -> FineTuner:
    """The :class:`~mluke.finetuning.FineTuner` of a run that writes ``output``: its work folder is
    ``output.work`` and what the run is, ``identity`` with the train and dev files' (:func:`file_identity`), so that
    the folder of a run with other data or settings is not continued.

    Args:
        net: the model to train.
        rows: the training rows.
        tokenizer: its tokenizer (the padding id).
        output: the folder the model will be written to.
        files: the train and dev files.
        identity: the task, features, model and settings of the run.
        config: the training settings.
        restart: start over instead of continuing.
        evaluate: the dev score of the model after an epoch.

    Returns:
        The run, not started.
    """
    train, dev = files
    return FineTuner(
        net,
        rows,
        config=config,
        work=output.with_name(output.name + ".work"),
        pad_id=tokenizer.pad_id,
        identity={**identity, "train": file_identity(train), "dev": file_identity(dev)},
        restart=restart,
        evaluate=evaluate,
    )


def save_run(
    tuner: FineTuner,
    tokenizer: MlukeTokenizer,
    output: Path,
    *,
    overwrite: bool,
    files: tuple[str | os.PathLike[str], str | os.PathLike[str]],
    read: tuple[Any, Any],
) -> dict[str, int]:
    """The end of a fine-tuning run: write its model (with the train and dev files, the history and the settings),
    remove its work folder, and count what the train and dev readers skipped.

    Args:
        tuner: the run, trained.
        tokenizer: the model's tokenizer.
        output: the model's folder.
        overwrite: replace an existing ``output``.
        files: the train and dev files.
        read: what was read of them (data sets with ``skipped`` counts).

    Returns:
        The skipped records per reason, as ``"train: reason"`` / ``"dev: reason"``.
    """
    train, dev = files
    extra = {"train": str(train), "dev": str(dev), "history": tuner.history, "config": asdict(tuner.config)}
    save_transfer(tuner.model, tokenizer, output, overwrite=overwrite, extra=extra)
    shutil.rmtree(tuner.work, ignore_errors=True)
    return {f"{name}: {k}": v for name, data in zip(("train", "dev"), read) for k, v in data.skipped.items()}


def score(
    task: str,
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    data: Sequence[Any],
    *,
    lang: str | None = None,
    batch_size: int = 16,
    fmt: str = "kbp37",
) -> dict[str, Any]:
    """The model's scores on NER sentences (span micro F1, seqeval strict IOB2), relation examples (macro F1
    over relation types, see :func:`probes.transfer.metrics.ner_re.re_scores`; TACRED: micro F1 over the positive
    relations, :func:`probes.transfer.metrics.tacred.tacred_scores`) or typing examples (loose micro F1,
    :func:`probes.transfer.metrics.typing.typing_scores`).

    Args:
        task: ``"ner"``, ``"re"`` or ``"typing"``.
        model: the fine-tuned model.
        tokenizer: its tokenizer.
        data: NER sentences, relation or typing examples.
        lang: the language of items that carry none.
        batch_size: rows per forward pass.
        fmt: relations: ``"kbp37"`` or ``"tacred"``, the layout the examples were read from.

    Returns:
        The scores of :func:`~probes.transfer.metrics.ner_re.ner_scores`,
        :func:`~probes.transfer.metrics.ner_re.re_scores` or :func:`~probes.transfer.metrics.typing.typing_scores`.
    """
    if task == "ner":
        predicted = predict_spans(
            model, tokenizer, [s.words for s in data], [s.lang or lang for s in data], batch_size=batch_size
        )
        return ner_scores(data, predicted)
    if task == "typing":
        texts, spans, langs = [e.text for e in data], [e.span for e in data], [e.lang or lang for e in data]
        types = predict_types(model, tokenizer, texts, spans, batch_size=batch_size, langs=langs)
        return typing_scores([e.labels for e in data], types)
    labels = predict_relations(
        model,
        tokenizer,
        [e.text for e in data],
        [(e.head, e.tail) for e in data],
        batch_size=batch_size,
        langs=[e.lang or lang for e in data],
    )
    scorer = tacred_scores if fmt == "tacred" else re_scores
    return scorer([e.label for e in data], labels)


def _main_score(task: str, scores: dict[str, Any]) -> float:
    """The dev score: F1 (NER, typing, TACRED's micro F1), else (KBP37 / RELX) macro F1."""
    return cast(float, scores["f1"] if "f1" in scores else scores["macro_f1"])


@dataclass
class FineTuneReport:
    """What a fine-tuning run did: data sizes, loss and dev score per epoch, the epoch kept."""

    output: Path
    task: str
    features: str
    labels: list[str]
    train_size: int
    dev_size: int
    history: list[dict[str, Any]]
    seconds: float
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def best(self) -> dict[str, Any]:
        return max(self.history, key=lambda h: h["dev"])

    def summary(self) -> str:
        best = self.best
        return (
            f"fine-tuned {self.task} ({self.features} features) on {self.train_size:,} examples in "
            f"{self.seconds:,.0f} s; kept epoch {best['epoch'] + 1} (dev {100 * best['dev']:.1f}); wrote {self.output}"
        )


def finetune(
    task: Task,
    train: str | os.PathLike[str],
    dev: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str],
    features: Features = "entity",
    model: ModelSource = None,
    lang: str | None = None,
    config: FineTuneConfig | None = None,
    overwrite: bool = False,
    restart: bool = False,
    progress: bool = True,
    device: Device = None,
    all_labels: bool = False,
    fmt: str | None = None,
    db: str | os.PathLike[str] | None = None,
    kbs: Mapping[str, str | os.PathLike[str] | None] | None = None,
) -> FineTuneReport:
    """Fine-tune a model for NER, relation extraction or entity typing on ``train`` and keep the epoch best on
    ``dev``.

    The model is written to ``output`` in the hub layout with its labels; an interrupted run continues when run
    again.

    Args:
        task: ``"ner"`` (CoNLL-2002/2003 or WikiANN files, see :func:`probes.transfer.readers.ner.read_ner`) or
            ``"re"`` (KBP37 / RELX files, :func:`probes.transfer.readers.relations.read_re`) or ``"typing"`` (Open
            Entity files, :func:`probes.transfer.readers.typing.read_typing`; dev score: loose micro F1).
        train: the training file.
        dev: the file that picks the best epoch.
        output: the folder the fine-tuned model is written to.
        features: ``"entity"`` (mLUKE-E), ``"word"`` (mLUKE-W) or ``"knowbert"`` (word features of a KnowBert
            ``model`` folder with its knowledge layer, :mod:`mluke.finetuning.knowledge`).
        model: the mLUKE model to fine-tune (anything :func:`mluke.open_model` takes; default: the demo model).
        lang: the language of CoNLL files (WikiANN lines carry theirs).
        config: the paper's settings by default.
        overwrite: replace an existing ``output``.
        restart: start over instead of continuing an interrupted run.
        progress: show progress bars.
        device: where to train (``"auto"``: a GPU when there is one).
        all_labels: typing: keep every label of the files, not only the nine general types (the papers' setting).
        fmt: relations: the layout of ``train`` and ``dev``, ``"kbp37"`` (default; also RELX) or ``"tacred"``
            (TACRED JSON, :func:`probes.transfer.readers.tacred.read_tacred`; dev score: TACRED's micro F1).
            Kept in the model's settings, so that :func:`evaluate` reads its test files alike.
        db: knowbert features: the kb whose mention index gives the spans and candidates (default: the embedded
            kb); kept in the model's settings.
        kbs: knowbert features: the kb of the KnowBert model's knowledge bases by name (``db`` is the first's;
            default: what the model records, :func:`mluke.knowbert.kb_dbs`); kept in the model's settings.

    Returns:
        The run's :class:`FineTuneReport`.

    Raises:
        OptionError: a bad task or option.
        InputFormatError: an unreadable ``train`` or ``dev`` file.
    """
    started = time.perf_counter()
    _check_task(task)
    layout = _check_format(task, fmt)
    config = (config or FineTuneConfig()).check()
    output = check_output(output, overwrite=overwrite)
    train_data, dev_data = _read(task, train, lang, all_labels, layout), _read(task, dev, lang, all_labels, layout)
    items = train_data.sentences if task == "ner" else train_data.examples
    dev_items = dev_data.sentences if task == "ner" else dev_data.examples
    if task == "ner":
        labels = ["O", *sorted(set(train_data.types) | set(dev_data.types))]
    elif task == "typing":
        labels = sorted(set(train_data.labels) | set(dev_data.labels))
    else:
        seen = sorted(set(train_data.labels) | set(dev_data.labels))
        labels = (["no_relation"] if "no_relation" in seen else []) + [l for l in seen if l != "no_relation"]
    bundle = open_knowbert_bundle(model) if features == KNOWBERT else open_model(model)
    check_trainable(bundle.model, "fine-tuning")
    settings: dict[str, Any] = {
        "seed": config.seed,
        "max_span_pieces": config.max_span_pieces,
        "max_entities": config.max_entities,
    }
    if task == "typing":
        settings["all_labels"] = all_labels
    if task == "re":
        settings["format"] = layout
    if features == KNOWBERT:
        settings[KNOWBERT] = kb_settings(db, kbs=kbs)
    net = new_model(bundle, task, features, labels, dropout=config.dropout, settings=settings)
    place(net, device)  # in place
    tok = bundle.tokenizer
    index = {l: i for i, l in enumerate(labels)}
    rows: list[Row]
    if task == "typing":
        golds = [[int(l in e.labels) for l in labels] for e in items]
        rows = typing_rows(
            tok, [e.text for e in items], [e.span for e in items], labels=golds, langs=[e.lang or lang for e in items]
        )
    elif task == "ner":
        rows = ner_rows(
            tok,
            [s.words for s in items],
            [s.lang or lang for s in items],
            features=features,
            max_span_pieces=config.max_span_pieces,
            max_entities=config.max_entities,
            gold=[s.spans for s in items],
            label_ids=index,
        )
    else:
        rows = relation_rows(
            tok,
            [e.text for e in items],
            [(e.head, e.tail) for e in items],
            features=features,
            labels=[index[e.label] for e in items],
            langs=[e.lang or lang for e in items],
        )
    attach_knowledge(net, tok, rows, lang)  # knowbert features: each row's spans and candidates
    tuner = resumable_run(
        net,
        rows,
        tokenizer=tok,
        output=output,
        files=(train, dev),
        identity={"task": task, "features": features, "model": str(model), "labels": labels},
        config=config,
        restart=restart,
        evaluate=lambda m: _main_score(task, score(task, m, tok, dev_items, lang=lang, fmt=layout)),
    )
    history = tuner.train(progress=progress)
    skipped = save_run(tuner, tok, output, overwrite=overwrite, files=(train, dev), read=(train_data, dev_data))
    return FineTuneReport(
        output, task, features, labels, len(items), len(dev_items), history, time.perf_counter() - started, skipped
    )


#: The scores of each task that go into the per-language table.
_KEPT = {
    "ner": ["precision", "recall", "f1"],
    "re": ["macro_f1", "micro_f1", "accuracy"],
    "typing": ["precision", "recall", "f1", "macro_f1", "accuracy"],
    "tacred": ["precision", "recall", "f1", "macro_f1", "accuracy"],
}


@dataclass
class TransferReport(TableReport):
    """Zero-shot scores per language (``rows``: lang, examples, precision, recall, f1 (NER; typing: loose micro,
    with accuracy) or macro_f1, micro_f1, accuracy (relations; TACRED: its micro precision, recall, f1 over the
    positive relations, then macro_f1 and accuracy)) and their average over languages; ``layout``: the relation
    data layout (``"kbp37"`` or ``"tacred"``), None for NER and typing."""

    task: str
    features: str
    model: str
    rows: list[dict[str, Any]]
    layout: str | None = None
    head = ("task", "features", "model", "layout")

    @property
    def average(self) -> dict[str, float]:
        keys = [k for k, v in self.rows[0].items() if isinstance(v, float)] if self.rows else []
        return {k: sum(r[k] for r in self.rows) / len(self.rows) for k in keys}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing (scores x100), the average last."""
        keys = _KEPT["tacred" if self.layout == "tacred" else self.task]
        rows = [[r["lang"], r["examples"], *(round(100 * r[k], 1) for k in keys)] for r in self.rows]
        rows.append(
            ["average", sum(r["examples"] for r in self.rows), *(round(100 * self.average[k], 1) for k in keys)]
        )
        return ["lang", "examples", *keys], rows


def evaluate(
    task: Task,
    model_dir: str | os.PathLike[str],
    tests: Mapping[str, str | os.PathLike[str]] | Sequence[tuple[str, str | os.PathLike[str]]],
    *,
    batch_size: int = 16,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    fmt: str | None = None,
) -> TransferReport:
    """Score a fine-tuned model on test files, one per language.

    Args:
        task: ``"ner"``, ``"re"`` or ``"typing"``, as the model was fine-tuned.
        model_dir: a folder written by :func:`finetune`.
        tests: the test file of each language (``{"de": "de/test.txt", ...}`` or pairs).
        batch_size: examples per forward pass.
        progress: show a progress bar.
        device: where the model runs (:mod:`mluke.models.devices`).
        dtype: the precision it runs in.
        fmt: relations: the layout of the test files, ``"kbp37"`` or ``"tacred"`` (default: the one the model was
            fine-tuned on); TACRED files are scored by :func:`~probes.transfer.metrics.tacred.tacred_scores`.

    Returns:
        A :class:`TransferReport` with a row per language.

    Raises:
        OptionError: a bad task, no test files, or a model fine-tuned for another task.
    """
    from tqdm import tqdm

    _check_task(task)
    _check_format(task, fmt)
    model, tok = load_transfer(model_dir)
    place(model, device, dtype)
    if model.task != task:
        raise OptionError(f"{model_dir} was fine-tuned for {model.task!r}, not {task!r}")
    pairs = list(tests.items()) if isinstance(tests, Mapping) else list(tests)
    if not pairs:
        raise OptionError("no test files: give at least one lang:path")
    layout = fmt or model.settings.get("format", "kbp37")
    kept = _KEPT["tacred" if task == "re" and layout == "tacred" else task]
    rows = []
    for lang, path in tqdm(pairs, desc="evaluate", unit="language", disable=not progress):
        data = _read(task, path, lang, model.settings.get("all_labels", False), layout)
        items: Sequence[NerSentence | ReExample | TypingExample] = data.sentences if task == "ner" else data.examples
        scores = score(task, model, tok, items, lang=lang, batch_size=batch_size, fmt=layout)
        rows.append(
            {
                "lang": lang,
                "examples": len(items),
                **{k: float(scores[k]) for k in kept},
                "per_type": scores["per_type"],
                "skipped": sum(data.skipped.values()),
            }
        )
    return TransferReport(task, model.features, str(model_dir), rows, layout if task == "re" else None)
