"""The miniature NER sets: sentences about one country, filled from its own cities, capital, continent,
official language, currency and neighbours (WikiANN words, IOB2 spans; see :mod:`probes.transfer.miniature.folder`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kb.db import EntityDB
from kb.errors import OptionError
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import SLOT_KINDS, Rendered, pattern_slots, render
from probes.transfer.miniature.sampling import (
    KIND_TYPES,
    PATTERNS,
    MiniatureSplit,
    Pool,
    draw_fresh,
    split_rng,
)
from probes.transfer.miniature.settings import SplitSettings, draw_splits, examples_of, split_settings
from probes.transfer.readers.ner import NerSentence

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from probes.transfer.miniature.settings import SplitKeywords


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


def ner_splits(settings: SplitSettings) -> dict[str, dict[str, MiniatureSplit]]:
    """The NER sentences of every (language, split) of the plan, drawn from ``settings.world``.

    Shared with :func:`probes.transfer.miniature.folder.write_miniature`, which writes both tasks from one world.

    Args:
        settings: the world, languages, seed, sizes, pattern split and held-out entities.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.

    Raises:
        OptionError: a kb too small to fill the patterns.
    """
    return draw_splits("ner", settings, functools.partial(_fill_ner, settings))


def _fill_ner(settings: SplitSettings, result: MiniatureSplit, pool: Pool, size: int, seen: set[str]) -> None:
    """Draw ``size`` NER sentences into ``result`` (see :func:`~probes.transfer.miniature.settings.draw_splits`)."""
    lang, split = result.lang, result.split
    indices = settings.split_of["train" if split != "test" else "test"]
    patterns = PATTERNS[lang]["ner"]
    usable = [i for i in indices if pool.ner_countries(pattern_slots(patterns[i]))]
    if not usable and size:
        raise OptionError(f"the kb has too few {lang!r} labels and facts to fill any NER pattern of {split}")
    draw = functools.partial(_draw_ner, split_rng(settings.seed, "ner", lang, split), pool, lang, patterns, usable)
    while len(result) < size:
        rendered, index, keys = draw_fresh(draw, seen, f"NER {lang} {split}")
        spans = tuple(sorted((*rendered.word_spans[slot], KIND_TYPES[SLOT_KINDS[slot]]) for slot in keys))
        result.add(NerSentence(rendered.words, spans, lang), f"ner/{index}", keys, pool)


def generate_ner(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[SplitKeywords]
) -> dict[str, dict[str, MiniatureSplit]]:
    """Like :func:`make_ner`, keeping for each sentence its pattern id and entity keys.

    Args:
        db: the entity database the entities and facts come from.
        languages: the languages (default: the 24 of mLUKE).
        **options: ``seed`` (0), ``train_size`` (2000), ``dev_size`` (300), ``test_size`` (300),
            ``heldout_patterns`` (``NER_HELDOUT``), ``heldout_share`` (0.3); see
            :func:`~probes.transfer.miniature.settings.split_settings`.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.
    """
    return ner_splits(split_settings("ner", db, languages, **options))


def make_ner(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[SplitKeywords]
) -> dict[str, dict[str, list[NerSentence]]]:
    """NER sentences: train and dev in English only, test in every language.

    Train and dev use the patterns not in ``heldout_patterns`` and no held-out entity; tests use only the
    held-out patterns.

    The arguments are those of :func:`generate_ner`, whose splits this returns as plain examples.

    Returns:
        ``{lang: {"train"|"dev"|"test": [NerSentence, ...]}}``.
    """
    return examples_of(generate_ner(db, languages, **options))
