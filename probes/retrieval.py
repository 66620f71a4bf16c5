"""FAISS indexes over span vectors: build, search by cosine, save and load with their metadata.

Vectors are L2-normalised before they are added and queries before they are searched, so the inner
product the index computes is the cosine similarity. Index kinds:

- ``"flat"`` (default): exact search (``IndexFlatIP``);
- ``"hnsw"``: a graph index (``IndexHNSWFlat``), ``hnsw_m`` links per node, ``ef_construction`` and
  ``ef_search`` candidate lists at build and query time; approximate, much faster on large sets;
- ``"ivfpq"``: inverted lists over ``nlist`` k-means cells with product-quantised codes (``pq_m`` sub-vectors
  of ``nbits`` bits), ``nprobe`` cells visited per query; approximate and compact; needs training vectors.

An index is saved as a folder: ``index.faiss``, ``meta.json`` (format, version, kind and parameters, the
model, layer and pooling that made the vectors, the dimension and count) and ``items.jsonl`` (one record per
vector: text id, span, language... whatever the caller gave). With the ``faiss-gpu`` package and a GPU, flat
and IVF indexes are searched on the GPU (``use_gpu="auto"``); HNSW has no GPU version and stays on the CPU.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kb.errors import InputFormatError, OptionError
from kb.files import atomic_path, file_bytes

FORMAT = "mluke-span-index"
FORMAT_VERSION = 1
IndexKind = Literal["flat", "hnsw", "ivfpq"]
KINDS = ("flat", "hnsw", "ivfpq")
INDEX_FILE, META_FILE, ITEMS_FILE = "index.faiss", "meta.json", "items.jsonl"


def faiss_module() -> Any:  # faiss ships no type information
    """The ``faiss`` module; a clear error when it is missing or when two faiss wheels are installed at once
    (``faiss-cpu`` and ``faiss-gpu*`` both ship the ``faiss`` package and overwrite each other's files)."""
    installed = sorted(d for d in ("faiss-cpu", "faiss-gpu", "faiss-gpu-cu11", "faiss-gpu-cu12") if _installed(d))
    if len(installed) > 1:
        raise OptionError(
            f"both {' and '.join(installed)} are installed; they ship the same 'faiss' package. Keep one: "
            "pip uninstall -y "
            + " ".join(installed)
            + " && pip install "
            + next((d for d in installed if d != "faiss-cpu"), "faiss-cpu")
        )
    try:
        import faiss
    except ImportError as exc:
        raise OptionError(
            "span retrieval needs faiss: pip install faiss-cpu (or faiss-gpu-cu12 on a CUDA machine)"
        ) from exc
    return faiss


def _installed(dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def gpu_count(faiss: Any) -> int:
    """GPUs faiss can use: 0 with the CPU-only wheel."""
    return faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0


def normalized(vectors: np.ndarray) -> np.ndarray:
    """A float32, C-contiguous copy of ``vectors`` (n x d) with rows of unit length (zero rows stay zero)."""
    x = np.array(vectors, dtype=np.float32, order="C", copy=True)
    if x.ndim != 2:
        raise OptionError(f"expected a 2-D array of vectors (n x d); got shape {x.shape}")
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return x


@dataclass
class SpanIndex:
    """A FAISS index with its metadata (``meta``) and one record per vector (``items``)."""

    index: Any  # a faiss index: faiss ships no type information
    meta: dict[str, Any]  # JSON
    items: list[dict[str, Any]] = field(default_factory=list)  # JSON records

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` cosine similarities and vector ids for each query: two (queries x k) arrays, best first
        (ids -1 and score -inf where the index holds fewer than ``k`` vectors)."""
        if k < 1:
            raise OptionError(f"k must be at least 1; got {k}")
        q = normalized(queries)
        if q.shape[1] != self.meta["dim"]:
            raise OptionError(f"queries have {q.shape[1]} dimensions, the index {self.meta['dim']}")
        scores, ids = self.index.search(q, min(k, max(1, len(self))))
        scores = np.where(ids < 0, -np.inf, scores)
        if ids.shape[1] < k:
            pad = k - ids.shape[1]
            scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
        return scores, ids

    def hits(self, queries: np.ndarray, k: int = 10) -> list[list[dict[str, Any]]]:
        """:meth:`search` as records: per query, the ``k`` best items with their ``score`` and ``id``."""
        scores, ids = self.search(queries, k)
        return [
            [
                {**(self.items[i] if i < len(self.items) else {}), "id": int(i), "score": float(s)}
                for s, i in zip(row_s, row_i)
                if i >= 0
            ]
            for row_s, row_i in zip(scores, ids)
        ]

    def save(self, folder: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write ``index.faiss``, ``meta.json`` and ``items.jsonl`` into ``folder`` (which appears only once
        complete; an existing one is replaced only with ``overwrite``)."""
        faiss = faiss_module()
        cpu = faiss.index_gpu_to_cpu(self.index) if self.meta.get("device") == "gpu" else self.index
        with atomic_path(folder, overwrite=overwrite, what=" (span index)") as tmp:
            tmp.mkdir(parents=True, exist_ok=True)
            faiss.write_index(cpu, str(tmp / INDEX_FILE))
            meta = {k: v for k, v in self.meta.items() if k != "device"}
            (tmp / META_FILE).write_text(
                json.dumps(meta, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
            with (tmp / ITEMS_FILE).open("w", encoding="utf-8", newline="\n") as f:
                for item in self.items:
                    f.write(json.dumps(item, ensure_ascii=False) + "\n")
        return Path(folder)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, use_gpu: bool | Literal["auto"] = "auto") -> SpanIndex:
        """Read a folder written by :meth:`save`."""
        folder = Path(folder)
        try:
            meta = json.loads(file_bytes(folder / META_FILE, expected="the metadata of a span index"))
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{folder / META_FILE}: not JSON ({exc})") from exc
        if meta.get("format") != FORMAT:
            raise InputFormatError(f"{folder}: not a span index (format {meta.get('format')!r}, expected {FORMAT!r})")
        if meta.get("format_version", 0) > FORMAT_VERSION:
            raise InputFormatError(
                f"{folder}: span index format {meta['format_version']} is newer than this "
                f"mluke reads ({FORMAT_VERSION}); upgrade mluke"
            )
        file_bytes(folder / INDEX_FILE, expected="a FAISS index")  # a clear error when it is missing
        faiss = faiss_module()
        index = faiss.read_index(str(folder / INDEX_FILE))
        items = []
        for n, line in enumerate((folder / ITEMS_FILE).read_text(encoding="utf-8").splitlines(), 1):
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputFormatError(f"{folder / ITEMS_FILE}:{n}: not JSON ({exc})") from exc
        if index.ntotal != meta.get("count") or (items and len(items) != index.ntotal):
            raise InputFormatError(
                f"{folder}: the index holds {index.ntotal} vectors, meta.json says "
                f"{meta.get('count')} and items.jsonl has {len(items)} records"
            )
        if meta["kind"] == "hnsw":
            index.hnsw.efSearch = meta["params"]["ef_search"]
        elif meta["kind"] == "ivfpq":
            index.nprobe = meta["params"]["nprobe"]
        loaded = cls(index, meta, items)
        return _maybe_gpu(loaded, faiss, use_gpu)


def _maybe_gpu(built: SpanIndex, faiss: Any, use_gpu: bool | Literal["auto"]) -> SpanIndex:
    if use_gpu not in (True, False, "auto"):
        raise OptionError(f"use_gpu must be True, False or 'auto'; got {use_gpu!r}")
    gpus = gpu_count(faiss)
    if use_gpu is True and not gpus:
        raise OptionError("use_gpu=True but faiss sees no GPU (install faiss-gpu-cu12 on a machine with CUDA)")
    if use_gpu and gpus and built.meta["kind"] != "hnsw":
        built.index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, built.index)
        built.meta["device"] = "gpu"
    return built


def build_index(
    vectors: np.ndarray,
    items: Sequence[dict[str, Any]] | None = None,
    *,
    kind: IndexKind = "flat",
    meta: dict[str, Any] | None = None,
    hnsw_m: int = 32,
    ef_construction: int = 200,
    ef_search: int = 128,
    nlist: int | None = None,
    pq_m: int | None = None,
    nbits: int = 8,
    nprobe: int = 16,
    use_gpu: bool | Literal["auto"] = "auto",
    seed: int = 0,
) -> SpanIndex:
    """An index over ``vectors`` (n x d) for cosine search; ``items`` (one record per vector) and ``meta``
    (model, layer, pooling...) are kept beside it. ``nlist`` defaults to about 4 sqrt(n), ``pq_m`` to the
    largest of 64, 48, 32, 16, 8 that divides d."""
    faiss = faiss_module()
    if kind not in KINDS:
        raise OptionError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    x = normalized(vectors)
    n, d = x.shape
    if items is not None and len(items) != n:
        raise OptionError(f"{n} vectors but {len(items)} item records")
    params: dict[str, Any] = {}
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction, index.hnsw.efSearch = ef_construction, ef_search
        params = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search}
    else:
        nlist = nlist or max(1, int(4 * n**0.5))
        pq_m = pq_m or next(m for m in (64, 48, 32, 16, 8, 4, 2, 1) if d % m == 0)
        if d % pq_m:
            raise OptionError(f"pq_m={pq_m} must divide the dimension {d}")
        if n < nlist:
            raise OptionError(f"an IVF-PQ index with nlist={nlist} needs at least {nlist} vectors to train; got {n}")
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFPQ(quantizer, d, nlist, pq_m, nbits, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        index.train(x)
        index.nprobe = nprobe
        params = {"nlist": nlist, "pq_m": pq_m, "nbits": nbits, "nprobe": nprobe}
    index.add(x)
    info = {
        **(meta or {}),
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "params": params,
        "metric": "cosine",
        "dim": d,
        "count": n,
    }
    return _maybe_gpu(SpanIndex(index, info, [dict(i) for i in items] if items is not None else []), faiss, use_gpu)
