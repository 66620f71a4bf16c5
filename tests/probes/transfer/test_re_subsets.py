"""RE test examples tagged by what a model has seen: facts of the English fine-tuning data, pretraining
facts, held-out entities; and scores per subset."""

from __future__ import annotations

import pytest

from probes.transfer.metrics.re_subsets import example_fact, kb_facts_as_relations, subset_scores, tag_examples
from probes.transfer.miniature import RELATIONS, generate_re, heldout_entities


@pytest.fixture(scope="module")
def splits(embedded_db):
    return generate_re(embedded_db, ["en", "de"], seed=0, train_size=200, dev_size=40, test_size=120)


def test_tags_follow_the_training_facts_and_held_out_entities(splits, embedded_db):
    heldout = heldout_entities(embedded_db, seed=0)
    held = set().union(*heldout.values())
    trained = {
        example_fact(s.patterns[i].split("/")[1], ents)
        for part in ("train", "dev")
        for s in [splits["en"][part]]
        for i, ents in enumerate(s.entities)
    } - {None}
    assert trained and not any(
        k in held for part in ("train", "dev") for ents in splits["en"][part].entities for _, k, _ in ents
    )
    tags = tag_examples(splits, heldout)
    tests = [(s, i) for lang in ("en", "de") for s in [splits[lang]["test"]] for i in range(len(s))]
    assert set(tags) == {s.examples[i].id for s, i in tests}
    counts = {
        t: sum(t in v for v in tags.values()) for t in ("unseen", "seen_finetuning", "heldout_entity", "no_relation")
    }
    assert all(counts.values()), counts  # every subset occurs at this size
    for s, i in tests:
        mine = tags[s.examples[i].id]
        fact = example_fact(s.patterns[i].split("/")[1], s.entities[i])
        assert ("no_relation" in mine) == (fact is None)
        assert ("seen_finetuning" in mine) == (fact in trained)
        assert ("unseen" in mine) == (fact is not None and fact not in trained)  # no pretraining facts given
        assert ("heldout_entity" in mine) == any(k in held for _, k, _ in s.entities[i])
        if "heldout_entity" in mine:
            assert "seen_finetuning" not in mine  # held-out entities never occur in fine-tuning
    # pretraining facts move examples out of "unseen"
    some = next(s.examples[i].id for s, i in tests if "unseen" in tags[s.examples[i].id])
    s, i = next((s, i) for s, i in tests if s.examples[i].id == some)
    group, subj, obj = example_fact(s.patterns[i].split("/")[1], s.entities[i])
    prop = RELATIONS[group].properties[0]
    pre = kb_facts_as_relations([(subj, prop, obj)])
    assert (group, subj, obj) in pre
    again = tag_examples(splits, heldout, pre)
    assert "seen_pretraining" in again[some] and "unseen" not in again[some]


def test_symmetric_and_inverse_properties_map_to_one_fact():
    assert kb_facts_as_relations([("Q2", "P47", "Q1")]) == {("shares_border", "Q1", "Q2")}
    assert kb_facts_as_relations([("Q9", "P1376", "Q5")]) == {("capital", "Q5", "Q9")}
    assert kb_facts_as_relations([("Q1", "P999", "Q2")]) == set()


def test_subset_scores(splits, embedded_db):
    tags = tag_examples(splits, heldout_entities(embedded_db, seed=0))
    examples = splits["de"]["test"].examples
    perfect = subset_scores(examples, [e.label for e in examples], tags)
    assert perfect["all"]["examples"] == len(examples) and perfect["all"]["accuracy"] == 1.0
    assert perfect["unseen"]["macro_f1"] == pytest.approx(1.0)
    wrong = subset_scores(examples, ["no_relation"] * len(examples), tags)
    assert wrong["no_relation"]["accuracy"] == 1.0 and wrong["unseen"]["accuracy"] == 0.0
    assert wrong["unseen"]["macro_f1"] == 0.0
