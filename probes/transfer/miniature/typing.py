"""The miniature cross-lingual entity-typing sets: a city, country, language or currency named in a sentence
that does not tell its type, in the Open Entity layout (``sent``, ``start``, ``end``, ``labels``).

Why: typing in 24 languages needs data in all of them, and a set where the type is written next to the mention
("the city of ...") only tests reading that word. The patterns (``probes/data/miniature_typing.json``, written
for mluke) have a slot ``{x}`` for the typed mention and, in two of them, a slot ``{y}`` for a second name; every
slot takes a name of any kind, so each pattern carries every type and the type must come from the name.

- **Classes and labels** (multi-label, from the kb's kinds and facts; :data:`CLASS_LABELS`):

  ==========  ==================================  ============================================
  class       kb entities                          labels
  ==========  ==================================  ============================================
  capital     cities that are a country's capital  ``capital``, ``city``, ``location``
              (P36, or P1376 read backwards)
  city        the other cities                     ``city``, ``location``
  country     countries                            ``country``, ``location``
  language    languages                            ``language``
  currency    currencies                           ``currency``
  ==========  ==================================  ============================================

  Every split holds the five classes in equal numbers (the mention's class drawn by plan, not by how many
  entities a kind has); ``{y}``'s class is drawn evenly too, independent of ``{x}``'s.
- **Held-out patterns**: English train and dev use patterns 0-3, every test set (English included) patterns 4-5
  (:data:`~probes.transfer.miniature.sampling.TYPING_HELDOUT`).
- **Held-out entities**: the same 30% of each kind as the NER and RE sets
  (:func:`~probes.transfer.miniature.sampling.heldout_entities`) never appear in train or dev.

Output of :func:`write_typing_miniature`::

    folder/en/{train,dev,test}.json   folder/<lang>/test.json   (Open Entity JSON lines)
    folder/manifest.json              languages, sizes, seed, labels, pattern split, per-pattern label counts
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import atomic_path, write_json
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import Rendered, pattern_slots, render
from probes.transfer.miniature.sampling import (
    TYPING_PATTERNS,
    MiniatureSplit,
    Pool,
    draw_fresh,
    split_rng,
)
from probes.transfer.miniature.settings import SplitSettings, draw_splits, examples_of, split_settings
from probes.transfer.readers.typing import TypingExample, write_typing

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from probes.transfer.miniature.settings import SplitKeywords

#: The mention classes, each drawn for the same share of every split, and their labels.
CLASS_LABELS: dict[str, tuple[str, ...]] = {
    "capital": ("capital", "city", "location"),
    "city": ("city", "location"),
    "country": ("country", "location"),
    "language": ("language",),
    "currency": ("currency",),
}
#: Every label of the typing sets.
TYPING_LABELS = tuple(sorted({label for labels in CLASS_LABELS.values() for label in labels}))
#: The kb kind of each class.
CLASS_KINDS = {"capital": "city", "city": "city", "country": "country", "language": "language", "currency": "currency"}

FORMAT = "mluke-miniature-typing"
FORMAT_VERSION = 1


def _class_keys(pool: Pool, capitals: frozenset[str]) -> dict[str, list[str]]:
    """The pool's entity keys of each class (capitals apart from the other cities)."""
    cities = pool.key_lists["city"]
    return {
        "capital": [k for k in cities if k in capitals],
        "city": [k for k in cities if k not in capitals],
        "country": pool.key_lists["country"],
        "language": pool.key_lists["language"],
        "currency": pool.key_lists["currency"],
    }


def _plan(rng: random.Random, size: int, classes: Sequence[str]) -> list[str]:
    """The class of each example: ``size`` spread evenly over ``classes``, in random order."""
    plan = [classes[i % len(classes)] for i in range(size)]
    rng.shuffle(plan)
    return plan


def _draw(
    rng: random.Random,
    pool: Pool,
    keys_of: dict[str, list[str]],
    lang: str,
    usable: Sequence[int],
    mention_class: str,
) -> tuple[Rendered, int, dict[str, str], dict[str, str]] | None:
    """One sentence naming an entity of ``mention_class`` at ``{x}`` (and one of any class at ``{y}``)."""
    index = rng.choice(usable)
    pattern = TYPING_PATTERNS[lang][index]
    classes = {"x": mention_class}
    if "y" in pattern_slots(pattern):
        classes["y"] = rng.choice([c for c in CLASS_LABELS if keys_of[c]])
    keys = {slot: rng.choice(keys_of[c]) for slot, c in classes.items()}
    kinds = {slot: CLASS_KINDS[c] for slot, c in classes.items()}
    names = {slot: pool.label(slot, key, kinds[slot]) for slot, key in keys.items()}
    if len(set(names.values())) < len(names):
        return None
    return render(pattern, lang, names, kinds), index, keys, kinds


def typing_splits(settings: SplitSettings) -> dict[str, dict[str, MiniatureSplit]]:
    """The typing examples of every (language, split) of the plan, drawn from ``settings.world``.

    Args:
        settings: the world, languages, seed, sizes, pattern split (``{"train"|"test": [...]}``) and held-out
            entities.

    Returns:
        ``{lang: {split: MiniatureSplit}}``; the entities of an example are its ``x`` and ``y`` slots.

    Raises:
        OptionError: a kb too small to fill the patterns.
    """
    capitals = frozenset(city for _, city in settings.world.pairs["capital"])
    return draw_splits("typing", settings, functools.partial(_fill, settings, capitals))


