"""Loading and saving mLUKE checkpoints in the studio-ousia (Hugging Face hub) layout.

A checkpoint folder holds ``config.json`` (LukeConfig), ``model.safetensors`` or
``pytorch_model.bin``, the word tokenizer (``sentencepiece.bpe.model`` and/or
``tokenizer.json``, ``added_tokens.json``) and ``entity_vocab.json`` (and, when
we wrote it, ``entity_vocab.sqlite``).

Loading is strict: every weight of the model must come from the file, except
- ``lm_head.decoder.weight`` and ``entity_predictions.decoder.weight``, tied to
  the word and entity embeddings, and ``lm_head.bias`` / ``lm_head.decoder.bias``
  (one implies the other);
- the entity-aware attention queries (``w2e_query``, ``e2w_query``,
  ``e2e_query``): initialised from the word query when absent, ignored when the
  config does not use them.
Anything else missing or unexpected is a :class:`CheckpointError` naming the keys.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, cast

import torch

from kb.db import EntityDB
from kb.errors import InputFormatError, MlukeError
from kb.files import atomic_path, read_json_file
from kb.renamed import renamed_keyword
from kb.vocab import EntityVocab
from mluke.models.entity_vocab import save_entity_vocab
from mluke.models.errors import CheckpointError
from mluke.models.luke import (
    drop_heads,
    encoder_state,
    english_titles,
    is_encoder_only,
    is_encoder_only_model,
    tokenizer_class,
)
from mluke.models.masked_lm import MlukeForMaskedLM
from mluke.models.tokenizer import MlukeTokenizer
from mluke.models.weight_files import same_bytes

if TYPE_CHECKING:
    from transformers import LukeConfig

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_EAA_RE = re.compile(r"^(luke\.encoder\.layer\.\d+\.attention\.self\.)(w2e|e2w|e2e)_query\.(weight|bias)$")
_TIED = {
    "lm_head.decoder.weight": "luke.embeddings.word_embeddings.weight",
    "entity_predictions.decoder.weight": "luke.entity_embeddings.entity_embeddings.weight",
}
_IGNORED_UNEXPECTED = re.compile(r"(^|\.)position_ids$")


class Mluke(NamedTuple):
    """What :func:`load` returns: ``model, tokenizer, entity_vocab = mluke.load(path)``."""

    model: MlukeForMaskedLM
    tokenizer: MlukeTokenizer
    entity_vocab: EntityVocab | None


def resolve(name_or_dir: str | os.PathLike[str]) -> Path:
    """A local folder as is; otherwise a hub name, downloaded (needs network access)."""
    path = Path(name_or_dir)
    if path.is_dir():
        return path
    if path.exists():
        raise InputFormatError(f"{path}: expected a checkpoint folder, found a file")
    name = str(name_or_dir)
    if not re.match(r"^[\w.-]+/[\w.-]+$", name):
        raise InputFormatError(f"{name}: no such folder, and not a hub model name like 'studio-ousia/mluke-base'")
    try:
        from huggingface_hub import snapshot_download

        return Path(
            snapshot_download(name, allow_patterns=["*.json", "*.model", "*.safetensors", "*.bin", "*.sqlite", "*.txt"])
        )
    except Exception as exc:
        raise MlukeError(
            f"could not fetch {name!r} from the Hugging Face hub ({type(exc).__name__}: {exc}); "
            "without network access, download the folder elsewhere and pass its path"
        ) from None


def weights_path(directory: Path) -> Path:
    """The weights file of a checkpoint folder (``model.safetensors`` preferred over ``pytorch_model.bin``).

    Raises:
        InputFormatError: neither is there.
    """
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    raise InputFormatError(f"{directory}: no {' or '.join(WEIGHT_FILES)} (expected an mLUKE checkpoint folder)")


def read_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """Weights of a checkpoint folder (safetensors preferred; ``.bin`` read with ``weights_only``). A safetensors
    file's tensors are views of the mapped file, read when first used (:mod:`mluke.models.weight_files`)."""
    for name in WEIGHT_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return load_file(str(path))
            return cast("dict[str, torch.Tensor]", torch.load(path, map_location="cpu", weights_only=True))
        except Exception as exc:
            raise InputFormatError(f"{path}: cannot read the weights ({type(exc).__name__}: {exc})") from None
    raise InputFormatError(f"{directory}: no {' or '.join(WEIGHT_FILES)} (expected an mLUKE checkpoint folder)")


