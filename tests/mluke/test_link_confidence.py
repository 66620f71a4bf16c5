"""The confidence's features for NIL on entities missing from the kb: the model's best entity over the
vocabulary (``vocab_gap``), a missing entity left out of everything the scorer sees, kb coherence."""

import json
import math

import pytest
import torch

from mluke.linking.calibration import (
    DEFAULT_CALIBRATION,
    FEATURES,
    KB_COHERENCE_CALIBRATION,
    KB_FEATURES,
    Calibration,
    features,
)
from mluke.linking.coherence import KbCoherence
from mluke.linking.linker import Linker
from mluke.models.masked_lm import chunked_logsumexp, chunked_logsumexp_max
from probes.linking_calibration import nil_instances, without_entity
from probes.mewsli import GoldMention, LinkDoc

pytestmark = pytest.mark.learned  # asserts the tiny demo's confidences: held by construction, rerun by CI at 1 thread


def test_chunked_logsumexp_max_leaves_out_excluded_ids():
    torch.manual_seed(0)
    feats, table, bias = torch.randn(3, 8), torch.randn(50, 8), torch.randn(50)
    exclude = torch.tensor([[7, 31], [-1, -1], [49, -1]])
    total, best = chunked_logsumexp_max(feats, table, bias, chunk_size=16, exclude=exclude)
    logits = feats @ table.T + bias
    for row, ids in enumerate(exclude.tolist()):
        keep = torch.ones(50, dtype=torch.bool)
        keep[[i for i in ids if i >= 0]] = False
        assert total[row].item() == pytest.approx(torch.logsumexp(logits[row, keep], -1).item(), abs=1e-5)
        assert best[row].item() == pytest.approx(logits[row, keep].max().item(), abs=1e-5)
    assert torch.allclose(chunked_logsumexp(feats, table, bias, 16), torch.logsumexp(logits, -1), atol=1e-5)


def _rows(*scores_priors):
    return [{"key": f"e{i}", "score": s, "prior": p} for i, (s, p) in enumerate(scores_priors)]


def test_vocab_gap_separates_a_sole_candidate_the_model_does_not_expect():
    # one candidate each: among the candidates both are certain, and both are as likely over the vocabulary
    # (same model_lift); only one is what the model expects among all entities
    expected = features(_rows((0.0, 1.0)), full_logp=-2.0, vocab_size=1000, best_logp=-2.0)
    unexpected = features(_rows((0.0, 1.0)), full_logp=-2.0, vocab_size=1000, best_logp=-0.05)
    gap = FEATURES.index("vocab_gap")
    assert expected[gap] == 0.0 and unexpected[gap] == pytest.approx(-1.95)
    assert [v for k, v in enumerate(expected) if k != gap] == [v for k, v in enumerate(unexpected) if k != gap]
    weights = [0.0] * (len(FEATURES) + 1)
    weights[0], weights[1 + gap] = 1.0, 3.0
    cal = Calibration(tuple(weights), threshold=0.5)
    assert cal.probability(expected) > 0.5 > cal.probability(unexpected)
    assert features(_rows((0.0, 1.0)), None, 1000, -0.1)[gap] == 0.0  # not scored: no gap
    assert features(_rows((0.0, 1.0)), -1.0, 1000, None, 1.0)[FEATURES.index("kb_conflict")] == 1.0
    assert set(KB_FEATURES) <= set(FEATURES)


#: Features of mentions as the demo model (v5) gave them (``Linker.mention_features``, recorded 2026-11-25 with
#: ``benchmarks/linking_calibration.py``'s data): (link probability, features, whether the mention must link).
DEMO_V5_MENTIONS = {
    # held-out "unrelated country" set: the median right link of a city beside a country that is not its own
    "pt: a city beside an unrelated country": (0.95, [0.0, 0.0, -1.924, 0.0, 0.0, -6.615, 1.0], True),
    # the same set in Japanese, an ambiguous city (アレクサンドリア, two candidates)
    "ja: an ambiguous city beside an unrelated country": (0.9, [-0.01, -0.405, -4.42, 0.0, 0.693, -10.201, 1.0], True),
    # "Nous habitons à Tours, pas loin d'Orange, et nous allons souvent en Italie." (Tours not in the model)
    "fr: Tours beside Italie": (0.95, [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0], True),
    "en: Turkey in 'Turkey and China signed a treaty.'": (0.95, [0.0, 0.0, 2.662, 0.0, 0.0, -2.516, 0.0], True),
    # common words: lowercase (link probability 0.02) and part of a longer name ("Chad Smith", 0.2 when recorded;
    # LONGER_NAME is 0.1 since, which only lowers its confidence)
    "en: nice in 'What a nice day'": (0.02, [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], False),
    "en: turkey in 'We had turkey for dinner'": (0.02, [0.0, 0.0, -1.114, 0.0, 0.0, -5.167, 0.0], False),
    "en: Chad in 'Paris Hilton met Chad Smith'": (0.2, [0.0, 0.0, 0.467, 0.0, 0.0, -4.91, 0.0], False),
}


