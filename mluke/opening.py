"""Which model a ``model=`` argument means: the given bundle, a checkpoint folder or hub name, or the
embedded demo model (``None`` or the name ``"demo"``), trained on first use.

This sits above both :mod:`mluke.models.checkpoint` (reading and writing checkpoints) and :mod:`mluke.demo.model` (which
trains with :mod:`mluke.pretraining`, which writes checkpoints), so that loading a checkpoint never reaches
the demo's training: the import graph stays acyclic.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from mluke.errors import CheckpointError
from mluke.models.checkpoint import Mluke, load, resolve

if TYPE_CHECKING:
    from mluke.models.devices import Device, DType

#: The name of the embedded demo model, as ``model=`` and ``--model`` take it (so that it can stand beside other
#: models: ``eval-mlama --model demo --model FacebookAI/xlm-roberta-base``); a folder named ``demo`` is ``./demo``.
DEMO = "demo"


def is_demo(model: object) -> bool:
    """Whether a ``model=`` argument names the embedded demo model (``None`` or ``"demo"``)."""
    return model is None or (isinstance(model, str) and model == DEMO)


#: What a ``model=`` argument takes: a loaded bundle or its ``(model, tokenizer, entity_vocab)`` tuple, a
#: checkpoint folder or hub name, or ``None`` for the embedded demo model.
ModelSource: TypeAlias = Mluke | tuple[Any, ...] | str | os.PathLike[str] | None


def open_model(
    model: ModelSource = None,
    *,
    device: Device = None,
    dtype: DType = None,
    word_models: bool = False,
) -> Mluke:
    """The given model, or the default one. Every call that takes ``model=`` goes through this.

    Args:
        model: ``None`` or ``"demo"`` for the embedded demo model (trained on first use, then cached); a loaded
            ``(model, tokenizer, entity_vocab)`` bundle, used as it is; a folder or hub name, loaded with
            :func:`mluke.models.checkpoint.load`.
        device: where to move the model (see :mod:`mluke.models.devices`; ``None``: as it is), in place for a
            bundle that was passed in.
        dtype: what to cast the model to (``None``: as it is).
        word_models: load a folder or hub name that is not an mLUKE checkpoint but any other masked LM
            (BERT, XLM-R, ...; see :mod:`mluke.models.word_models`) as a word-only model (``entity_vocab``
            ``None``), for word-mode probing; without it such a folder is refused.

    Returns:
        The model bundle.

    Raises:
        CheckpointError: a folder that is not an mLUKE checkpoint (without ``word_models``) or is broken.
    """
    from mluke.models.devices import place

    if is_demo(model):
        from mluke.demo.model import demo_model

        bundle = load(demo_model())
    elif isinstance(model, (Mluke, tuple)):
        bundle = Mluke(*model)
    else:
        bundle = _load_any(cast("str | os.PathLike[str]", model), word_models)
    place(bundle.model, device, dtype)
    return bundle


def _load_any(name_or_dir: str | os.PathLike[str], word_models: bool) -> Mluke:
    """:func:`load` for mLUKE checkpoints; other masked LMs as word models when ``word_models``."""
    from mluke.models.word_models import load_word_model, model_kind

    directory = resolve(name_or_dir)
    if model_kind(directory) == "mluke":
        return load(directory)
    if not word_models:
        model_type = json.loads((directory / "config.json").read_text(encoding="utf-8")).get("model_type")
        raise CheckpointError(
            f"{directory}: a {model_type!r} model, not an mLUKE checkpoint (no entity vocabulary); "
            "only word-mode probing (mluke probe, mluke eval-mlama) takes other masked LMs"
        )
    model, tokenizer = load_word_model(directory)
    return Mluke(model, tokenizer, None)  # type: ignore[arg-type]