def _fill(
    settings: SplitSettings, capitals: frozenset[str], result: MiniatureSplit, pool: Pool, size: int, seen: set[str]
) -> None:
    """Draw ``size`` typing examples into ``result`` (see :func:`~probes.transfer.miniature.settings.draw_splits`)."""
    lang, split = result.lang, result.split
    keys_of = _class_keys(pool, capitals)
    classes = [c for c in CLASS_LABELS if keys_of[c]]
    if not classes and size:
        raise OptionError(f"the kb has no {lang!r} label for any typing class of {split}")
    usable = settings.split_of["train" if split != "test" else "test"]
    rng = split_rng(settings.seed, "typing", lang, split)
    for mention_class in _plan(rng, size, classes):
        draw = functools.partial(_draw, rng, pool, keys_of, lang, usable, mention_class)
        rendered, index, keys, kinds = draw_fresh(draw, seen, f"typing {mention_class} {lang} {split}")
        example = TypingExample(
            f"{lang}-{split}-{len(result):05d}", rendered.text, rendered.chars["x"], CLASS_LABELS[mention_class], lang
        )
        result.add(example, f"typing/{index}", keys, pool, kinds)


def generate_typing(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[SplitKeywords]
) -> dict[str, dict[str, MiniatureSplit]]:
    """Like :func:`make_typing`, keeping for each example its pattern id (``typing/4``) and entity keys.

    Args:
        db: the entity database the entities and facts come from.
        languages: the languages (default: the 24 of mLUKE).
        **options: ``seed`` (0), ``train_size`` (2000), ``dev_size`` (300), ``test_size`` (300),
            ``heldout_patterns`` (``TYPING_HELDOUT``), ``heldout_share`` (0.3); see
            :func:`~probes.transfer.miniature.settings.split_settings`.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.
    """
    return typing_splits(split_settings("typing", db, languages, **options))


def make_typing(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[SplitKeywords]
) -> dict[str, dict[str, list[TypingExample]]]:
    """Typing examples (labels in the module docs): train and dev in English only, test in every language.

    The arguments are those of :func:`generate_typing`, whose splits this returns as plain examples.

    Returns:
        ``{lang: {"train"|"dev"|"test": [TypingExample, ...]}}``.
    """
    return examples_of(generate_typing(db, languages, **options))


def pattern_labels(made: dict[str, dict[str, MiniatureSplit]]) -> dict[str, dict[str, int]]:
    """How often each label goes with each pattern, over every split of ``made`` (the check that no pattern
    tells the type: every pattern should carry every label).

    Args:
        made: :func:`generate_typing`'s output.

    Returns:
        ``{pattern id: {label: examples}}``.
    """
    counts: dict[str, Counter[str]] = {}
    for splits in made.values():
        for part in splits.values():
            for example, pattern in zip(part.examples, part.patterns):
                counts.setdefault(pattern, Counter()).update(example.labels)
    return {p: dict(sorted(c.items())) for p, c in sorted(counts.items())}


def write_typing_miniature(
    db: EntityDB,
    folder: str | Path,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    overwrite: bool = False,
    **options: Unpack[SplitKeywords],
) -> Path:
    """Write :func:`generate_typing`'s sets and ``manifest.json`` under ``folder`` (layout in the module docs).

    The folder appears only once complete; fine-tune with ``all_labels=True`` (``--all-labels``), since the
    finer labels are not among Open Entity's nine general types.

    Args:
        db: the entity database.
        folder: the folder to write.
        languages: the languages (default: the 24 of mLUKE).
        overwrite: replace an existing folder (else it is refused).
        **options: as for :func:`generate_typing`.

    Returns:
        The folder.
    """
    settings = split_settings("typing", db, languages, **options)
    made = typing_splits(settings)
    files: dict[str, int] = {}
    with atomic_path(folder, overwrite=overwrite, what=" (miniature typing sets)") as tmp:
        for lang, splits in made.items():
            for split, part in splits.items():
                write_typing(part.examples, tmp / lang / f"{split}.json")
                files[f"{lang}/{split}.json"] = len(part)
        english = TYPING_PATTERNS["en"]
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "seed": settings.seed,
            "languages": list(settings.languages),
            "sizes": settings.sizes,
            "labels": list(TYPING_LABELS),
            "classes": {c: list(labels) for c, labels in CLASS_LABELS.items()},
            "patterns": {side: [f"typing/{i}" for i in settings.split_of[side]] for side in ("train", "test")}
            | {"english": {f"typing/{i}": p for i, p in enumerate(english)}},
            "pattern_labels": pattern_labels(made),
            "heldout_entities": {"share": options.get("heldout_share", 0.3)}
            | {"counts": {k: len(v) for k, v in settings.heldout.items()}},
            "kb": {"path": str(db.path), "provenance": db.provenance, "created": db.meta.get("created")},
            "files": files,
        }
        write_json(manifest, tmp / "manifest.json")
    return Path(folder)
