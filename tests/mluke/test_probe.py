import json
import math

import pytest
import torch
import transformers

import mluke
from kb.db.templates import parse_template
from mluke.demo.tokenizer import TOKENIZER_RECORD
from mluke.probing.cloze import probe

pytestmark = pytest.mark.learned  # asserts the tiny demo's answers: held by construction, rerun by CI at 1 thread


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory, embedded_db):
    from mluke.demo.model import train_demo

    return train_demo(tmp_path_factory.mktemp("demo") / "tiny", preset="tiny", db=embedded_db, progress=False)


@pytest.fixture(scope="session")
def bundle(tiny_demo):
    return mluke.load(tiny_demo)


def test_demo_folder_is_a_checkpoint_with_heldout_pairs(tiny_demo, bundle):
    info = json.loads((tiny_demo / "demo.json").read_text())
    assert info["heldout"] and info["train"] and info["tokenizer"] == TOKENIZER_RECORD
    assert (
        info["libraries"]["transformers"] == transformers.__version__
        and info["libraries"]["torch"] == torch.__version__
    )
    train_pairs = {(f["property"], f["subject"], f["object"], f["lang"]) for f in info["train"]}
    for f in info["heldout"]:
        assert (f["property"], f["subject"], f["object"], f["lang"]) not in train_pairs
        assert any(p[:3] == (f["property"], f["subject"], f["object"]) for p in train_pairs)  # seen in another language
    assert (tiny_demo / "train_log.jsonl").is_file()


def test_english_template_maps_to_the_japanese_one(bundle, embedded_db):
    r = probe("The capital of [X] is [Y].", lang="ja", model=bundle, db=embedded_db, top_k=3)
    assert r.relation == "P36" and r.template == embedded_db.template("P36", "ja").text
    assert any("using the 'ja' template" in n for n in r.notes)
    assert r.rows and all(len(row.predictions) == 3 for row in r.rows)
    m = r.metrics
    assert m["with_gold"] == len(r.rows) and 0 <= m["P@1"] <= m["P@3"] <= 1
    assert m["P@1"] == sum(row.rank == 1 for row in r.rows) / len(r.rows)
    assert "P@1" in repr(r) and "ja" in repr(r)


def _in_vocab_capitals(vocab, db, n):
    """The first n capitals (P36 objects) that the tiny demo's entity vocabulary holds, with a subject of each."""
    facts = [f for f in db.facts(property="P36") if vocab.id_of_key(f.object) is not None]
    return facts[:n]


def test_entity_scores_are_mep_log_probabilities(bundle, embedded_db):
    model, tok, vocab = bundle
    facts = _in_vocab_capitals(vocab, embedded_db, 2)
    keys = [f.object for f in facts]
    subject = embedded_db.labels([facts[0].subject], "en")[facts[0].subject]
    text, _, span = parse_template("The capital of [X] is [Y].").fill_spans(subject, "<mask>")
    enc = tok(text, entity_spans=[span])
    with torch.no_grad():
        logits = model(**enc).entity_logits[0, 0]
    ids = [vocab.id_of_key(k) for k in keys]
    full, restricted = torch.log_softmax(logits, -1)[ids], torch.log_softmax(logits[ids], -1)
    for normalize, expected in (("vocabulary", full), ("candidates", restricted)):
        r = probe(
            "The capital of [X] is [Y].",
            lang="en",
            subjects=[facts[0].subject],
            candidates=keys,
            model=bundle,
            db=embedded_db,
            top_k=2,
            normalize=normalize,
        )
        by_key = {p.key: p for p in r.rows[0].predictions}
        assert [by_key[k].source for k in keys] == ["entity", "entity"]
        assert [by_key[k].score for k in keys] == pytest.approx(expected.tolist(), abs=1e-4)
        assert keys[0] in r.rows[0].gold and r.rows[0].rank in (1, 2)


