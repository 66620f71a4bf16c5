"""The knowledge layer (KAR) on its own, on tiny random inputs: shapes, padding that changes nothing, the
NULL embedding, the pseudo-inverse projection, the frozen entity table and a linking loss that goes down."""

from __future__ import annotations

import pytest
import torch

from mluke.knowbert import IGNORE, NULL_CHOICE, EntityTable, KnowBertConfig, KnowledgeLayer, SpanCandidates
from mluke.knowbert.layer import span_weights

HIDDEN, DIM = 24, 8
#: a small KAR (the real one: 1024-wide feed-forwards); dropout off so outputs compare exactly
SMALL = KnowBertConfig(span_ffn=16, word_ffn=16, mlp_hidden=12, dropout=0.0)


def make_table(n: int = 12, dim: int = DIM, seed: int = 0) -> EntityTable:
    """``n`` random entities ``Q0 ..`` plus the [PAD] and [MASK] rows the table adds."""
    g = torch.Generator().manual_seed(seed)
    return EntityTable.from_vectors(torch.randn(n, dim, generator=g), [f"Q{i}" for i in range(n)])


def make_candidates(
    spans: list[list[tuple[int, int]]],
    cands: list[list[list[int]]],
    *,
    num_spans: int | None = None,
    num_candidates: int | None = None,
    gold: list[list[int]] | None = None,
    seed: int = 0,
) -> SpanCandidates:
    """Padded spans and candidates from lists (text -> spans -> candidate rows), log priors falling with the
    rank; the padding is filled with garbage (ids, priors, positions) that the masks must hide."""
    g = torch.Generator().manual_seed(seed)
    b = len(spans)
    s = num_spans or max(len(x) for x in spans)
    k = num_candidates or max(len(c) for text in cands for c in text)
    start = torch.randint(0, 3, (b, s), generator=g)
    end = start + torch.randint(0, 2, (b, s), generator=g)
    span_mask = torch.zeros(b, s, dtype=torch.bool)
    ids = torch.randint(0, 10, (b, s, k), generator=g)
    prior = torch.randn(b, s, k, generator=g)
    cand_mask = torch.zeros(b, s, k, dtype=torch.bool)
    golds = torch.full((b, s), IGNORE)
    for i, text in enumerate(spans):
        for j, (first, last) in enumerate(text):
            start[i, j], end[i, j], span_mask[i, j] = first, last, True
            row = cands[i][j]
            ids[i, j, : len(row)] = torch.tensor(row)
            cand_mask[i, j, : len(row)] = True
            p = torch.arange(len(row), 0, -1, dtype=torch.float)  # the first candidate is the most likely
            prior[i, j, : len(row)] = (p / p.sum()).log()
            if gold is not None:
                golds[i, j] = gold[i][j]
    return SpanCandidates(start, end, span_mask, ids, prior, cand_mask, golds if gold is not None else None)


SPANS = [[(1, 2), (4, 4)], [(0, 3)]]
CANDS = [[[2, 3, 4], [5]], [[6, 7]]]


def make_layer(config: KnowBertConfig = SMALL, seed: int = 0) -> KnowledgeLayer:
    torch.manual_seed(seed)
    return KnowledgeLayer(HIDDEN, make_table(), config).eval()


def hidden(batch: int = 2, length: int = 6, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, length, HIDDEN, generator=torch.Generator().manual_seed(seed))


def test_shapes_and_padding_scores():
    out = make_layer()(hidden(), make_candidates(SPANS, CANDS))
    assert out.hidden_states.shape == (2, 6, HIDDEN)
    assert out.linking_scores.shape == (2, 2, 3)
    scores = out.linking_scores
    assert torch.isfinite(scores[0, 0]).all() and torch.isfinite(scores[0, 1, :1]).all()
    assert torch.isneginf(scores[0, 1, 1:]).all() and torch.isneginf(scores[1, 1]).all()  # padding
    assert torch.isfinite(out.hidden_states).all()


@pytest.mark.parametrize("span_attention", [True, False])
def test_padding_spans_and_candidates_change_nothing(span_attention):
    # every candidate kept (no threshold), so the weighted entities are part of what is compared
    layer = make_layer(KnowBertConfig(**{**SMALL.to_dict(), "span_attention": span_attention, "threshold": -1e4}))
    x = hidden()
    tight = layer(x, make_candidates(SPANS, CANDS))
    padded = layer(x, make_candidates(SPANS, CANDS, num_spans=5, num_candidates=7, seed=3))
    torch.testing.assert_close(padded.hidden_states, tight.hidden_states, rtol=0, atol=1e-6)
    torch.testing.assert_close(padded.linking_scores[:, :2, :3], tight.linking_scores, rtol=0, atol=1e-6)
    assert torch.isneginf(padded.linking_scores[:, 2:]).all() and torch.isneginf(padded.linking_scores[..., 3:]).all()


