"""What both miniature generators (NER and RE) draw from: the relations, the entities of the kb, held-out
entities and patterns, and the per-split plans and seeded draws.

The sets themselves are described in :mod:`probes.transfer.miniature.folder`; the patterns are data,
:mod:`probes.transfer.miniature.patterns`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kb.db import EntityDB
from kb.errors import OptionError
from probes.transfer.miniature.patterns import (
    BAD_LABEL_CHARS,
    SLOT_KINDS,
    is_punct,
    load_patterns,
    load_typing_patterns,
)

#: What a pattern draw returns: a tuple whose first item (an example) has a ``text``.
Drawn = TypeVar("Drawn", bound=tuple[Any, ...])

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
TYPING_HELDOUT = (4, 5)
SPLITS = ("train", "dev", "test")

PATTERNS = load_patterns()
TYPING_PATTERNS = load_typing_patterns()

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

    Args:
        db: the entity database.
        seed: the seed of the draw.
        share: the share of each kind held out, in [0, 1).

    Returns:
        ``{kind: frozenset of keys}``.

    Raises:
        OptionError: a share outside [0, 1).
    """
    if not 0 <= share < 1:
        raise OptionError(f"heldout_share must be in [0, 1); got {share}")
    out: dict[str, frozenset[str]] = {}
    for kind in KbWorld.KINDS:
        keys = sorted(db.keys(kind))
        random.Random(f"{seed}/heldout/{kind}").shuffle(keys)
        out[kind] = frozenset(keys[: round(share * len(keys))])
    return out


class Pool:
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

    def label(self, slot: str, key: str, kind: str | None = None) -> str:
        """The name of ``key`` in the pool's language; ``kind`` for a slot not in :data:`SLOT_KINDS`."""
        return self.labels[kind or SLOT_KINDS[slot]][key]

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

    def add(
        self, example: Any, pattern: str, keys: dict[str, str], pool: Pool, kinds: dict[str, str] | None = None
    ) -> None:
        """Append an example with its pattern id and its entities (slot, key, label in ``pool``'s language);
        ``kinds``: the kb kind of slots not in :data:`SLOT_KINDS`."""
        self.examples.append(example)
        self.patterns.append(pattern)
        kinds = kinds or {}
        self.entities.append(
            tuple((slot, keys[slot], pool.label(slot, keys[slot], kinds.get(slot))) for slot in sorted(keys))
        )

    def keys(self) -> set[str]:
        """Every entity key the split names."""
        return {key for used in self.entities for _, key, _ in used}


def check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    """The languages without repeats, in order.

    Args:
        languages: the languages asked for.

    Returns:
        The languages.

    Raises:
        OptionError: a language without patterns, or none at all.
    """
    langs = tuple(dict.fromkeys(languages))
    unknown = [lang for lang in langs if lang not in PATTERNS]
    if unknown:
        raise OptionError(f"no miniature patterns for {', '.join(unknown)}; languages: {', '.join(sorted(PATTERNS))}")
    if not langs:
        raise OptionError("no language given")
    return langs


def pattern_split(task: str, heldout_patterns: Collection[int] | None = None) -> dict[str, dict[str, list[int]]]:
    """Which pattern indices each group trains and tests on.

    Args:
        task: ``"ner"``, ``"re"`` or ``"typing"``.
        heldout_patterns: the indices kept for testing (default: :data:`NER_HELDOUT`, :data:`RE_HELDOUT` or
            :data:`TYPING_HELDOUT`).

    Returns:
        ``{group: {"train": [...], "test": [...]}}``; ``group`` is ``ner`` for NER, ``typing`` for typing, a
        relation name or ``no_relation`` for RE.

    Raises:
        OptionError: an unknown task, or a group left without a pattern on either side.
    """
    defaults = {"ner": NER_HELDOUT, "re": RE_HELDOUT, "typing": TYPING_HELDOUT}
    if task not in defaults:
        raise OptionError(f"task must be 'ner', 're' or 'typing', not {task!r}")
    heldout = set(defaults[task] if heldout_patterns is None else heldout_patterns)
    groups = RE_GROUPS if task == "re" else (task,)
    out: dict[str, dict[str, list[int]]] = {}
    for group in groups:
        n = len(TYPING_PATTERNS["en"] if task == "typing" else PATTERNS["en"][group])
        test = [i for i in range(n) if i in heldout]
        train = [i for i in range(n) if i not in heldout]
        if not test or not train:
            raise OptionError(
                f"heldout_patterns={sorted(heldout)} leaves {task} group {group!r} (patterns 0-{n - 1}) "
                "without a training or a test pattern"
            )
        out[group] = {"train": train, "test": test}
    return out


def check_sizes(train_size: int, dev_size: int, test_size: int) -> dict[str, int]:
    """The sizes of the three splits, checked.

    Args:
        train_size: training examples.
        dev_size: dev examples.
        test_size: test examples per language.

    Returns:
        ``{"train": n, "dev": n, "test": n}``.

    Raises:
        OptionError: a negative or non-integer size.
    """
    sizes = {"train": train_size, "dev": dev_size, "test": test_size}
    for name, n in sizes.items():
        if not isinstance(n, int) or n < 0:
            raise OptionError(f"{name}_size must be a non-negative integer; got {n!r}")
    return sizes


def split_plan(languages: tuple[str, ...], sizes: dict[str, int]) -> list[tuple[str, str, int]]:
    """What to generate: train and dev in English, test everywhere.

    Args:
        languages: the languages.
        sizes: :func:`check_sizes`'s output.

    Returns:
        ``(language, split, size)`` triples.
    """
    return [(lang, split, sizes[split]) for lang in languages for split in SPLITS if split == "test" or lang == "en"]


def split_rng(seed: int, task: str, lang: str, split: str) -> random.Random:
    """The random source of one (task, language, split): the same draws whatever else is generated.

    Args:
        seed: the run's seed.
        task: ``"ner"`` or ``"re"``.
        lang: the language.
        split: the split.

    Returns:
        A seeded ``random.Random``.
    """
    return random.Random(f"{seed}/{task}/{lang}/{split}")


def draw_fresh(
    draw: Callable[[], Drawn | None], seen: set[str], what: str, *, repeats: int = 30, tries: int = 1000
) -> Drawn:
    """The first result of ``draw()`` whose text is not in ``seen`` (after ``repeats`` repeats, a repeat will do).

    Args:
        draw: returns a result whose first item has a ``text``, or None when its entities do not fit together.
        seen: the texts drawn so far (the result's is added).
        what: names the set in the error.
        repeats: texts already seen before a repeat is accepted.
        tries: None results in a row before giving up.

    Returns:
        The result.

    Raises:
        OptionError: ``tries`` None results in a row (too few distinct names in the kb).
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