def test_candidate_scores_skip_the_full_normaliser_unless_word_scores_join(bundle, embedded_db, monkeypatch):
    import mluke.models.masked_lm

    calls = []
    real = mluke.models.masked_lm.chunked_logsumexp
    monkeypatch.setattr(mluke.models.masked_lm, "chunked_logsumexp", lambda *a, **k: calls.append(1) or real(*a, **k))
    facts = _in_vocab_capitals(bundle[2], embedded_db, 6)
    subjects = [f.subject for f in facts[:3]]
    kwargs = {
        "lang": "en",
        "relation": "P36",
        "subjects": subjects,
        "candidates": [f.object for f in facts],
        "model": bundle,
        "db": embedded_db,
        "top_k": 6,
    }
    cands = probe("The capital of [X] is [Y].", **kwargs)
    assert not calls  # every candidate is in the entity vocabulary: n x c dot products only
    vocab_scores = probe("The capital of [X] is [Y].", normalize="vocabulary", **kwargs)
    assert calls
    for rc, rv in zip(cands.rows, vocab_scores.rows):
        assert [p.key for p in rc.predictions] == [p.key for p in rv.predictions] and rc.rank == rv.rank
        shift = {round(pv.score - pc.score, 3) for pc, pv in zip(rc.predictions, rv.predictions)}
        assert len(shift) == 1 and shift.pop() < 0  # one constant per subject: the log-mass of the candidates
    # a candidate outside the entity vocabulary is word-scored; both kinds share one scale, then renormalised
    calls.clear()
    outside = next(f.object for f in embedded_db.facts(property="P36") if bundle[2].id_of_key(f.object) is None)
    mixed = probe(
        "The capital of [X] is [Y].",
        lang="en",
        subjects=subjects[:1],
        candidates=[outside, *cands.rows[0].gold],
        model=bundle,
        db=embedded_db,
        top_k=3,
    )
    preds = mixed.rows[0].predictions
    assert {p.source for p in preds} == {"entity", "word"} and calls
    assert sum(math.exp(p.score) for p in preds) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("mode", ["entity", "word"])
def test_a_subject_is_left_out_of_its_own_ranking(bundle, embedded_db, mode):
    fact = next(f for f in embedded_db.facts(property="P47"))
    kwargs = {
        "lang": "en",
        "relation": "P47",
        "subjects": [fact.subject],
        "candidates": [fact.subject, fact.object],
        "mode": mode,
        "model": bundle,
        "db": embedded_db,
        "top_k": 2,
    }
    r = probe("[X] shares a border with [Y].", **kwargs)
    scores = {p.key: p.score for p in r.rows[0].predictions}
    assert scores[fact.subject] == float("-inf") and scores[fact.object] == pytest.approx(0.0, abs=1e-6)
    assert r.rows[0].predictions[0].key == fact.object and r.rows[0].rank == 1
    assert any("left out of its own ranking" in n for n in r.notes)
    kept = probe("[X] shares a border with [Y].", exclude_subject=False, **kwargs)
    assert all(math.isfinite(p.score) for p in kept.rows[0].predictions) and not any(
        "left out" in n for n in kept.notes
    )


def test_word_scores_are_mean_piece_log_probabilities(bundle, embedded_db):
    tokyo = {"lang": "en", "subjects": ["Japan"], "candidates": ["Tokyo"], "mode": "word", "model": bundle}
    r = probe("The capital of [X] is [Y].", **tokyo, db=embedded_db, normalize="vocabulary")
    model, tok, _ = bundle
    pieces = tok.encode_words(["Tokyo"])[0]
    enc = tok("The capital of Japan is " + "<mask>" * len(pieces) + ".")
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).logits[0], -1)
    where = (enc["input_ids"][0] == tok.mask_id).nonzero()[:, 0]
    expected = sum(float(logp[w, p]) for w, p in zip(where, pieces)) / len(pieces)
    assert r.rows[0].predictions[0].score == pytest.approx(expected, abs=1e-4)
    assert r.rows[0].predictions[0].source == "word"
    alone = probe("The capital of [X] is [Y].", **tokyo, db=embedded_db)
    assert alone.rows[0].predictions[0].score == pytest.approx(0.0, abs=1e-6)  # the only candidate: probability 1


