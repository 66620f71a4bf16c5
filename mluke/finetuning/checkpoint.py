"""Fine-tuned models in the hub layout: ``config.json`` (the LUKE config, ``id2label``/``label2id`` and an
``mluke_transfer`` block: task, features, labels, settings), ``model.safetensors`` (encoder and
classifier) and the word tokenizer's files (and, for QA with entity features, the entity vocabulary).
Knowledge-enhanced features (``knowbert``) keep the KnowBert model in ``knowbert/`` and only the classifier in
``model.safetensors`` (:mod:`mluke.finetuning.knowledge`). Written under a temporary name and renamed when
complete."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from transformers import LukeConfig, LukeModel

from kb.errors import InputFormatError
from kb.files import atomic_path
from mluke.finetuning.models import TransferModel
from mluke.models.luke import tokenizer_class
from mluke.models.tokenizer import MlukeTokenizer

FORMAT_VERSION = 1


def save_transfer(
    model: TransferModel,
    tokenizer: MlukeTokenizer,
    directory: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a fine-tuned model and its tokenizer in the hub layout (see the module docs).

    Args:
        model: the fine-tuned model.
        tokenizer: its tokenizer.
        directory: the folder to write, under a temporary name renamed when complete.
        overwrite: replace an existing folder (else it is refused).
        extra: goes into the ``mluke_transfer`` block (e.g. training scores).

    Returns:
        The folder written.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    with atomic_path(directory, overwrite=overwrite) as tmp:
        tmp.mkdir()
        knowbert = model.features == "knowbert"
        config = {} if knowbert else model.config.to_dict()
        config.update(
            {
                "architectures": ["MlukeTransferModel"],
                "id2label": {str(i): label for i, label in enumerate(model.labels)},
                "label2id": {label: i for i, label in enumerate(model.labels)},
                "mluke_transfer": {
                    "format_version": FORMAT_VERSION,
                    "task": model.task,
                    "features": model.features,
                    "labels": model.labels,
                    "settings": model.settings,
                    **(extra or {}),
                },
            }
        )
        for key in ("dtype", "torch_dtype", "_name_or_path"):
            config.pop(key, None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        state = {k: v.detach().contiguous().cpu().clone() for k, v in model.state_dict().items()}
        if knowbert:
            state = {k: v for k, v in state.items() if not k.startswith("luke.")}
            model.luke.save_pretrained(tmp / "knowbert")
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        if model.task == "qa" and model.features == "entity" and tokenizer.entity_vocab is not None:
            from mluke.models.entity_vocab import save_entity_vocab

            save_entity_vocab(tokenizer.entity_vocab, tmp)  # rows of the model's entity table, for linking at test time
    return directory


def load_transfer(directory: str | os.PathLike[str]) -> tuple[TransferModel, MlukeTokenizer]:
    """A model written by :func:`save_transfer` and its tokenizer; every weight must be in the file.

    Args:
        directory: the folder :func:`save_transfer` wrote.

    Returns:
        ``(model, tokenizer)``.

    Raises:
        InputFormatError: a folder that is not such a model, or weights missing from or unexpected in it.
    """
    from safetensors.torch import load_file

    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise InputFormatError(f"{directory}: no config.json; expected a model written by `mluke finetune`")
    try:
        data = json.loads(config_path.read_text(encoding="utf-8"))
        block = data.pop("mluke_transfer")
    except (ValueError, KeyError):
        raise InputFormatError(
            f"{config_path}: not the config of a fine-tuned mluke model (no mluke_transfer block)"
        ) from None
    if block.get("format_version") != FORMAT_VERSION:
        raise InputFormatError(
            f"{config_path}: format version {block.get('format_version')}, this mluke reads {FORMAT_VERSION}"
        )
    if block["features"] == "knowbert":
        from mluke.knowbert.model import KnowBertModel

        encoder: Any = KnowBertModel.from_pretrained(directory / "knowbert")  # strictly checked
    else:
        config = LukeConfig.from_dict(
            {k: v for k, v in data.items() if k not in ("id2label", "label2id", "architectures")}
        )
        encoder = LukeModel(config, add_pooling_layer=False)
    model = TransferModel(
        encoder,
        block["task"],
        block["features"],
        block["labels"],
        settings=block.get("settings"),
    )
    weights = directory / "model.safetensors"
    if not weights.is_file():
        raise InputFormatError(f"{directory}: no model.safetensors")
    missing, unexpected = model.load_state_dict(load_file(str(weights)), strict=False)
    if block["features"] == "knowbert":  # the encoder's weights are in knowbert/
        missing = [k for k in missing if not k.startswith("luke.")]
    if missing or unexpected:
        raise InputFormatError(f"{weights}: missing weights {missing[:5]}, unexpected {unexpected[:5]}")
    return model.eval(), tokenizer_class(directory).from_pretrained(directory)
