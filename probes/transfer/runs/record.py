"""Whole ReCoRD runs: fine-tune on ReCoRD-layout data (``finetune_record``, what ``mluke finetune record`` does) and
evaluate on test files of one or more languages (``evaluate_record``, what ``mluke evaluate record`` does), scored
by ReCoRD's official rules (:func:`probes.transfer.metrics.record.record_scores`). With knowbert features (a KnowBert
model) every row also gets the kb mentions of its query and passage
(:func:`mluke.finetuning.knowledge.attach_knowledge`)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kb.errors import OptionError
from kb.files import check_output
from mluke.finetuning import FineTuneConfig, load_transfer, new_model, predict_record
from mluke.finetuning.knowledge import KNOWBERT, attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.record import RECORD_DEFAULTS, ClozeQuery, record_rows
from mluke.models.devices import check_trainable, place
from mluke.opening import open_model
from probes.report import TableReport
from probes.transfer.metrics.record import record_scores
from probes.transfer.readers.record import RecordExample, candidate_key, read_record
from probes.transfer.runs.ner_re import EvaluateKeywords, FineTuneReport, RunKeywords, resumable_run, save_run

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.finetuning.models import TransferModel
    from mluke.models.tokenizer import MlukeTokenizer


def cloze_queries(examples: Sequence[RecordExample], lang: str | None = None) -> list[ClozeQuery]:
    """The model inputs of ``examples``: query, placeholder, passage, mentions, their gold labels
    (:func:`gold_labels`; none for a query without answers) and the language (``lang`` for examples without one)."""
    return [
        ClozeQuery(
            e.query, e.placeholder, e.text, e.entities, tuple(gold_labels(e)) if e.answers else None, e.lang or lang
        )
        for e in examples
    ]


def gold_labels(example: RecordExample) -> list[int]:
    """1 for each entity mention of the passage whose normalised text is that of a gold answer, else 0.

    Args:
        example: a query.

    Returns:
        One 0/1 per mention of ``example.entities``.
    """
    gold = {candidate_key(a) for a in example.answers}
    return [int(candidate_key(example.text[s:e]) in gold) for s, e in example.entities]


def score_record(
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    examples: Sequence[RecordExample],
    *,
    batch_size: int = 16,
    lang: str | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The model's ReCoRD scores on ``examples`` and its answer to each query.

    Args:
        model: a fine-tuned ReCoRD model.
        tokenizer: its tokenizer.
        examples: the queries.
        batch_size: rows per forward pass.
        lang: the language of examples without one (knowbert features find the kb's mentions per language).

    Returns:
        The scores of :func:`~probes.transfer.metrics.record.record_scores` with the counts of
        :meth:`mluke.finetuning.record.RecordInputs.counts` (``mentions``, ``mentions_dropped`` by the input sizes,
        ``answers_lost``: queries none of whose gold mentions was kept), and the predictions (query id -> answer
        text; "" when no mention was kept).
    """
    chosen, counts = predict_record(model, tokenizer, cloze_queries(examples, lang), batch_size=batch_size)
    predictions = {e.id: e.text[span[0] : span[1]] if span else "" for e, span in zip(examples, chosen)}
    scores = record_scores(predictions, {e.id: e.answers for e in examples})
    return {**scores, **{k: v for k, v in counts.items() if k != "queries"}}, predictions