def test_both_modes_subject_entity_and_batching(bundle, embedded_db):
    located = {"lang": "de", "relation": "P30", "model": bundle, "mode": "both", "use_subject_entity": False}
    a = probe("[X] is located in [Y].", **located, db=embedded_db, batch_size=7)
    b = probe("[X] is located in [Y].", **located, db=embedded_db, batch_size=64)
    assert set(a.modes) == {"entity", "word"}
    for m in ("entity", "word"):
        for ra, rb in zip(a.modes[m].rows, b.modes[m].rows):
            assert [p.key for p in ra.predictions] == [p.key for p in rb.predictions]
            assert [p.score for p in ra.predictions] == pytest.approx([p.score for p in rb.predictions], abs=1e-4)
    xy = probe(
        "[X] is located in [Y].", lang="de", relation="P30", model=bundle, db=embedded_db, use_subject_entity=True
    )
    assert xy.use_subject_entity and [r.subject for r in xy.rows] == [r.subject for r in a.rows]
    assert any(
        p1.score != p2.score for r1, r2 in zip(xy.rows, a.rows) for p1, p2 in zip(r1.predictions, r2.predictions)
    )


def test_y_before_x_and_free_templates(bundle, embedded_db):
    r = probe("[Y] hat die Hauptstadt [X].", lang="de", relation="P1376", model=bundle, db=embedded_db, top_k=2)
    assert r.relation == "P1376" and r.rows
    free = probe(
        "Frankly, [Y] is what [X] is about.",
        lang="en",
        subjects=["Japan", "France"],
        candidates=["Tokyo", "Paris", "Kyoto"],
        model=bundle,
        db=embedded_db,
    )
    assert free.relation is None and free.metrics["with_gold"] == 0 and len(free.rows) == 2


def test_one_string_is_one_subject_or_candidate(bundle, embedded_db):
    r = probe(
        "The capital of [X] is [Y].",
        lang="en",
        subjects="Japan",
        candidates=["Tokyo", "Paris"],
        model=bundle,
        db=embedded_db,
    )
    assert [row.label for row in r.rows] == ["Japan"]
    one = probe("The capital of [X] is [Y].", subjects=["Japan"], candidates="Tokyo", model=bundle, db=embedded_db)
    assert [[p.label for p in row.predictions] for row in one.rows] == [["Tokyo"]]
    with pytest.raises(TypeError, match=r"subjects: expected a string or a list of strings, got 17"):
        probe("The capital of [X] is [Y].", subjects=["Japan", 17], model=bundle, db=embedded_db)


def test_outputs(bundle, embedded_db, tmp_path):
    r = probe("The capital of [X] is [Y].", lang="en", subjects=["Japan", "France"], model=bundle, db=embedded_db)
    df = r.to_pandas()
    assert list(df.columns[:4]) == ["subject", "subject_key", "rank", "prediction"] and len(df) == 10
    data = json.loads(r.to_json(tmp_path / "r.json"))
    assert data["metrics"]["subjects"] == 2 and json.loads((tmp_path / "r.json").read_text())["relation"] == "P36"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"template": "The capital of [X] is."}, r"\[Y\] missing"),
        ({"template": "[X] [Y] [Y]"}, r"\[Y\] appears 2 times"),
        ({"template": "[X] likes [Y]."}, "matches no relation template"),
        ({"template": "The capital of [X] is [Y].", "lang": "xx"}, "unknown language 'xx'"),
        ({"template": "The capital of [X] is [Y].", "mode": "words"}, "mode='words'"),
        ({"template": "The capital of [X] is [Y].", "normalize": "all"}, "normalize='all'"),
        ({"template": "The capital of [X] is [Y].", "candidates": ["Atlantis"]}, "candidate 'Atlantis'"),
        ({"template": "The capital of [X] is [Y].", "top_k": 0}, "top_k=0: expected a whole number from 1 to 100,000"),
        ({"template": "The capital of [X] is [Y].", "relation": "capital"}, "relation 'capital': expected a Wikidata"),
        # a free-text subject is asked with decoded words now; a wrong decoding method is the error
        (
            {"template": "[X] was founded in [Y].", "subjects": ["Sony"], "mode": "word", "decoding": "greedy"},
            "decoding='greedy': expected 'independent', 'left-to-right' or 'confidence'",
        ),
        (
            {"template": "The capital of [X] is [Y].", "threshold": 2},
            r"threshold=2: expected a probability in \(0, 1\]",
        ),
    ],
)
def test_bad_input(bundle, embedded_db, kwargs, message):
    kwargs = {"lang": "en", **kwargs}
    with pytest.raises(mluke.MlukeError, match=message):
        probe(model=bundle, db=embedded_db, **kwargs)


