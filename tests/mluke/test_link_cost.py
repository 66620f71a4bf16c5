"""What keeps linking cheap: the int8 normaliser agrees with the exact one, and the kb look-ups read for a whole
call (names, titles, coherence) give the same outputs as the per-key ones."""

import pytest
import torch

import kb
import mluke.models.normaliser as normaliser
from kb.entities import qualified_names, qualified_names_of_groups
from mluke.linking.coherence import KbCoherence
from mluke.linking.linker import Linker
from mluke.models.masked_lm import candidate_scores_and_best, check_normaliser, chunked_logsumexp_max
from mluke.models.normaliser import int8_logsumexp_max, quantize_rows


def _table(vocab: int, dims: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    feats = torch.nn.functional.layer_norm(torch.randn(5, dims, generator=g), (dims,))
    return feats, torch.randn(vocab, dims, generator=g) * 0.3, torch.randn(vocab, generator=g) * 0.1


def test_int8_normaliser_is_close_to_the_exact_one_on_a_flat_table():
    feats, table, bias = _table(20_000)  # far more than the blocks recomputed in float32
    exclude = torch.tensor([[7, 19_999], [-1, -1], [3, -1], [-1, -1], [12_345, 0]])
    rows = quantize_rows(table, bias)
    exact = chunked_logsumexp_max(feats, table, bias, 1000, exclude)
    fast = int8_logsumexp_max(feats, rows, table, bias, 1000, exclude)
    # the documented bound: no more than the largest error of one int8 logit
    scale = feats.abs().amax(1, keepdim=True) / 127
    approx = torch.round(feats / scale) * scale @ (rows.values.float() * (rows.scales / normaliser.LOG2E)[:, None]).T
    worst = (approx + bias - (feats @ table.T + bias)).abs().amax(1)
    assert ((fast[0] - exact[0]).abs() <= worst + 1e-5).all() and (fast[0] - exact[0]).abs().max() < 1e-2
    assert torch.allclose(fast[1], exact[1], atol=1e-5)  # the best logit is recomputed in float32


def test_int8_normaliser_takes_a_peaked_distribution_from_float32():
    feats, table, bias = _table(20_000, seed=1)
    table[4321] = feats[2] * 3.0  # one entity far above the rest for the third row: it holds the normaliser
    exact = chunked_logsumexp_max(feats, table, bias, 1000)
    fast = int8_logsumexp_max(feats, quantize_rows(table, bias), table, bias, 1000)
    assert abs(exact[0][2] - exact[1][2]) < 1e-3  # the normaliser is that entity's logit
    assert torch.allclose(fast[0], exact[0], atol=1e-2) and abs(fast[0][2] - exact[0][2]) < 1e-5


def test_int8_normaliser_of_a_small_table_is_the_exact_one():
    feats, table, bias = _table(normaliser.HEAVY_BLOCKS * normaliser.BLOCK - 5)
    exact = chunked_logsumexp_max(feats, table, bias, 256)
    fast = int8_logsumexp_max(feats, quantize_rows(table, bias), table, bias, 256)
    assert torch.allclose(fast[0], exact[0], atol=1e-5) and torch.allclose(fast[1], exact[1], atol=1e-5)


def test_candidate_scores_use_the_int8_rows_only_for_the_normaliser():
    feats, table, bias = _table(5_000)
    cand = torch.tensor([[1, 2, 3]] * 5)
    exact = candidate_scores_and_best(feats, table, bias, cand, None, 512)
    fast = candidate_scores_and_best(feats, table, bias, cand, None, 512, quantize_rows(table, bias))
    assert all(torch.allclose(a, b, atol=1e-2) for a, b in zip(exact, fast))
    with pytest.raises(kb.OptionError, match="normaliser='fp16': expected one of 'int8', 'exact'"):
        check_normaliser("fp16")


def test_linker_int8_and_exact_link_alike(tiny_demo, embedded_db, monkeypatch):
    monkeypatch.setattr(normaliser, "HEAVY_BLOCKS", 1)  # the tiny model's table is small: most of it from int8
    texts = ["Paris is the capital of France.", "Tokyo and Osaka are cities in Japan, near Seoul."]
    exact = Linker(tiny_demo, embedded_db, normaliser="exact").link(texts, "en")
    fast = Linker(tiny_demo, embedded_db).link(texts, "en")
    pairs = [(a, b) for x, y in zip(exact, fast) for a, b in zip(x, y)]
    assert pairs and len(pairs) == sum(map(len, exact)) == sum(map(len, fast))
    assert all((a.start, a.key, a.nil) == (b.start, b.key, b.nil) for a, b in pairs)
    assert max(abs(a.confidence - b.confidence) for a, b in pairs) < 1e-2


def test_int8_rows_are_made_once_and_again_when_the_table_changes(tiny_demo):
    import mluke

    model = mluke.load(tiny_demo).model
    first = model.int8_entity_rows()
    assert model.int8_entity_rows() is first
    with torch.no_grad():
        model.entity_predictions.decoder.weight[0, 0] += 1.0
    assert model.int8_entity_rows() is not first


def test_batched_lookups_read_what_the_per_key_ones_do(embedded_db):
    keys = [k for k, _ in zip(embedded_db.keys(), range(600))] + ["Q999999999"]  # over one 500-key chunk
    entities = embedded_db.entities(keys)
    assert "Q999999999" not in entities and len(entities) == len(keys) - 1
    assert all(entities[k] == embedded_db.entity(k) for k in keys[:-1])
    kinds = embedded_db.kinds(keys)
    assert all(kinds[k] == entities[k].kind for k in keys[:-1])
    facts = embedded_db.facts_of(keys)
    assert all(facts[k] == embedded_db.facts(subject=k) for k in keys)
    only = embedded_db.facts_of(keys, ("P17",))
    assert all(only[k] == embedded_db.facts(subject=k, property="P17") for k in keys)
    groups = [keys[i : i + 7] for i in range(0, len(keys), 7)] + [keys[:3], keys[:3]]
    assert qualified_names_of_groups(embedded_db, groups, "en") == [
        qualified_names(embedded_db, g, "en") for g in groups
    ]


def test_coherence_prefetch_gives_the_same_support(embedded_db, tiny_demo):
    linker = Linker(tiny_demo, embedded_db)
    text = "Valencia is a city, and Caracas is the capital of Venezuela; Lyon is in France."
    mentions = linker.index.detect_batch([text], "en")[0]
    lazy = KbCoherence(embedded_db).support(mentions)
    warm = KbCoherence(embedded_db)
    warm.prefetch([c.key for m in mentions for c in m.candidates])
    assert len(lazy) == len(mentions) > 1 and warm.support(mentions) == lazy


def test_built_cache_builds_each_key_once_and_keeps_the_latest():
    import threading

    from mluke.reuse import BuiltCache

    cache, built = BuiltCache(maxsize=2), []

    def build(key):
        built.append(key)
        return object()

    first = cache.get("a", lambda: build("a"))
    assert cache.get("a", lambda: build("a")) is first and built == ["a"]
    cache.get("b", lambda: build("b"))
    cache.get("a", lambda: build("a"))  # "a" is now the most recent: "b" goes first
    cache.get("c", lambda: build("c"))
    assert len(cache) == 2 and cache.get("a", lambda: build("a")) is first and built == ["a", "b", "c"]
    threads = [threading.Thread(target=cache.get, args=("d", lambda: build("d"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built.count("d") == 1
    cache.clear()
    assert len(cache) == 0


def test_link_and_probe_reuse_what_they_built(tiny_demo, embedded_db_path, tmp_path):
    import os
    import shutil

    import mluke
    from mluke.reuse import BUILT

    db = tmp_path / "kb.sqlite"
    shutil.copyfile(embedded_db_path, db)
    mluke.clear_cache()
    first = mluke.link("Paris is the capital of France.", "en", model=tiny_demo, db=db)
    (linker,) = BUILT.values()
    again = mluke.link("Paris is the capital of France.", "en", model=tiny_demo, db=db)
    assert BUILT.values() == [linker] and again == first
    mluke.link("Paris is the capital of France.", "en", model=tiny_demo, db=db, method="prior")  # not a build option
    assert BUILT.values() == [linker]
    stat = db.stat()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a rebuilt kb: a new linker
    mluke.link("Paris is the capital of France.", "en", model=tiny_demo, db=db)
    assert len(BUILT) == 2 and BUILT.values()[-1] is not linker
    mluke.link("東京は日本の首都です。", "ja", model=tiny_demo, db=db)  # built for one language
    assert len(BUILT) == 3
    asked = {"lang": "en", "model": tiny_demo, "db": db, "subjects": ["Japan"]}
    mluke.probe("The capital of [X] is [Y].", **asked)
    mluke.probe("The capital of [X] is [Y].", **asked)
    assert len(BUILT) == 4  # one model for both probes
    mluke.probe("The capital of [X] is [Y].", **asked, device="cpu")
    assert len(BUILT) == 4 and linker not in BUILT.values()  # bounded: the oldest went
    mluke.clear_cache()
    assert len(BUILT) == 0
