"""One KnowBert training run from its parts (what ``mluke knowbert train`` does): the model to start from, the
documents, the kb, the stages; :func:`train_knowbert`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kb.errors import MlukeError, OptionError, flag, option
from kb.files import write_json
from mluke.knowbert.candidates import CandidateSelector
from mluke.knowbert.training import KnowBertTrainConfig, KnowBertTrainer

if TYPE_CHECKING:
    from kb.db import EntityDB
    from mluke.knowbert.model import KnowBertModel
    from mluke.opening import ModelSource
    from mluke.pretraining.corpus import Document
    from mluke.tokenizer import MlukeTokenizer

Stage = Literal["1", "2", "both"]
#: ``documents=`` value that means the demo world's training documents (:func:`mluke.demo_data.demo_documents`).
DEMO_DOCUMENTS = "demo"


def load_documents(
    source: str | os.PathLike[str] | Iterable[Document], db: EntityDB, languages: list[str] | None = None
) -> list[Document]:
    """Documents from ``"demo"`` (the demo world's, from ``db``), a page-text corpus folder of a dump build
    (:func:`mluke.pretraining.corpus.documents_from_wiki_corpus`), or documents as they are."""
    if isinstance(source, str) and source == DEMO_DOCUMENTS:
        from mluke.demo_data import demo_documents, resolve_preset

        docs = demo_documents(db, resolve_preset("demo")).docs
    elif isinstance(source, (str, os.PathLike)):
        from mluke.pretraining.corpus import documents_from_wiki_corpus

        if not Path(source).is_dir():
            raise OptionError(
                "{documents}: expected 'demo' or the page-text corpus folder of a dump build (kb.corpus/)",
                options={"documents": option("documents", os.fspath(source))},
            )
        docs = list(documents_from_wiki_corpus(Path(source), languages))
    else:
        docs = list(source)
    return [d for d in docs if languages is None or d.lang in languages]


def open_knowbert(
    model: ModelSource | str | os.PathLike[str], entities: str | os.PathLike[str] | None = None
) -> tuple[KnowBertModel, MlukeTokenizer]:
    """The model to train and its tokenizer: a KnowBert folder of an earlier run (its ``tokenizer/``), or a
    new knowledge layer on an encoder (mLUKE or XLM-R; ``entities``: a safetensors table, default the
    checkpoint's own entity table)."""
    from mluke.knowbert.model import CONFIG_FILE, KnowBertModel
    from mluke.opening import open_model
    from mluke.tokenizer import MlukeTokenizer

    if isinstance(model, (str, os.PathLike)) and (Path(model) / CONFIG_FILE).is_file():
        if entities is not None:
            raise MlukeError(f"{model} is a KnowBert model with its own entity table: leave out --entities")
        return KnowBertModel.from_pretrained(model), MlukeTokenizer.from_pretrained(Path(model) / "tokenizer")
    bundle = open_model(model, word_models=True)
    tokenizer = bundle.tokenizer
    if not isinstance(tokenizer, MlukeTokenizer):
        raise MlukeError(f"KnowBert training needs an mLUKE/XLM-R tokenizer; {model} has a {type(tokenizer).__name__}")
    return KnowBertModel.from_encoder(bundle, entities), tokenizer


def train_knowbert(
    output: str | os.PathLike[str],
    *,
    model: ModelSource | str | os.PathLike[str] = None,
    documents: str | os.PathLike[str] | Iterable[Document] = DEMO_DOCUMENTS,
    db: EntityDB | str | os.PathLike[str] | None = None,
    entities: str | os.PathLike[str] | None = None,
    stage: Stage = "both",
    languages: list[str] | None = None,
    max_length: int = 128,
    resume: bool = True,
    max_steps: int | None = None,
    progress: bool = True,
    **settings: object,
) -> Path:
    """Train a knowledge layer (module docs of :mod:`mluke.knowbert.training`); returns the exported model
    (``output/model``: :meth:`KnowBertModel.from_pretrained` reads it) or, when ``max_steps`` stopped the run
    early, the run folder (run again to continue). ``output/selection.json`` counts what the candidate
    selector left out or could not supervise (:class:`~mluke.knowbert.candidates.SelectionStats`). Under
    ``torchrun`` every process runs this with the same arguments; rank 0 writes the files.

    Args:
        output: the run folder.
        model: the encoder to start from (default: the demo model), or the KnowBert folder of a stage-1 run.
        documents: ``"demo"``, a page-text corpus folder, or :class:`~mluke.pretraining.corpus.Document` objects.
        db: the kb whose mention index gives spans and candidates (default: the embedded kb).
        entities: a safetensors entity table (default: the checkpoint's mLUKE entity table).
        stage: ``"1"`` (the linker alone), ``"2"`` (masked LM + linking) or ``"both"``.
        languages: keep the documents of these languages (default: all).
        max_length: word pieces per training window.
        resume: continue from the run folder's newest checkpoint (else a folder with checkpoints is refused).
        max_steps: stop after this many more steps.
        progress: show a progress bar.
        **settings: fields of :class:`KnowBertTrainConfig` (``stage1_steps``, ``batch_size``, ...).
    """
    import torch

    from kb import open_db
    from kb.mentions import MentionIndex
    from kb.mentions.linkability import LinkEstimator
    from mluke.pretraining.run_folder import finished_checkpoints
    from mluke.pretraining.schedule import dist_info

    if stage not in ("1", "2", "both"):
        raise OptionError("{stage}: expected 1, 2 or both", options={"stage": option("stage", stage)})
    if stage == "1":
        settings["stage2_steps"] = 0
    elif stage == "2":
        settings["stage1_steps"] = 0
    config = KnowBertTrainConfig(output=os.fspath(output), **settings)  # type: ignore[arg-type]
    config.per_process(dist_info(config.device)[1])  # under torchrun: before the documents are read
    if not resume and finished_checkpoints(Path(output)):
        raise OptionError(
            "{output} holds checkpoints of a run: continue it with {resume} or choose another folder",
            options={"output": option("output", os.fspath(output)), "resume": flag("resume")},
        )
    kb_db = open_db(db)
    docs = load_documents(documents, kb_db, languages)
    torch.manual_seed(config.seed)  # the new knowledge layer's weights
    knowbert, tokenizer = open_knowbert(model, entities)
    langs = sorted({d.lang for d in docs})
    index = MentionIndex.for_db(kb_db, languages=langs)
    selector = CandidateSelector(
        tokenizer, index, knowbert.entities.key_to_row, max_length=max_length, estimator=LinkEstimator(kb_db)
    )
    trainer = KnowBertTrainer(knowbert, tokenizer, selector.documents(docs), config)  # joins torchrun's group
    if trainer.rank == 0:  # every rank selected the same windows; one writes what was left out
        trainer.out.mkdir(parents=True, exist_ok=True)
        write_json(asdict(selector.stats), trainer.out / "selection.json", overwrite=True)
    if resume:
        trainer.resume()
    trainer.train(max_steps, progress=progress)
    if trainer.step >= trainer.total_steps:
        return trainer.export()
    return trainer.out