def test_cli_probe_and_cached_preset(demo_cli, cli, tiny_demo, tmp_path):
    res = cli("pretrain", "-o", tiny_demo, preset="tiny", no_progress=True)
    assert res.exit_code == 0 and "demo model ready" in res.output  # cached: returns at once
    res = demo_cli("probe", "[X] is the capital of [Y]", lang="ja", mode="both", csv=tmp_path / "p.csv")
    assert res.exit_code == 0, res.output
    assert "using the 'ja' template" in res.output and res.output.count("MRR") == 2  # entity and word tables
    assert (tmp_path / "p.csv").read_text(encoding="utf-8").startswith("subject,subject_key,rank")
    res = cli("pretrain", print_config=True)
    assert "batch_size = 2048" in res.output


def test_mode_both_writes_both_modes(bundle, embedded_db, tmp_path):
    r = probe("[X] is the capital of [Y]", lang="en", model=bundle, db=embedded_db, mode="both", top_k=2)
    data = json.loads(r.to_json(tmp_path / "both.json"))  # no RecursionError: modes["entity"] is the result itself
    assert data["mode"] == "both" and set(data["modes"]) == {"entity", "word"}
    assert all("modes" not in d and d["rows"] for d in data["modes"].values())
    assert json.loads((tmp_path / "both.json").read_text(encoding="utf-8")) == data
    df = r.to_pandas()
    assert set(df["mode"]) == {"entity", "word"} and len(df) == 2 * 2 * len(r.rows)
    assert (df[df["mode"] == "word"]["source"] == "word").all()
    assert "word mode" in repr(r) and "entity mode" in repr(r)
    with pytest.raises(mluke.MlukeError, match="already exists"):
        r.to_json(tmp_path / "both.json")


def test_no_gold_answers_gives_no_metrics(bundle, embedded_db):
    r = probe(
        "Frankly, [Y] is what [X] is about.",
        lang="en",
        subjects=["Japan"],
        candidates=["Tokyo", "Paris"],
        model=bundle,
        db=embedded_db,
    )
    assert r.metrics["with_gold"] == 0 and r.metrics["P@1"] is None and r.metrics["MRR"] is None
    assert "P@1 n/a" in r.summary() and "P@1 0.000" not in repr(r)
    assert r.to_dict()["metrics"]["P@1"] is None


