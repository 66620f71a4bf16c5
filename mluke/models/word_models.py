"""Any Hugging Face masked language model as a word-only probing model (mBERT, XLM-R, RoBERTa,
DistilBERT, English LUKE, ...), for comparing mLUKE with the baselines of the mLUKE paper.

:func:`load_word_model` reads a folder with ``AutoModelForMaskedLM`` and ``AutoTokenizer`` and wraps
them in the two small interfaces that :class:`mluke.probing.scoring.ClozeScorer` uses in word mode:

- :class:`WordModel`: ``encode(**inputs)`` (last-layer word states, no head) and
  ``word_scores(states, candidates)`` (the masked-LM head at the given positions only);
- :class:`WordTokenizer`: ``tokenizer(texts)``, ``encode_words(labels)``, ``mask_id`` / ``mask_token``.

The model kind comes from ``config.json`` (:func:`model_kind`): an mLUKE checkpoint (LukeConfig with an
entity vocabulary and the XLM-R word tokenizer) is loaded by :func:`mluke.models.checkpoint.load`; anything
else is a word model. A model without masked-LM head weights is refused (transformers would fill the
head with random weights and say nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import torch
from torch import Tensor, nn

from kb.errors import InputFormatError
from kb.files import read_json_file
from mluke.models.compat import dtype_kwargs
from mluke.models.devices import to_device
from mluke.models.errors import CheckpointError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

Kind = Literal["mluke", "word"]


def model_kind(directory: Path) -> Kind:
    """``"mluke"`` for an mLUKE or English LUKE checkpoint (``entity_vocab_size`` in config.json and an entity
    vocabulary), else ``"word"``; a folder without a readable
    ``config.json`` is an :class:`InputFormatError`."""
    path = directory / "config.json"
    config = read_json_file(path, expected="a checkpoint folder")
    if not isinstance(config, dict):
        raise InputFormatError(f"{path}: a JSON {type(config).__name__}; expected an object")
    has_vocab = any((directory / n).is_file() for n in ("entity_vocab.json", "entity_vocab.sqlite"))
    if "entity_vocab_size" in config and has_vocab:
        return "mluke"
    if "model_type" not in config:
        raise InputFormatError(
            f"{path}: no model_type; expected a Hugging Face config (or an mLUKE LukeConfig "
            "with entity_vocab.json beside it)"
        )
    return "word"


class WordTokenizer:
    """A Hugging Face tokenizer with the calls :class:`mluke.probing.scoring.ClozeScorer` makes in word mode."""

    entity_vocab = None  #: word models have no entity vocabulary (entity modes are refused)

    def __init__(self, tokenizer: Any, source_dir: Path | None = None, max_length: int | None = None) -> None:
        if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
            raise CheckpointError(f"{source_dir}: the tokenizer has no mask token; word probing needs a masked LM")
        self.hf = tokenizer
        self.source_dir = source_dir
        self.mask_token: str = tokenizer.mask_token
        self.mask_id: int = tokenizer.mask_token_id
        self.bos_id, self.pad_id, self.eos_id = tokenizer.cls_token_id, tokenizer.pad_token_id, tokenizer.sep_token_id
        self.unk_id = tokenizer.unk_token_id
        #: the most pieces (special tokens included) a prompt may have: the model's positions, else the tokenizer's
        self.max_length: int = min(max_length or tokenizer.model_max_length, tokenizer.model_max_length)
        self.ent_id = self.ent2_id = None
        # byte-level BPE (RoBERTa, English LUKE) marks a word start in the piece itself: a candidate at [Y]
        # follows a space, so it is encoded with one; SentencePiece and WordPiece give the same pieces either way
        self.space_prefix = self._pieces(" a") != self._pieces("a")
        if self.space_prefix and self._pieces("a " + self.mask_token) != [*self._pieces("a"), self.mask_id]:
            # a byte-level BPE mask that keeps the space before it as a piece of its own ("Ġ", "<mask>") would
            # not stand where the answer's own word-start pieces do: let it take the space, as RoBERTa's does
            from tokenizers import AddedToken

            tokenizer.add_special_tokens(
                {"mask_token": AddedToken(self.mask_token, lstrip=True, rstrip=False, normalized=False, special=True)}
            )

    def _pieces(self, text: str) -> list[int]:
        return list(self.hf(text, add_special_tokens=False)["input_ids"])

    def __call__(self, texts: Sequence[str], **_: Any) -> dict[str, Tensor]:
        """Padded ``input_ids`` and ``attention_mask`` of a batch (special tokens added, long texts cut)."""
        enc = self.hf(list(texts), padding=True, truncation=True, return_tensors="pt")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def encode_words(self, texts: Sequence[str], *, at_start: bool = False) -> list[list[int]]:
        """Word pieces of each candidate label as it stands at [Y], no special tokens: after a space, or
        (``at_start``: [Y] opens the prompt) after nothing, which differs for byte-level BPE only."""
        prefix = " " if self.space_prefix and not at_start else ""
        return [list(ids) for ids in self.hf([prefix + t for t in texts], add_special_tokens=False)["input_ids"]]

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        """Pieces as readable text (byte-level pieces decoded; a word-start marker becomes a space)."""
        return [self.hf.decode([i]) or self.hf.convert_ids_to_tokens(i) for i in ids]

    @property
    def vocab_size(self) -> int:
        return len(self.hf)


class WordModel(nn.Module):
    """A Hugging Face masked LM split into its encoder (:meth:`encode`) and its masked-LM head, applied
    at the positions that are scored only (:meth:`word_scores`), so a batch does not compute a
    (tokens x vocabulary) logit table it does not read."""

    def __init__(self, model: PreTrainedModel) -> None:
        super().__init__()
        self.hf = model
        self.config = model.config
        self._head = _head_of(model)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def encode(self, **inputs: Tensor) -> tuple[Tensor, None]:
        """Last-layer word states (batch x words x hidden) and ``None`` (no entity states)."""
        out = self.hf.base_model(**to_device(inputs, self.device), return_dict=True)
        return out.last_hidden_state, None

    def word_scores(self, word_hidden: Tensor, candidates: Tensor | None = None, *, normalize: bool = True) -> Tensor:
        """Log-probabilities over the word vocabulary at (n, hidden) states: (n, vocab), or (n, c) for
        the word ids ``candidates`` ((c,) or (n, c)); raw logits when not ``normalize``."""
        logits = self._head(word_hidden).float()
        out = torch.log_softmax(logits, dim=-1) if normalize else logits
        if candidates is None:
            return out
        candidates = candidates.to(out.device)
        return out[:, candidates] if candidates.dim() == 1 else out.gather(1, candidates)


def _head_of(model: nn.Module) -> Callable[[Tensor], Tensor]:
    """The masked-LM head as a function of (n, hidden) states -> (n, vocab) logits, by architecture."""

    def part(name: str) -> Callable[[Tensor], Tensor]:
        return cast("Callable[[Tensor], Tensor]", getattr(model, name))

    if hasattr(model, "cls") and hasattr(model.cls, "predictions"):  # BERT, mBERT
        return part("cls")
    if hasattr(model, "lm_head"):  # RoBERTa, XLM-R, CamemBERT, LUKE
        return part("lm_head")
    if hasattr(model, "vocab_projector"):  # DistilBERT
        return lambda h: part("vocab_projector")(
            part("vocab_layer_norm")(part("activation")(part("vocab_transform")(h)))
        )
    if hasattr(model, "generator_lm_head"):  # ELECTRA generator
        return lambda h: part("generator_lm_head")(part("generator_predictions")(h))
    if hasattr(model, "predictions"):  # ALBERT
        return part("predictions")
    raise CheckpointError(
        f"{type(model).__name__}: a masked-LM head layout mluke does not know "
        "(BERT, RoBERTa/XLM-R, DistilBERT, ELECTRA, ALBERT, LUKE are supported)"
    )


def load_word_model(directory: Path, *, dtype: torch.dtype | None = None) -> tuple[WordModel, WordTokenizer]:
    """A masked LM and its tokenizer from a folder, strictly: missing masked-LM head weights, a model type
    without a masked-LM class, or an unreadable tokenizer are :class:`CheckpointError` naming the folder."""
    import transformers
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    kind = config.get("model_type")
    verbosity, bars = transformers.logging.get_verbosity(), transformers.logging.is_progress_bar_enabled()
    transformers.logging.set_verbosity_error()  # missing weights are checked below, loudly
    transformers.logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a probe's output
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(directory, output_loading_info=True, **dtype_kwargs(dtype))
    except ValueError as exc:
        raise CheckpointError(
            f"{directory}: model type {kind!r} has no masked-LM class in transformers "
            f"({str(exc).splitlines()[0]}); word probing needs a masked LM"
        ) from None
    except OSError as exc:
        raise CheckpointError(f"{directory}: cannot read the weights ({exc})") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
        if bars:
            transformers.logging.enable_progress_bar()
    prefix = model.base_model_prefix
    missing = [k for k in info.get("missing_keys", []) if not k.startswith(prefix + ".")]
    if missing:
        arch = ", ".join(config.get("architectures") or ["?"])
        raise CheckpointError(
            f"{directory}: no masked-LM head in the weights (architectures: {arch}; "
            f"missing {', '.join(sorted(missing)[:4])}"
            f"{' ...' if len(missing) > 4 else ''}); word probing needs a masked-LM checkpoint (*ForMaskedLM)"
        )
    body = [k for k in info.get("missing_keys", []) if k.startswith(prefix + ".") and "position_ids" not in k]
    if body:
        raise CheckpointError(
            f"{directory}: the weights do not match config.json: {len(body)} missing weight(s): "
            f"{', '.join(sorted(body)[:4])}"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory)
    except Exception as exc:  # transformers raises many kinds here
        raise CheckpointError(f"{directory}: cannot load the tokenizer ({type(exc).__name__}: {exc})") from None
    return WordModel(model).eval(), WordTokenizer(tokenizer, directory, _positions(model.config))


#: model types whose position ids start after the padding id (as RoBERTa's do), so that many positions are unusable
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "luke", "xlm-roberta-xl", "data2vec-text")


def _positions(config: Any) -> int | None:
    """How many word positions the model reads (``None`` when its config does not say)."""
    n = getattr(config, "max_position_embeddings", None)
    if not isinstance(n, int):
        return None
    return n - ((config.pad_token_id or 0) + 1) if config.model_type in _OFFSET_POSITIONS else n