def test_words_attend_only_to_the_spans_of_their_own_text():
    """Changing the second text's spans leaves the first text's output as it was; a text with no span at all
    gets a finite output (it attends to nothing)."""
    layer, x = make_layer(), hidden()
    a = layer(x, make_candidates(SPANS, CANDS))
    b = layer(x, make_candidates([SPANS[0], [(2, 5), (0, 0)]], [CANDS[0], [[8], [9, 2]]]))
    torch.testing.assert_close(a.hidden_states[0], b.hidden_states[0], rtol=0, atol=1e-6)
    assert not torch.allclose(a.hidden_states[1], b.hidden_states[1])
    none = make_candidates([SPANS[0], []], [CANDS[0], []], num_spans=2)
    assert torch.isfinite(layer(x, none).hidden_states).all()


def test_span_pooling_weights_cover_the_span_inclusively():
    logits = torch.randn(2, 6)
    start, end = torch.tensor([[1, 4], [0, 0]]), torch.tensor([[2, 4], [5, 0]])
    mask = torch.tensor([[True, True], [True, False]])
    w = span_weights(logits, start, end, mask)
    torch.testing.assert_close(w.sum(-1), torch.tensor([[1.0, 1.0], [1.0, 0.0]]))
    assert torch.equal(w[0, 0] > 0, torch.tensor([False, True, True, False, False, False]))
    assert w[0, 1, 4] == 1.0  # a one-piece span (start = end) is that piece
    assert torch.equal(w[1, 1], torch.zeros(6))  # padding span
    torch.testing.assert_close(w[0, 0, 1:3], logits[0, 1:3].softmax(-1))


def test_all_scores_below_the_threshold_give_the_null_embedding():
    layer = make_layer(KnowBertConfig(**{**SMALL.to_dict(), "threshold": 1e6}))
    ents = torch.randn(2, 2, 3, DIM)
    real = torch.ones(2, 2, 3, dtype=torch.bool)
    weighted = layer.weighted_entities(torch.randn(2, 2, 3), ents, real)
    assert torch.equal(weighted, layer.null_embedding.detach().expand(2, 2, DIM))
    # through the whole layer: with every candidate below the threshold, which entities they are is irrelevant
    x = hidden()
    a = layer(x, make_candidates(SPANS, CANDS))
    b = layer(x, make_candidates(SPANS, [[[9, 10, 11], [12]], [[13, 1]]]))
    torch.testing.assert_close(a.hidden_states, b.hidden_states, rtol=0, atol=0)


def test_candidates_below_the_threshold_leave_the_softmax():
    layer = make_layer()  # threshold 0
    scores = torch.tensor([[[2.0, -1.0, 0.5]], [[-3.0, -2.0, -0.1]]])
    ents = torch.randn(2, 1, 3, DIM)
    real = torch.tensor([[[True, True, True]], [[True, True, True]]])
    weighted = layer.weighted_entities(scores, ents, real)
    w = torch.tensor([2.0, 0.5]).softmax(-1)
    torch.testing.assert_close(weighted[0, 0], w[0] * ents[0, 0, 0] + w[1] * ents[0, 0, 2])
    assert torch.equal(weighted[1, 0], layer.null_embedding.detach())  # none left: NULL
    # a padding candidate never counts, whatever its score
    padded = layer.weighted_entities(scores, ents, torch.tensor([[[True, True, False]], [[True] * 3]]))
    torch.testing.assert_close(padded[0, 0], ents[0, 0, 0])


def test_output_projection_starts_as_the_pseudo_inverse():
    layer = make_layer()
    w1, w2 = layer.to_entity.weight.detach(), layer.to_hidden.weight.detach()
    torch.testing.assert_close(w1 @ w2, torch.eye(DIM), rtol=0, atol=1e-5)  # paper's notation: W2 W1 = I
    x = torch.randn(5, HIDDEN)
    there_and_back = layer.to_hidden(layer.to_entity(x)).detach()
    torch.testing.assert_close(there_and_back, x @ (w2 @ w1).T, rtol=0, atol=1e-5)  # the bias cancels
    with torch.no_grad():
        layer.to_entity.weight.normal_()
    layer.init_output_projection()
    torch.testing.assert_close(layer.to_entity.weight @ layer.to_hidden.weight, torch.eye(DIM), rtol=0, atol=1e-4)


