"""Modularity of a k-nearest-neighbour graph of feature vectors (Fujinuma et al., 2019), as the mLUKE paper
uses it (Table 4) to ask how language-agnostic features are.

Each vector is a node linked to its ``k`` nearest neighbours by cosine similarity (found with FAISS,
exact search), the edge weighted by that similarity (clipped at 0) or 1 (``weighted=False``); the graph is
made undirected (an edge found from both ends counts once). Communities are the vectors' languages, and
Newman's modularity of that partition is

    Q = sum_c ( w_cc / W  -  (d_c / 2W)^2 )

with W the total edge weight, w_cc the weight of edges inside community c and d_c the summed degree of its
nodes. High Q: neighbours are mostly in the same language (features cluster by language); near 0: languages
mix as a random graph would.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kb.errors import OptionError
from probes.retrieval import faiss_module, normalized

if TYPE_CHECKING:
    import pandas as pd

    from mluke.models.devices import Device, DType
    from mluke.opening import ModelSource
    from probes.cwr import ParallelSpan


def knn_edges(vectors: np.ndarray, k: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected edges ``(i, j, similarity)`` with i < j of the k-NN graph of ``vectors`` (self excluded)."""
    n = len(vectors)
    if not 1 <= k < n:
        raise OptionError(f"k must be between 1 and the number of vectors minus one ({n - 1}); got {k}")
    x = normalized(vectors)
    index = faiss_module().IndexFlatIP(x.shape[1])
    index.add(x)
    scores, ids = index.search(x, k + 1)
    rows = np.repeat(np.arange(n), k + 1)
    cols, sims = ids.reshape(-1), scores.reshape(-1)
    keep = (cols >= 0) & (cols != rows)
    rows, cols, sims = rows[keep], cols[keep], sims[keep]
    # a node may lose itself to a duplicate vector: keep at most k neighbours per node, in rank order
    first = np.ones_like(keep[keep])
    counts = np.zeros(n, dtype=np.int64)
    for pos, r in enumerate(rows):
        counts[r] += 1
        first[pos] = counts[r] <= k
    rows, cols, sims = rows[first], cols[first], sims[first]
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    pair = lo.astype(np.int64) * n + hi
    order = np.lexsort((-sims, pair))
    pair, lo, hi, sims = pair[order], lo[order], hi[order], sims[order]
    unique = np.concatenate([[True], pair[1:] != pair[:-1]])
    return lo[unique], hi[unique], sims[unique]


def modularity(vectors: np.ndarray, communities: Sequence[Hashable], *, k: int = 3, weighted: bool = True) -> float:
    """Newman modularity of the ``communities`` partition (one label per vector, e.g. its language) of the
    k-NN graph of ``vectors``."""
    labels = np.asarray(communities)
    if len(labels) != len(vectors):
        raise OptionError(f"{len(vectors)} vectors but {len(labels)} community labels")
    i, j, sims = knn_edges(vectors, k)
    w = np.clip(sims, 0.0, None) if weighted else np.ones_like(sims)
    total = float(w.sum())
    if total <= 0:
        raise OptionError("the k-NN graph has no edge of positive weight (all similarities <= 0)")
    _, groups = np.unique(labels, return_inverse=True)
    inside = float(w[groups[i] == groups[j]].sum())
    degree = np.zeros(groups.max() + 1)
    np.add.at(degree, groups[i], w)
    np.add.at(degree, groups[j], w)
    return inside / total - float(((degree / (2 * total)) ** 2).sum())


def modularity_by_language(
    model: ModelSource,
    items: Sequence[ParallelSpan],
    *,
    base: str = "en",
    langs: Sequence[str] | None = None,
    features: Sequence[str] = ("entity-token", "word"),
    k: int = 3,
    layer: int = -1,
    entity_keys: bool = False,
    batch_size: int = 32,
    device: Device = None,
    dtype: DType = None,
) -> pd.DataFrame:
    """Modularity of ``base`` + one other language, for each other language and feature kind: a DataFrame with
    columns ``lang``, ``spans`` and one ``<features>`` column each.

    ``items``: :class:`probes.cwr.ParallelSpan` records (e.g. :func:`probes.parallel.parallel_spans`), each a
    mention whose vector is taken. Entity kinds put an entity token over every mention of the text: the entity
    [MASK] by default (as a fine-tuned relation model's [HEAD]/[TAIL] tokens, which know no entity), the kb
    entity with ``entity_keys=True``.
    """
    import pandas

    from mluke.opening import open_model
    from probes.cwr import by_language, language_vectors

    bundle = open_model(model, device=device, dtype=dtype)
    by_lang = by_language(items)
    others = [lang for lang in (langs or sorted(by_lang)) if lang != base]
    missing = [lang for lang in [base, *others] if lang not in by_lang]
    if missing:
        raise OptionError(f"no mentions in {', '.join(missing)}; languages: {', '.join(sorted(by_lang))}")
    vectors = language_vectors(
        bundle,
        by_lang,
        [base, *others],
        features,
        layer=layer,
        entities="gold" if entity_keys else "mask",
        batch_size=batch_size,
    )
    rows = []
    for lang in others:
        row: dict[str, Any] = {"lang": lang, "spans": len(by_lang[base]) + len(by_lang[lang])}
        labels = [base] * len(by_lang[base]) + [lang] * len(by_lang[lang])
        for f in features:
            row[f] = modularity(np.concatenate([vectors[f][base], vectors[f][lang]]), labels, k=k)
        rows.append(row)
    frame: pd.DataFrame = pandas.DataFrame(rows)  # pandas-stubs types DataFrame(list of rows) as Any
    return frame
