"""mluke: multilingual knowledge probing and entity linking with mLUKE.

Public API (torch and transformers are imported only when first used):

- :func:`probe` -> :class:`ProbeResult` — cloze probing with entity or word masks;
- :func:`link` -> :class:`LinkedMention` lists, :func:`link_file` -> :class:`LinkedTexts`,
  :class:`Linker` — entity linking with kb candidates and the model;
- :func:`load` / :func:`save` — mLUKE checkpoints in the studio-ousia layout; :func:`open_model` — the
  given model or the default demo model (what every ``model=`` argument goes through);
- :class:`MlukeTokenizer` — fairseq word ids with offsets, entity inputs;
- :class:`MlukeForMaskedLM` — the model, with candidate-restricted scoring;
- :func:`span_vectors` — contextual vectors of character spans (word or entity features, any layer);
- :func:`pretrain` — pretraining from XLM-R (see :mod:`mluke.pretraining`);
- :class:`MlukeError` — base of every error mluke raises on purpose; all of them in :mod:`mluke.errors`.

The knowledge side lives in the sibling package :mod:`kb`; evaluations and analyses in :mod:`probes`;
the ``mluke`` command line in :mod:`mluke.cli`, the outermost layer.
"""

from __future__ import annotations

from typing import Any

from kb.errors import MlukeError

__version__ = "0.1.0"

_LAZY = {
    "load": "mluke.checkpoint",
    "save": "mluke.checkpoint",
    "open_model": "mluke.opening",
    "Mluke": "mluke.checkpoint",
    "MlukeTokenizer": "mluke.tokenizer",
    "MlukeForMaskedLM": "mluke.model",
    "probe": "mluke.cloze",
    "ProbeResult": "mluke.results",
    "link": "mluke.linking",
    "link_file": "mluke.linking",
    "Linker": "mluke.linking",
    "LinkedMention": "mluke.results",
    "LinkedTexts": "mluke.results",
    "pretrain": "mluke.pretraining",
    "span_vectors": "mluke.spans",
}

__all__ = ["MlukeError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mluke' has no attribute {name!r}")
