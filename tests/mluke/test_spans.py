"""Span vectors: shapes and order, the three feature kinds, layers, batching and long texts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mluke
from kb.errors import OptionError
from mluke.spans import span_vectors

TEXTS = ["Paris is the capital of France.", "Berlin liegt in Deutschland.", "東京は日本の首都です。"]
SPANS = [[(0, 5), (24, 30)], [(16, 27)], [(0, 2), (3, 5)]]
FRANCE = "geonames:3017382"


@pytest.fixture(scope="module")
def bundle(tiny_demo):
    return mluke.load(tiny_demo)


def test_one_vector_per_span_in_order(bundle):
    every = span_vectors(bundle, TEXTS, SPANS)
    assert every.shape == (5, bundle.model.config.hidden_size) and every.dtype == np.float32
    one_by_one = np.concatenate([span_vectors(bundle, [t], [s]) for t, s in zip(TEXTS, SPANS)])
    np.testing.assert_allclose(every, one_by_one, atol=1e-5)
    assert not np.allclose(every[0], every[1])


def test_word_vector_is_the_mean_of_its_pieces(bundle):
    tok = bundle.tokenizer
    ids = [tok.bos_id, *tok.words.encode("Paris", add_special_tokens=False).ids, tok.eos_id]
    with torch.inference_mode():
        states = bundle.model.luke(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    for layer in (0, -1):
        expected = states[layer][0, 1:-1].mean(0).numpy()
        np.testing.assert_allclose(span_vectors(bundle, ["Paris"], [[(0, 5)]], layer=layer)[0], expected, atol=1e-5)


def test_entity_kinds_use_the_entities(bundle):
    first, second = [e.key for e in bundle.entity_vocab if e.key][:2]  # entities the tiny demo knows
    assert bundle.entity_vocab.id_of_key(FRANCE) is None  # ... and one it does not: [MASK]
    np.testing.assert_allclose(
        span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity", entities=[[None, FRANCE]]),
        span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity", entities=[[None, None]]),
    )
    word = span_vectors(bundle, TEXTS[:1], SPANS[:1])
    with_keys = span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity", entities=[[None, first]])
    masks = span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity", entities=[[None, None]])
    tokens = span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity-token", entities=[[None, first]])
    assert not np.allclose(word, with_keys, atol=1e-6)  # the words attend to the entity tokens
    assert not np.allclose(with_keys, masks, atol=1e-6)  # a known entity is not the [MASK]
    assert not np.allclose(tokens, with_keys, atol=1e-4)
    other = span_vectors(bundle, TEXTS[:1], SPANS[:1], features="entity-token", entities=[[None, second]])
    assert not np.allclose(tokens[1], other[1], atol=1e-4)


def test_normalize_and_long_texts(bundle):
    unit = span_vectors(bundle, TEXTS, SPANS, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    long = "Paris is the capital of France. " * 40 + "Berlin liegt in Deutschland."
    start = long.index("Berlin")
    near = span_vectors(bundle, [long], [[(0, 5), (start, start + 6)]], features="entity", max_length=32)
    assert near.shape == (2, bundle.model.config.hidden_size) and np.isfinite(near).all()
    assert (np.abs(near).sum(1) > 0).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"features": "tokens"}, "expected one of"),
        ({"layer": 9}, "does not exist"),
        ({"entities": [[None]]}, "one entity"),
    ],
)
def test_bad_arguments(bundle, kwargs, message):
    with pytest.raises(OptionError, match=message):
        span_vectors(bundle, TEXTS[:1], SPANS[:1], **kwargs)


def test_spans_outside_the_text_are_refused(bundle):
    with pytest.raises(OptionError, match=r"text 0: span \(3, 99\)"):
        span_vectors(bundle, ["short"], [[(3, 99)]])
