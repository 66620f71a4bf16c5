"""Knowledge-enhanced word features (``features="knowbert"``): the word-feature heads of
:mod:`mluke.finetuning.models` on a :class:`mluke.knowbert.KnowBertModel` instead of the bare encoder.

The task's rows are the word-feature rows (first/last pieces of spans, ``<ent>`` markers for relations); each row
also gets the spans and kb candidates of its text in its language (:mod:`mluke.knowbert.pieces`: the mentions the
kb's mention index finds, placed on the row's own pieces), which the knowledge layer reads after layer ``L``. The
encoder and the knowledge layer train as in word mode; the entity table is a buffer and stays frozen (it is shared
with the pretrained model, not copied). The kb settings (which kb, candidates per span, longest span) are kept in
the model's settings under ``"knowbert"``, so that evaluation finds the same spans.

A KnowBert model with several knowledge bases gives each its own spans, from its own kb (``"db"``: the first's;
``"kbs"``: the others' given by name; else what the model records, :func:`mluke.knowbert.kb_dbs`): a row's
``knowledge`` window holds the first's in its own fields and the others' in ``Window.others`` (name -> spans), and
the batch carries them as ``kb_*`` and ``kb_*@NAME`` tensors (:mod:`mluke.knowbert.pieces`).

A QA row is a pair of texts (``<s> question </s></s> passage window </s>``, :class:`mluke.finetuning.qa.QaRow`):
the question's mentions (in the question's language) are placed on the question's pieces and the passage's on
the window's pieces; a passage mention that the window cuts (it starts before the window's first piece or ends
after its last) is left out, as the question's beyond ``max_query_length``: a span is a whole mention. A ReCoRD row
(:class:`mluke.finetuning.record.RecordRow`: ``<s> query </s></s> passage </s>``) is the same kind of pair, the
query in the question's place.

A fine-tuned model is saved as the other tasks' (``config.json`` with the ``mluke_transfer`` block, the tokenizer's
files) with the KnowBert model in ``knowbert/`` (:meth:`KnowBertModel.save_pretrained`: encoder, layer, entity table)
and the classifier in ``model.safetensors``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kb.errors import OptionError
from kb.mentions.candidates import MAX_CANDIDATES
from mluke.finetuning.inputs import Row
from mluke.finetuning.qa import QaRow
from mluke.finetuning.record import RecordRow

if TYPE_CHECKING:
    from mluke.knowbert.candidates import KbSpans, Window
    from mluke.knowbert.model import KnowBertModel
    from mluke.knowbert.pieces import TextCandidates
    from mluke.models.checkpoint import Mluke
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource

AnyRow = TypeVar("AnyRow", bound=Row)

#: the features kind of knowledge-enhanced word features
KNOWBERT = "knowbert"
#: the folder of the KnowBert model inside a fine-tuned model's folder
KNOWBERT_DIR = "knowbert"


def kb_settings(
    db: str | os.PathLike[str] | None = None,
    kbs: Mapping[str, str | os.PathLike[str] | None] | None = None,
    **given: Any,
) -> dict[str, Any]:
    """The kb settings of a knowbert-features model: ``db`` (the first knowledge base's kb path; ``None``: the one
    the model records, else the embedded kb), ``max_candidates`` (30) and ``max_span_words`` (5), as KnowBert's
    candidate selector, and with ``kbs`` (other knowledge bases' kb paths by name) ``"kbs"``."""
    settings: dict[str, Any] = {"db": os.fspath(db) if db is not None else None, "max_candidates": MAX_CANDIDATES}
    if kbs:
        settings["kbs"] = {name: os.fspath(path) if path is not None else None for name, path in kbs.items()}
    return settings | {"max_span_words": 5} | given


def knowbert_settings(model: KnowBertModel, given: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`kb_settings` of ``given`` for fine-tuning ``model``, checked: every knowledge base has a kb.

    Raises:
        OptionError: ``kbs`` names a knowledge base the model does not have.
        MlukeError: a knowledge base with no kb recorded or given (naming the model's file).
    """
    from mluke.knowbert.kb_sources import kb_dbs

    settings = kb_settings(**given)
    kb_dbs(model, settings["db"], settings.get("kbs"))
    return settings


def open_knowbert_bundle(model: ModelSource | str | os.PathLike[str]) -> Mluke:
    """A KnowBert folder (as ``mluke knowbert train`` exports it) as a model bundle for :func:`new_model`: the
    :class:`KnowBertModel`, its mLUKE tokenizer and no entity vocabulary.

    Raises:
        OptionError: ``model`` is not a KnowBert folder.
    """
    from mluke.knowbert.run import open_knowbert
    from mluke.knowbert.word_model import is_knowbert_folder
    from mluke.models.checkpoint import Mluke

    if not isinstance(model, (str, os.PathLike)) or not is_knowbert_folder(model):
        raise OptionError(
            f"{model}: knowbert features need a KnowBert model folder (knowbert.json, as `mluke knowbert train` "
            "writes in OUTPUT/model)"
        )
    knowbert, tokenizer = open_knowbert(Path(model))
    return Mluke(knowbert, tokenizer, None)  # type: ignore[arg-type]


def knowbert_encoder(pretrained: KnowBertModel) -> KnowBertModel:
    """A trainable copy of ``pretrained`` that shares its (frozen) entity tables instead of copying them."""
    from mluke.knowbert.shared_tables import table_tensors

    memo = {id(t): t for t in table_tensors(pretrained)}  # every knowledge base's table
    encoder = copy.deepcopy(pretrained, memo)
    encoder.freeze_encoder(False)
    return encoder.train()


def text_candidates(model: Any, tokenizer: MlukeTokenizer) -> TextCandidates:  # model: see attach_knowledge
    """The span finder of a knowbert-features :class:`~mluke.finetuning.TransferModel` (its knowledge bases', each
    on its kb's mention index: :func:`mluke.knowbert.pieces.kb_text_candidates`), from its kb settings (built once
    per model)."""
    found: TextCandidates | None = model.__dict__.get("_text_candidates")
    if found is None:
        from mluke.knowbert.kb_sources import kb_dbs, open_kb_dbs
        from mluke.knowbert.pieces import kb_text_candidates

        kb = kb_settings(**model.settings.get(KNOWBERT, {}))
        dbs = open_kb_dbs(kb_dbs(model.luke, kb["db"], kb.get("kbs")))
        sizes = {"max_candidates": kb["max_candidates"], "max_span_words": kb["max_span_words"]}
        found = kb_text_candidates(tokenizer, model.luke, dbs, **sizes)
        model.__dict__["_text_candidates"] = found
    return found


def attach_knowledge(
    model: Any, tokenizer: MlukeTokenizer, rows: Sequence[AnyRow], lang: str | None = None
) -> list[AnyRow]:
    """``rows`` with their spans and candidates attached (in place) when ``model`` has knowbert features; other
    models' rows are returned as they are.

    Args:
        model: the fine-tuning model (:class:`~mluke.finetuning.TransferModel`; typed ``Any`` because
            :mod:`mluke.finetuning.models` imports this module).
        tokenizer: its tokenizer.
        rows: rows of :mod:`mluke.finetuning.inputs` (their text, language and ``piece_chars``) or pair rows
            (:class:`~mluke.finetuning.qa.QaRow`: the question and the passage window;
            :class:`~mluke.finetuning.record.RecordRow`: the query and the passage; module docs).
        lang: the language of rows that carry none.

    Raises:
        OptionError: a row with no language (the mention index finds names per language).
    """
    if model.features != KNOWBERT:
        return list(rows)
    spans = text_candidates(model, tokenizer)
    by_text: dict[tuple[str, str, tuple[int, ...]], Window] = {}  # NER's several rows of one sentence: one look-up
    for row in rows:
        row_lang = _language(row.text, row.lang or lang)
        if isinstance(row, (QaRow, RecordRow)):
            question_lang = _language(row.question, row.question_lang or row_lang)
            row.knowledge = pair_window(spans, row, row_lang, question_lang)
            continue
        key = (row.text, row_lang, tuple(row.ids))
        if key not in by_text:
            by_text[key] = spans.window(row.text, row_lang, row.ids, row.piece_chars)
        row.knowledge = by_text[key]
    return list(rows)


def _language(text: str, lang: str | None) -> str:
    if lang is None:
        raise OptionError(
            f"knowbert features find the kb's mentions per language, and the example {text[:40]!r} has "
            "none: give the data's language"
        )
    return lang


def pair_window(spans: TextCandidates, row: QaRow | RecordRow, lang: str, question_lang: str) -> Window:
    """The spans and candidates of a QA or ReCoRD row: the question's (query's) mentions on its pieces and the
    passage's on the window's, whole mentions only (module docs), for every knowledge base (``others``).
    ``offsets`` of the result are each piece's characters in its own text, as are ``char_spans``."""
    from mluke.knowbert.candidates import KbSpans

    question = _whole_mentions(spans.window(row.question, question_lang, row.ids, row.question_chars))
    passage = _whole_mentions(spans.window(row.text, lang, row.ids, row.piece_chars))
    offsets = [q if q != (0, 0) else p for q, p in zip(row.question_chars, row.piece_chars)]
    both = copy.copy(passage)
    both.offsets = offsets
    _join(both, question, passage)
    both.others = {}
    for name, found in passage.others.items():
        both.others[name] = KbSpans()
        _join(both.others[name], question.others[name], found)
    return both


def _join(target: Window | KbSpans, question: Window | KbSpans, passage: Window | KbSpans) -> None:
    for name in _SPAN_FIELDS:
        setattr(target, name, getattr(question, name) + getattr(passage, name))  # question pieces come first


_SPAN_FIELDS = ("spans", "entity_ids", "log_prior", "char_spans")


def _whole_mentions(window: Window) -> Window:
    """``window`` without the spans whose mention its pieces cut (the first piece starts after the mention's first
    character or the last ends before its last), for every knowledge base it carries."""
    chars = window.offsets
    parts: list[Window | KbSpans] = [window, *window.others.values()]
    for part in parts:
        kept = [
            k
            for k, ((s, e), (a, b)) in enumerate(zip(part.spans, part.char_spans))
            if chars[s][0] <= a and chars[e][1] >= b
        ]
        for name in _SPAN_FIELDS:
            setattr(part, name, [getattr(part, name)[k] for k in kept])
    return window
