"""One KnowBert training run from its parts (what ``mluke knowbert train`` does): the model to start from, the
documents, the knowledge bases, the stages; :func:`train_knowbert`, :class:`KnowledgeBaseSource`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kb.errors import MlukeError, OptionError, flag, option
from kb.files import write_json
from mluke.knowbert.candidates import CandidateSelector, MultiSelector
from mluke.knowbert.kb_sources import recorded_db
from mluke.knowbert.train_config import KnowBertTrainConfig
from mluke.knowbert.training import KnowBertTrainer

if TYPE_CHECKING:
    from kb.db import EntityDB
    from mluke.knowbert.entities import EntityTable
    from mluke.knowbert.model import KnowBertModel
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource
    from mluke.pretraining.corpus import Document

Stage = Literal["1", "2", "both"]
#: ``documents=`` value that means the demo world's training documents (:func:`mluke.demo.data.demo_documents`).
DEMO_DOCUMENTS = "demo"


@dataclass(frozen=True)
class KnowledgeBaseSource:
    """Where one knowledge base of a training run comes from.

    Attributes:
        name: its name in the model (letters, digits, ``_``, ``-``).
        db: the kb whose mention index gives its spans, candidates and priors (``None``: the embedded kb).
        entities: its entity table: a safetensors file or a table (``None``: the start checkpoint's mLUKE table).
        kar_layer: after how many encoder layers its knowledge layer runs (``None``: KnowBert's 10/12 of the depth).
    """

    name: str
    db: EntityDB | str | os.PathLike[str] | None = None
    entities: EntityTable | str | os.PathLike[str] | None = None
    kar_layer: int | None = None

    @classmethod
    def parse(cls, text: str) -> KnowledgeBaseSource:
        """``NAME=DB[:ENTITIES]`` (the ``--kb`` option): ``DB`` a kb path or ``embedded``, ``ENTITIES`` a
        safetensors table (split at the last ``:``)."""
        name, sep, rest = text.partition("=")
        if not sep or not name or not rest:
            raise OptionError(
                "{kb}: expected NAME=DB or NAME=DB:ENTITIES (DB: a kb file or 'embedded')",
                options={"kb": option("kb", text)},
            )
        db, sep, entities = rest.rpartition(":")
        if not sep or not db:
            db, entities = rest, ""
        return cls(name, None if db == "embedded" else db, entities or None)


def knowledge_base_sources(texts: Sequence[str], layers: Sequence[str] = ()) -> list[KnowledgeBaseSource]:
    """The knowledge bases of ``--kb NAME=DB[:ENTITIES]`` options, with the positions of ``--kb-layer NAME=L``."""
    sources = [KnowledgeBaseSource.parse(t) for t in texts]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise OptionError("{kb}: each knowledge base name once", options={"kb": option("kb", ", ".join(texts))})
    for text in layers:
        name, _, layer = text.partition("=")
        if name not in names or not layer.isdigit() or int(layer) < 1:
            known = ", ".join(names) or "none"
            raise OptionError(
                "{kb_layer}: expected NAME=L with NAME one of the knowledge bases (" + known + ") and L a layer number",
                options={"kb_layer": option("kb_layer", text)},
            )
        i = names.index(name)
        sources[i] = replace(sources[i], kar_layer=int(layer))
    return sources


def load_documents(
    source: str | os.PathLike[str] | Iterable[Document], db: EntityDB, languages: list[str] | None = None
) -> list[Document]:
    """Documents from ``"demo"`` (the demo world's, from ``db``), a page-text corpus folder of a dump build
    (:func:`mluke.pretraining.corpus.documents_from_wiki_corpus`), or documents as they are."""
    if isinstance(source, str) and source == DEMO_DOCUMENTS:
        from mluke.demo.data import demo_documents, resolve_preset

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
    model: ModelSource | str | os.PathLike[str],
    entities: str | os.PathLike[str] | None = None,
    knowledge_bases: Sequence[KnowledgeBaseSource] | None = None,
) -> tuple[KnowBertModel, MlukeTokenizer]:
    """The model to train and its tokenizer: a KnowBert folder of an earlier run (its ``tokenizer/``), or new
    knowledge layers on an encoder (mLUKE or XLM-R; ``entities``: a safetensors table, default the checkpoint's own
    entity table; or ``knowledge_bases``: one layer per knowledge base, each with its table and position)."""
    from mluke.knowbert.model import CONFIG_FILE, KnowBertModel
    from mluke.models.devices import check_trainable
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import open_model

    if isinstance(model, (str, os.PathLike)) and (Path(model) / CONFIG_FILE).is_file():
        if entities is not None or any(kb.entities is not None for kb in knowledge_bases or ()):
            raise MlukeError(f"{model} is a KnowBert model with its own entity tables: leave out the entities")
        loaded = KnowBertModel.from_pretrained(model)
        if knowledge_bases is not None and [kb.name for kb in knowledge_bases] != loaded.names:
            raise MlukeError(
                f"{model} has the knowledge bases {', '.join(loaded.names)}: give a --kb for each, in that order "
                f"(got {', '.join(kb.name for kb in knowledge_bases)})"
            )
        return loaded, MlukeTokenizer.from_pretrained(Path(model) / "tokenizer")
    bundle = open_model(model, word_models=True)
    check_trainable(bundle.model, "KnowBert training")
    tokenizer = bundle.tokenizer
    if not isinstance(tokenizer, MlukeTokenizer):
        raise MlukeError(f"KnowBert training needs an mLUKE/XLM-R tokenizer; {model} has a {type(tokenizer).__name__}")
    if knowledge_bases is None:
        return KnowBertModel.from_encoder(bundle, entities), tokenizer
    from mluke.knowbert.config import KnowBertConfig

    tables = {kb.name: kb.entities for kb in knowledge_bases}
    try:
        configs = {kb.name: KnowBertConfig(kar_layer=kb.kar_layer) for kb in knowledge_bases}
        return KnowBertModel.from_encoder(bundle, tables, configs), tokenizer
    except ValueError as exc:  # a layer past the encoder's depth, a name that is no name
        raise OptionError(f"{{kb}}: {exc}", options={"kb": flag("kb")}) from None


def train_knowbert(
    output: str | os.PathLike[str],
    *,
    model: ModelSource | str | os.PathLike[str] = None,
    documents: str | os.PathLike[str] | Iterable[Document] = DEMO_DOCUMENTS,
    db: EntityDB | str | os.PathLike[str] | None = None,
    entities: str | os.PathLike[str] | None = None,
    knowledge_bases: Sequence[KnowledgeBaseSource | str] | None = None,
    stage: Stage = "both",
    languages: list[str] | None = None,
    max_length: int = 128,
    resume: bool = True,
    max_steps: int | None = None,
    progress: bool = True,
    **settings: object,
) -> Path:
    """Train a knowledge layer (module docs of :mod:`mluke.knowbert.training`); returns the exported model
    (``output/model``: :meth:`KnowBertModel.from_pretrained` reads it; its ``knowbert.json`` records each knowledge
    base's kb, its absolute path or ``null`` for the embedded kb) or, when ``max_steps`` stopped the run
    early, the run folder (run again to continue). ``output/selection.json`` counts what the candidate
    selector left out or could not supervise (:class:`~mluke.knowbert.candidates.SelectionStats`; with several
    knowledge bases, one such object per name). Under ``torchrun`` every process runs this with the same
    arguments; rank 0 writes the files.

    Args:
        output: the run folder.
        model: the encoder to start from (default: the demo model), or the KnowBert folder of a stage-1 run.
        documents: ``"demo"``, a page-text corpus folder, or :class:`~mluke.pretraining.corpus.Document` objects.
        db: the kb whose mention index gives spans and candidates (default: the embedded kb).
        entities: a safetensors entity table (default: the checkpoint's mLUKE entity table).
        knowledge_bases: several knowledge bases instead of ``db`` and ``entities`` (:class:`KnowledgeBaseSource`
            or its ``NAME=DB[:ENTITIES]`` text), in the model's order; the first one's kb gives the demo documents.
            Default: one knowledge base named ``kb`` from ``db`` and ``entities``.
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
    sources = [KnowledgeBaseSource.parse(kb) if isinstance(kb, str) else kb for kb in knowledge_bases or ()]
    if sources and (db is not None or entities is not None):
        raise OptionError(
            "{kb} gives each knowledge base its kb and entity table: leave out {db} and {entities}",
            options={"kb": flag("kb"), "db": flag("db"), "entities": flag("entities")},
        )
    dbs = [open_db(os.fspath(s.db) if isinstance(s.db, os.PathLike) else s.db) for s in sources] or [open_db(db)]
    docs = load_documents(documents, dbs[0], languages)
    torch.manual_seed(config.seed)  # the new knowledge layer's weights
    knowbert, tokenizer = open_knowbert(model, entities, sources or None)
    if len(knowbert.names) != len(dbs):
        raise MlukeError(
            f"{model} has the knowledge bases {', '.join(knowbert.names)}: give a --kb NAME=DB for each, in that order"
        )
    specs = [s.db for s in sources] or [db]
    knowbert.kb_dbs = {name: recorded_db(spec) for name, spec in zip(knowbert.names, specs)}  # in knowbert.json
    langs = sorted({d.lang for d in docs})
    selectors = {
        name: CandidateSelector(
            tokenizer,
            MentionIndex.for_db(kb_db, languages=langs),
            knowbert.tables[name].key_to_row,
            max_length=max_length,
            estimator=LinkEstimator(kb_db),
        )
        for name, kb_db in zip(knowbert.names, dbs)
    }
    selector = MultiSelector(selectors)
    trainer = KnowBertTrainer(knowbert, tokenizer, selector.documents(docs), config)  # joins torchrun's group
    if trainer.rank == 0:  # every rank selected the same windows; one writes what was left out
        trainer.out.mkdir(parents=True, exist_ok=True)
        stats = {name: asdict(found) for name, found in selector.stats.items()}
        one = stats if len(stats) > 1 else stats[knowbert.names[0]]
        write_json(one, trainer.out / "selection.json", overwrite=True)
    if resume:
        trainer.resume()
    trainer.train(max_steps, progress=progress)
    if trainer.step >= trainer.total_steps:
        return trainer.export()
    return trainer.out