@pytest.mark.parametrize("name", DEMO_V5_MENTIONS)
def test_the_default_links_a_city_beside_an_unrelated_country_and_not_a_common_word(name):
    """Ordinary text names countries a city has nothing to do with ("We flew from Porto to Japan"): with the
    shipped default such a city links, and common words stay unlinked."""
    lp, x, must_link = DEMO_V5_MENTIONS[name]
    confidence = lp * DEFAULT_CALIBRATION.probability(x)
    assert (confidence >= DEFAULT_CALIBRATION.threshold) == must_link, (name, confidence)
    if must_link and x[FEATURES.index("kb_conflict")] == 1.0:
        # the fit of the previous calibration data (kb_conflict weight -18.9) made exactly these NIL
        biased = list(DEFAULT_CALIBRATION.weights)
        biased[1 + FEATURES.index("kb_conflict")] = -18.9
        assert lp * Calibration(tuple(biased)).probability(x) < DEFAULT_CALIBRATION.threshold


def test_the_default_calibration_leaves_kb_coherence_out():
    """The default rule picked the fit without kb coherence; the fit with it is opt-in and no longer says
    "a named country nothing relates to the city => NIL" with an overwhelming weight."""
    kb = [1 + FEATURES.index(f) for f in KB_FEATURES]
    assert all(DEFAULT_CALIBRATION.weights[i] == 0.0 for i in kb)
    assert all(-5.0 < KB_COHERENCE_CALIBRATION.weights[i] < 0.0 for i in kb)
    x = features(_rows((0.0, 1.0)), -1.0, 1000, -1.0, 0.0)
    conflict = features(_rows((0.0, 1.0)), -1.0, 1000, -1.0, 1.0)
    assert DEFAULT_CALIBRATION.probability(x) == DEFAULT_CALIBRATION.probability(conflict)
    assert KB_COHERENCE_CALIBRATION.probability(conflict) < KB_COHERENCE_CALIBRATION.probability(x)


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en", "ja", "de", "fr"])


def _ambiguous_item(tiny_demo, linker):
    """A linking-set sentence whose city has several candidates."""
    info = json.loads((tiny_demo / "demo.json").read_text(encoding="utf-8"))
    for item in info["linking"]:
        if item["lang"] in ("en", "ja", "de", "fr"):
            spans = [(a, b) for a, b, _ in item["mentions"]]
            found = linker.index.mentions_at(item["text"], spans, item["lang"])
            if len(found[0].candidates) >= 2:
                return item, found
    pytest.skip("no ambiguous city in the tiny demo's linking set")


def test_missing_entity_is_left_out_of_the_normaliser(tiny_demo, linker):
    item, found = _ambiguous_item(tiny_demo, linker)
    gold = item["mentions"][0][2]
    narrowed, kept = without_entity(found, gold)
    assert kept == [0, 1] and gold not in {c.key for m in narrowed for c in m.candidates}
    model, tok, vocab = linker.bundle
    text, lang = item["text"], item["lang"]
    spans = [(m.start, m.end) for m in found]
    with torch.inference_mode():
        hidden = model.encode_entities(**tok(text, entity_spans=spans))[0, 0]
        logits = model.entity_features(hidden) @ model.entity_predictions.decoder.weight.T
        logits = logits + model.entity_predictions.bias
    [[(top, _, x_all), _]] = linker.mention_features([text], [found], lang, options=None)
    assert top is not None and vocab.id_of_key(top) is not None
    # missing: the model's favourite entity over the whole vocabulary other than the top candidate
    order = logits.argsort(descending=True).tolist()
    specials = {vocab.pad_id, vocab.unk_id, vocab.mask_id, vocab.mask2_id}
    favourite = next(i for i in order if i != vocab.id_of_key(top) and i not in specials)
    fav_key = vocab.entry(favourite).key
    [[(top_x, _, x), _]] = linker.mention_features([text], [found], lang, missing=[{fav_key}])
    assert top_x == top
    lift, gap = FEATURES.index("model_lift"), FEATURES.index("vocab_gap")
    for row, drop in ((x_all, []), (x, [favourite])):
        keep = torch.ones(len(logits), dtype=torch.bool)
        keep[drop] = False
        own = logits[vocab.id_of_key(top)]
        expected_lift = (own - torch.logsumexp(logits[keep], -1)).item() + math.log(len(vocab))
        assert row[lift] == pytest.approx(max(expected_lift, -20.0), abs=1e-4)
        assert row[gap] == pytest.approx(max(min((own - logits[keep].max()).item(), 0.0), -20.0), abs=1e-4)
    assert x[lift] > x_all[lift]  # the missing entity's share no longer counts against the candidate


