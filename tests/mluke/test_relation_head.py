"""The relation head (mluke.finetuning, task "re", entity features: LUKE's entity-pair head): logits equal to
transformers' ``LukeForEntityPairClassification`` given the same weights, on the inputs our rows make."""

import pytest
import torch

import mluke
from mluke.finetuning.inputs import relation_rows
from tests.mluke.head_parity import head_logits


def test_rows_put_head_then_tail_over_subject_and_object(tiny_demo):
    tok = mluke.load(tiny_demo).tokenizer
    text = "Paris is the capital of France ."
    (row,) = relation_rows(tok, [text], [((24, 30), (0, 5))], features="entity", labels=[1])
    assert row.entity_ids == [1, 2]  # [HEAD] over the subject, [TAIL] over the object: the order the head reads
    assert [tok.decode(row.ids[slice(*s)]).strip() for s in row.slots] == ["France", "Paris"]


@pytest.mark.parametrize("eaa", [True, False])
def test_logits_equal_transformers_luke_for_entity_pair_classification(eaa):
    """Same weights, same inputs: our relation head (the [HEAD] and [TAIL] vectors concatenated, then linear) and
    transformers' give the same logits (its classifier has no bias: ours is set to zero)."""
    from transformers import LukeForEntityPairClassification

    spans = [[(1, 3), (5, 6)], [(6, 8), (2, 4)], [(1, 2), (3, 6)]]
    got, expected = head_logits(LukeForEntityPairClassification, "re", spans, eaa=eaa)
    assert got.shape == expected.shape == (3, 5)
    print(f"max |logit difference| = {(got - expected).abs().max().item():.2e}")
    assert (got - expected).abs().max().item() < 1e-5
    assert expected.std().item() > 0.1  # logits that differ: the comparison means something
    swapped = head_logits(LukeForEntityPairClassification, "re", [[b, a] for a, b in spans], eaa=eaa)[0]
    assert not torch.allclose(swapped, got, atol=1e-3)  # the head reads the pair in order