def finetune_record(
    train: str | os.PathLike[str],
    dev: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str],
    settings: Mapping[str, int] | None = None,
    db: str | os.PathLike[str] | None = None,
    kbs: Mapping[str, str | os.PathLike[str] | None] | None = None,
    **run: Unpack[RunKeywords],
) -> FineTuneReport:
    """Fine-tune a model for ReCoRD on ``train`` and keep the epoch with the best dev F1.

    Each query is one input row: the query and its passage, an entity [MASK] (entity features) or the first and last
    pieces (word features) at ``@placeholder`` and over every entity mention; each mention is scored against the
    placeholder, trained with binary cross-entropy (1 where the mention's text is a gold answer). With knowbert
    features (a KnowBert ``model`` folder) the word vectors come through its knowledge layer, which reads the kb
    mentions of the query and of the passage. The model is written to ``output`` in the hub layout; an interrupted
    run continues when run again.

    Args:
        train: the training file (ReCoRD JSON or SuperGLUE JSON lines, :func:`~probes.transfer.read_record`).
        dev: the file that picks the best epoch (ReCoRD's F1).
        output: the folder the fine-tuned model is written to.
        settings: input sizes, :data:`mluke.finetuning.record.RECORD_DEFAULTS` by default (``max_length``,
            ``max_query_length``, ``max_entities``); kept with the model for evaluation.
        db: knowbert features: the kb whose mention index gives the spans and candidates (default: the embedded
            kb); kept in the model's settings.
        kbs: knowbert features: the kb of the KnowBert model's knowledge bases by name (``db`` is the first's;
            default: what the model records, :func:`mluke.knowbert.kb_dbs`); kept in the model's settings.
        **run: the options of every run (:class:`~probes.transfer.runs.ner_re.RunKeywords`: ``features``,
            ``model``, ``lang``, ``config``, ``overwrite``, ``restart``, ``progress``, ``device``).

    Returns:
        The run's :class:`~probes.transfer.FineTuneReport` (``skipped`` also counts the mentions the input sizes
        dropped and the training queries whose answers they dropped).

    Raises:
        OptionError: a bad option, or knowbert features on queries without a language.
        InputFormatError: an unreadable ``train`` or ``dev`` file.
    """
    started = time.perf_counter()
    config = (run.get("config") or FineTuneConfig()).check()
    features, model, lang = run.get("features", "entity"), run.get("model"), run.get("lang")
    overwrite = run.get("overwrite", False)
    sizes = {**RECORD_DEFAULTS, **(settings or {})}
    unknown = set(sizes) - set(RECORD_DEFAULTS)
    if unknown:
        raise OptionError(f"unknown ReCoRD settings {sorted(unknown)}; expected {', '.join(RECORD_DEFAULTS)}")
    output = check_output(output, overwrite=overwrite)
    train_data, dev_data = read_record(train, lang=lang), read_record(dev, lang=lang)
    for path, data in ((train, train_data), (dev, dev_data)):
        if features == KNOWBERT and any(e.lang is None for e in data.examples):
            raise OptionError(
                f"{path}: knowbert features find the kb's mentions per language and its queries carry none: "
                "give their language (lang=, --lang)"
            )
    bundle = open_knowbert_bundle(model) if features == KNOWBERT else open_model(model)
    check_trainable(bundle.model, "fine-tuning")
    tok = bundle.tokenizer
    model_settings: dict[str, Any] = {"seed": config.seed, **sizes}
    if features == KNOWBERT:
        model_settings[KNOWBERT] = kb_settings(db, kbs=kbs)
    net = new_model(bundle, "record", features, ["answer"], dropout=config.dropout, settings=model_settings)
    kb_identity: dict[str, Any] = {KNOWBERT: model_settings[KNOWBERT]} if features == KNOWBERT else {}
    place(net, run.get("device"))
    answered = [e for e in train_data.examples if e.answers]  # (a training file holds no query without answers)
    inputs = record_rows(
        tok,
        cloze_queries(answered, lang),
        max_length=sizes["max_length"],
        max_query_length=sizes["max_query_length"],
        max_entities=sizes["max_entities"],
    )
    attach_knowledge(net, tok, inputs.rows, lang)  # knowbert features: each row's spans and candidates
    tuner = resumable_run(
        net,
        inputs.rows,
        tokenizer=tok,
        output=output,
        files=(train, dev),
        identity={"task": "record", "features": features, "model": str(model), "settings": sizes, **kb_identity},
        config=config,
        restart=run.get("restart", False),
        evaluate=lambda m: float(score_record(m, tok, dev_data.examples, lang=lang)[0]["f1"]),
    )
    history = tuner.train(progress=run.get("progress", True))
    skipped = save_run(tuner, tok, output, overwrite=overwrite, files=(train, dev), read=(train_data, dev_data))
    skipped |= {
        "train: mentions dropped by the input sizes": inputs.mentions_dropped,
        "train: queries whose answers the input sizes dropped": inputs.answers_lost,
        "train: queries without answers": len(train_data.examples) - len(answered),
    }
    return FineTuneReport(
        output,
        "record",
        features,
        ["answer"],
        len(train_data.examples),
        len(dev_data.examples),
        history,
        time.perf_counter() - started,
        {k: v for k, v in skipped.items() if v},
    )