def test_nil_instances_remove_the_entity_everywhere_and_keep_the_other_mentions(tiny_demo, linker, monkeypatch):
    item, _ = _ambiguous_item(tiny_demo, linker)
    doc = LinkDoc(
        "d", item["lang"], item["text"], tuple(GoldMention(a, b, item["text"][a:b], k) for a, b, k in item["mentions"])
    )
    seen = []
    original = Linker.mention_features

    def spy(self, texts, mentions, lang, options=None, *, missing=None):
        seen.append((mentions, missing))
        return original(self, texts, mentions, lang, options, missing=missing)

    monkeypatch.setattr(Linker, "mention_features", spy)
    out = nil_instances(linker, [doc], ("combined",))
    gold = [i for i in out if i.truth is not None]
    nil = [i for i in out if i.truth is None]
    assert len(gold) == 2 and len(nil) == 1 and nil[0].top != item["mentions"][0][2]
    [(_, none), (mentions, missing)] = seen
    assert none is None and missing == [{item["mentions"][0][2]}]
    assert len(mentions[0]) == 2  # the country is still a mention of the text
    assert item["mentions"][0][2] not in {c.key for c in mentions[0][0].candidates}


def test_kb_conflict_flags_a_city_whose_country_the_text_contradicts(embedded_db, linker):
    country = {f.subject: f.object for f in embedded_db.facts(property="P17")}

    def conflicts(text, surfaces, lang="en"):
        spans = [(text.index(s), text.index(s) + len(s)) for s in surfaces]
        found = linker.index.mentions_at(text, spans, lang)
        return found, KbCoherence(embedded_db).support(found)

    found, [city, venezuela] = conflicts("Valencia is a city in Venezuela.", ["Valencia", "Venezuela"])
    valencias = {c.key for c in found[0].candidates}
    target = found[1].candidates[0].key
    assert len(valencias) >= 2 and target in {country[k] for k in valencias}
    assert city == {k: 0.0 if country[k] == target else 1.0 for k in valencias} and set(venezuela.values()) == {0.0}
    # the entity missing from the kb: the other Valencia conflicts with the text
    [rest] = [k for k in valencias if country[k] != target][:1]
    narrowed, _ = without_entity(found, next(k for k in valencias if country[k] == target))
    assert KbCoherence(embedded_db).support(narrowed)[0][rest] == 1.0
    # no country named, or one that another mention accounts for, or only countries: no conflict
    for text, surfaces, lang in (
        ("I flew from Reading to Nice and then took a ferry to Split.", ["Reading", "Nice", "Split"], "en"),
        ("Ich wohne in Essen und fliege morgen nach Bergen in Norwegen.", ["Essen", "Bergen", "Norwegen"], "de"),
        ("Turkey and China signed a treaty.", ["Turkey", "China"], "en"),
        # two cities of one country: each implies the other's country, whatever else the text names
        ("Nous habitons à Lyon, pas loin de Marseille, et allons en Italie.", ["Lyon", "Marseille", "Italie"], "fr"),
        ("Valencia is a nice city.", ["Valencia"], "en"),
    ):
        _, rows = conflicts(text, surfaces, lang)
        assert all(v == 0.0 for row in rows for v in row.values()), text
    # a known false alarm: a city beside a country nothing in the text relates to it
    found, rows = conflicts("夏休みにローマとトルコを旅行した。", ["ローマ", "トルコ"], "ja")
    assert rows[0][found[0].candidates[0].key] == 1.0
    assert KB_FEATURES == ("kb_conflict",)
