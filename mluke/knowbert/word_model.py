"""A trained KnowBert folder as a word-mode probing model: the masked-LM head over the encoder with the knowledge
layer on (spans and candidates of each prompt from the kb) or off (the bare encoder, bit for bit), so that P@1 with
and without the layer can be compared on the same probes.

:func:`open_knowbert_words` gives the two objects :class:`mluke.probing.scoring.ClozeScorer` uses in word mode:

- :class:`KnowBertWordTokenizer`: the folder's mLUKE tokenizer; called with a prompt's language it adds the
  prompt's spans and candidates (``kb_*`` tensors, :mod:`mluke.knowbert.pieces`) to the encoding, the [Y] masks
  getting the [MASK] entity (no candidate can leak the answer);
- :class:`KnowBertWordModel`: :class:`mluke.models.word_models.WordModel` whose ``encode`` runs the knowledge
  layer when the encoding holds candidates.

In a model with several knowledge bases every one gets the prompt's spans from its own kb (the first's: the probe's
``db``; the others': ``kbs=`` or what the model records, :func:`mluke.knowbert.kb_dbs`) and its layer runs.

The prompts are tokenized exactly as for the bare encoder: the spans are placed on those pieces, so the layer is the
only difference between the two runs. Open-vocabulary word decoding (no candidates) needs ``knowledge=False``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor

from kb.errors import MlukeError
from mluke.knowbert.pieces import TextCandidates, candidates_from_inputs, knowledge_inputs, masked_runs
from mluke.models.encoding import encode_with_spans
from mluke.models.word_models import WordModel

if TYPE_CHECKING:
    from kb.db import EntityDB
    from mluke.knowbert.model import KnowBertModel
    from mluke.models.checkpoint import Mluke
    from mluke.models.devices import Device, DType
    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.opening import ModelSource


class KnowBertWordTokenizer:
    """The KnowBert folder's mLUKE tokenizer, adding each prompt's spans and candidates when ``knowledge`` is on.

    Any attribute not defined here is the wrapped tokenizer's (``mask_id``, ``encode_words``, ...), except the
    entity vocabulary: a KnowBert model is probed in word mode only.
    """

    entity_vocab = None
    #: :class:`mluke.probing.scoring.ClozeScorer` passes the prompts' language to tokenizers that say they read it
    reads_language = True

    def __init__(
        self,
        tokenizer: MlukeTokenizer,
        model: KnowBertModel,
        db: EntityDB | None = None,
        kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.knowledge = True
        #: the first knowledge base's kb as given (``None``: the recorded one, else the embedded kb)
        self.db: EntityDB | str | os.PathLike[str] | None = db
        #: the other knowledge bases' kbs given by name (overriding the recorded ones)
        self.kbs: dict[str, EntityDB | str | os.PathLike[str] | None] = dict(kbs or {})
        self._spans: TextCandidates | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("tokenizer", "model"):
            raise AttributeError(name)
        return getattr(self.tokenizer, name)

    def prepare(
        self,
        *,
        db: EntityDB | str | os.PathLike[str] | None = None,
        kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
        knowledge: bool = True,
    ) -> None:
        """Use ``db``'s mention index for the first knowledge base's spans (default: the kb the model records, else
        the embedded kb) and ``kbs``' for the others by name (``None``: keep those given before), and switch the
        layer on or off.

        Raises:
            MlukeError: with the layer on, a knowledge base with no kb recorded or given (naming the file).
        """
        from mluke.knowbert.kb_sources import kb_dbs

        given = self.kbs if kbs is None else dict(kbs)
        if db is not self.db or given != self.kbs:
            self.db, self.kbs, self._spans = db, given, None
        self.knowledge = knowledge
        if knowledge:
            kb_dbs(self.model, self.db, self.kbs)  # a knowledge base without a kb: say so now, not at a prompt

    def spans(self) -> TextCandidates:
        """The span finder of every knowledge base, each on its kb's mention index (built on first use)."""
        if self._spans is None:
            from mluke.knowbert.kb_sources import kb_dbs, open_kb_dbs
            from mluke.knowbert.pieces import kb_text_candidates

            dbs = open_kb_dbs(kb_dbs(self.model, self.db, self.kbs))
            self._spans = kb_text_candidates(self.tokenizer, self.model, dbs)
        return self._spans

    def __call__(self, texts: Sequence[str], *, lang: str | None = None, **_: Any) -> dict[str, Tensor]:
        """``input_ids`` and ``attention_mask`` of the prompts (as the bare tokenizer gives them) and, with the
        layer on, their ``kb_*`` spans and candidates (``lang``: the prompts' language, needed then)."""
        enc = self.tokenizer(list(texts))
        out = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        if not self.knowledge:
            return out
        if lang is None:
            raise MlukeError("the knowledge layer finds a prompt's mentions in its language: none was given")
        tok = self.tokenizer
        limit = tok.max_length - 2
        windows = []
        for r, (text, (ids, offsets, _none)) in enumerate(
            zip(texts, encode_with_spans(tok.words, list(texts), [[] for _ in range(len(texts))]))
        ):
            row = [tok.bos_id, *ids[:limit], tok.eos_id]
            if out["input_ids"][r, : len(row)].tolist() != row:
                raise MlukeError(f"the prompt {text[:60]!r} tokenizes differently with offsets (a tokenizer defect)")
            pieces = [(0, 0), *offsets[:limit], (0, 0)]
            windows.append(self.spans().window(text, lang, row, pieces, masked_runs(row, tok.mask_id)))
        return out | knowledge_inputs(windows, tok.pad_id)


