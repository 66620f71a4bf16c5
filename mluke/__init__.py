"""mluke: multilingual knowledge probing and entity linking with mLUKE.

Public API (torch and transformers are imported only when first used):

- :func:`load` / :func:`save` — mLUKE checkpoints in the studio-ousia layout;
- :class:`MlukeTokenizer` — fairseq word ids with offsets, entity inputs;
- :class:`MlukeForMaskedLM` — the model, with candidate-restricted scoring;
- :func:`probe` — cloze probing with entity or word masks;
- :func:`link` / :class:`Linker` — entity linking with kb candidates and the model;
- :class:`MlukeError` — base of every error mluke raises on purpose.

The knowledge side lives in the sibling package :mod:`kb`.
"""

from __future__ import annotations

from typing import Any

from kb.errors import MlukeError

__version__ = "0.1.0"

_LAZY = {
    "load": "mluke.checkpoint",
    "save": "mluke.checkpoint",
    "Mluke": "mluke.checkpoint",
    "CheckpointError": "mluke.checkpoint",
    "MlukeTokenizer": "mluke.tokenizer",
    "MlukeEncoding": "mluke.tokenizer",
    "EntityTruncationWarning": "mluke.tokenizer",
    "MlukeForMaskedLM": "mluke.model",
    "probe": "mluke.cloze",
    "link": "mluke.linking",
    "Linker": "mluke.linking",
}

__all__ = ["MlukeError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mluke' has no attribute {name!r}")
