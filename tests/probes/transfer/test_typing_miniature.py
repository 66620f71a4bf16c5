"""The miniature entity-typing sets: patterns that do not tell the type, spans, labels from the kb, held-out
patterns and entities, determinism and files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import kb
from kb.errors import OptionError
from probes.transfer.miniature.patterns import CHAR_LANGUAGES, load_typing_patterns, pattern_slots, render
from probes.transfer.miniature.sampling import MiniatureSplit, heldout_entities
from probes.transfer.miniature.typing import (
    CLASS_LABELS,
    TYPING_LABELS,
    generate_typing,
    make_typing,
    pattern_labels,
    write_typing_miniature,
)
from probes.transfer.readers.typing import read_typing

SMALL = {"train_size": 100, "dev_size": 20, "test_size": 25}
TRAIN_PATTERNS, TEST_PATTERNS = {f"typing/{i}" for i in range(4)}, {"typing/4", "typing/5"}


@pytest.fixture(scope="module")
def made(embedded_db: kb.EntityDB) -> dict[str, dict[str, MiniatureSplit]]:
    return generate_typing(embedded_db, seed=0, **SMALL)


@pytest.fixture(scope="module")
def written(embedded_db: kb.EntityDB, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_typing_miniature(embedded_db, tmp_path_factory.mktemp("typing") / "seed0", seed=0, **SMALL)


@pytest.fixture(scope="module")
def kind_keys(embedded_db: kb.EntityDB) -> dict[str, set[str]]:
    return {kind: set(embedded_db.keys(kind)) for kind in ("city", "country", "language", "currency")}


def kb_class(db: kb.EntityDB, kind_keys: dict[str, set[str]], key: str) -> str:
    """The class of an entity, worked out from the kb directly: its kind, and for a city whether a country has it
    as capital (P36) or it is the capital of one (P1376)."""
    kinds = [kind for kind, keys in kind_keys.items() if key in keys]
    assert len(kinds) == 1, (key, kinds)
    if kinds[0] == "city" and (db.facts(property="P36", object=key) or db.facts(property="P1376", subject=key)):
        return "capital"
    return kinds[0]


# -- the pattern table -----------------------------------------------------------------------------------------------


def test_every_language_has_the_same_numbered_patterns() -> None:
    patterns = load_typing_patterns()
    assert set(patterns) == set(kb.MLUKE_LANGUAGES)
    english = patterns["en"]
    assert len(english) == 6
    for lang, own in patterns.items():
        assert len(own) == len(english), lang
        for i, pattern in enumerate(own):
            slots = pattern_slots(pattern)
            assert slots.count("x") == 1 and set(slots) <= {"x", "y"}, (lang, i)
            assert sorted(slots) == sorted(pattern_slots(english[i])), (lang, i)
            if lang not in CHAR_LANGUAGES:
                assert "  " not in pattern and pattern == pattern.strip(), (lang, i)
        assert len(set(own)) == len(own), lang


def test_no_pattern_word_names_a_type() -> None:
    words = {"city", "capital", "country", "nation", "language", "currency", "money", "town", "place"}
    for i, pattern in enumerate(load_typing_patterns()["en"]):
        assert not words & set(pattern.lower().replace(".", " ").replace(":", " ").split()), i


def test_render_takes_the_kind_of_an_open_slot() -> None:
    country = render("{x} appeared.", "en", {"x": "United States"}, {"x": "country"})
    assert country.text == "The United States appeared." and country.chars["x"] == (4, 17)
    language = render("{x} appeared.", "en", {"x": "United States"}, {"x": "language"})
    assert language.text == "United States appeared."
    korean = render("{x}~이라는/라는 이름", "ko", {"x": "서울"}, {"x": "city"})
    assert korean.text == "서울이라는 이름" and korean.chars["x"] == (0, 2)


# -- the generated sets ----------------------------------------------------------------------------------------------


def test_splits_sizes_and_languages(made: dict[str, dict[str, MiniatureSplit]]) -> None:
    assert set(made) == set(kb.MLUKE_LANGUAGES)
    assert set(made["en"]) == {"train", "dev", "test"}
    assert len(made["en"]["train"]) == 100 and len(made["en"]["dev"]) == 20
    for lang in kb.MLUKE_LANGUAGES:
        assert len(made[lang]["test"]) == 25, lang
        if lang != "en":
            assert set(made[lang]) == {"test"}, lang
        assert {e.lang for e in made[lang]["test"].examples} == {lang}


def test_spans_point_at_the_mention_and_labels_follow_the_kb(
    embedded_db: kb.EntityDB, kind_keys: dict[str, set[str]], made: dict[str, dict[str, MiniatureSplit]]
) -> None:
    classes: Counter[str] = Counter()
    for lang, splits in made.items():
        for split, part in splits.items():
            for example, entities in zip(part.examples, part.entities):
                named = {slot: (key, label) for slot, key, label in entities}
                key, label = named["x"]
                assert example.mention == label, (lang, split, example.id)
                assert label == embedded_db.labels([key], lang)[key]
                cls = kb_class(embedded_db, kind_keys, key)
                assert example.labels == tuple(sorted(CLASS_LABELS[cls])), (lang, example.id)
                assert set(example.labels) <= set(TYPING_LABELS)
                classes[cls] += 1
                if "y" in named:  # the second name is in the text too, outside the mention
                    y = named["y"][1]
                    rest = example.text[: example.span[0]] + " " + example.text[example.span[1] :]
                    assert y in rest and y != label
    assert set(classes) == set(CLASS_LABELS)
    assert max(classes.values()) - min(classes.values()) <= len(made) * 3  # the classes are drawn evenly


def test_every_pattern_carries_every_label(made: dict[str, dict[str, MiniatureSplit]]) -> None:
    counts = pattern_labels(made)
    assert set(counts) == TRAIN_PATTERNS | TEST_PATTERNS
    for pattern, labels in counts.items():
        assert set(labels) == set(TYPING_LABELS), pattern
        mentions = sum(labels[label] for label in ("city", "country", "language", "currency"))
        assert max(labels[t] for t in ("city", "country", "language", "currency")) < 0.6 * mentions, pattern


def test_train_and_test_patterns_are_held_apart(
    embedded_db: kb.EntityDB, made: dict[str, dict[str, MiniatureSplit]]
) -> None:
    for lang, splits in made.items():
        for split, part in splits.items():
            assert set(part.patterns) <= (TEST_PATTERNS if split == "test" else TRAIN_PATTERNS), (lang, split)
    assert {p for lang in made for p in made[lang]["test"].patterns} == TEST_PATTERNS
    other = generate_typing(embedded_db, ("en",), heldout_patterns=(0,), **SMALL)
    assert set(other["en"]["test"].patterns) == {"typing/0"}
    assert "typing/0" not in set(other["en"]["train"].patterns) | set(other["en"]["dev"].patterns)


def test_heldout_entities_never_reach_training(
    embedded_db: kb.EntityDB, made: dict[str, dict[str, MiniatureSplit]]
) -> None:
    held = set().union(*heldout_entities(embedded_db, seed=0).values())
    for split in ("train", "dev"):
        assert not made["en"][split].keys() & held, split
    assert set().union(*(made[lang]["test"].keys() for lang in made)) & held
    texts = {e.text for s in ("train", "dev") for e in made["en"][s].examples}
    assert len(texts) == 120, "train and dev share no sentence"


def test_same_seed_same_sets_other_seed_other_sets(
    embedded_db: kb.EntityDB, made: dict[str, dict[str, MiniatureSplit]]
) -> None:
    again = make_typing(embedded_db, ("en", "de"), seed=0, **SMALL)
    assert again["en"]["train"] == made["en"]["train"].examples
    assert again["de"]["test"] == made["de"]["test"].examples
    other = make_typing(embedded_db, ("en", "de"), seed=1, **SMALL)
    assert other["en"]["train"] != again["en"]["train"] and other["de"]["test"] != again["de"]["test"]


# -- files -----------------------------------------------------------------------------------------------------------


def test_written_files_read_back(written: Path, made: dict[str, dict[str, MiniatureSplit]]) -> None:
    for lang, splits in made.items():
        for split, part in splits.items():
            read = read_typing(written / lang / f"{split}.json", lang=lang, all_labels=True)
            assert read.examples == part.examples and not read.skipped, (lang, split)
    general = read_typing(written / "en" / "test.json")  # the papers' nine general types: location only
    assert set(general.labels) == {"location"} and general.dropped_labels["city"] > 0
    manifest = json.loads((written / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["labels"] == list(TYPING_LABELS) and manifest["seed"] == 0
    assert manifest["patterns"]["test"] == ["typing/4", "typing/5"]
    assert manifest["patterns"]["train"] == ["typing/0", "typing/1", "typing/2", "typing/3"]
    assert manifest["pattern_labels"] == pattern_labels(made)
    assert manifest["files"]["de/test.json"] == 25 and "de/train.json" not in manifest["files"]
    assert sorted(manifest["files"]) == sorted(str(p.relative_to(written)) for p in written.rglob("*/*.json"))


def test_bad_options(embedded_db: kb.EntityDB, written: Path) -> None:
    with pytest.raises(kb.errors.OutputExistsError):
        write_typing_miniature(embedded_db, written, languages=("en",), **SMALL)
    with pytest.raises(OptionError, match="without a training or a test pattern"):
        make_typing(embedded_db, ("en",), heldout_patterns=range(6), **SMALL)
    with pytest.raises(OptionError, match="no miniature patterns"):
        make_typing(embedded_db, ("en", "xx"), **SMALL)
    with pytest.raises(OptionError, match="non-negative"):
        make_typing(embedded_db, ("en",), train_size=-1)
