"""Miniature cross-lingual NER and relation-extraction sets built from the entity kb.

(About 570 lines, kept together: drawing entities and facts, rendering, holding out and writing share one
plan per split; the patterns themselves are data, :mod:`probes.transfer.patterns`.)

Why: comparing feature kinds under zero-shot transfer needs data in all 24 mLUKE
languages that a fine-tuning run can finish on in minutes, and that does not
reward shortcuts. The sets are generated from hand-written sentence patterns
filled with kb entities and kb facts:

- **Patterns.** Every language has the same numbered patterns, pattern ``i``
  meaning the same thing in every language (the wording follows each
  language, so a French pattern may use a parenthesis where English uses a
  preposition, to keep names in their base form). NER has 6 patterns with
  three or four entities of different types; RE has 3 patterns for each of the
  6 relations and 4 for ``no_relation``. Some patterns put the relation's
  object before its subject, so both directions occur.
- **Held-out patterns.** English train and dev sentences use the patterns whose
  index is not in ``heldout_patterns``; every test set (English included) uses
  only the held-out ones (by default NER 4-5, RE 2 of each relation and 2-3 of
  ``no_relation``), so a test sentence is never a translation of a training
  pattern.
- **Held-out entities.** A share of the entities of every kind (30% by
  default, drawn with the seed, the same keys in every language) never appears
  in train or dev; test sentences draw from all entities.
- **Facts.** NER sentences are filled around one country with its own cities,
  capital, continent, official language, currency and neighbours; RE
  sentences state real kb facts, and ``no_relation`` sentences pair entities
  that have no fact between them, in patterns that assert no relation.

RE labels follow KBP37: ``e1`` is the entity that comes first in the text,
``head`` is its span and ``tail`` the span of ``e2``; ``rel(e1,e2)`` says e1 is
the subject, ``rel(e2,e1)`` that e2 is. Relations (subject -> object, kb
properties):

==================  ====================  ==============
country             city -> country       P17
capital             country -> city       P36 (and P1376 read backwards)
continent           country -> continent  P30
official_language   country -> language   P37
currency            country -> currency   P38
shares_border       country <-> country   P47, symmetric: only ``shares_border(e1,e2)``
==================  ====================  ==============

NER words are split on spaces with punctuation split off (names keep their own
words), and one character a word for ja, zh and th, as in PAN-X. Korean
particles written in a pattern after a name (``{city}~은/는``, the form
chosen by the name's last syllable) are separate words in NER and glued to the
name in the RE text.

Output of :func:`write_miniature`::

    folder/ner/en/{train,dev,test}.txt   folder/ner/<lang>/test.txt   (WikiANN, IOB2)
    folder/re/en/{train,dev,test}.txt    folder/re/<lang>/test.txt    (KBP37)
    folder/manifest.json                 languages, sizes, seed, pattern split, held-out entities, kb
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import atomic_path
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.ner_data import NerSentence, write_conll
from probes.transfer.patterns import (
    BAD_LABEL_CHARS,
    CHAR_LANGUAGES,
    NO_RELATION_SLOTS,
    SLOT_KINDS,
    Rendered,
    is_punct,
    load_patterns,
    pattern_slots,
    render,
)
from probes.transfer.re_data import ReExample, write_kbp37

FORMAT = "mluke-miniature"
FORMAT_VERSION = 1

#: Entity types of the NER sets, one per kb entity kind.
NER_TYPES = ("CITY", "CONTINENT", "COUNTRY", "CURRENCY", "LANGUAGE")
KIND_TYPES = {
    "city": "CITY",
    "continent": "CONTINENT",
    "country": "COUNTRY",
    "currency": "CURRENCY",
    "language": "LANGUAGE",
}


@dataclass(frozen=True)
class Relation:
    """One relation: the pattern slots of its subject and object and the kb properties that state it."""

    name: str
    subject: str
    object: str
    properties: tuple[str, ...]
    inverse_properties: tuple[str, ...] = ()
    symmetric: bool = False


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation("country", "city", "country", ("P17",)),
        Relation("capital", "country", "capital", ("P36",), ("P1376",)),
        Relation("continent", "country", "continent", ("P30",)),
        Relation("official_language", "country", "language", ("P37",)),
        Relation("currency", "country", "currency", ("P38",)),
        Relation("shares_border", "country", "country2", ("P47",), symmetric=True),
    )
}
NO_RELATION = "no_relation"
#: Every label the RE sets use.
RE_LABELS: tuple[str, ...] = (
    *(f"{name}({d})" for name, r in RELATIONS.items() for d in (("e1,e2",) if r.symmetric else ("e1,e2", "e2,e1"))),
    NO_RELATION,
)
RE_GROUPS = (*RELATIONS, NO_RELATION)
#: Pattern indices kept for the test sets by default (each group keeps the indices it has).
NER_HELDOUT = (4, 5)
RE_HELDOUT = (2, 3)
SPLITS = ("train", "dev", "test")

PATTERNS = load_patterns()

# -- the kb side -----------------------------------------------------------------------------------------------------


def _usable_label(label: str) -> bool:
    """Whether a name can go into every output format unchanged (no brackets, commas, markers, odd spaces)."""
    return (
        bool(label)
        and len(label) <= 60
        and " ".join(label.split()) == label
        and not any(c in BAD_LABEL_CHARS for c in label)
        and not all(is_punct(c) for c in label)
    )


class KbWorld:
    """Entity keys, facts and per-language usable labels of one kb, loaded once per generation."""

    KINDS = ("city", "continent", "country", "currency", "language")

    def __init__(self, db: EntityDB) -> None:
        self.db = db
        self.keys = {kind: list(db.keys(kind)) for kind in self.KINDS}
        self.pairs: dict[str, list[tuple[str, str]]] = {}
        for name, rel in RELATIONS.items():
            found = {(f.subject, f.object) for p in rel.properties for f in db.facts(property=p)}
            found |= {(f.object, f.subject) for p in rel.inverse_properties for f in db.facts(property=p)}
            if rel.symmetric:
                found = {(min(a, b), max(a, b)) for a, b in found if a != b}
            self.pairs[name] = sorted(found)
        self.related = {frozenset(pair) for pairs in self.pairs.values() for pair in pairs}
        self._labels: dict[str, dict[str, dict[str, str]]] = {}

    def labels(self, lang: str) -> dict[str, dict[str, str]]:
        """``{kind: {key: label}}`` of the entities with a usable label in ``lang`` that no other entity shares."""
        if lang not in self._labels:
            raw = {kind: self.db.labels(self.keys[kind], lang) for kind in self.KINDS}
            counts: dict[str, int] = {}
            for per_kind in raw.values():
                for label in per_kind.values():
                    counts[label] = counts.get(label, 0) + 1
            self._labels[lang] = {
                kind: {k: v for k, v in sorted(per_kind.items()) if counts[v] == 1 and _usable_label(v)}
                for kind, per_kind in raw.items()
            }
        return self._labels[lang]


def heldout_entities(db: EntityDB, *, seed: int = 0, share: float = 0.3) -> dict[str, frozenset[str]]:
    """The entities of each kind kept out of train and dev: ``round(share * n)`` keys drawn with the seed.

    The draw depends only on the kb's keys and the seed, so it is the same for every language.
    """
    if not 0 <= share < 1:
        raise OptionError(f"heldout_share must be in [0, 1); got {share}")
    out: dict[str, frozenset[str]] = {}
    for kind in KbWorld.KINDS:
        keys = sorted(db.keys(kind))
        random.Random(f"{seed}/heldout/{kind}").shuffle(keys)
        out[kind] = frozenset(keys[: round(share * len(keys))])
    return out


class _Pool:
    """The entities one (language, train-or-test) pool may use, with the NER and RE candidates built from them."""

    def __init__(self, world: KbWorld, lang: str, excluded: dict[str, frozenset[str]]) -> None:
        labels = world.labels(lang)
        self.labels = {
            kind: {k: v for k, v in per_kind.items() if k not in excluded.get(kind, ())}
            for kind, per_kind in labels.items()
        }
        self.world = world
        ok = self.labels
        self.pairs: dict[str, list[tuple[str, str]]] = {}
        for name, rel in RELATIONS.items():
            sk, ok_kind = SLOT_KINDS[rel.subject], SLOT_KINDS[rel.object]
            self.pairs[name] = [
                (s, o) for s, o in world.pairs[name] if s in ok[sk] and o in ok[ok_kind] and ok[sk][s] != ok[ok_kind][o]
            ]
        # per country, the entities a NER sentence about it may name
        self.options: dict[str, dict[str, list[str]]] = {slot: {} for slot in SLOT_KINDS if slot != "country"}
        for slot, rel_name, country_is_subject in (
            ("city", "country", False),
            ("capital", "capital", True),
            ("continent", "continent", True),
            ("language", "official_language", True),
            ("currency", "currency", True),
        ):
            for s, o in self.pairs[rel_name]:
                country, other = (s, o) if country_is_subject else (o, s)
                self.options[slot].setdefault(country, []).append(other)
        for a, b in self.pairs["shares_border"]:
            self.options["country2"].setdefault(a, []).append(b)
            self.options["country2"].setdefault(b, []).append(a)
        for per_country in self.options.values():
            for values in per_country.values():
                values.sort()
        self.countries = sorted(ok["country"])
        self.key_lists = {kind: sorted(per_kind) for kind, per_kind in ok.items()}
        self._candidates: dict[tuple[str, ...], list[str]] = {}

    def label(self, slot: str, key: str) -> str:
        return self.labels[SLOT_KINDS[slot]][key]

    def ner_countries(self, slots: Sequence[str]) -> list[str]:
        """Countries that have an entity for every other slot of a NER pattern."""
        need = tuple(sorted(s for s in set(slots) if s != "country"))
        if need not in self._candidates:
            self._candidates[need] = [c for c in self.countries if all(self.options[s].get(c) for s in need)]
        return self._candidates[need]


# -- generation ------------------------------------------------------------------------------------------------------


@dataclass
class MiniatureSplit:
    """One generated split of one language: the examples with, for each, its pattern id and the entities used.

    ``entities[i]`` is ``((slot, key, label), ...)`` for ``examples[i]``; pattern ids read ``ner/4`` or
    ``re/capital/2``.
    """

    task: str
    lang: str
    split: str
    examples: list[Any] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    entities: list[tuple[tuple[str, str, str], ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.examples)

    def keys(self) -> set[str]:
        """Every entity key the split names."""
        return {key for used in self.entities for _, key, _ in used}


def _check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    langs = tuple(dict.fromkeys(languages))
    unknown = [lang for lang in langs if lang not in PATTERNS]
    if unknown:
        raise OptionError(f"no miniature patterns for {', '.join(unknown)}; languages: {', '.join(sorted(PATTERNS))}")
    if not langs:
        raise OptionError("no language given")
    return langs


def pattern_split(task: str, heldout_patterns: Collection[int] | None = None) -> dict[str, dict[str, list[int]]]:
    """``{group: {"train": [...], "test": [...]}}``: which pattern indices each group trains and tests on.

    ``group`` is ``ner`` for NER, a relation name or ``no_relation`` for RE; every group must keep at least
    one pattern on each side.
    """
    if task not in ("ner", "re"):
        raise OptionError(f"task must be 'ner' or 're', not {task!r}")
    heldout = set(NER_HELDOUT if task == "ner" else RE_HELDOUT) if heldout_patterns is None else set(heldout_patterns)
    groups = ("ner",) if task == "ner" else RE_GROUPS
    out: dict[str, dict[str, list[int]]] = {}
    for group in groups:
        n = len(PATTERNS["en"][group])
        test = [i for i in range(n) if i in heldout]
        train = [i for i in range(n) if i not in heldout]
        if not test or not train:
            raise OptionError(
                f"heldout_patterns={sorted(heldout)} leaves {task} group {group!r} (patterns 0-{n - 1}) "
                "without a training or a test pattern"
            )
        out[group] = {"train": train, "test": test}
    return out


def _sizes(train_size: int, dev_size: int, test_size: int) -> dict[str, int]:
    sizes = {"train": train_size, "dev": dev_size, "test": test_size}
    for name, n in sizes.items():
        if not isinstance(n, int) or n < 0:
            raise OptionError(f"{name}_size must be a non-negative integer; got {n!r}")
    return sizes


def _plan(languages: tuple[str, ...], sizes: dict[str, int]) -> list[tuple[str, str, int]]:
    """(language, split, size) to generate: train and dev in English, test everywhere."""
    return [(lang, split, sizes[split]) for lang in languages for split in SPLITS if split == "test" or lang == "en"]


def _rng(seed: int, task: str, lang: str, split: str) -> random.Random:
    return random.Random(f"{seed}/{task}/{lang}/{split}")


def _fresh(draw: Callable[[], Any], seen: set[str], what: str, *, repeats: int = 30, tries: int = 1000) -> Any:
    """The first result of ``draw()`` whose text is not in ``seen`` (after ``repeats`` repeats, a repeat will do).

    ``draw`` returns None when its entities do not fit together; ``tries`` such calls in a row are an error.
    """
    repeated = 0
    for _ in range(tries):
        result = draw()
        if result is None:
            continue
        if result[0].text not in seen or repeated >= repeats:
            seen.add(result[0].text)
            return result
        repeated += 1
    raise OptionError(f"could not fill a pattern for {what}: too few distinct names in the kb")


def _draw_ner(
    rng: random.Random, pool: _Pool, lang: str, patterns: Sequence[str], usable: Sequence[int]
) -> tuple[Rendered, int, dict[str, str]] | None:
    """One NER sentence about a random country, with its own city, capital, neighbours and so on."""
    index = rng.choice(usable)
    slots = pattern_slots(patterns[index])
    country = rng.choice(pool.ner_countries(slots))
    keys = {"country": country}
    for slot in slots:
        if slot != "country":
            keys[slot] = rng.choice(pool.options[slot][country])
    names = {slot: pool.label(slot, key) for slot, key in keys.items()}
    if len(set(names.values())) < len(names):
        return None
    return render(patterns[index], lang, names), index, keys


def _generate_ner(
    world: KbWorld,
    languages: tuple[str, ...],
    *,
    seed: int,
    sizes: dict[str, int],
    split_of: dict[str, list[int]],
    heldout: dict[str, frozenset[str]],
) -> dict[str, dict[str, MiniatureSplit]]:
    out: dict[str, dict[str, MiniatureSplit]] = {}
    seen_train: set[str] = set()
    for lang, split, size in _plan(languages, sizes):
        pool = _Pool(world, lang, heldout if split != "test" else {})
        indices = split_of["train" if split != "test" else "test"]
        patterns = PATTERNS[lang]["ner"]
        usable = [i for i in indices if pool.ner_countries(pattern_slots(patterns[i]))]
        if not usable and size:
            raise OptionError(f"the kb has too few {lang!r} labels and facts to fill any NER pattern of {split}")
        draw = functools.partial(_draw_ner, _rng(seed, "ner", lang, split), pool, lang, patterns, usable)
        result = MiniatureSplit("ner", lang, split)
        seen = seen_train if split != "test" else set()
        while len(result) < size:
            rendered, index, keys = _fresh(draw, seen, f"NER {lang} {split}")
            spans = tuple(sorted((*rendered.word_spans[slot], KIND_TYPES[SLOT_KINDS[slot]]) for slot in keys))
            result.examples.append(NerSentence(rendered.words, spans, lang))
            result.patterns.append(f"ner/{index}")
            result.entities.append(tuple((slot, keys[slot], pool.label(slot, keys[slot])) for slot in sorted(keys)))
        out.setdefault(lang, {})[split] = result
    return out


def _label_counts(size: int, groups: list[str], no_relation_share: float) -> list[str]:
    """The group of each example: ``no_relation_share`` of them no_relation, the rest spread evenly."""
    relations = [g for g in groups if g != NO_RELATION]
    n_none = round(size * no_relation_share) if NO_RELATION in groups else 0
    if not relations:
        n_none = size
    rest = size - n_none
    plan = [NO_RELATION] * n_none
    for i, name in enumerate(relations):
        plan += [name] * (rest // len(relations) + (1 if i < rest % len(relations) else 0))
    return plan


def _draw_re(
    rng: random.Random, pool: _Pool, lang: str, patterns: Sequence[str], indices: Sequence[int], group: str
) -> tuple[Rendered, int, dict[str, str]] | None:
    """One RE example of ``group``: a real fact for a relation, an unrelated pair for no_relation."""
    index = rng.choice(indices)
    if group == NO_RELATION:
        a_slot, b_slot = NO_RELATION_SLOTS[index]
        a = rng.choice(pool.key_lists[SLOT_KINDS[a_slot]])
        b = rng.choice(pool.key_lists[SLOT_KINDS[b_slot]])
        if a == b or frozenset((a, b)) in pool.world.related:
            return None
        keys = {a_slot: a, b_slot: b}
    else:
        rel = RELATIONS[group]
        s, o = rng.choice(pool.pairs[group])
        if rel.symmetric and rng.random() < 0.5:
            s, o = o, s
        keys = {rel.subject: s, rel.object: o}
    names = {slot: pool.label(slot, key) for slot, key in keys.items()}
    if len(set(names.values())) < 2:
        return None
    return render(patterns[index], lang, names), index, keys


def _generate_re(
    world: KbWorld,
    languages: tuple[str, ...],
    *,
    seed: int,
    sizes: dict[str, int],
    split_of: dict[str, dict[str, list[int]]],
    heldout: dict[str, frozenset[str]],
    no_relation_share: float,
) -> dict[str, dict[str, MiniatureSplit]]:
    out: dict[str, dict[str, MiniatureSplit]] = {}
    seen_train: set[str] = set()
    for lang, split, size in _plan(languages, sizes):
        pool = _Pool(world, lang, heldout if split != "test" else {})
        side = "train" if split != "test" else "test"
        patterns = PATTERNS[lang]
        groups = [g for g in RE_GROUPS if g == NO_RELATION or pool.pairs[g]]
        if NO_RELATION in groups and not all(
            pool.labels[SLOT_KINDS[s]] for i in split_of[NO_RELATION][side] for s in NO_RELATION_SLOTS[i]
        ):
            groups.remove(NO_RELATION)
        if not groups and size:
            raise OptionError(f"the kb has too few {lang!r} labels and facts for any RE example of {split}")
        rng = _rng(seed, "re", lang, split)
        plan = _label_counts(size, groups, no_relation_share)
        rng.shuffle(plan)
        result = MiniatureSplit("re", lang, split)
        seen = seen_train if split != "test" else set()
        for group in plan:
            draw = functools.partial(_draw_re, rng, pool, lang, patterns[group], split_of[group][side], group)
            rendered, index, keys = _fresh(draw, seen, f"RE {group} {lang} {split}")
            result.examples.append(_re_example(rendered, group, keys, f"{lang}-{split}-{len(result):05d}", lang))
            result.patterns.append(f"re/{group}/{index}")
            result.entities.append(tuple((slot, keys[slot], pool.label(slot, keys[slot])) for slot in sorted(keys)))
        out.setdefault(lang, {})[split] = result
    return out


def _re_example(rendered: Rendered, group: str, keys: dict[str, str], ident: str, lang: str) -> ReExample:
    """The KBP37 example of a filled RE pattern: e1 is the name that comes first in the text."""
    first, second = sorted(keys, key=lambda slot: rendered.chars[slot][0])
    if group == NO_RELATION:
        label = NO_RELATION
    elif RELATIONS[group].symmetric or RELATIONS[group].subject == first:
        label = f"{group}(e1,e2)"
    else:
        label = f"{group}(e2,e1)"
    return ReExample(ident, rendered.text, rendered.chars[first], rendered.chars[second], label, lang)


def generate_ner(
    db: EntityDB,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    seed: int = 0,
    train_size: int = 2000,
    test_size: int = 300,
    dev_size: int = 300,
    heldout_patterns: Collection[int] = NER_HELDOUT,
    heldout_share: float = 0.3,
) -> dict[str, dict[str, MiniatureSplit]]:
    """Like :func:`make_ner`, keeping for each sentence its pattern id and entity keys."""
    langs = _check_languages(languages)
    split_of = pattern_split("ner", heldout_patterns)["ner"]
    return _generate_ner(
        KbWorld(db),
        langs,
        seed=seed,
        sizes=_sizes(train_size, dev_size, test_size),
        split_of=split_of,
        heldout=heldout_entities(db, seed=seed, share=heldout_share),
    )


def generate_re(
    db: EntityDB,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    seed: int = 0,
    train_size: int = 2000,
    test_size: int = 300,
    dev_size: int = 300,
    heldout_patterns: Collection[int] = RE_HELDOUT,
    heldout_share: float = 0.3,
    no_relation_share: float = 0.25,
) -> dict[str, dict[str, MiniatureSplit]]:
    """Like :func:`make_re`, keeping for each example its pattern id and entity keys."""
    langs = _check_languages(languages)
    if not 0 <= no_relation_share <= 1:
        raise OptionError(f"no_relation_share must be in [0, 1]; got {no_relation_share}")
    return _generate_re(
        KbWorld(db),
        langs,
        seed=seed,
        sizes=_sizes(train_size, dev_size, test_size),
        split_of=pattern_split("re", heldout_patterns),
        heldout=heldout_entities(db, seed=seed, share=heldout_share),
        no_relation_share=no_relation_share,
    )


def make_ner(
    db: EntityDB,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    seed: int = 0,
    train_size: int = 2000,
    test_size: int = 300,
    dev_size: int = 300,
    heldout_patterns: Collection[int] = NER_HELDOUT,
    heldout_share: float = 0.3,
) -> dict[str, dict[str, list[NerSentence]]]:
    """NER sentences ``{lang: {"train"|"dev"|"test": [...]}}``: train and dev in English only, test in every language.

    Train and dev use the patterns not in ``heldout_patterns`` and no held-out entity; tests use only the
    held-out patterns.
    """
    made = generate_ner(
        db,
        languages,
        seed=seed,
        train_size=train_size,
        test_size=test_size,
        dev_size=dev_size,
        heldout_patterns=heldout_patterns,
        heldout_share=heldout_share,
    )
    return {lang: {split: s.examples for split, s in splits.items()} for lang, splits in made.items()}


def make_re(
    db: EntityDB,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    seed: int = 0,
    train_size: int = 2000,
    test_size: int = 300,
    dev_size: int = 300,
    heldout_patterns: Collection[int] = RE_HELDOUT,
    heldout_share: float = 0.3,
    no_relation_share: float = 0.25,
) -> dict[str, dict[str, list[ReExample]]]:
    """RE examples ``{lang: {"train"|"dev"|"test": [...]}}`` (KBP37 labels, see the module docs).

    About ``no_relation_share`` of each split is ``no_relation``, the rest spread evenly over the relations.
    """
    made = generate_re(
        db,
        languages,
        seed=seed,
        train_size=train_size,
        test_size=test_size,
        dev_size=dev_size,
        heldout_patterns=heldout_patterns,
        heldout_share=heldout_share,
        no_relation_share=no_relation_share,
    )
    return {lang: {split: s.examples for split, s in splits.items()} for lang, splits in made.items()}


# -- writing ---------------------------------------------------------------------------------------------------------

SIZE_NAMES = ("ner_train", "ner_dev", "ner_test", "re_train", "re_dev", "re_test")
DEFAULT_SIZES = {"ner_train": 2000, "ner_dev": 300, "ner_test": 300, "re_train": 2000, "re_dev": 300, "re_test": 300}


def _pattern_manifest(task: str, split_of: dict[str, dict[str, list[int]]]) -> dict[str, Any]:
    ids = {
        side: [
            f"{task}/{i}" if task == "ner" else f"re/{group}/{i}"
            for group, sides in split_of.items()
            for i in sides[side]
        ]
        for side in ("train", "test")
    }
    english = {
        (f"{task}/{i}" if task == "ner" else f"re/{group}/{i}"): PATTERNS["en"][group][i]
        for group, sides in split_of.items()
        for i in sorted(sides["train"] + sides["test"])
    }
    return {**ids, "english": english, "per_language": {g: len(PATTERNS["en"][g]) for g in split_of}}


def write_miniature(
    db: EntityDB,
    folder: str | Path,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    seed: int = 0,
    heldout_share: float = 0.3,
    no_relation_share: float = 0.25,
    ner_heldout_patterns: Collection[int] = NER_HELDOUT,
    re_heldout_patterns: Collection[int] = RE_HELDOUT,
    overwrite: bool = False,
    **sizes: int,
) -> Path:
    """Write the NER (WikiANN) and RE (KBP37) miniature sets and ``manifest.json`` under ``folder``.

    ``sizes``: any of ``ner_train``, ``ner_dev``, ``ner_test``, ``re_train``, ``re_dev``, ``re_test``
    (defaults 2000/300/300 for each task). The folder appears only once complete; an existing one is
    replaced only with ``overwrite``. Returns the folder.
    """
    unknown = sorted(set(sizes) - set(SIZE_NAMES))
    if unknown:
        raise OptionError(f"unknown size {', '.join(unknown)}; sizes: {', '.join(SIZE_NAMES)}")
    n = {**DEFAULT_SIZES, **sizes}
    langs = _check_languages(languages)
    world = KbWorld(db)
    heldout = heldout_entities(db, seed=seed, share=heldout_share)
    ner_split = pattern_split("ner", ner_heldout_patterns)
    re_split = pattern_split("re", re_heldout_patterns)
    if not 0 <= no_relation_share <= 1:
        raise OptionError(f"no_relation_share must be in [0, 1]; got {no_relation_share}")
    ner = _generate_ner(
        world,
        langs,
        seed=seed,
        split_of=ner_split["ner"],
        heldout=heldout,
        sizes=_sizes(n["ner_train"], n["ner_dev"], n["ner_test"]),
    )
    rel = _generate_re(
        world,
        langs,
        seed=seed,
        split_of=re_split,
        heldout=heldout,
        no_relation_share=no_relation_share,
        sizes=_sizes(n["re_train"], n["re_dev"], n["re_test"]),
    )
    files: list[str] = []
    counts: dict[str, dict[str, dict[str, int]]] = {"ner": {}, "re": {}}
    with atomic_path(folder, overwrite=overwrite, what=" (miniature sets)") as tmp:
        for task, made in (("ner", ner), ("re", rel)):
            for lang, splits in made.items():
                for split, part in splits.items():
                    relative = f"{task}/{lang}/{split}.txt"
                    if task == "ner":
                        write_conll(part.examples, tmp / relative, fmt="wikiann")
                    else:
                        write_kbp37(part.examples, tmp / relative)
                    files.append(relative)
                    counts[task].setdefault(lang, {})[split] = len(part)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "seed": seed,
            "languages": list(langs),
            "char_languages": sorted(CHAR_LANGUAGES & set(langs)),
            "sizes": {task: {split: n[f"{task}_{split}"] for split in SPLITS} for task in ("ner", "re")},
            "counts": counts,
            "ner": {
                "format": "wikiann",
                "scheme": "iob2",
                "types": list(NER_TYPES),
                "patterns": _pattern_manifest("ner", ner_split),
            },
            "re": {
                "format": "kbp37",
                "labels": list(RE_LABELS),
                "no_relation_share": no_relation_share,
                "relations": {
                    name: {
                        "subject": SLOT_KINDS[r.subject],
                        "object": SLOT_KINDS[r.object],
                        "properties": list(r.properties),
                        "inverse_properties": list(r.inverse_properties),
                        "symmetric": r.symmetric,
                    }
                    for name, r in RELATIONS.items()
                },
                "no_relation_slots": [list(pair) for pair in NO_RELATION_SLOTS],
                "patterns": _pattern_manifest("re", re_split),
            },
            "heldout_entities": {
                "share": heldout_share,
                "counts": {k: len(v) for k, v in heldout.items()},
                "keys": {k: sorted(v) for k, v in heldout.items()},
            },
            "kb": {
                "path": str(db.path),
                "provenance": db.provenance,
                "created": db.meta.get("created"),
                "format_version": db.meta.get("format_version"),
            },
            "files": sorted(files),
        }
        (tmp / "manifest.json").write_text(
            json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8", newline="\n"
        )
    return Path(folder)


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest a :func:`write_miniature` folder holds."""
    return json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