class KnowBertWordModel(WordModel):
    """A :class:`KnowBertModel` as a word model: :meth:`encode` runs the knowledge layer when the inputs hold
    candidates (``kb_*`` tensors), else the bare encoder; :meth:`word_scores` is the encoder's masked-LM head."""

    def __init__(self, model: KnowBertModel) -> None:
        super().__init__(cast(Any, model.encoder))
        self.knowbert = model

    def encode(self, **inputs: Tensor) -> tuple[Tensor, None]:
        """Last-layer word states and ``None`` (no entity states)."""
        candidates = candidates_from_inputs(inputs, self.knowbert.names)
        with torch.no_grad():
            out = self.knowbert(inputs["input_ids"], inputs.get("attention_mask"), candidates)
        return out.hidden_states, None

    def word_scores(self, word_hidden: Tensor, candidates: Tensor | None = None, *, normalize: bool = True) -> Tensor:
        """The masked-LM head's log-probabilities at (n, hidden) states, as the encoder's own word probe computes
        them (an mLUKE encoder scores candidates in its chunked way), so that the layer off is the bare probe."""
        own = getattr(self.knowbert.encoder, "word_scores", None)
        if own is not None:
            return cast(Tensor, own(word_hidden, candidates, normalize=normalize))
        return super().word_scores(word_hidden, candidates, normalize=normalize)


def open_knowbert_words(
    directory: str | os.PathLike[str],
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    knowledge: bool = True,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
) -> Mluke:
    """A KnowBert folder (``KnowBertModel.save_pretrained`` with ``tokenizer/`` beside it, as ``mluke knowbert
    train`` exports) as a word-mode model bundle (module docs); ``db``: the kb whose mention index gives the
    prompts' spans for the first knowledge base (default: the recorded kb, else the embedded kb); ``kbs``: the
    other knowledge bases' by name (default: the recorded ones); ``knowledge``: run the knowledge layers."""
    from mluke.knowbert.run import open_knowbert
    from mluke.models.checkpoint import Mluke

    model, tokenizer = open_knowbert(Path(directory))
    words = KnowBertWordTokenizer(tokenizer, model)
    words.prepare(db=db, kbs=kbs, knowledge=knowledge)
    return Mluke(cast(Any, KnowBertWordModel(model).eval()), cast(Any, words), None)


def open_probe_model(
    model: ModelSource,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    knowledge: bool = True,
    device: Device = None,
    dtype: DType = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
) -> Mluke:
    """The model of a word/entity probe: a KnowBert folder through :func:`open_knowbert_words` (placed on
    ``device`` in ``dtype``; ``kbs``: its knowledge bases' kbs by name),
    anything else through :func:`mluke.open_model` (masked LMs as word models)."""
    from mluke.opening import open_model

    if isinstance(model, (str, os.PathLike)) and is_knowbert_folder(model):
        from mluke.models.devices import place

        bundle = open_knowbert_words(model, db=db, knowledge=knowledge, kbs=kbs)
        place(bundle.model, device, dtype)
        return bundle
    return open_model(model, device=device, dtype=dtype, word_models=True)


def is_knowbert_folder(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds a saved KnowBert model (its ``knowbert.json``)."""
    from mluke.knowbert.model import CONFIG_FILE

    return (Path(directory) / CONFIG_FILE).is_file()
