"""Linking corpora bigger than one machine on a Ray cluster: ``pip install 'mluke[ray]'``.

:func:`link_dataset` links a dataset of JSONL or Parquet files into Parquet, one row per mention, the same rows
``mluke link FILE --jsonl`` gives (:mod:`mluke.distributed.jobs`); :func:`span_vectors_dataset` computes the
vectors of the mentions it found, and :func:`span_index` makes a FAISS index of them; :func:`read_mentions` and
:func:`read_span_vectors` read the outputs back. The work is cut into shards of lines
(:mod:`mluke.distributed.shards`), each written whole as one Parquet part (:mod:`mluke.distributed.parts`), so a
worker that dies costs only its shard, and a stopped job resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.distributed.driver import JobRun as JobRun
    from mluke.distributed.jobs import (
        link_dataset as link_dataset,
        span_vectors_dataset as span_vectors_dataset,
    )
    from mluke.distributed.reading import (
        read_mentions as read_mentions,
        read_span_vectors as read_span_vectors,
        span_index as span_index,
    )
    from mluke.distributed.work import SpanSettings as SpanSettings

_LAZY = {
    "JobRun": "mluke.distributed.driver",
    "link_dataset": "mluke.distributed.jobs",
    "span_vectors_dataset": "mluke.distributed.jobs",
    "read_mentions": "mluke.distributed.reading",
    "read_span_vectors": "mluke.distributed.reading",
    "span_index": "mluke.distributed.reading",
    "SpanSettings": "mluke.distributed.work",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
