"""What a KnowBert linker reads from a KnowBert model folder (``mluke knowbert train`` writes it): the model
and its tokenizer in ``tokenizer/``, or an error that says how to make such a folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mluke.errors import CheckpointError
from mluke.knowbert.model import CONFIG_FILE, KnowBertModel

if TYPE_CHECKING:
    from mluke.models.tokenizer import MlukeTokenizer

#: The sub-folder of a KnowBert model folder that holds its tokenizer (as ``mluke knowbert train`` exports it).
TOKENIZER_DIR = "tokenizer"


def not_a_knowbert_model(folder: str | None) -> CheckpointError:
    """The error for ``method="knowbert"`` with a model that is no KnowBert folder (``None``: a loaded mLUKE
    bundle), saying how to make one."""
    what = f"{folder}: not a KnowBert model (no {CONFIG_FILE})" if folder else "an mLUKE model, not a KnowBert one"
    return CheckpointError(
        f"{what}; method 'knowbert' links with the folder 'mluke knowbert train' writes (RUN/model): make one "
        f"from an mLUKE checkpoint with 'mluke knowbert train --model {folder or 'CHECKPOINT'} -o RUN', then "
        "link with '--method knowbert --model RUN/model'"
    )


def load_knowbert(folder: str | os.PathLike[str]) -> tuple[KnowBertModel, MlukeTokenizer]:
    """A saved KnowBert model and its tokenizer (``folder/tokenizer``), or a clear error for another folder."""
    from mluke.models.tokenizer import MlukeTokenizer

    path = Path(folder)
    if not (path / CONFIG_FILE).is_file():
        raise not_a_knowbert_model(os.fspath(folder))
    if not (path / TOKENIZER_DIR).is_dir():
        raise CheckpointError(
            f"{path}: a KnowBert model without its tokenizer folder {TOKENIZER_DIR}/ "
            "('mluke knowbert train' exports both; KnowBertModel.save_pretrained writes the model only)"
        )
    return KnowBertModel.from_pretrained(path), MlukeTokenizer.from_pretrained(path / TOKENIZER_DIR)
