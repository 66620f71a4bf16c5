"""The embedded demo model: a small mLUKE pretrained end to end on the embedded knowledge base, with no
download; what ``model=None`` means.

- ``model``: :func:`demo_model` (the cached model, trained on first use) and :func:`train_demo`;
- ``data``: what it learns and is evaluated on (:data:`PRESETS`, :func:`demo_documents`);
- ``tokenizer``: its XLM-R tokenizer, pruned to the pieces of its corpus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.demo.data import PRESETS as PRESETS, demo_documents as demo_documents
    from mluke.demo.model import demo_model as demo_model, train_demo as train_demo

_LAZY = {
    "PRESETS": "mluke.demo.data",
    "demo_documents": "mluke.demo.data",
    "demo_model": "mluke.demo.model",
    "train_demo": "mluke.demo.model",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
