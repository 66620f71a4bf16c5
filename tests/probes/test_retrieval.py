"""FAISS span indexes: exact cosine search, HNSW and IVF-PQ recall, saving and loading, bad folders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kb.errors import InputFormatError, OptionError, OutputExistsError
from probes import retrieval
from probes.retrieval import SpanIndex, build_index


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((2000, 32)).astype(np.float32)
    queries = base[:50] + 0.05 * rng.standard_normal((50, 32)).astype(np.float32)
    return base, queries


def brute_cosine(base, queries, k):
    b = base / np.linalg.norm(base, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    sims = q @ b.T
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, order, 1), order


def test_flat_is_exact_cosine(data):
    base, queries = data
    scores, ids = build_index(base * 7.0).search(queries, 10)  # scale does not matter: cosine
    want_scores, want_ids = brute_cosine(base, queries, 10)
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    assert (ids == want_ids).mean() > 0.99
    assert (ids[:, 0] == np.arange(50)).all()


@pytest.mark.parametrize(
    "kind, params", [("hnsw", {"hnsw_m": 16, "ef_search": 64}), ("ivfpq", {"nlist": 16, "pq_m": 8, "nprobe": 16})]
)
def test_approximate_kinds_find_the_neighbours(data, kind, params):
    base, queries = data
    index = build_index(base, kind=kind, **params)
    _, ids = index.search(queries, 10)
    _, truth = brute_cosine(base, queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
    assert recall > (0.9 if kind == "hnsw" else 0.3)
    assert (ids[:, 0] == np.arange(50)).mean() > 0.9  # each noisy copy finds its original
    assert index.meta["kind"] == kind and {k: index.meta["params"][k] for k in params} == params


def test_save_and_load_keep_everything(data, tmp_path):
    base, queries = data
    items = [{"text_id": str(i), "lang": "en"} for i in range(len(base))]
    index = build_index(base, items, kind="hnsw", meta={"model": "m", "layer": -1, "features": "word"}, ef_search=50)
    folder = index.save(tmp_path / "idx")
    again = SpanIndex.load(folder)
    assert again.meta == {**index.meta} and again.items == items and len(again) == 2000
    assert again.index.hnsw.efSearch == 50
    np.testing.assert_array_equal(again.search(queries, 5)[1], index.search(queries, 5)[1])
    hits = again.hits(queries[:1], 3)[0]
    assert hits[0]["text_id"] == "0" and hits[0]["id"] == 0 and hits[0]["score"] >= hits[1]["score"]
    with pytest.raises(OutputExistsError):
        index.save(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no partial folder left behind


def test_small_index_pads_missing_hits(data):
    base, _ = data
    scores, ids = build_index(base[:3]).search(base[:1], 5)
    assert ids.tolist()[0][3:] == [-1, -1] and np.isneginf(scores[0, 3:]).all()


def test_bad_folders_are_named(data, tmp_path):
    base, _ = data
    folder = build_index(base[:10], [{"i": i} for i in range(10)]).save(tmp_path / "idx")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "count": 11}))
    with pytest.raises(InputFormatError, match="holds 10 vectors, meta.json says 11"):
        SpanIndex.load(folder)
    (folder / "meta.json").write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(InputFormatError, match="newer than this"):
        SpanIndex.load(folder)
    (folder / "meta.json").write_text(json.dumps({**meta, "format": "other"}))
    with pytest.raises(InputFormatError, match="not a span index"):
        SpanIndex.load(folder)
    with pytest.raises(InputFormatError, match="meta.json"):
        SpanIndex.load(tmp_path / "missing")


def test_bad_arguments(data):
    base, queries = data
    with pytest.raises(OptionError, match="kind 'lsh'"):
        build_index(base, kind="lsh")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="2000 vectors but 3 item records"):
        build_index(base, [{}] * 3)
    with pytest.raises(OptionError, match="needs at least 4000 vectors"):
        build_index(base, kind="ivfpq", nlist=4000)
    with pytest.raises(OptionError, match="queries have 16 dimensions"):
        build_index(base).search(queries[:, :16], 3)
    with pytest.raises(OptionError, match="use_gpu=True but faiss sees no GPU"):
        build_index(base[:10], use_gpu=True)


def test_two_faiss_wheels_are_a_clear_error(monkeypatch):
    monkeypatch.setattr(retrieval, "_installed", lambda dist: dist in ("faiss-cpu", "faiss-gpu-cu12"))
    with pytest.raises(OptionError, match="both faiss-cpu and faiss-gpu-cu12 are installed.*pip uninstall -y"):
        retrieval.faiss_module()
