"""Which miniature RE test examples a model could have memorised: subsets by what the model has seen.

The miniature RE test sets (:func:`probes.transfer.miniature.relations.generate_re`) state real kb facts, and the same
facts can occur in the English fine-tuning set and in the pretraining corpus (the demo model is pretrained
on the kb's facts). A score over all test examples then mixes transfer with recall of memorised pairs. This
module tags every test example so E and W can be scored apart on:

- ``unseen``: a relation example whose fact is neither in the English fine-tuning data nor in the
  pretraining facts given;
- ``seen_finetuning``: its fact (entity pair and relation, either direction for a symmetric relation) is
  stated by an English training or dev example;
- ``seen_pretraining``: its fact is among ``pretraining_facts``;
- ``heldout_entity``: it names at least one held-out entity (never in fine-tuning, by construction);
- ``no_relation``: the negatives (no fact to have seen).

Tags are not exclusive except ``unseen`` and ``no_relation``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from probes.transfer.metrics.ner_re import re_scores

SUBSETS = ("all", "unseen", "seen_finetuning", "seen_pretraining", "heldout_entity", "no_relation")

Fact = tuple[str, str, str]  # (relation name, subject key, object key)


def example_fact(group: str, entities: Sequence[tuple[str, str, str]]) -> Fact | None:
    """The fact an RE example states; symmetric relations in one order (the smaller key first).

    Args:
        group: the example's relation, or ``no_relation``.
        entities: the example's ``((slot, key, label), ...)`` from :class:`MiniatureSplit`.

    Returns:
        ``(relation, subject key, object key)``, or ``None`` for no_relation.
    """
    from probes.transfer.miniature.sampling import NO_RELATION, RELATIONS

    if group == NO_RELATION:
        return None
    rel = RELATIONS[group]
    keys = {slot: key for slot, key, _ in entities}
    s, o = keys[rel.subject], keys[rel.object]
    if rel.symmetric and o < s:
        s, o = o, s
    return group, s, o


def kb_facts_as_relations(facts: Iterable[tuple[str, str, str]]) -> set[Fact]:
    """kb facts (e.g. a model's pretraining facts) as miniature RE facts, through each relation's properties
    and inverse properties.

    Args:
        facts: ``(subject, property, object)`` triples.

    Returns:
        The ``(relation, subject key, object key)`` facts.
    """
    from probes.transfer.miniature.sampling import RELATIONS

    out: set[Fact] = set()
    for s, p, o in facts:
        for name, rel in RELATIONS.items():
            if p in rel.properties:
                pair = (s, o)
            elif p in rel.inverse_properties:
                pair = (o, s)
            else:
                continue
            a, b = sorted(pair) if rel.symmetric else pair
            out.add((name, a, b))
    return out


def _group(split: Any, i: int) -> str:
    return split.patterns[i].split("/")[1]


def tag_examples(
    splits: Mapping[str, Mapping[str, Any]],
    heldout: Mapping[str, Collection[str]],
    pretraining_facts: Collection[Fact] = (),
) -> dict[str, set[str]]:
    """The tags (see the module docs) of every test example of ``splits``.

    Args:
        splits: ``generate_re``'s output, ``{lang: {split: MiniatureSplit}}``.
        heldout: ``heldout_entities``'s keys per kind.
        pretraining_facts: facts as :func:`kb_facts_as_relations` gives them.

    Returns:
        Example id -> its tags.
    """
    held = set().union(*heldout.values()) if heldout else set()
    finetuning: set[Fact] = set()
    for split_name in ("train", "dev"):
        split = splits.get("en", {}).get(split_name)
        if split is None:
            continue
        for i, entities in enumerate(split.entities):
            fact = example_fact(_group(split, i), entities)
            if fact:
                finetuning.add(fact)
    tags: dict[str, set[str]] = {}
    for by_split in splits.values():
        split = by_split.get("test")
        if split is None:
            continue
        for i, (example, entities) in enumerate(zip(split.examples, split.entities)):
            fact = example_fact(_group(split, i), entities)
            mine = {"all"}
            if fact is None:
                mine.add("no_relation")
            else:
                if fact in finetuning:
                    mine.add("seen_finetuning")
                if fact in pretraining_facts:
                    mine.add("seen_pretraining")
                if not mine & {"seen_finetuning", "seen_pretraining"}:
                    mine.add("unseen")
            if any(key in held for _, key, _ in entities):
                mine.add("heldout_entity")
            tags[example.id] = mine
    return tags


def subset_scores(examples: Sequence[Any], predicted: Sequence[str], tags: Mapping[str, set[str]]) -> dict[str, dict]:
    """Per subset: the number of examples, accuracy (label and direction right) and macro F1 over relation types
    (:func:`probes.transfer.metrics.ner_re.re_scores`) of ``predicted`` against the examples' labels.

    Args:
        examples: the test examples.
        predicted: the predicted label of each.
        tags: :func:`tag_examples`'s output.

    Returns:
        ``{subset: {"examples": n, "accuracy": ..., "macro_f1": ...}}`` (only ``examples`` for an empty subset).
    """
    out: dict[str, dict] = {}
    for subset in SUBSETS:
        idx = [i for i, e in enumerate(examples) if subset in tags[e.id]]
        if not idx:
            out[subset] = {"examples": 0}
            continue
        gold = [examples[i].label for i in idx]
        pred = [predicted[i] for i in idx]
        scores = re_scores(gold, pred)
        out[subset] = {
            "examples": len(idx),
            "accuracy": sum(g == p for g, p in zip(gold, pred)) / len(idx),
            "macro_f1": float(scores["macro_f1"]),
        }
    return out
