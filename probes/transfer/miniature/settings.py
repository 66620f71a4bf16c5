"""What a miniature NER or RE set is drawn from: the options of ``generate_ner`` / ``generate_re`` (their
defaults held once, in :func:`split_settings`), checked into one :class:`SplitSettings`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from kb.db import EntityDB
from probes.transfer.miniature.sampling import (
    KbWorld,
    MiniatureSplit,
    Pool,
    check_languages,
    check_sizes,
    heldout_entities,
    pattern_split,
    split_plan,
)


class SplitKeywords(TypedDict, total=False):
    """The keyword arguments of :func:`~probes.transfer.miniature.ner.generate_ner` and ``make_ner`` (see
    :func:`split_settings`)."""

    seed: int
    train_size: int
    test_size: int
    dev_size: int
    heldout_patterns: Collection[int]
    heldout_share: float


class ReKeywords(SplitKeywords, total=False):
    """The keyword arguments of :func:`~probes.transfer.miniature.relations.generate_re` and ``make_re``: those of
    :class:`SplitKeywords` and the share of ``no_relation`` examples."""

    no_relation_share: float


@dataclass(frozen=True)
class SplitSettings:
    """What one task's splits are drawn from (:func:`split_settings` checks them).

    ``split_of``: the pattern indices of each side, ``{"train"|"test": [...]}`` for NER and
    ``{group: {"train"|"test": [...]}}`` for RE (:func:`~probes.transfer.miniature.sampling.pattern_split`);
    ``heldout``: the entities kept out of train and dev, per kind; ``sizes``:
    :func:`~probes.transfer.miniature.sampling.check_sizes`'s output.
    """

    world: KbWorld
    languages: tuple[str, ...]
    seed: int
    sizes: dict[str, int]
    split_of: dict[str, Any]
    heldout: dict[str, frozenset[str]]


def split_settings(
    task: str,
    db: EntityDB,
    languages: Iterable[str],
    *,
    seed: int = 0,
    train_size: int = 2000,
    test_size: int = 300,
    dev_size: int = 300,
    heldout_patterns: Collection[int] | None = None,
    heldout_share: float = 0.3,
) -> SplitSettings:
    """The checked settings of ``ner_splits`` / ``re_splits``, with the defaults of the miniature NER and RE sets.

    Args:
        task: ``"ner"``, ``"re"`` or ``"typing"``.
        db: the entity database the entities and facts come from.
        languages: the languages.
        seed: the seed of every draw.
        train_size: English training examples.
        test_size: test examples per language.
        dev_size: English dev examples.
        heldout_patterns: the pattern indices kept for the test sets (default: ``NER_HELDOUT``, ``RE_HELDOUT`` or
            ``TYPING_HELDOUT``).
        heldout_share: the share of the entities of each kind kept out of train and dev.

    Returns:
        The :class:`SplitSettings`.

    Raises:
        OptionError: unknown languages, bad sizes or held-out patterns.
    """
    langs = check_languages(languages)
    split_of = pattern_split(task, heldout_patterns)
    return SplitSettings(
        KbWorld(db),
        langs,
        seed,
        check_sizes(train_size, dev_size, test_size),
        split_of if task == "re" else split_of[task],  # NER and typing have one pattern group each
        heldout_entities(db, seed=seed, share=heldout_share),
    )


def examples_of(made: dict[str, dict[str, MiniatureSplit]]) -> dict[str, dict[str, list[Any]]]:
    """Only the examples of generated splits (what ``make_ner`` and ``make_re`` return).

    Args:
        made: ``{lang: {split: MiniatureSplit}}``.

    Returns:
        ``{lang: {split: [example, ...]}}``.
    """
    return {lang: {split: s.examples for split, s in splits.items()} for lang, splits in made.items()}


def draw_splits(
    task: str, settings: SplitSettings, fill: Callable[[MiniatureSplit, Pool, int, set[str]], None]
) -> dict[str, dict[str, MiniatureSplit]]:
    """Every (language, split) of the plan, each filled by ``fill(split, pool, size, seen)``.

    The pool of train and dev leaves out the held-out entities; ``seen`` (the texts drawn so far) is shared by
    train and dev, so that no text is in both, and fresh for each test set.

    Args:
        task: ``"ner"`` or ``"re"``.
        settings: the checked settings.
        fill: draws ``size`` examples into the empty split from the pool.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.
    """
    out: dict[str, dict[str, MiniatureSplit]] = {}
    seen_train: set[str] = set()
    for lang, split, size in split_plan(settings.languages, settings.sizes):
        pool = Pool(settings.world, lang, settings.heldout if split != "test" else {})
        result = MiniatureSplit(task, lang, split)
        fill(result, pool, size, seen_train if split != "test" else set())
        out.setdefault(lang, {})[split] = result
    return out