def read_config(directory: Path) -> LukeConfig:
    from transformers import LukeConfig

    path = directory / "config.json"
    data = read_json_file(path, expected="an mLUKE checkpoint folder")
    missing = [k for k in ("vocab_size", "entity_vocab_size", "hidden_size", "num_hidden_layers") if k not in data]
    if missing:
        raise InputFormatError(f"{path}: missing {', '.join(missing)}; expected a LukeConfig")
    return LukeConfig(**{k: v for k, v in data.items() if k not in ("architectures", "transformers_version")})


def _same(state: dict[str, torch.Tensor], target: str, source: str, weights: Path) -> bool:
    """Whether the stored tied weight ``target`` equals ``source``; in a safetensors file compared a block at a
    time from the file, so that the duplicate (1.2 GB for mluke-base's entity decoder) never becomes resident."""
    a, b = state[target], state[source]
    if weights.suffix == ".safetensors" and a.dtype == b.dtype and a.shape == b.shape:
        return same_bytes(weights, target, b)
    return a.shape == b.shape and torch.equal(a, b)


def _reconcile(
    state: dict[str, torch.Tensor], expected: dict[str, torch.Size], use_eaa: bool, where: Path
) -> dict[str, torch.Tensor]:
    """Check the file's keys against the model's; fill what may be derived; raise on the rest (``where``: the
    weights file)."""
    state = dict(state)
    if "lm_head.bias" in state and "lm_head.decoder.bias" not in state:
        state["lm_head.decoder.bias"] = state["lm_head.bias"]
    if "lm_head.decoder.bias" in state and "lm_head.bias" not in state:
        state["lm_head.bias"] = state["lm_head.decoder.bias"]
    for key in list(state):
        m = _EAA_RE.match(key)
        if (m and not use_eaa) or (_IGNORED_UNEXPECTED.search(key) and key not in expected):
            del state[key]
    for key in expected:
        m = _EAA_RE.match(key)
        if m and key not in state and f"{m.group(1)}query.{m.group(3)}" in state:
            state[key] = state[f"{m.group(1)}query.{m.group(3)}"].clone()
    for target, source in _TIED.items():
        if target in state and source in state and not _same(state, target, source, where):
            raise CheckpointError(
                f"{where}: {target} differs from {source}; mLUKE ties them, so this is not an mLUKE masked-LM "
                "checkpoint"
            )
        state.pop(target, None)
    need = {k for k in expected if k not in _TIED}
    missing = sorted(need - state.keys())
    unexpected = sorted(state.keys() - expected.keys())
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(
                f"{len(missing)} missing weight(s): {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}"
            )
        if unexpected:
            parts.append(
                f"{len(unexpected)} unexpected weight(s): "
                f"{', '.join(unexpected[:8])}{' ...' if len(unexpected) > 8 else ''}"
            )
        raise CheckpointError(f"{where}: the weights do not match config.json: " + "; ".join(parts))
    wrong = [
        f"{k} {tuple(state[k].shape)} != {tuple(s)}" for k, s in expected.items() if k in state and state[k].shape != s
    ]
    if wrong:
        raise CheckpointError(f"{where}: weights of the wrong shape for config.json: {'; '.join(wrong[:5])}")
    return state


def load_model(directory: str | os.PathLike[str], *, dtype: torch.dtype | None = None) -> MlukeForMaskedLM:
    """The model of a checkpoint folder, strictly checked (see module docs), in eval mode."""
    directory = Path(directory)
    config = read_config(directory)
    state = read_state_dict(directory)
    with torch.device("meta"):
        model = MlukeForMaskedLM(config)
    expected = {k: v.shape for k, v in model.state_dict().items()}
    encoder_only = is_encoder_only(state)
    if encoder_only:  # a bare LukeModel (English LUKE): the heads stay absent, see mluke.models.luke
        state, expected = encoder_state(state), {k: v for k, v in expected.items() if k.startswith("luke.")}
    state = _reconcile(state, expected, bool(config.use_entity_aware_attention), weights_path(directory))
    model.load_state_dict(state, strict=False, assign=True)
    if encoder_only:
        drop_heads(model, directory)
        return _finish(model, directory, dtype)
    model.lm_head.decoder.weight = model.luke.embeddings.word_embeddings.weight
    model.entity_predictions.decoder.weight = model.luke.entity_embeddings.entity_embeddings.weight
    model.lm_head.bias = model.lm_head.decoder.bias
    return _finish(model, directory, dtype)