def test_relation_messages_say_what_the_kb_has(bundle, embedded_db):
    with pytest.raises(mluke.MlukeError) as err:
        probe("[X] likes [Y]", lang="ja", model=bundle, db=embedded_db)
    message = str(err.value)
    assert (
        "P36 (capital)" in message
        and "P1376 (capital of)" in message
        and "P740 (location of formation), no facts" in message
    )
    assert "43 relations (8 with facts here)" in message  # P131 (located in) has facts since the kb names regions
    assert "relation='P..'" in message and "--relation P.." in err.value.for_cli()
    with pytest.raises(mluke.MlukeError, match="relation P999 is unknown to this kb"):
        probe("[X] was founded in [Y]", lang="ja", relation="P999", model=bundle, db=embedded_db)
    with pytest.raises(mluke.MlukeError, match="relation 'capital': expected a Wikidata property id"):
        probe("[X] was founded in [Y]", lang="ja", relation="capital", model=bundle, db=embedded_db)
    odd = probe("[X] was founded in [Y]", lang="en", relation="P36", model=bundle, db=embedded_db, top_k=1)
    assert any("reads very differently" in n and "P36 (capital)" in n for n in odd.notes)
    close = probe("[X] has the capital [Y]", lang="en", relation="P36", model=bundle, db=embedded_db, top_k=1)
    assert not any("reads very differently" in n for n in close.notes)


def test_cli_probe_outputs_titles_and_flags(demo_cli, tmp_path):
    capital = demo_cli.bind("probe", "[X] is the capital of [Y]", lang="ja")
    out = tmp_path / "new" / "result.json"  # a folder that does not exist yet
    res = capital(mode="both", json=out, csv=tmp_path / "r.csv")
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text(encoding="utf-8"))["mode"] == "both"
    assert (
        "[ja, P1376, entity mode, [X]&[Y] for " in res.output and "[ja, P1376, word mode]" in res.output
    )  # not markup
    assert "[X]は[Y]の首都です。" in res.output and f"wrote {out}" in res.output
    csv_text = (tmp_path / "r.csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].endswith(",mode") and ",word" in csv_text and ",entity" in csv_text
    res = capital(json=out)
    assert res.exit_code == 1 and isinstance(res.exception, mluke.MlukeError)
    assert "pass --overwrite" in res.exception.for_cli()
    assert json.loads(out.read_text(encoding="utf-8"))["mode"] == "both"  # kept
    assert capital(json=out, overwrite=True).exit_code == 0
    assert json.loads(out.read_text(encoding="utf-8"))["mode"] == "entity"
    res = demo_cli("probe", "[X] likes [Y]", subject="Japan", candidate="Tokyo")
    assert res.exit_code == 0 and "P@1 n/a" in res.output


def test_first_demo_training_says_so_and_hides_transformers_bars(tmp_path, embedded_db, capsys, monkeypatch):
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM
    from transformers.utils import logging as hf_logging

    import mluke.demo.model

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(mluke.demo.model, "demo_documents", stop)
    with pytest.raises(Stop):
        mluke.demo.model.train_demo(tmp_path / "demo", preset="demo", db=embedded_db, progress=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("Training the demo model once (about 8 minutes") and str(tmp_path / "demo") in err[0]
    assert not (tmp_path / "demo").exists()
    before = hf_logging.is_progress_bar_enabled()
    with mluke.demo.model.transformers_bars(False):
        tiny = XLMRobertaConfig(
            vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8
        )
        XLMRobertaForMaskedLM(tiny).save_pretrained(tmp_path / "x")
    assert "Writing model shards" not in capsys.readouterr().err and hf_logging.is_progress_bar_enabled() == before


def _in_vocab_subject(bundle, db, lang="ja"):
    """A country the tiny demo's entity vocabulary holds, with its ``lang`` label."""
    for entry in bundle.entity_vocab:
        if entry.key and entry.key in set(db.keys("country")) and db.label(entry.key, lang):
            return entry.key, db.label(entry.key, lang)
    raise AssertionError("no country in the tiny vocabulary")


def test_the_headline_call_says_what_to_do(embedded_db, monkeypatch):
    import mluke.demo.model

    monkeypatch.setattr(
        mluke.demo.model, "train_demo", lambda *a, **k: pytest.fail("the model is not needed to say this")
    )
    with pytest.raises(mluke.MlukeError) as err:
        mluke.probe("[X] was founded in [Y]", lang="ja", db=embedded_db)
    message = str(err.value)
    assert "P740 (location of formation)" in message and "no subjects" in message and str(embedded_db.path) in message
    assert "the embedded demo model" in message and "mluke kb build" in message and "subjects=[...]" in message
    assert "--subject NAME (repeated)" in err.value.for_cli() and "--db" in err.value.for_cli()


def test_open_vocabulary_answers_rank_the_whole_entity_vocabulary(bundle, embedded_db):
    model, tok, vocab = bundle
    key, label = _in_vocab_subject(bundle, embedded_db)
    r = probe("[X] was founded in [Y]", lang="ja", subjects=[label, "ソニー"], model=bundle, db=embedded_db, top_k=5)
    assert r.relation == "P740" and r.open_vocabulary and r.template == "[X]は[Y]で設立されました。"
    known, free = r.rows
    assert known.subject == key and known.subject_entity and free.subject is None and not free.subject_entity
    assert any("in no kb, asked with their words only: 'ソニー'" in n for n in r.notes)
    assert any("has no objects in the kb" in n for n in r.notes) and "open vocabulary" in r.summary()
    # the model's own MEP log-probabilities over the whole vocabulary; no special entity, not the subject itself
    text, (xs, xe), (ys, ye) = parse_template(r.template).fill_spans(label, "<mask>")
    enc = tok(text, entity_spans=[(ys, ye), (xs, xe)], entities=[None, vocab.id_of_key(key)])
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).entity_logits[0, 0], -1)
    logp[[*list(vocab.special_ids.values()), vocab.id_of_key(key)]] = float("-inf")
    top = logp.topk(5)
    assert [vocab.id_of_key(p.key) for p in known.predictions] == top.indices.tolist()
    assert [p.score for p in known.predictions] == pytest.approx(top.values.tolist(), abs=1e-4)
    for p in known.predictions:  # named in Japanese where the kb can
        assert p.label == (embedded_db.label(p.key, "ja") or embedded_db.label(p.key, "en"))
    words = probe(
        "[X] was founded in [Y]", lang="ja", subjects=[label], mode="word", model=bundle, db=embedded_db, top_k=3
    )
    assert words.open_vocabulary and all(
        p.source == "word" and p.key.startswith("pieces:") for p in words.rows[0].predictions
    )
    assert any("words of 1-5 pieces decoded (confidence, beam 5)" in n for n in words.notes)