def test_entity_table_is_frozen_and_not_a_parameter():
    layer = make_layer().train()
    assert not any(p is layer.entity_vectors for p in layer.parameters())
    assert "entity_vectors" not in layer.state_dict()  # saved with the table, not the weights
    assert not layer.entity_vectors.requires_grad
    batch = make_candidates(SPANS, CANDS, gold=[[0, 3], [1]])  # 3 = K: NULL
    out = layer(hidden(), batch)
    (out.hidden_states.sum() + layer.linking_loss(out.linking_scores, batch.gold)).backward()  # type: ignore[arg-type]
    assert layer.entity_vectors.grad is None
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)
    assert layer.to_entity.weight.grad is not None and layer.null_embedding.grad is not None


def test_linking_loss_is_the_log_likelihood_with_null_at_the_threshold():
    layer = make_layer(KnowBertConfig(**{**SMALL.to_dict(), "threshold": 0.25}))
    scores = torch.tensor([[[1.0, 0.0, float("-inf")], [0.5, -1.0, 2.0]]])
    gold = torch.tensor([[3, 2]])  # NULL (= K) and candidate 2
    expected = (
        -(
            torch.log_softmax(torch.tensor([1.0, 0.0, float("-inf"), 0.25]), 0)[3]
            + torch.log_softmax(torch.tensor([0.5, -1.0, 2.0, 0.25]), 0)[2]
        )
        / 2
    )
    torch.testing.assert_close(layer.linking_loss(scores, gold), expected)
    ignored = layer.linking_loss(scores, torch.full((1, 2), IGNORE))
    assert ignored.item() == 0.0
    with pytest.raises(ValueError, match="padding candidate"):
        layer.linking_loss(scores, torch.tensor([[2, IGNORE]]))


def test_linking_loss_decreases_on_a_tiny_set():
    torch.manual_seed(0)
    layer = KnowledgeLayer(HIDDEN, make_table(), KnowBertConfig(span_ffn=16, word_ffn=16, mlp_hidden=12)).train()
    x = hidden(batch=2, length=6, seed=5)
    # gold: not always the highest prior; span (4, 4) of text 0 is a NULL mention
    batch = make_candidates(SPANS, CANDS, gold=[[1, 3], [0]])  # 3 = K: NULL
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        loss = layer.linking_loss(layer(x, batch).linking_scores, batch.gold)  # type: ignore[arg-type]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0], losses
    scores = layer.eval()(x, batch).linking_scores
    assert scores[0, 0].argmax().item() == 1 and scores[1, 0].argmax().item() == 0
    assert (scores[0, 1, :1] < layer.config.threshold).all()  # the NULL mention scores below the threshold


def test_bad_spans_and_candidates_are_refused():
    layer, x = make_layer(), hidden()
    with pytest.raises(ValueError, match="start <= end < 6"):
        layer(x, make_candidates([[(4, 6)], [(0, 1)]], [[[2]], [[3]]]))
    with pytest.raises(ValueError, match="rows of the entity table"):
        layer(x, make_candidates([[(0, 1)], [(0, 1)]], [[[2]], [[99]]]))
    with pytest.raises(ValueError, match="for NULL"):
        layer(x, make_candidates([[(0, 1)], [(0, 1)]], [[[2]], [[3]]], gold=[[0], [5]]))


def test_dimension_must_split_into_heads():
    with pytest.raises(ValueError, match="multiple of 3 attention heads"):
        KnowledgeLayer(HIDDEN, make_table(), KnowBertConfig(span_heads=3))


def test_knowbert_wiki_shape_has_the_papers_parameter_count():
    """KnowBert's Table 1: 2.4M KAR parameters for Wikipedia (hidden 768, entity dimension 300)."""
    table = EntityTable.from_vectors(torch.zeros(1, 300), ["Q1"])
    layer = KnowledgeLayer(768, table)
    assert round(sum(p.numel() for p in layer.parameters()) / 1e5) == 24


def test_decode_links_the_best_candidate_above_the_threshold_else_null():
    layer = make_layer()  # threshold 0
    inf = float("-inf")
    scores = torch.tensor([[[1.0, 2.0, inf], [-0.5, -1.0, inf], [inf, inf, inf]]])
    decision = layer.decode(scores)
    assert decision.candidate.tolist() == [[1, NULL_CHOICE, NULL_CHOICE]]
    expected = [
        torch.tensor([1.0, 2.0, inf, 0.0]).softmax(0)[1],
        torch.tensor([-0.5, -1.0, inf, 0.0]).softmax(0)[3],
        torch.tensor(1.0),  # a padding span: NULL, certainly
    ]
    torch.testing.assert_close(decision.probability[0], torch.stack(expected))
