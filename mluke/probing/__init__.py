"""Cloze probing: what :func:`mluke.probe` runs.

- ``cloze``: :func:`probe`, templates and options in, a :class:`mluke.ProbeResult` out;
- ``runs``: its scoring cores, :func:`run_cloze` (candidates ranked) and :func:`run_open` (open vocabulary);
- ``scoring``: batched MEP and word-mask scores of candidates; ``decoding``: open-vocabulary answers of
  several pieces (:func:`decode`).

Names are imported on first use (torch and transformers are slow to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.probing.cloze import probe as probe
    from mluke.probing.decoding import decode as decode
    from mluke.probing.runs import run_cloze as run_cloze, run_open as run_open

_LAZY = {
    "decode": "mluke.probing.decoding",
    "probe": "mluke.probing.cloze",
    "run_cloze": "mluke.probing.runs",
    "run_open": "mluke.probing.runs",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
