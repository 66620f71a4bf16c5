"""The miniature NER and RE sets: patterns, spans, facts, held-out patterns and entities, files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import kb
from kb.errors import OptionError
from probes.transfer.miniature.folder import read_manifest, write_miniature
from probes.transfer.miniature.ner import generate_ner, make_ner
from probes.transfer.miniature.patterns import CHAR_LANGUAGES, NO_RELATION_SLOTS, SLOT_KINDS, pattern_slots, render
from probes.transfer.miniature.relations import generate_re, make_re
from probes.transfer.miniature.sampling import (
    KIND_TYPES,
    NER_TYPES,
    NO_RELATION,
    PATTERNS,
    RE_GROUPS,
    RE_LABELS,
    RELATIONS,
    MiniatureSplit,
    heldout_entities,
)
from probes.transfer.readers.ner import read_ner
from probes.transfer.readers.relations import parse_label, read_re

SMALL = {"train_size": 120, "dev_size": 30, "test_size": 25}
WRITE_SMALL = {"ner_train": 60, "ner_dev": 10, "ner_test": 12, "re_train": 60, "re_dev": 10, "re_test": 12}
PROPERTIES = ("P17", "P30", "P36", "P37", "P38", "P47", "P1376")


@pytest.fixture(scope="module")
def ner(embedded_db: kb.EntityDB) -> dict[str, dict[str, MiniatureSplit]]:
    return generate_ner(embedded_db, seed=0, **SMALL)


@pytest.fixture(scope="module")
def rel(embedded_db: kb.EntityDB) -> dict[str, dict[str, MiniatureSplit]]:
    return generate_re(embedded_db, seed=0, **SMALL)


@pytest.fixture(scope="module")
def written(embedded_db: kb.EntityDB, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_miniature(embedded_db, tmp_path_factory.mktemp("mini") / "seed0", seed=0, **WRITE_SMALL)


def expected_words(label: str, lang: str) -> list[str]:
    """What the NER words of a name must be, spelled out independently of the module."""
    if lang in ("ja", "zh", "th"):
        return [c for c in label if not c.isspace()]
    return label.split()


def facts_between(db: kb.EntityDB, a: str, b: str) -> list[kb.db.Fact]:
    return db.facts(subject=a, object=b) + db.facts(subject=b, object=a)


# -- the pattern table -----------------------------------------------------------------------------------------------


def test_every_language_has_the_same_numbered_patterns() -> None:
    assert set(PATTERNS) == set(kb.MLUKE_LANGUAGES)
    english = PATTERNS["en"]
    assert len(english["ner"]) >= 4
    for group in RE_GROUPS:
        assert len(english[group]) >= 2
    for lang, groups in PATTERNS.items():
        assert set(groups) == {"ner", *RE_GROUPS}, lang
        for group, patterns in groups.items():
            assert len(patterns) == len(english[group]), (lang, group)
            for i, pattern in enumerate(patterns):
                slots = pattern_slots(pattern)
                assert len(set(slots)) == len(slots), (lang, group, i, "a slot used twice")
                assert sorted(slots) == sorted(pattern_slots(english[group][i])), (lang, group, i)
                assert len(set(patterns)) == len(patterns), (lang, group, "two identical patterns")
                if lang not in CHAR_LANGUAGES:
                    assert "  " not in pattern and pattern == pattern.strip(), (lang, group, i)


def test_pattern_slots_fit_their_group() -> None:
    for lang, groups in PATTERNS.items():
        for i, pattern in enumerate(groups["ner"]):
            slots = pattern_slots(pattern)
            types = {KIND_TYPES[SLOT_KINDS[s]] for s in slots}
            assert len(slots) >= 3 and len(types) >= 2, (lang, i, "a NER pattern needs several entities and types")
        for name, relation in RELATIONS.items():
            for pattern in groups[name]:
                assert set(pattern_slots(pattern)) == {relation.subject, relation.object}, (lang, name)
        for i, pattern in enumerate(groups[NO_RELATION]):
            assert set(pattern_slots(pattern)) == set(NO_RELATION_SLOTS[i]), (lang, i)


def test_both_directions_occur_for_every_asymmetric_relation() -> None:
    for name, relation in RELATIONS.items():
        if relation.symmetric:
            continue
        orders = set()
        for groups in PATTERNS.values():
            for pattern in groups[name]:
                slots = pattern_slots(pattern)
                orders.add(slots.index(relation.subject) < slots.index(relation.object))
        assert orders == {True, False}, name


def test_re_labels() -> None:
    assert RE_LABELS[-1] == "no_relation"
    assert "capital(e1,e2)" in RE_LABELS and "capital(e2,e1)" in RE_LABELS
    assert "shares_border(e1,e2)" in RE_LABELS and "shares_border(e2,e1)" not in RE_LABELS
    for label in RE_LABELS:
        parse_label(label)  # every label reads as KBP37


# -- rendering -------------------------------------------------------------------------------------------------------


def test_render_words_and_spans() -> None:
    r = render(
        "Many people in {city} ({country}) speak {language}.",
        "en",
        {"city": "San José", "country": "Costa Rica", "language": "Spanish"},
    )
    assert r.text == "Many people in San José (Costa Rica) speak Spanish."
    assert r.words == ("Many", "people", "in", "San", "José", "(", "Costa", "Rica", ")", "speak", "Spanish", ".")
    assert r.word_spans == {"city": (3, 5), "country": (6, 8), "language": (10, 11)}
    assert r.text[slice(*r.chars["country"])] == "Costa Rica"


def test_render_characters_for_ja_zh_th() -> None:
    r = render("{country}の通貨は{currency}です。", "ja", {"country": "ペルー", "currency": "ペルー ソル"})
    assert r.text == "ペルーの通貨はペルー ソルです。"
    assert r.words == tuple("ペルーの通貨はペルーソルです。")
    assert r.word_spans == {"country": (0, 3), "currency": (7, 12)}
    assert r.text[slice(*r.chars["currency"])] == "ペルー ソル"


def test_korean_particles_follow_the_last_syllable() -> None:
    assert render("{city}~은/는 도시입니다.", "ko", {"city": "서울"}).text == "서울은 도시입니다."
    r = render("{city}~은/는 도시입니다.", "ko", {"city": "파리"})
    assert r.text == "파리는 도시입니다."
    assert r.words == ("파리", "는", "도시입니다", ".") and r.word_spans["city"] == (0, 1)


def test_english_and_dutch_articles_stay_outside_the_name() -> None:
    r = render(
        "{country} and {country2} are neighbouring countries.", "en", {"country": "United States", "country2": "Mexico"}
    )
    assert r.text == "The United States and Mexico are neighbouring countries."
    assert r.words[r.word_spans["country"][0] - 1] == "The"
    assert r.words[slice(*r.word_spans["country"])] == ("United", "States")
    assert (
        render("{city} ligt in {country}.", "nl", {"city": "Utrecht", "country": "Verenigd Koninkrijk"}).text
        == "Utrecht ligt in het Verenigd Koninkrijk."
    )


# -- NER sets --------------------------------------------------------------------------------------------------------


def test_ner_splits_and_sizes(ner: dict[str, dict[str, MiniatureSplit]]) -> None:
    assert set(ner) == set(kb.MLUKE_LANGUAGES)
    for lang, splits in ner.items():
        assert set(splits) == ({"train", "dev", "test"} if lang == "en" else {"test"}), lang
        assert len(splits["test"]) == SMALL["test_size"]
    assert len(ner["en"]["train"]) == SMALL["train_size"] and len(ner["en"]["dev"]) == SMALL["dev_size"]


def test_ner_spans_are_the_kb_labels(embedded_db: kb.EntityDB, ner: dict[str, dict[str, MiniatureSplit]]) -> None:
    for lang, splits in ner.items():
        for part in splits.values():
            for sentence, used in zip(part.examples, part.entities):
                assert sentence.lang == lang
                assert all(word and not any(c.isspace() for c in word) for word in sentence.words)
                previous_end = 0
                for start, end, typ in sentence.spans:
                    assert 0 <= previous_end <= start < end <= len(sentence.words), (lang, sentence)
                    assert typ in NER_TYPES
                    previous_end = end
                assert len(sentence.spans) == len(used) >= 3
                found = Counter((tuple(sentence.words[s:e]), t) for s, e, t in sentence.spans)
                wanted = Counter()
                for slot, key, label in used:
                    assert embedded_db.label(key, lang) == label
                    wanted[(tuple(expected_words(label, lang)), KIND_TYPES[SLOT_KINDS[slot]])] += 1
                assert found == wanted, (lang, sentence)
                assert len({t for _, _, t in sentence.spans}) >= 2
                assert len(sentence.words) > sum(e - s for s, e, _ in sentence.spans), "no words around the names"


def test_ner_entities_are_consistent_with_the_facts(
    embedded_db: kb.EntityDB, ner: dict[str, dict[str, MiniatureSplit]]
) -> None:
    for part in (ner["en"]["train"], ner["fr"]["test"], ner["ja"]["test"]):
        for used in part.entities:
            keys = {slot: key for slot, key, _ in used}
            country = keys["country"]
            for slot, key in keys.items():
                if slot != "country":
                    assert facts_between(embedded_db, country, key), (slot, country, key)


def test_ner_char_languages_split_per_character(ner: dict[str, dict[str, MiniatureSplit]]) -> None:
    for lang in ("ja", "zh", "th"):
        for sentence in ner[lang]["test"].examples:
            assert all(len(word) == 1 for word in sentence.words), lang
    for sentence in ner["en"]["train"].examples:
        assert sentence.words[-1] == "."


# -- RE sets ---------------------------------------------------------------------------------------------------------


def test_re_examples_point_at_the_names_and_state_facts(
    embedded_db: kb.EntityDB, rel: dict[str, dict[str, MiniatureSplit]]
) -> None:
    assert set(rel) == set(kb.MLUKE_LANGUAGES)
    for lang, splits in rel.items():
        assert set(splits) == ({"train", "dev", "test"} if lang == "en" else {"test"}), lang
        for part in splits.values():
            ids = [e.id for e in part.examples]
            assert len(set(ids)) == len(ids)
            for example, used, pattern in zip(part.examples, part.entities, part.patterns):
                assert example.lang == lang and example.label in RE_LABELS
                assert example.head[1] <= example.tail[0], "e1 comes first"
                texts = {example.head_text, example.tail_text}
                assert texts == {label for _, _, label in used}, (lang, example)
                keys = {slot: key for slot, key, _ in used}
                group = pattern.split("/")[1]
                if example.label == "no_relation":
                    assert group == "no_relation"
                    a, b = keys.values()
                    assert not facts_between(embedded_db, a, b), example
                    continue
                name, direction = parse_label(example.label)
                assert name == group
                relation = RELATIONS[name]
                subject, obj = keys[relation.subject], keys[relation.object]
                assert any(
                    f.property in relation.properties for f in embedded_db.facts(subject=subject, object=obj)
                ) or any(f.property in relation.properties for f in embedded_db.facts(subject=obj, object=subject)), (
                    example
                )
                subject_label = embedded_db.label(subject, lang)
                if not relation.symmetric:
                    assert (example.head_text if direction == "e1,e2" else example.tail_text) == subject_label, example


def test_re_labels_are_balanced(rel: dict[str, dict[str, MiniatureSplit]]) -> None:
    labels = Counter(e.label for e in rel["en"]["train"].examples)
    share = labels["no_relation"] / sum(labels.values())
    assert 0.2 <= share <= 0.3
    assert {parse_label(label)[0] for label in labels if label != "no_relation"} == set(RELATIONS)
    directions = {parse_label(label)[1] for label in labels if label != "no_relation"}
    assert directions == {"e1,e2", "e2,e1"}


# -- held-out patterns and entities ----------------------------------------------------------------------------------


def test_train_and_test_patterns_are_disjoint(
    written: Path, ner: dict[str, dict[str, MiniatureSplit]], rel: dict[str, dict[str, MiniatureSplit]]
) -> None:
    manifest = read_manifest(written)
    for task, made in (("ner", ner), ("re", rel)):
        train_ids = set(manifest[task]["patterns"]["train"])
        test_ids = set(manifest[task]["patterns"]["test"])
        assert train_ids and test_ids and not train_ids & test_ids
        for lang, splits in made.items():
            for split, part in splits.items():
                allowed = test_ids if split == "test" else train_ids
                assert set(part.patterns) <= allowed, (task, lang, split)
        # the same indices are held out in every language
        assert {p for lang in made for p in made[lang]["test"].patterns} <= test_ids
    assert manifest["ner"]["patterns"]["test"] == ["ner/4", "ner/5"]
    assert "re/capital/2" in manifest["re"]["patterns"]["test"]
    assert "re/no_relation/3" in manifest["re"]["patterns"]["test"]


def test_heldout_entities_never_reach_training(
    embedded_db: kb.EntityDB,
    written: Path,
    ner: dict[str, dict[str, MiniatureSplit]],
    rel: dict[str, dict[str, MiniatureSplit]],
) -> None:
    heldout = heldout_entities(embedded_db, seed=0)
    held = set().union(*heldout.values())
    manifest_keys = read_manifest(written)["heldout_entities"]["keys"]
    assert {kind: set(keys) for kind, keys in manifest_keys.items()} == {k: set(v) for k, v in heldout.items()}
    n_cities = sum(1 for _ in embedded_db.keys("city"))
    assert len(heldout["city"]) == round(0.3 * n_cities)
    for made in (ner, rel):
        for split in ("train", "dev"):
            assert not made["en"][split].keys() & held, split
        tested = set().union(*(made[lang]["test"].keys() for lang in made))
        assert tested & held, "the test sets use held-out entities"


# -- determinism and files -------------------------------------------------------------------------------------------


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_same_files_other_seed_other_files(embedded_db: kb.EntityDB, written: Path, tmp_path: Path) -> None:
    again = write_miniature(embedded_db, tmp_path / "again", seed=0, **WRITE_SMALL)
    assert _contents(again) == _contents(written)
    other = write_miniature(embedded_db, tmp_path / "other", seed=1, **WRITE_SMALL)
    first, second = _contents(written), _contents(other)
    assert first.keys() == second.keys()
    assert first["ner/en/train.txt"] != second["ner/en/train.txt"]
    assert first["re/de/test.txt"] != second["re/de/test.txt"]


def test_written_files_read_back(embedded_db: kb.EntityDB, written: Path) -> None:
    languages = tuple(kb.MLUKE_LANGUAGES)
    sizes = {
        "train_size": WRITE_SMALL["ner_train"],
        "dev_size": WRITE_SMALL["ner_dev"],
        "test_size": WRITE_SMALL["ner_test"],
    }
    ner = make_ner(embedded_db, languages, seed=0, **sizes)
    rel = make_re(
        embedded_db,
        languages,
        seed=0,
        train_size=WRITE_SMALL["re_train"],
        dev_size=WRITE_SMALL["re_dev"],
        test_size=WRITE_SMALL["re_test"],
    )
    manifest = read_manifest(written)
    assert manifest["languages"] == list(languages) and manifest["seed"] == 0
    assert manifest["kb"]["path"] == str(embedded_db.path)
    for lang in languages:
        for split, sentences in ner[lang].items():
            path = written / "ner" / lang / f"{split}.txt"
            assert path.read_text(encoding="utf-8").splitlines()[0].startswith(f"{lang}:")
            assert read_ner(path).sentences == sentences, (lang, split)
        for split, examples in rel[lang].items():
            path = written / "re" / lang / f"{split}.txt"
            assert read_re(path, lang=lang).examples == examples, (lang, split)
    assert sorted(manifest["files"]) == sorted(str(p.relative_to(written)) for p in written.rglob("*.txt"))
    assert not (written / "ner" / "de" / "train.txt").exists()


def test_existing_folder_needs_overwrite(embedded_db: kb.EntityDB, written: Path) -> None:
    with pytest.raises(kb.errors.OutputExistsError):
        write_miniature(embedded_db, written, languages=("en",), **WRITE_SMALL)


def test_bad_options(embedded_db: kb.EntityDB, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="without a training or a test pattern"):
        make_ner(embedded_db, ("en",), heldout_patterns=range(6), **SMALL)
    with pytest.raises(OptionError, match="no miniature patterns"):
        make_re(embedded_db, ("en", "xx"), **SMALL)
    with pytest.raises(OptionError, match="unknown size"):
        write_miniature(embedded_db, tmp_path / "x", ner_size=3)
    with pytest.raises(OptionError):
        heldout_entities(embedded_db, share=1.5)


def test_other_heldout_patterns(embedded_db: kb.EntityDB) -> None:
    made = generate_ner(embedded_db, ("en", "de"), heldout_patterns=(0,), train_size=20, dev_size=0, test_size=10)
    assert set(made["en"]["train"].patterns) <= {"ner/1", "ner/2", "ner/3", "ner/4", "ner/5"}
    assert set(made["de"]["test"].patterns) == {"ner/0"}
    assert len(made["en"]["dev"]) == 0
