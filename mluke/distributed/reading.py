"""Reading a distributed job's output back: the mentions as a pandas table, the span vectors as a matrix, and a
FAISS index of them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from kb.files import check_output
from mluke.distributed.parts import read_parts

if TYPE_CHECKING:
    import pandas as pd


def read_mentions(dest: str | os.PathLike[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The mentions a finished :func:`mluke.distributed.link_dataset` job wrote, in input order, as a DataFrame
    (``columns``: only these).

    Raises:
        MlukeError: ``dest`` is not a finished job's output.
    """
    frame: pd.DataFrame = read_parts(dest, columns).to_pandas()
    return frame


def read_span_vectors(dest: str | os.PathLike[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows (source, line, mention, start, end, key) and the vectors (a float32 matrix, one row each) a
    finished :func:`mluke.distributed.span_vectors_dataset` job wrote, in input order."""
    table = read_parts(dest)
    if table.num_rows == 0:
        return table.to_pandas(), np.zeros((0, 0), dtype=np.float32)
    column = table.column("vector").combine_chunks()
    width = column.type.list_size
    vectors = column.flatten().to_numpy().reshape(-1, width).astype(np.float32, copy=False)
    return table.drop(["vector"]).to_pandas(), vectors


def span_index(
    dest: str | os.PathLike[str],
    factory: str = "Flat",
    path: str | os.PathLike[str] | None = None,
    *,
    overwrite: bool = False,
) -> Any:
    """A FAISS inner-product index of a span-vector job's vectors (row ``i`` of :func:`read_span_vectors` has id
    ``i``); ``factory``: a FAISS index factory string (``"Flat"``: exact; ``"IVF1024,PQ32"`` and the like are
    trained on the vectors first); written to ``path`` when given. With normalised vectors (the default), inner
    product is cosine similarity. An existing ``path`` is replaced only with ``overwrite``."""
    import faiss

    if path is not None:
        check_output(path, overwrite=overwrite)
    _, vectors = read_span_vectors(dest)
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(vectors)
    index.add(vectors)
    if path is not None:
        faiss.write_index(index, os.fspath(path))
    return index
