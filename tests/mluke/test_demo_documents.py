"""The demo's document shapes (``DemoPreset.facts_per_document``): several facts about one country per
document, built from training (fact, language) pairs only."""

import dataclasses

from mluke.demo.data import PRESETS, demo_documents

#: The tiny preset (one fact per document) with the demo's multi-fact documents.
GROUPED = dataclasses.replace(PRESETS["tiny"], facts_per_document=3)


def _sentences(db, preset, pairs):
    """(lang, text, links) of each (fact, language) pair in the relation template of its language."""
    out = []
    for f in pairs:
        names = db.labels([f["subject"], f["object"]], f["lang"])
        text, (xs, xe), (ys, ye) = db.template(f["property"], f["lang"]).fill_spans(
            names[f["subject"]], names[f["object"]]
        )
        out.append((f["lang"], text, {(xs, xe, f["subject"]), (ys, ye, f["object"])}))
    return out


def test_documents_group_training_sentences_and_link_every_mention(embedded_db):
    preset = GROUPED
    data = demo_documents(embedded_db, preset)
    sizes = [len(d.links) // 2 for d in data.docs]
    assert min(sizes) == 1 and 1 < max(sizes) <= preset.facts_per_document  # single facts too
    assert sum(sizes) == len(data.train) and sum(len(d.links) for d in data.docs) == 2 * len(data.train)
    for lang, text, links in _sentences(embedded_db, preset, data.train):
        homes = [d for d in data.docs if d.lang == lang and text in d.text]
        assert homes, text
        assert any(  # the sentence sits in a document whose links cover both its mentions at that place
            {(a + d.text.index(text), b + d.text.index(text), k) for a, b, k in links} <= set(d.links) for d in homes
        )
    for d in data.docs:
        for a, b, key in d.links:
            assert d.text[a:b] == embedded_db.labels([key], d.lang)[key]
    multi = [d for d in data.docs if len(d.links) > 2]
    # several facts share an entity: a city's P17 sentence goes with its country's facts
    assert all(len({k for _, _, k in d.links}) < len(d.links) for d in multi)


def test_held_out_pairs_and_linking_sentences_stay_unseen(embedded_db):
    preset = GROUPED
    data = demo_documents(embedded_db, preset)
    single = demo_documents(embedded_db, dataclasses.replace(preset, facts_per_document=1))
    # the shape changes the documents only, not which pairs are trained, held out or tested
    assert (data.train, data.heldout, data.linking) == (single.train, single.heldout, single.linking)
    assert all(len(d.links) == 2 for d in single.docs)
    assert data.heldout and data.linking
    trained = {(f["property"], f["subject"], f["lang"]) for f in data.train}
    text = "\n".join(d.text for d in data.docs)
    for lang, sentence, _ in _sentences(embedded_db, preset, data.heldout):
        assert sentence not in text
    assert not {(f["property"], f["subject"], f["lang"]) for f in data.heldout} & trained
    for item in data.linking:
        assert item["text"] not in text


def test_documents_are_deterministic(embedded_db):
    a = demo_documents(embedded_db, GROUPED)
    b = demo_documents(embedded_db, GROUPED)
    assert PRESETS["demo"].facts_per_document > 1 and PRESETS["tiny"].facts_per_document == 1
    assert [(d.lang, d.text, d.links, d.title) for d in a.docs] == [(d.lang, d.text, d.links, d.title) for d in b.docs]


def test_the_training_plan_ignores_the_time_estimate(tmp_path):
    """A partial demo run resumes after a release rewords how long training takes (``minutes`` is only told to
    the user), but not after a setting that changes the model."""
    import dataclasses

    from mluke.demo.data import resolve_preset
    from mluke.demo.model import training_plan

    preset = resolve_preset("tiny")
    plan = training_plan(preset, tmp_path / "kb.sqlite")
    assert training_plan(dataclasses.replace(preset, minutes=preset.minutes + 5), tmp_path / "kb.sqlite") == plan
    assert (
        training_plan(dataclasses.replace(preset, init_seed=(preset.init_seed or 0) + 1), tmp_path / "kb.sqlite")
        != plan
    )
