"""An encoder with a knowledge layer inserted between two of its layers (:class:`KnowBertModel`), its masked-LM
head on top: KnowBert (Peters et al., 2019) on an mLUKE checkpoint or a Hugging Face XLM-R masked LM.

The knowledge layer runs as a forward hook on the output of encoder layer ``L``, registered for one call and
removed after it: the encoder's own forward builds its attention masks and runs its layers, so the model
works the same under transformers 4.46 and 5.x (whose layer signatures, mask formats and return types
differ), and without candidates the hook is not there at all: the output is the bare encoder's, bit for bit.
Only word inputs are used; mLUKE's entity-token input is not (the two ways of using entities are separate).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor, nn

from kb.errors import InputFormatError
from kb.files import atomic_path, read_json_file
from mluke.errors import CheckpointError
from mluke.knowbert.batch import SpanCandidates
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable
from mluke.knowbert.layer import KnowledgeLayer, LinkDecision
from mluke.model import _head_loss

if TYPE_CHECKING:
    from mluke.opening import ModelSource

CONFIG_FILE = "knowbert.json"
WEIGHTS_FILE = "model.safetensors"
ENTITIES_FILE = "entities.safetensors"
FORMAT, FORMAT_VERSION = "mluke-knowbert", 1
_DROPPED_CONFIG_KEYS = ("architectures", "transformers_version", "_name_or_path", "dtype", "torch_dtype")


@dataclass
class KnowBertOutput:
    """What :meth:`KnowBertModel.forward` returns."""

    hidden_states: Tensor  #: [B, T, hidden], the encoder's last layer
    linking_scores: Tensor | None = None  #: [B, S, K] psi before NULL thresholding; None without candidates
    mlm_loss: Tensor | None = None  #: with ``labels``: masked-LM cross-entropy at the labelled pieces
    linking_loss: Tensor | None = None  #: with ``candidates.gold``: the linking log-likelihood loss


class KnowBertModel(nn.Module):
    """A masked-LM encoder (mLUKE or XLM-R) with one knowledge layer (one knowledge base) after layer ``L``."""

    def __init__(self, encoder: nn.Module, entities: EntityTable, config: KnowBertConfig | None = None) -> None:
        """
        Args:
            encoder: the masked LM: an :class:`mluke.MlukeForMaskedLM`, a transformers ``XLMRobertaForMaskedLM``
                (or any masked LM with ``base_model.encoder.layer`` and an ``lm_head``), or a
                :class:`mluke.word_models.WordModel` wrapping one.
            entities: the frozen entity vectors the layer links to.
            config: the knowledge layer's settings (default: KnowBert-Wiki's).
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
        self.encoder = encoder
        self.config = config or KnowBertConfig()
        self.kar_layer = self.config.layer_for(len(layers))
        hidden_size = int(cast(Any, encoder).config.hidden_size)
        self.kar = KnowledgeLayer(hidden_size, entities, self.config)
        self.entities = entities

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

    def kar_parameters(self) -> list[nn.Parameter]:
        """The knowledge layer's trainable parameters (the entity table is a buffer, not among them)."""
        return list(self.kar.parameters())

    def encoder_parameters(self, below: bool) -> list[nn.Parameter]:
        """The encoder's parameters below the knowledge layer (embeddings and layers ``1 .. L``; ``below``) or
        the rest (layers ``L+1 ..``, the masked-LM head and anything else), each parameter in one group only
        (the head's tied word embedding counts as below)."""
        lower = _unique([*cast(Any, self._base).embeddings.parameters(), *self._layers[: self.kar_layer].parameters()])
        if below:
            return lower
        seen = {id(p) for p in lower}
        return [p for p in self.encoder.parameters() if id(p) not in seen]

    def freeze_encoder(self, frozen: bool = True) -> None:
        """Stop (``frozen``) or resume training the encoder: stage 1 trains the linker alone."""
        for p in self.encoder.parameters():
            p.requires_grad_(not frozen)

    # -- running ---------------------------------------------------------------------------------
    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        candidates: SpanCandidates | None = None,
        labels: Tensor | None = None,
        *,
        linking_only: bool = False,
    ) -> KnowBertOutput:
        """Run the encoder with the knowledge layer after layer ``L`` (without ``candidates``: the bare encoder).

        Args:
            input_ids: word pieces [B, T].
            attention_mask: [B, T], 1 for real pieces (default: all).
            candidates: the spans and kb candidates of the batch (word-piece positions of ``input_ids``).
            labels: [B, T] word ids to predict at masked pieces, -100 elsewhere.
            linking_only: stop after the knowledge layer (stage 1 and linking need nothing above it):
                ``hidden_states`` are then the layer's output at depth ``L``, and there is no masked-LM loss.
        """
        if linking_only and (candidates is None or labels is not None):
            raise ValueError("linking_only needs candidates and takes no labels (the masked LM is not run)")
        device = self.device
        input_ids = input_ids.to(device)
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.to(device)
        found: dict[str, Tensor] = {}
        handle = None
        if candidates is not None:
            candidates = candidates.to(device)
            hook = _kar_hook(self.kar, candidates, found, stop=linking_only)
            handle = self._layers[self.kar_layer - 1].register_forward_hook(hook)
        try:
            hidden = self._base(input_ids=input_ids, attention_mask=mask, return_dict=True).last_hidden_state
        except _StopAfterKar:
            hidden = found["hidden"]
        finally:
            if handle is not None:
                handle.remove()
        out = KnowBertOutput(hidden, found.get("scores"))
        if labels is not None:
            out.mlm_loss = _head_loss(cast(nn.Module, self.encoder.lm_head), hidden, labels.to(device))
        if candidates is not None and candidates.gold is not None:
            out.linking_loss = self.kar.linking_loss(found["scores"], candidates.gold)
        return out

    @torch.no_grad()
    def link(self, input_ids: Tensor, attention_mask: Tensor | None, candidates: SpanCandidates) -> LinkDecision:
        """The integrated linker's decisions for the spans of a batch (nothing above the layer runs): each span's
        best candidate above the threshold, else NULL, with its probability (:meth:`KnowledgeLayer.decode`)."""
        out = self.forward(input_ids, attention_mask, replace(candidates, gold=None), linking_only=True)
        assert out.linking_scores is not None
        return self.kar.decode(out.linking_scores)

    def mlm_logits(self, hidden_states: Tensor) -> Tensor:
        """The encoder's masked-LM head on word vectors: (..., hidden) -> (..., vocabulary)."""
        return cast(Tensor, cast(nn.Module, self.encoder.lm_head)(hidden_states))

    # -- saving ----------------------------------------------------------------------------------
    def save_pretrained(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write ``knowbert.json`` (settings and the encoder's config), ``model.safetensors`` (encoder and
        knowledge layer) and ``entities.safetensors`` (the entity table) into ``directory``, under a temporary
        name renamed when complete."""
        from safetensors.torch import save_file

        directory = Path(directory)
        empty = directory.is_dir() and not any(directory.iterdir())
        encoder_config = dict(cast(Any, self.encoder).config.to_dict())
        for key in _DROPPED_CONFIG_KEYS:
            encoder_config.pop(key, None)
        state, aliases = _without_aliases(self.state_dict())
        meta = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "encoder_class": "mluke" if hasattr(self.encoder, "luke") else "auto",
            "encoder_config": encoder_config,
            # restored as it was: transformers 4.46 builds a model from a config with eager attention, not sdpa
            "attn_implementation": getattr(cast(Any, self.encoder).config, "_attn_implementation", None),
            "knowbert": self.config.to_dict(),
        }
        with atomic_path(directory, overwrite=overwrite or empty) as tmp:
            tmp.mkdir()
            (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            save_file(state, str(tmp / WEIGHTS_FILE), metadata={"format": "pt", "aliases": json.dumps(aliases)})
            self.entities.save(tmp / ENTITIES_FILE)
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike[str]) -> KnowBertModel:
        """A model written by :meth:`save_pretrained`, strictly checked, in eval mode.

        Raises:
            InputFormatError: a missing or malformed file, named.
            CheckpointError: weights that do not match the saved configuration.
        """
        from safetensors import safe_open

        directory = Path(directory)
        meta = _read_meta(directory / CONFIG_FILE)
        config = KnowBertConfig.from_dict(meta.get("knowbert"), f"{directory / CONFIG_FILE}: 'knowbert'")
        encoder = _build_encoder(meta, directory / CONFIG_FILE)
        model = cls(encoder, EntityTable.from_safetensors(directory / ENTITIES_FILE), config)
        path = directory / WEIGHTS_FILE
        try:
            with safe_open(str(path), framework="pt") as f:
                aliases = json.loads((f.metadata() or {}).get("aliases", "{}"))
                state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118  (a safe_open handle is not iterable)
        except Exception as exc:
            raise InputFormatError(f"{path}: cannot read the weights ({type(exc).__name__}: {exc})") from None
        for alias, source in aliases.items():
            if source in state:
                state[alias] = state[source]
        result = model.load_state_dict(state, strict=False)
        missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
        if missing or unexpected:
            raise CheckpointError(
                f"{path}: the weights do not match {CONFIG_FILE}: missing {', '.join(missing[:6]) or 'none'}; "
                f"unexpected {', '.join(unexpected[:6]) or 'none'}"
            )
        return model.eval()

    @classmethod
    def from_encoder(
        cls,
        model: ModelSource = None,
        entities: EntityTable | str | os.PathLike[str] | None = None,
        config: KnowBertConfig | None = None,
    ) -> KnowBertModel:
        """A new knowledge layer on an encoder: an mLUKE bundle, folder or hub name, an XLM-R masked-LM folder,
        or ``None`` (the demo model). ``entities``: a table, a safetensors table file, or ``None`` for the
        checkpoint's own mLUKE entity table."""
        from mluke.opening import open_model

        bundle = open_model(model, word_models=True)
        if entities is None:
            table = EntityTable.from_checkpoint(bundle)
        elif isinstance(entities, EntityTable):
            table = entities
        else:
            table = EntityTable.from_safetensors(entities)
        return cls(bundle.model, table, config)


class _StopAfterKar(Exception):
    """Raised by the hook to end the encoder's forward after the knowledge layer (``linking_only``)."""


def _kar_hook(kar: KnowledgeLayer, candidates: SpanCandidates, found: dict[str, Tensor], stop: bool) -> Any:
    """A forward hook replacing a layer's word output by the knowledge layer's, keeping the linking scores
    (and, with ``stop``, ending the forward there)."""

    def hook(module: nn.Module, args: object, output: Any) -> Any:
        words = output[0] if isinstance(output, tuple) else output
        result = kar(words, candidates)
        found["scores"], found["hidden"] = result.linking_scores, result.hidden_states
        if stop:
            raise _StopAfterKar
        if isinstance(output, tuple):  # transformers 4.x layers, and LUKE's (word, entity, ...) in any version
            return (result.hidden_states, *output[1:])
        return result.hidden_states

    return hook


def _unique(params: list[nn.Parameter]) -> list[nn.Parameter]:
    return list({id(p): p for p in params}.values())


def _without_aliases(state: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The state with tied tensors (e.g. the LM head's decoder = the word embedding) kept once, and which key
    each dropped one repeats (safetensors refuses shared memory)."""
    kept: dict[str, Tensor] = {}
    aliases: dict[str, str] = {}
    by_storage: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for key, value in state.items():
        ident = (value.untyped_storage().data_ptr(), int(value.storage_offset()), tuple(value.shape))
        if ident in by_storage:
            aliases[key] = by_storage[ident]
            continue
        by_storage[ident] = key
        kept[key] = value.detach().contiguous().cpu()
    return kept, aliases


def _read_meta(path: Path) -> dict[str, Any]:
    meta = read_json_file(path, expected="a folder written by KnowBertModel")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputFormatError(f"{path}: not a KnowBert model description (expected format {FORMAT!r})")
    if meta.get("version") != FORMAT_VERSION:
        raise InputFormatError(f"{path}: format version {meta.get('version')!r}; this mluke reads {FORMAT_VERSION}")
    return meta


def _build_encoder(meta: dict[str, Any], where: Path) -> nn.Module:
    """A freshly initialised encoder of the saved architecture (its weights are loaded after)."""
    cfg = dict(meta.get("encoder_config") or {})
    if not cfg:
        raise InputFormatError(f"{where}: no 'encoder_config'")
    if meta.get("encoder_class") == "mluke":
        from transformers import LukeConfig

        from mluke.model import MlukeForMaskedLM

        return MlukeForMaskedLM(LukeConfig(**cfg))
    from transformers import AutoConfig, AutoModelForMaskedLM

    model_type = cfg.pop("model_type", None)
    if not model_type:
        raise InputFormatError(f"{where}: 'encoder_config' has no model_type")
    config = AutoConfig.for_model(model_type, **cfg)
    attention = meta.get("attn_implementation")
    extra = {"attn_implementation": attention} if isinstance(attention, str) else {}
    return cast(nn.Module, AutoModelForMaskedLM.from_config(config, **extra))
