"""The miniature relation-extraction sets: real kb facts, and ``no_relation`` pairs of entities with no fact
between them, in KBP37 format (labels as described in :mod:`probes.transfer.miniature.folder`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

from kb.db import EntityDB
from kb.errors import OptionError
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import NO_RELATION_SLOTS, SLOT_KINDS, Rendered, render
from probes.transfer.miniature.sampling import (
    NO_RELATION,
    PATTERNS,
    RE_GROUPS,
    RELATIONS,
    MiniatureSplit,
    Pool,
    check_languages,
    draw_fresh,
    split_rng,
)
from probes.transfer.miniature.settings import SplitSettings, draw_splits, examples_of, split_settings
from probes.transfer.readers.relations import ReExample

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from probes.transfer.miniature.settings import ReKeywords, SplitKeywords


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
    rng: random.Random, pool: Pool, lang: str, patterns: Sequence[str], indices: Sequence[int], group: str
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


def re_splits(settings: SplitSettings, no_relation_share: float) -> dict[str, dict[str, MiniatureSplit]]:
    """The RE examples of every (language, split) of the plan, drawn from ``settings.world``.

    Shared with :func:`probes.transfer.miniature.folder.write_miniature`, which writes both tasks from one world.

    Args:
        settings: the world, languages, seed, sizes, pattern split and held-out entities.
        no_relation_share: the share of ``no_relation`` examples in each split.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.

    Raises:
        OptionError: a kb too small to fill the patterns.
    """
    return draw_splits("re", settings, functools.partial(_fill_re, settings, no_relation_share))


def _fill_re(
    settings: SplitSettings, no_relation_share: float, result: MiniatureSplit, pool: Pool, size: int, seen: set[str]
) -> None:
    """Draw ``size`` RE examples into ``result`` (see :func:`~probes.transfer.miniature.settings.draw_splits`)."""
    lang, split = result.lang, result.split
    side = "train" if split != "test" else "test"
    patterns = PATTERNS[lang]
    groups = [g for g in RE_GROUPS if g == NO_RELATION or pool.pairs[g]]
    if NO_RELATION in groups and not all(
        pool.labels[SLOT_KINDS[s]] for i in settings.split_of[NO_RELATION][side] for s in NO_RELATION_SLOTS[i]
    ):
        groups.remove(NO_RELATION)
    if not groups and size:
        raise OptionError(f"the kb has too few {lang!r} labels and facts for any RE example of {split}")
    rng = split_rng(settings.seed, "re", lang, split)
    plan = _label_counts(size, groups, no_relation_share)
    rng.shuffle(plan)
    for group in plan:
        draw = functools.partial(_draw_re, rng, pool, lang, patterns[group], settings.split_of[group][side], group)
        rendered, index, keys = draw_fresh(draw, seen, f"RE {group} {lang} {split}")
        example = _re_example(rendered, group, keys, f"{lang}-{split}-{len(result):05d}", lang)
        result.add(example, f"re/{group}/{index}", keys, pool)


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


def generate_re(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[ReKeywords]
) -> dict[str, dict[str, MiniatureSplit]]:
    """Like :func:`make_re`, keeping for each example its pattern id and entity keys; ``db`` and ``languages``
    as in :func:`~probes.transfer.miniature.ner.generate_ner`.

    Args:
        **options: ``no_relation_share`` (0.25: the share of ``no_relation`` examples in each split), and
            ``seed`` (0), ``train_size`` (2000), ``dev_size`` (300), ``test_size`` (300), ``heldout_patterns``
            (``RE_HELDOUT``), ``heldout_share`` (0.3); see :func:`~probes.transfer.miniature.settings.split_settings`.

    Returns:
        ``{lang: {split: MiniatureSplit}}``.

    Raises:
        OptionError: ``no_relation_share`` outside [0, 1], or a bad option of ``split_settings``.
    """
    no_relation_share = options.pop("no_relation_share", 0.25)
    langs = check_languages(languages)
    if not 0 <= no_relation_share <= 1:
        raise OptionError(f"no_relation_share must be in [0, 1]; got {no_relation_share}")
    return re_splits(split_settings("re", db, langs, **cast("SplitKeywords", options)), no_relation_share)


def make_re(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[ReKeywords]
) -> dict[str, dict[str, list[ReExample]]]:
    """RE examples (KBP37 labels, see :mod:`probes.transfer.miniature.folder`): train and dev in English only,
    test in every language.

    About ``no_relation_share`` of each split is ``no_relation``, the rest spread evenly over the relations.

    The arguments are those of :func:`generate_re`, whose splits this returns as plain examples.

    Returns:
        ``{lang: {"train"|"dev"|"test": [ReExample, ...]}}``.
    """
    return examples_of(generate_re(db, languages, **options))