@dataclass
class RecordReport(TableReport):
    """ReCoRD scores per language (``rows``: lang, queries (scored), exact_match, f1 (fractions), mentions_dropped,
    answers_lost (counts of what the input sizes cut off), skipped (bad records), unscored (queries without gold
    answers)) and their average over languages."""

    features: str
    model: str
    rows: list[dict[str, Any]]
    task: str = "record"
    head = ("task", "features", "model")

    @property
    def average(self) -> dict[str, float]:
        keys = ("exact_match", "f1")
        return {k: sum(r[k] for r in self.rows) / len(self.rows) for k in keys} if self.rows else {}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing (EM and F1 x100), the average last."""
        counts = ("mentions_dropped", "answers_lost", "skipped")
        columns = ["lang", "queries", "exact_match", "f1", *counts]
        rows = [
            [
                r["lang"],
                r["queries"],
                round(100 * r["exact_match"], 1),
                round(100 * r["f1"], 1),
                *(r[k] for k in counts),
            ]
            for r in self.rows
        ]
        average = self.average
        total = sum(r["queries"] for r in self.rows)
        em, f1 = round(100 * average["exact_match"], 1), round(100 * average["f1"], 1)
        rows.append(["average", total, em, f1, *(sum(r[k] for r in self.rows) for k in counts)])
        return columns, rows


def evaluate_record(
    model_dir: str | os.PathLike[str],
    tests: Mapping[str, str | os.PathLike[str]] | Sequence[tuple[str, str | os.PathLike[str]]],
    **options: Unpack[EvaluateKeywords],
) -> RecordReport:
    """Score a fine-tuned ReCoRD model on test files, one per language (EM and F1 under ReCoRD's official rules).

    Args:
        model_dir: a folder written by :func:`finetune_record`.
        tests: the test file of each language (``{"de": "de/test.json", ...}`` or pairs).
        **options: ``batch_size``, ``progress``, ``device``, ``dtype``
            (:class:`~probes.transfer.runs.ner_re.EvaluateKeywords`).

    Returns:
        A :class:`RecordReport` with a row per language.

    Raises:
        OptionError: no test files, a model fine-tuned for another task, or a file without gold answers.
    """
    from tqdm import tqdm

    model, tok = load_transfer(model_dir)
    place(model, options.get("device"), options.get("dtype"))
    if model.task != "record":
        raise OptionError(f"{model_dir} was fine-tuned for {model.task!r}, not 'record'")
    pairs = list(tests.items()) if isinstance(tests, Mapping) else list(tests)
    if not pairs:
        raise OptionError("no test files: give at least one lang:path")
    rows = []
    for lang, path in tqdm(pairs, desc="evaluate", unit="language", disable=not options.get("progress", True)):
        data = read_record(path, lang=lang)
        scores, _ = score_record(model, tok, data.examples, batch_size=options.get("batch_size", 16), lang=lang)
        rows.append({"lang": lang, **scores, "skipped": sum(data.skipped.values())})
    return RecordReport(model.features, str(model_dir), rows)
