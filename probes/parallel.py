"""Parallel sentences from the kb in the 24 mLUKE languages, for the retrieval and modularity analyses.

Each sentence states one kb fact (a city's country, a country's capital, continent, official language,
currency or neighbour) through one of the miniature relation patterns
(:mod:`probes.transfer.miniature.patterns`); pattern ``i`` means the same in every language, so the renderings of a
fact with the same pattern are translations of each other. Only facts whose two entities have a usable,
unshared label in every requested language are used, so every language gets the same sentences.

:func:`parallel_spans` returns two :class:`probes.cwr.ParallelSpan` records per sentence and language (the
subject's and the object's name, ids ``<n>/subject`` and ``<n>/object``), each listing both names as entity
mentions with their kb keys.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import string_list
from kb.languages import MLUKE_LANGUAGES
from probes.cwr import ParallelSpan
from probes.transfer.miniature.patterns import SLOT_KINDS, render
from probes.transfer.miniature.sampling import PATTERNS, RELATIONS, KbWorld


def parallel_spans(
    db: EntityDB, languages: str | Iterable[str] = MLUKE_LANGUAGES, *, size: int = 200, seed: int = 0
) -> list[ParallelSpan]:
    """``size`` parallel sentences (fewer when the kb has fewer usable facts) in every language, as span records
    (``languages``: one string is one language)."""
    languages = string_list(languages, "languages") or []
    langs = list(dict.fromkeys(languages))
    unknown = [lang for lang in langs if lang not in PATTERNS]
    if unknown or not langs:
        raise OptionError(
            f"no patterns for {', '.join(unknown) or 'an empty language list'}; "
            f"languages: {', '.join(sorted(PATTERNS))}"
        )
    world = KbWorld(db)
    labels = {lang: world.labels(lang) for lang in langs}
    facts = []
    for name, rel in RELATIONS.items():
        s_kind, o_kind = SLOT_KINDS[rel.subject], SLOT_KINDS[rel.object]
        for s, o in world.pairs[name]:
            if all(
                s in labels[lang][s_kind]
                and o in labels[lang][o_kind]
                and labels[lang][s_kind][s] != labels[lang][o_kind][o]
                for lang in langs
            ):
                facts.append((name, s, o))
    rng = random.Random(f"{seed}/parallel")
    rng.shuffle(facts)
    by_relation: dict[str, list[tuple[str, str, str]]] = {}
    for fact in facts:
        by_relation.setdefault(fact[0], []).append(fact)
    chosen: list[tuple[str, str, str]] = []  # round robin over relations, so every relation is represented
    while len(chosen) < size and any(by_relation.values()):
        for name in RELATIONS:
            if by_relation.get(name) and len(chosen) < size:
                chosen.append(by_relation[name].pop())
    out = []
    for n, (name, s, o) in enumerate(chosen):
        rel = RELATIONS[name]
        index = rng.randrange(len(PATTERNS["en"][name]))
        slots = {rel.subject: s, rel.object: o}
        for lang in langs:
            names = {slot: labels[lang][SLOT_KINDS[slot]][key] for slot, key in slots.items()}
            rendered = render(PATTERNS[lang][name][index], lang, names)
            mentions = tuple((*rendered.chars[slot], key) for slot, key in slots.items())
            for role, slot in (("subject", rel.subject), ("object", rel.object)):
                out.append(ParallelSpan(f"{n}/{role}", lang, rendered.text, rendered.chars[slot], mentions))
    return out
