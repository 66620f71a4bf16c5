"""An encoder with knowledge layers inserted between its layers (:class:`KnowBertModel`), its masked-LM head on
top: KnowBert (Peters et al., 2019) on an mLUKE checkpoint or a Hugging Face XLM-R masked LM, with one or more
knowledge bases (KnowBert-W+W: Wikipedia's layer after layer 10, WordNet's after layer 11).

Each knowledge base has a name, its own entity table, its own :class:`KnowBertConfig` (its ``kar_layer`` among
them) and its own knowledge layer (linker included). A layer runs as a forward hook on the output of encoder layer
``L``, registered for one call and removed after it: the encoder's own forward builds its attention masks and runs
its layers, so the model works the same under transformers 4.46 and 5.x (whose layer signatures, mask formats and
return types differ), and a knowledge base without candidates in a call is not there at all: without any
candidates the output is the bare encoder's, bit for bit. Two knowledge bases after the same layer run in the
model's order. Only word inputs are used; mLUKE's entity-token input is not (the two ways of using entities are
separate).

An entity table is held once and saved once: see :mod:`mluke.knowbert.shared_tables`.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor, nn

from mluke.errors import CheckpointError
from mluke.knowbert.batch import SpanCandidates
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable
from mluke.knowbert.layer import KnowledgeLayer, LinkDecision
from mluke.knowbert.saving import (
    CONFIG_FILE,
    DEFAULT_KB,
    ENTITIES_FILE,
    WEIGHTS_FILE,
    assign_weights,
    load_knowbert,
    save_knowbert,
)
from mluke.knowbert.shared_tables import convert_once, table_parameters
from mluke.models.masked_lm import head_loss

if TYPE_CHECKING:
    from mluke.opening import ModelSource

__all__ = ["CONFIG_FILE", "DEFAULT_KB", "ENTITIES_FILE", "WEIGHTS_FILE", "KnowBertModel", "KnowBertOutput"]

#: the candidates of a forward: one knowledge base's (the model's first), or by knowledge base name
Candidates = SpanCandidates | Mapping[str, SpanCandidates | None]
_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class KnowBertOutput:
    """What :meth:`KnowBertModel.forward` returns."""

    hidden_states: Tensor  #: [B, T, hidden], the encoder's last layer
    #: [B, S, K] psi of the model's first knowledge base before NULL thresholding; None when it got no candidates
    linking_scores: Tensor | None = None
    mlm_loss: Tensor | None = None  #: with ``labels``: masked-LM cross-entropy at the labelled pieces
    #: the sum of :attr:`kb_losses` (the knowledge bases whose candidates have ``gold``); None when there are none
    linking_loss: Tensor | None = None
    #: [B, S_kb, K_kb] psi of every knowledge base that ran, by name
    kb_scores: dict[str, Tensor] = field(default_factory=dict)
    #: the linking loss of every knowledge base whose candidates have ``gold``, by name
    kb_losses: dict[str, Tensor] = field(default_factory=dict)


class KnowBertModel(nn.Module):
    """A masked-LM encoder (mLUKE or XLM-R) with one knowledge layer per knowledge base (module docs).

    The first knowledge base is the default one: ``kar``, ``entities``, ``config`` and ``kar_layer`` are its layer,
    entity table, settings and position (the only ones of a one-knowledge-base model); ``names``, ``tables``,
    ``configs``, ``kar_layers`` and :meth:`knowledge_layers` give every knowledge base's.
    """

    def __init__(
        self,
        encoder: nn.Module,
        entities: EntityTable | Mapping[str, EntityTable],
        config: KnowBertConfig | Mapping[str, KnowBertConfig] | None = None,
    ) -> None:
        """
        Args:
            encoder: the masked LM: an :class:`mluke.MlukeForMaskedLM`, a transformers ``XLMRobertaForMaskedLM``
                (or any masked LM with ``base_model.encoder.layer`` and an ``lm_head``), or a
                :class:`mluke.models.word_models.WordModel` wrapping one.
            entities: the frozen entity vectors the layer links to: one table (one knowledge base named
                :data:`DEFAULT_KB`), or a table per knowledge base name, in the order the model keeps them (names:
                letters, digits, ``_`` and ``-``).
            config: the knowledge layer's settings (default: KnowBert-Wiki's), or settings by knowledge base name
                (a name left out gets the default).
        """
        super().__init__()
        encoder = getattr(encoder, "hf", encoder)  # a WordModel: the transformers model inside
        base = getattr(encoder, "base_model", None)
        layers = getattr(getattr(base, "encoder", None), "layer", None)
        if base is None or not isinstance(layers, nn.ModuleList) or not hasattr(encoder, "lm_head"):
            raise CheckpointError(
                f"{type(encoder).__name__}: not a masked LM with base_model.encoder.layer and lm_head "
                "(KnowBertModel takes mLUKE and XLM-R/RoBERTa masked LMs)"
            )
        tables = {DEFAULT_KB: entities} if isinstance(entities, EntityTable) else dict(entities)
        if not tables:
            raise ValueError("a KnowBert model needs at least one knowledge base (entity table)")
        bad = [n for n in tables if not isinstance(n, str) or not _NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"knowledge base names must be letters, digits, _ and -: got {bad!r}")
        if isinstance(config, Mapping):
            unknown = sorted(set(config) - set(tables))
            if unknown:
                raise ValueError(f"settings for unknown knowledge base(s) {unknown}; the model has {list(tables)}")
            configs = {n: config.get(n) or KnowBertConfig() for n in tables}
        else:
            configs = {n: config or KnowBertConfig() for n in tables}
        self.encoder = encoder
        #: the knowledge bases' names, the first one the default
        self.names: list[str] = list(tables)
        self.tables: dict[str, EntityTable] = tables
        self.configs: dict[str, KnowBertConfig] = configs
        #: after how many encoder layers each knowledge base's layer runs
        self.kar_layers: dict[str, int] = {n: configs[n].layer_for(len(layers)) for n in tables}
        hidden_size = int(cast(Any, encoder).config.hidden_size)
        first, *others = self.names
        self.kar = KnowledgeLayer(hidden_size, tables[first], configs[first])
        #: the knowledge layers of the knowledge bases after the first, by name
        self.extra_kars = nn.ModuleDict({n: KnowledgeLayer(hidden_size, tables[n], configs[n]) for n in others})
        self.config = configs[first]
        self.kar_layer = self.kar_layers[first]
        self.entities = tables[first]
        #: the kb of each knowledge base, by name, when known (a path, ``None``: the embedded kb): what
        #: ``mluke knowbert train`` used, written to and read from ``knowbert.json`` (:func:`mluke.knowbert.kb_dbs`)
        self.kb_dbs: dict[str, str | None] = {}
        #: the folder the model was loaded from (``None``: built in memory)
        self.source: Path | None = None
        #: the order the layers run in: by depth, then in the model's order
        self.run_order: list[str] = sorted(self.names, key=lambda n: (self.kar_layers[n], self.names.index(n)))
        #: the knowledge bases whose table is an encoder parameter (the same memory), with that parameter's name
        self.table_parameters: dict[str, str] = {}
        self.share_tables()

    def share_tables(self) -> dict[str, str]:
        """Find the tables that are an encoder parameter, freeze those parameters and record them in
        :attr:`table_parameters`, which this returns (:mod:`mluke.knowbert.shared_tables`; built or loaded)."""
        self.table_parameters = table_parameters(self.encoder, self.tables)
        return self.table_parameters

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> KnowBertModel:
        """``nn.Module._apply`` (``to``, ``half``, ``cuda`` ...), converting each entity table once: a layer's
        buffer and its table stay one tensor, and a table that is an encoder parameter stays that parameter."""
        if not recurse:
            return cast("KnowBertModel", super()._apply(fn, recurse))  # type: ignore[no-untyped-call,unused-ignore]  # torch leaves _apply unannotated
        params = {n: self.encoder.get_parameter(p) for n, p in self.table_parameters.items()}
        apply = functools.partial(super()._apply, fn, recurse)
        convert_once(apply, fn, self.knowledge_layers(), self.tables, params)
        return self

    # -- the parts ----------------------------------------------------------------------------------
    @property
    def _base(self) -> nn.Module:
        return cast(nn.Module, self.encoder.base_model)

    @property
    def _layers(self) -> nn.ModuleList:
        return cast(nn.ModuleList, cast(Any, self._base).encoder.layer)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def knowledge_layers(self) -> dict[str, KnowledgeLayer]:
        """Every knowledge base's layer, by name, in the model's order."""
        return {self.names[0]: self.kar, **{n: cast(KnowledgeLayer, m) for n, m in self.extra_kars.items()}}

    def knowledge_layer(self, name: str | None = None) -> KnowledgeLayer:
        """The layer of knowledge base ``name`` (default: the first)."""
        return self.knowledge_layers()[self._name(name)]

    def kar_parameters(self) -> list[nn.Parameter]:
        """Every knowledge layer's trainable parameters (the entity tables are buffers, not among them)."""
        return [p for layer in self.knowledge_layers().values() for p in layer.parameters()]

    def encoder_parameters(self, below: bool) -> list[nn.Parameter]:
        """The encoder's parameters below the lowest knowledge layer (embeddings and layers ``1 .. L_min``;
        ``below``) or the rest (every layer above it, those between two knowledge layers included, the masked-LM
        head and anything else), each parameter in one group only (the head's tied word embedding counts as
        below)."""
        lowest = min(self.kar_layers.values())
        lower = _unique([*cast(Any, self._base).embeddings.parameters(), *self._layers[:lowest].parameters()])
        if below:
            return lower
        seen = {id(p) for p in lower}
        return [p for p in self.encoder.parameters() if id(p) not in seen]

    def freeze_encoder(self, frozen: bool = True) -> None:
        """Stop (``frozen``) or resume training the encoder: stage 1 trains the linkers alone. The encoder
        parameters that are entity tables (:attr:`table_parameters`) stay frozen."""
        tables = {id(self.encoder.get_parameter(p)) for p in self.table_parameters.values()}
        for p in self.encoder.parameters():
            p.requires_grad_(not frozen and id(p) not in tables)

    # -- running ---------------------------------------------------------------------------------
    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        candidates: Candidates | None = None,
        labels: Tensor | None = None,
        *,
        linking_only: bool = False,
    ) -> KnowBertOutput:
        """Run the encoder with each knowledge base's layer after its layer ``L`` (without ``candidates``: the bare
        encoder).

        Args:
            input_ids: word pieces [B, T].
            attention_mask: [B, T], 1 for real pieces (default: all).
            candidates: the spans and kb candidates of the batch (word-piece positions of ``input_ids``): one
                :class:`SpanCandidates` (the first knowledge base's) or a mapping name -> candidates; a knowledge
                base left out (or mapped to ``None``) is skipped in this call.
            labels: [B, T] word ids to predict at masked pieces, -100 elsewhere.
            linking_only: stop after the last knowledge layer that runs (stage 1 and linking need nothing above
                it): ``hidden_states`` are then that layer's output, and there is no masked-LM loss.
        """
        given = self.candidates_by_kb(candidates)
        if linking_only and (not given or labels is not None):
            raise ValueError("linking_only needs candidates and takes no labels (the masked LM is not run)")
        device = self.device
        input_ids = input_ids.to(device)
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.to(device)
        found: dict[str, Any] = {"scores": {}}
        by_depth: dict[int, list[str]] = {}
        for name in given:
            given[name] = given[name].to(device)
            by_depth.setdefault(self.kar_layers[name], []).append(name)
        top = max(by_depth, default=0)
        layers = self.knowledge_layers()
        handles = []
        try:
            for depth, names in by_depth.items():
                parts = [(n, layers[n], given[n]) for n in names]
                hook = _kar_hook(parts, found, stop=linking_only and depth == top)
                handles.append(self._layers[depth - 1].register_forward_hook(hook))
            hidden = self._base(input_ids=input_ids, attention_mask=mask, return_dict=True).last_hidden_state
        except _StopAfterKar:
            hidden = found["hidden"]
        finally:
            for handle in handles:
                handle.remove()
        scores: dict[str, Tensor] = found["scores"]
        out = KnowBertOutput(
            hidden, scores.get(self.names[0]), kb_scores={n: scores[n] for n in self.names if n in scores}
        )
        if labels is not None:
            out.mlm_loss = head_loss(cast(nn.Module, self.encoder.lm_head), hidden, labels.to(device))
        for name in self.names:
            gold = given[name].gold if name in given else None
            if gold is not None:
                out.kb_losses[name] = layers[name].linking_loss(scores[name], gold)
        if out.kb_losses:
            out.linking_loss = functools.reduce(operator.add, out.kb_losses.values())
        return out

    def candidates_by_kb(self, candidates: Candidates | None) -> dict[str, SpanCandidates]:
        """``candidates`` as a mapping name -> :class:`SpanCandidates` in the order the layers run (a bare
        :class:`SpanCandidates` is the first knowledge base's; ``None`` entries are dropped).

        Raises:
            ValueError: a name that is not one of the model's knowledge bases.
        """
        if candidates is None:
            return {}
        if isinstance(candidates, SpanCandidates):
            return {self.names[0]: candidates}
        unknown = sorted(set(candidates) - set(self.names))
        if unknown:
            raise ValueError(f"candidates for unknown knowledge base(s) {unknown}; the model has {self.names}")
        return {n: c for n in self.run_order if (c := candidates.get(n)) is not None}

    @torch.no_grad()
    def link(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None,
        candidates: Candidates,
        knowledge_base: str | None = None,
    ) -> LinkDecision:
        """The integrated linker's decisions for the spans of a batch in ``knowledge_base`` (default: the first),
        nothing above its layer run: each span's best candidate above the threshold, else NULL, with its
        probability (:meth:`KnowledgeLayer.decode`). The layers of other knowledge bases given candidates run
        when they come first."""
        name = self._name(knowledge_base)
        given = self.candidates_by_kb(candidates)
        if name not in given:
            raise ValueError(f"no candidates for the knowledge base {name!r} to link with")
        before = self.run_order[: self.run_order.index(name) + 1]
        kept = {n: replace(given[n], gold=None) for n in before if n in given}
        out = self.forward(input_ids, attention_mask, kept, linking_only=True)
        return self.knowledge_layer(name).decode(out.kb_scores[name])

    def mlm_logits(self, hidden_states: Tensor) -> Tensor:
        """The encoder's masked-LM head on word vectors: (..., hidden) -> (..., vocabulary)."""
        return cast(Tensor, cast(nn.Module, self.encoder.lm_head)(hidden_states))

    def _name(self, name: str | None) -> str:
        if name is None:
            return self.names[0]
        if name not in self.kar_layers:
            raise ValueError(f"no knowledge base {name!r} in this model; it has {', '.join(self.names)}")
        return name

    # -- saving ----------------------------------------------------------------------------------
    def save_pretrained(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write ``knowbert.json`` (settings of every knowledge base and the encoder's config), ``model.safetensors``
        (encoder and knowledge layers) and one entity table file per knowledge base into ``directory``, under a
        temporary name renamed when complete (:mod:`mluke.knowbert.saving`)."""
        dbs = {n: db for n, db in self.kb_dbs.items() if n in self.tables}
        return save_knowbert(
            directory, self.encoder, self.tables, self.configs, self.state_dict(), dbs=dbs, overwrite=overwrite
        )

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike[str]) -> KnowBertModel:
        """A model written by :meth:`save_pretrained` (format version 3, or 1 and 2 from before), strictly checked,
        in eval mode (the files' tensors assigned, not copied: :mod:`mluke.knowbert.saving`).

        Raises:
            InputFormatError: a missing or malformed file, named.
            CheckpointError: weights that do not match the saved configuration.
        """
        parts = load_knowbert(directory)
        model = cls(parts.encoder, parts.tables, parts.configs)
        assign_weights(model, parts, Path(directory) / WEIGHTS_FILE)
        model.share_tables()
        model.kb_dbs, model.source = parts.dbs, Path(directory)
        return model.eval()

    @classmethod
    def from_encoder(
        cls,
        model: ModelSource = None,
        entities: EntityTable
        | str
        | os.PathLike[str]
        | Mapping[str, EntityTable | str | os.PathLike[str] | None]
        | None = None,
        config: KnowBertConfig | Mapping[str, KnowBertConfig] | None = None,
    ) -> KnowBertModel:
        """New knowledge layers on an encoder: an mLUKE bundle, folder or hub name, an XLM-R masked-LM folder, or
        ``None`` (the demo model). ``entities``: a table, a safetensors table file, or ``None`` for the
        checkpoint's own mLUKE entity table; or one of these per knowledge base name."""
        from mluke.opening import open_model

        bundle = open_model(model, word_models=True)
        given = dict(entities) if isinstance(entities, Mapping) else {DEFAULT_KB: entities}
        own: list[EntityTable] = []

        def table(source: EntityTable | str | os.PathLike[str] | None) -> EntityTable:
            if isinstance(source, EntityTable):
                return source
            if source is not None:
                return EntityTable.from_safetensors(source)
            if not own:
                own.append(EntityTable.from_checkpoint(bundle))
            return own[0]

        return cls(bundle.model, {name: table(source) for name, source in given.items()}, config)


class _StopAfterKar(Exception):
    """Raised by the hook to end the encoder's forward after the last knowledge layer (``linking_only``)."""


def _kar_hook(parts: list[tuple[str, KnowledgeLayer, SpanCandidates]], found: dict[str, Any], stop: bool) -> Any:
    """A forward hook replacing a layer's word output by the output of the knowledge layers in ``parts`` (run in
    order), keeping each one's linking scores in ``found["scores"]`` (and, with ``stop``, ending the forward)."""

    def hook(module: nn.Module, args: object, output: Any) -> Any:
        words = output[0] if isinstance(output, tuple) else output
        for name, kar, candidates in parts:
            result = kar(words, candidates)
            found["scores"][name] = result.linking_scores
            words = result.hidden_states
        found["hidden"] = words
        if stop:
            raise _StopAfterKar
        if isinstance(output, tuple):  # transformers 4.x layers, and LUKE's (word, entity, ...) in any version
            return (words, *output[1:])
        return words

    return hook


def _unique(params: list[nn.Parameter]) -> list[nn.Parameter]:
    return list({id(p): p for p in params}.values())
