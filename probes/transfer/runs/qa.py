"""Whole QA runs: fine-tune on SQuAD-format data with entity-linked input (``finetune_qa``, what ``mluke
finetune qa`` does) and evaluate zero-shot on XQuAD and MLQA, with MLQA's G-XLT matrix (``evaluate_qa``,
what ``mluke evaluate qa`` does). With knowbert features (a KnowBert model) every row also gets the kb mentions of
its question and passage window (:func:`mluke.finetuning.knowledge.attach_knowledge`)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import check_output
from kb.renamed import renamed_keyword
from mluke.finetuning import FineTuneConfig, FineTuner, load_transfer, new_model, save_transfer
from mluke.finetuning.knowledge import KNOWBERT, attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.models import Features, TransferModel
from mluke.finetuning.qa import LinkedName, QaRow, collate_qa, predict_answers, qa_rows
from mluke.models.devices import check_trainable, place
from mluke.opening import open_model
from probes.transfer.metrics.qa import Scorer, check_scorer, qa_scores
from probes.transfer.readers.qa import QaExample, mlqa_path, read_mlqa, read_squad
from probes.transfer.runs.qa_linking import Link, LinkSource, cached_links
from probes.transfer.runs.qa_reports import QaFineTuneReport, QaReport

if TYPE_CHECKING:
    from kb.mentions import MentionIndex
    from mluke.models.devices import Device, DType
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource

#: MLQA's languages, the G-XLT matrix's rows and columns.
MLQA_LANGUAGES = ("en", "es", "de", "ar", "hi", "vi", "zh")
QA_DEFAULTS = {
    "max_length": 384,
    "doc_stride": 128,
    "max_query_length": 64,
    "max_answer_length": 30,
    "max_entities": 64,
}


@dataclass
class QaInputs:
    """Everything needed to turn examples into rows: the tokenizer (with the entity vocabulary that gives
    linked entities their ids), the mention index, and the input settings (``QA_DEFAULTS``)."""

    tokenizer: MlukeTokenizer
    index: MentionIndex
    settings: dict[str, int]

    def names(self, links: Sequence[Link]) -> list[LinkedName]:
        """Linked names with their vocabulary ids; entities outside the vocabulary get no token. Without an entity
        vocabulary (a KnowBert model's tokenizer) every name still cuts the text (id 0: no entity token)."""
        vocab = getattr(self.tokenizer, "entity_vocab", None)
        if not links:
            return []
        if vocab is None:
            return [(s, e, 0) for s, e, _ in links]
        ids = vocab.ids_of_keys([k for *_, k in links])
        return [(s, e, i) for (s, e, _), i in zip(links, ids) if i is not None]

    def rows(
        self,
        examples: Sequence[QaExample],
        links: dict[str, dict[str, list[Link]]],
        features: str,
        *,
        answers: bool = False,
    ) -> list[QaRow]:
        s = self.settings
        return qa_rows(
            self.tokenizer,
            [e.question for e in examples],
            [e.context for e in examples],
            features=features,
            question_names=[self.names(links[e.id]["question"]) for e in examples],
            context_names=[self.names(links[e.id]["context"]) for e in examples],
            answers=[(e.answers[0][0], e.answers[0][0] + len(e.answers[0][1])) for e in examples] if answers else None,
            max_length=s["max_length"],
            doc_stride=s["doc_stride"],
            max_query_length=s["max_query_length"],
            max_entities=s["max_entities"],
            langs=[e.lang for e in examples],
            question_langs=[e.question_lang for e in examples],
        )


def _index(db: EntityDB | str | Path | None, langs: Sequence[str]) -> MentionIndex:
    from kb import open_db
    from kb.mentions import MentionIndex

    db = open_db(db)
    known = [lang for lang in dict.fromkeys(langs) if lang in db.languages]
    return MentionIndex.for_db(db, languages=known or None)


def answer_dataset(
    model: TransferModel,
    inputs: QaInputs,
    examples: Sequence[QaExample],
    links: dict[str, dict[str, list[Link]]],
    *,
    lang: str,
    scorer: Scorer = "squad",
    batch_size: int = 16,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The scores and the predicted answer of every example.

    Args:
        model: the fine-tuned QA model.
        inputs: the tokenizer, mention index and input settings.
        examples: the questions.
        links: their linked names (:func:`~probes.transfer.runs.qa_linking.cached_links`).
        lang: the context language (MLQA's scorers are per language).
        scorer: the answer normalisation.
        batch_size: rows per forward pass.

    Returns:
        ``(scores, predictions)``: :func:`probes.transfer.metrics.qa.qa_scores` and the answer text by id.
    """
    rows = attach_knowledge(model, inputs.tokenizer, inputs.rows(examples, links, model.features), lang)
    found = predict_answers(
        model,
        inputs.tokenizer,
        rows,
        [e.context for e in examples],
        batch_size=batch_size,
        max_answer_length=inputs.settings["max_answer_length"],
    )
    predictions = {e.id: text for e, (text, _) in zip(examples, found)}
    return qa_scores(predictions, {e.id: e.answer_texts for e in examples}, lang, scorer), predictions


@renamed_keyword("kb", "db")
def finetune_qa(
    train: str | os.PathLike[str],
    dev: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str],
    features: Features = "entity",
    model: ModelSource = None,
    db: EntityDB | str | Path | None = None,
    lang: str = "en",
    config: FineTuneConfig | None = None,
    settings: dict[str, int] | None = None,
    overwrite: bool = False,
    restart: bool = False,
    progress: bool = True,
    device: Device = None,
    kbs: Mapping[str, str | os.PathLike[str] | None] | None = None,
) -> QaFineTuneReport:
    """Fine-tune a model for extractive QA on SQuAD-format data, keeping the epoch with the best dev F1.

    An interrupted run continues when run again (same arguments). ``output``, ``model``, ``config``,
    ``overwrite``, ``restart``, ``progress`` and ``device`` are as in :func:`probes.transfer.finetune`.

    Args:
        train: the SQuAD-format training file.
        dev: the SQuAD-format file that picks the best epoch.
        features: ``"entity"`` (mLUKE-E: linked names get entity tokens), ``"word"`` (mLUKE-W: they do not) or
            ``"knowbert"`` (word features of a KnowBert ``model`` folder, its knowledge layer reading the kb mentions
            of question and passage, :mod:`mluke.finetuning.knowledge`).
        db: the entity database whose anchors link the names (default: the embedded kb); ``kb=`` is its
            deprecated spelling. With knowbert features also the kb whose mention index gives the spans and
            candidates (kept in the model's settings).
        lang: the language of ``train`` and ``dev``.
        settings: windowing and decoding, any of ``QA_DEFAULTS``.
        kbs: knowbert features: the kb of the KnowBert model's knowledge bases by name (``db`` is the first's;
            default: what the model records, :func:`mluke.knowbert.kb_dbs`).

    Returns:
        The run's :class:`QaFineTuneReport`.

    Raises:
        OptionError: unknown settings or a bad option.
        InputFormatError: an unreadable ``train`` or ``dev`` file.
    """
    started = time.perf_counter()
    config = (config or FineTuneConfig()).check()
    unknown = set(settings or {}) - set(QA_DEFAULTS)
    if unknown:
        raise OptionError(f"unknown QA settings {sorted(unknown)}; known: {sorted(QA_DEFAULTS)}")
    qa_settings = {**QA_DEFAULTS, **(settings or {})}
    output = check_output(output, overwrite=overwrite)
    train_data, dev_data = read_squad(train, lang=lang), read_squad(dev, lang=lang)
    bundle = open_knowbert_bundle(model) if features == KNOWBERT else open_model(model)
    check_trainable(bundle.model, "fine-tuning")
    inputs = QaInputs(bundle.tokenizer, _index(db, [lang]), qa_settings)
    train_links = cached_links(train, train_data.examples, inputs.index, lang=lang)
    dev_links = cached_links(dev, dev_data.examples, inputs.index, lang=lang)
    model_settings: dict[str, Any] = {"seed": config.seed, **qa_settings}
    if features == KNOWBERT:
        first = db if db is None or isinstance(db, (str, os.PathLike)) else db.path
        model_settings[KNOWBERT] = kb_settings(first, kbs=kbs)
    net = new_model(bundle, "qa", features, ["start", "end"], dropout=config.dropout, settings=model_settings)
    rows = attach_knowledge(
        net, bundle.tokenizer, inputs.rows(train_data.examples, train_links, features, answers=True)
    )
    place(net, device)  # in place
    identity = {
        "task": "qa",
        "features": features,
        "model": str(model),
        "train": _stat(train),
        "dev": _stat(dev),
        "settings": qa_settings,
    }
    work = output.with_name(output.name + ".work")

    def dev_f1(m: TransferModel) -> float:
        return cast(float, answer_dataset(m, inputs, dev_data.examples, dev_links, lang=lang)[0]["f1"])

    tuner = FineTuner(
        net,
        rows,
        config=config,
        work=work,
        pad_id=bundle.tokenizer.pad_id,
        identity=identity,
        restart=restart,
        evaluate=dev_f1,
        collate_fn=collate_qa,
    )
    history = tuner.train(progress=progress)
    save_transfer(
        net,
        bundle.tokenizer,
        output,
        overwrite=overwrite,
        extra={"train": str(train), "dev": str(dev), "history": history, "config": asdict(config)},
    )
    shutil.rmtree(work, ignore_errors=True)
    names = sum(len(v["question"]) + len(v["context"]) for v in train_links.values()) / max(1, len(train_links))
    skipped = {f"train: {k}": v for k, v in train_data.skipped.items()} | {
        f"dev: {k}": v for k, v in dev_data.skipped.items()
    }
    return QaFineTuneReport(
        output,
        features,
        len(train_data),
        len(dev_data),
        len(rows),
        names,
        history,
        time.perf_counter() - started,
        skipped,
    )


def _stat(path: str | os.PathLike[str]) -> dict[str, Any]:
    st = Path(path).stat()
    return {"path": str(Path(path).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


@renamed_keyword("kb", "db")
def evaluate_qa(
    model_dir: str | os.PathLike[str],
    *,
    xquad: str | os.PathLike[str] | None = None,
    mlqa: str | os.PathLike[str] | None = None,
    langs: Sequence[str] | None = None,
    gxlt: bool = False,
    split: str = "dev",
    db: EntityDB | str | Path | None = None,
    link_source: LinkSource = "anchors",
    batch_size: int = 16,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    scorer: Scorer | None = None,
) -> QaReport:
    """Score a fine-tuned QA model zero-shot on XQuAD and MLQA.

    Args:
        model_dir: a folder written by :func:`finetune_qa`.
        xquad: a folder of ``xquad.{lang}.json`` files.
        mlqa: a folder of ``{split}-context-{c}-question-{q}.json`` files.
        langs: the languages to read (default: those found; for MLQA its seven).
        gxlt: score every MLQA context x question pair of those languages (the G-XLT matrix).
        split: MLQA's split, ``"dev"`` or ``"test"``.
        db: the entity database whose anchors link the names (default: the embedded kb); ``kb=`` is its
            deprecated spelling.
        link_source: ``"anchors"`` or ``"english"`` (XQuAD's English file, same ids, is the source; see
            :mod:`probes.transfer.runs.qa_linking`).
        batch_size: windows per forward pass.
        progress: show a progress bar.
        device: where the model runs.
        dtype: the precision it runs in.
        scorer: the answer normalisation (:mod:`probes.transfer.metrics.qa`); default: each data set's official
            one, ``"squad"`` (SQuAD v1.1) for XQuAD and ``"mlqa"`` (per context language) for MLQA and G-XLT.

    Returns:
        A :class:`QaReport` with a row per file (and the G-XLT matrix when asked for).

    Raises:
        OptionError: nothing to evaluate, no files found, a scorer that does not fit a language, or a model
            fine-tuned for another task.
    """
    from tqdm import tqdm

    if xquad is None and mlqa is None:
        raise OptionError("nothing to evaluate: give an XQuAD folder, an MLQA folder, or both")
    if scorer is not None:
        check_scorer(scorer)
    jobs: list[tuple[str, Path, str, str, Path | None]] = []  # dataset, file, context lang, question lang, English file
    if xquad is not None:
        folder = Path(xquad)
        found = sorted(p.name.split(".")[1] for p in folder.glob("xquad.*.json")) if langs is None else list(langs)
        if not found:
            raise OptionError(f"{folder}: no xquad.LANG.json files")
        english_file = folder / "xquad.en.json"
        jobs += [("xquad", folder / f"xquad.{lang}.json", lang, lang, english_file) for lang in found]
    if mlqa is not None:
        folder = Path(mlqa)
        pick = (
            list(langs)
            if langs is not None
            else [l for l in MLQA_LANGUAGES if mlqa_path(folder, l, l, split).is_file()]
        )
        if not pick:
            raise OptionError(f"{folder}: no {split}-context-L-question-L.json files of MLQA's languages")
        pairs = [(c, q) for c in pick for q in pick] if gxlt else [(lang, lang) for lang in pick]
        jobs += [("mlqa", mlqa_path(folder, c, q, split), c, q, None) for c, q in pairs]
    official: dict[str, Scorer] = {"xquad": "squad", "mlqa": "mlqa"}
    for dataset, _, c, _, _ in jobs:  # refuse a scorer/language mismatch before any model work
        check_scorer(scorer or official[dataset], c)
    model, tokenizer = load_transfer(model_dir)
    place(model, device, dtype)
    if model.task != "qa":
        raise OptionError(f"{model_dir} was fine-tuned for {model.task!r}, not 'qa'")
    settings = {k: int(model.settings.get(k, v)) for k, v in QA_DEFAULTS.items()}
    index = _index(db, [lang for _, _, c, q, _ in jobs for lang in (c, q)])
    inputs = QaInputs(tokenizer, index, settings)
    rows, matrix = [], {}
    english_examples: dict[Path, dict[str, QaExample]] = {}
    for dataset, path, c, q, english_path in tqdm(jobs, desc="evaluate", unit="file", disable=not progress):
        data = read_mlqa(path.parent, c, q, split=split) if dataset == "mlqa" else read_squad(path, lang=c)
        source: LinkSource = link_source if dataset == "xquad" else "anchors"
        english: dict[str, QaExample] | None = None
        if source == "english" and english_path is not None:
            if english_path not in english_examples:
                english_examples[english_path] = {e.id: e for e in read_squad(english_path, lang="en")}
            english = english_examples[english_path]
        links = cached_links(
            path,
            data.examples,
            index,
            lang=c,
            question_lang=q,
            source=source,
            english_path=english_path if source == "english" else None,
            english=english,
        )
        scores, _ = answer_dataset(
            model, inputs, data.examples, links, lang=c, scorer=scorer or official[dataset], batch_size=batch_size
        )
        rows.append(
            {
                "dataset": dataset,
                "lang": c,
                "question_lang": q,
                "questions": scores["questions"],
                "exact_match": scores["exact_match"],
                "f1": scores["f1"],
                "scorer": scores["scorer"],
                "skipped": sum(data.skipped.values()),
            }
        )
        if dataset == "mlqa" and gxlt:
            matrix[f"{c}/{q}"] = scores["f1"]
    gxlt_langs = list(dict.fromkeys(job[2] for job in jobs if job[0] == "mlqa")) if gxlt else []
    return QaReport(model.features, str(model_dir), rows, matrix, gxlt_langs)
