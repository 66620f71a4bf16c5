"""Entity linking: what :func:`mluke.link` runs (the method is described in :mod:`mluke.linking.texts`).

- ``texts``: :func:`link`, texts in, :class:`mluke.LinkedMention` lists out; ``files``: files and streams
  (:func:`link_file`, :func:`iter_link_file`, :func:`write_linked`); ``corpus``: :func:`link_corpus`, a text or JSONL
  corpus into a JSONL file, in order, resumable, with ``workers`` processes forked from one loaded linker
  (``documents``: reading the corpus and cutting it into chunks; ``resume``: the partial output and its sidecar;
  ``workers``: the processes, sharing its weights);
- ``linker``: the :class:`Linker` (a model, a kb and a mention index, ready for many texts), with its
  streams (``streams``), the model's scores of candidates (``scoring``), the confidence of a mention
  (``confidence``, ``calibration``: :class:`Calibration`; ``coherence``: kb support from the rest of the text);
- ``knowbert``: :class:`KnowBertLinker`, a KnowBert model's integrated linker (``method="knowbert"``), and
  ``knowbert_folder``, what it reads from a KnowBert model folder;
- ``heap``: returning freed memory to the operating system during long streams.

Names are imported on first use (torch and transformers are slow to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.linking.calibration import Calibration as Calibration
    from mluke.linking.corpus import link_corpus as link_corpus
    from mluke.linking.files import (
        iter_link_file as iter_link_file,
        link_file as link_file,
        write_linked as write_linked,
    )
    from mluke.linking.knowbert import KnowBertLinker as KnowBertLinker
    from mluke.linking.linker import Linker as Linker
    from mluke.linking.texts import link as link

_LAZY = {
    "Calibration": "mluke.linking.calibration",
    "link_corpus": "mluke.linking.corpus",
    "iter_link_file": "mluke.linking.files",
    "link_file": "mluke.linking.files",
    "write_linked": "mluke.linking.files",
    "KnowBertLinker": "mluke.linking.knowbert",
    "link": "mluke.linking.texts",
    "Linker": "mluke.linking.linker",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
