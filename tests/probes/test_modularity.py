"""Modularity of k-NN graphs: against networkx on the same graph, and on clear-cut cases."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from kb.errors import OptionError
from probes.modularity import knn_edges, modularity


def test_equals_networkx_on_the_same_graph():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((120, 8)).astype(np.float32) + np.repeat(rng.standard_normal((3, 8)) * 0.8, 40, axis=0)
    labels = np.repeat(["en", "de", "ja"], 40)
    i, j, sims = knn_edges(x, 4)
    assert (i < j).all() and len(set(zip(i.tolist(), j.tolist()))) == len(i)
    graph = nx.Graph()
    graph.add_nodes_from(range(120))
    graph.add_weighted_edges_from((int(a), int(b), max(float(s), 0.0)) for a, b, s in zip(i, j, sims))
    parts = [set(np.flatnonzero(labels == lang).tolist()) for lang in ("en", "de", "ja")]
    assert modularity(x, labels, k=4) == pytest.approx(nx.community.modularity(graph, parts, weight="weight"), abs=1e-6)
    graph_unweighted = nx.Graph(list(zip(i.tolist(), j.tolist())))
    assert modularity(x, labels, k=4, weighted=False) == pytest.approx(
        nx.community.modularity(graph_unweighted, parts), abs=1e-6
    )


def test_separated_languages_score_high_and_mixed_ones_near_zero():
    rng = np.random.default_rng(2)
    apart = np.concatenate([rng.normal(5, 1, (50, 6)), rng.normal(-5, 1, (50, 6))]).astype(np.float32)
    labels = ["en"] * 50 + ["ja"] * 50
    assert modularity(apart, labels) > 0.45  # two communities: at most 0.5
    mixed = rng.standard_normal((100, 6)).astype(np.float32)
    assert abs(modularity(mixed, labels)) < 0.1


def test_neighbours_exclude_the_node_itself():
    x = np.eye(5, dtype=np.float32) + 0.01
    i, j, _ = knn_edges(x, 2)
    assert (i != j).all()


def test_bad_arguments():
    with pytest.raises(OptionError, match="k must be between 1"):
        modularity(np.ones((3, 2), dtype=np.float32), ["a", "b", "c"], k=3)
    with pytest.raises(OptionError, match="3 vectors but 2 community labels"):
        modularity(np.ones((3, 2), dtype=np.float32), ["a", "b"], k=1)