def _finish(model: MlukeForMaskedLM, directory: Path, dtype: torch.dtype | None) -> MlukeForMaskedLM:
    meta = [n for n, p in [*model.named_parameters(), *model.named_buffers()] if p.is_meta]
    if meta:
        raise CheckpointError(f"{directory}: no value for {', '.join(meta[:8])}")
    if dtype is not None:
        model = model.to(dtype)  # type: ignore[arg-type]  # transformers types .to as @wraps(nn.Module.to)
    cast(torch.nn.Module, model).eval()  # the same call, through nn.Module's annotated signature
    return model


@renamed_keyword("kb", "db")
def load(name_or_dir: str | os.PathLike[str], *, dtype: torch.dtype | None = None, db: EntityDB | None = None) -> Mluke:
    """Load an mLUKE checkpoint: ``model, tokenizer, entity_vocab = mluke.load("studio-ousia/mluke-base")``.

    Works for the full (1.2M entities) and lite (special entities only) vocabularies, with or without
    entity-aware attention.

    Args:
        name_or_dir: a checkpoint folder, or a hub name such as ``studio-ousia/mluke-base`` (downloaded).
        dtype: the precision to cast the model to (default: as saved).
        db: an entity database that lets the tokenizer resolve QIDs the vocabulary lacks
            (``kb=``: deprecated).

    Returns:
        The :class:`Mluke` bundle (``model``, ``tokenizer``, ``entity_vocab``; unpacks like a tuple).

    Raises:
        InputFormatError: no such folder or hub name, a missing or unreadable config or weights file.
        CheckpointError: weights that do not match the config, a word tokenizer with more ids than the model
            has rows (more rows, as padded embeddings have, load), or an entity vocabulary of another size.
    """
    directory = resolve(name_or_dir)
    model = load_model(directory, dtype=dtype)
    tokenizer = tokenizer_class(directory).from_pretrained(directory, db=db)
    vocab = tokenizer.entity_vocab
    # More word rows than tokenizer ids is allowed: resize_token_embeddings(pad_to_multiple_of=...) pads the
    # embeddings (and config.json's vocab_size) to a multiple of 8 or 64; rows no piece reaches are never read.
    if tokenizer.vocab_size > model.config.vocab_size:
        raise CheckpointError(
            f"{directory}: the word tokenizer has {tokenizer.vocab_size} ids, more than the "
            f"{model.config.vocab_size} of config.json's vocab_size (a model may have more word rows, not fewer)"
        )
    if vocab is not None and len(vocab) != model.config.entity_vocab_size:
        raise CheckpointError(
            f"{directory}: the entity vocabulary has {len(vocab)} ids, config.json says "
            f"{model.config.entity_vocab_size}"
        )
    return Mluke(model, tokenizer, vocab)


def save(
    bundle: Mluke | tuple[MlukeForMaskedLM, MlukeTokenizer, EntityVocab | None],
    directory: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> Path:
    """Write ``model, tokenizer, entity_vocab`` in the studio-ousia layout (``model.safetensors``).

    Tied weights are written out in full, so transformers' own ``LukeForMaskedLM``
    (which no longer ties the word head) reads the folder correctly too. The folder is
    written under a temporary name and renamed when complete; an existing, non-empty
    ``directory`` is replaced only with ``overwrite``.
    """
    from safetensors.torch import save_file

    model, tokenizer, vocab = bundle
    directory = Path(directory)
    empty = directory.is_dir() and not any(directory.iterdir())
    with atomic_path(directory, overwrite=overwrite or empty) as tmp:
        tmp.mkdir()
        config = model.config.to_dict()
        encoder_only = is_encoder_only_model(model)  # written as a bare LukeModel, as it was read
        config["architectures"] = ["LukeModel" if encoder_only else "LukeForMaskedLM"]
        for key in ("dtype", "torch_dtype", "_name_or_path"):
            config.pop(key, None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
        if encoder_only:
            state = {k.removeprefix("luke."): v for k, v in state.items()}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        if vocab is not None:
            save_entity_vocab(vocab, tmp, default_lang=english_titles(tokenizer))
    return directory
