"""The miniature NER sets: sentences about one country, filled from its own cities, capital, continent,
official language, currency and neighbours (WikiANN words, IOB2 spans; see :mod:`probes.transfer.miniature.folder`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Collection, Iterable, Sequence

from kb.db import EntityDB
from kb.errors import OptionError
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import SLOT_KINDS, Rendered, pattern_slots, render
from probes.transfer.miniature.sampling import (
    KIND_TYPES,
    NER_HELDOUT,
    PATTERNS,
    KbWorld,
    MiniatureSplit,
    Pool,
    check_languages,
    check_sizes,
    draw_fresh,
    heldout_entities,
    pattern_split,
    split_plan,
    split_rng,
)
from probes.transfer.readers.ner import NerSentence


def _draw_ner(
    rng: random.Random, pool: Pool, lang: str, patterns: Sequence[str], usable: Sequence[int]
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


def ner_splits(
    world: KbWorld,
    languages: tuple[str, ...],
    *,
    seed: int,
    sizes: dict[str, int],
    split_of: dict[str, list[int]],
    heldout: dict[str, frozenset[str]],
) -> dict[str, dict[str, MiniatureSplit]]:
    """The NER sentences of every (language, split) of the plan, drawn from ``world``.

    Shared with :func:`probes.transfer.miniature.folder.write_miniature`, which writes both tasks from one world.

    Args:
        world: the kb's entities, facts and labels.
        languages: checked languages.
        seed: the seed of every draw.
        sizes: :func:`~probes.transfer.miniature.sampling.check_sizes`'s output.
        split_of: the pattern indices of each side (:func:`~probes.transfer.miniature.sampling.pattern_split`).
        heldout: the entities kept out of train and dev, per kind.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.

    Raises:
        OptionError: a kb too small to fill the patterns.
    """
    out: dict[str, dict[str, MiniatureSplit]] = {}
    seen_train: set[str] = set()
    for lang, split, size in split_plan(languages, sizes):
        pool = Pool(world, lang, heldout if split != "test" else {})
        indices = split_of["train" if split != "test" else "test"]
        patterns = PATTERNS[lang]["ner"]
        usable = [i for i in indices if pool.ner_countries(pattern_slots(patterns[i]))]
        if not usable and size:
            raise OptionError(f"the kb has too few {lang!r} labels and facts to fill any NER pattern of {split}")
        draw = functools.partial(_draw_ner, split_rng(seed, "ner", lang, split), pool, lang, patterns, usable)
        result = MiniatureSplit("ner", lang, split)
        seen = seen_train if split != "test" else set()
        while len(result) < size:
            rendered, index, keys = draw_fresh(draw, seen, f"NER {lang} {split}")
            spans = tuple(sorted((*rendered.word_spans[slot], KIND_TYPES[SLOT_KINDS[slot]]) for slot in keys))
            result.examples.append(NerSentence(rendered.words, spans, lang))
            result.patterns.append(f"ner/{index}")
            result.entities.append(tuple((slot, keys[slot], pool.label(slot, keys[slot])) for slot in sorted(keys)))
        out.setdefault(lang, {})[split] = result
    return out


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
    """Like :func:`make_ner`, keeping for each sentence its pattern id and entity keys.

    Args:
        db: the entity database the entities and facts come from.
        languages: the languages (default: the 24 of mLUKE).
        seed: the seed of every draw.
        train_size: English training examples.
        test_size: test examples per language.
        dev_size: English dev examples.
        heldout_patterns: the pattern indices kept for the test sets.
        heldout_share: the share of the entities of each kind kept out of train and dev.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.
    """
    langs = check_languages(languages)
    split_of = pattern_split("ner", heldout_patterns)["ner"]
    return ner_splits(
        KbWorld(db),
        langs,
        seed=seed,
        sizes=check_sizes(train_size, dev_size, test_size),
        split_of=split_of,
        heldout=heldout_entities(db, seed=seed, share=heldout_share),
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
    """NER sentences: train and dev in English only, test in every language.

    Train and dev use the patterns not in ``heldout_patterns`` and no held-out entity; tests use only the
    held-out patterns.

    Args:
        db: the entity database the entities and facts come from.
        languages: the languages (default: the 24 of mLUKE).
        seed: the seed of every draw.
        train_size: English training examples.
        test_size: test examples per language.
        dev_size: English dev examples.
        heldout_patterns: the pattern indices kept for the test sets.
        heldout_share: the share of the entities of each kind kept out of train and dev.

    Returns:
        ``{lang: {"train"|"dev"|"test": [NerSentence, ...]}}``.
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