def test_subject_entities_by_default_where_the_vocabulary_has_them(bundle, embedded_db):
    kwargs = {"lang": "en", "model": bundle, "db": embedded_db, "top_k": 3}
    auto = probe("[X] is the capital of [Y]", **kwargs)
    flags = [row.subject_entity for row in auto.rows]
    assert any(flags) and not all(flags)  # the tiny vocabulary holds some capitals only
    assert any(n.startswith("[X]&[Y]: ") and "asked with [Y] only" in n for n in auto.notes)
    assert f"[X]&[Y] for {sum(flags)} of {len(flags)}" in auto.summary()
    explicit = probe("[X] is the capital of [Y]", use_subject_entity=True, **kwargs)
    assert [[p.score for p in r.predictions] for r in explicit.rows] == [
        [p.score for p in r.predictions] for r in auto.rows
    ]
    plain = probe("[X] is the capital of [Y]", use_subject_entity=False, **kwargs)
    assert not any(row.subject_entity for row in plain.rows) and "[Y] only" in plain.summary()


def test_templates_for_one_call_and_the_cli(demo_cli, bundle, embedded_db):

    mine = {("P36", "en"): "[X] has [Y] as its capital."}
    r = probe("[X] has [Y] as its capital", lang="en", templates=mine, model=bundle, db=embedded_db, top_k=1)
    assert r.relation == "P36" and r.metrics["with_gold"] > 0
    _key, label = _in_vocab_subject(bundle, embedded_db)
    res = demo_cli("probe", "[X] was founded in [Y]", lang="ja", subject=[label, "ソニー"], top_k="3")
    assert res.exit_code == 0, res.output
    assert "open vocabulary" in res.output and "ソニー" in res.output and "P740" in res.output
