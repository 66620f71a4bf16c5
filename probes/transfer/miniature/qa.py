"""Miniature extractive-QA sets made from the embedded kb's facts, parallel across 24 languages.

Each example is a passage of a few sentences, each stating one kb fact with a relation pattern of the
miniature RE sets (:mod:`probes.transfer.miniature.patterns`), and a question about one of those facts
(``probes/data/miniature_questions.json``, written for mluke); the answer is the object's name in the
passage's language. The other sentences are about other subjects (never the question's), so the passage holds
one right answer, but names of the same kind stand next to it.

Patterns are held out: training and dev passages use relation patterns 0 and 1 and question pattern 0; the
test sets use relation pattern 2 and question pattern 1. Train and dev are English; the test set is the same
facts rendered in every language (same ids), written in the XQuAD layout (``xquad/xquad.{lang}.json``) and, for
MLQA's seven languages, as every context x question language pair in the MLQA layout
(``mlqa/test-context-{c}-question-{q}.json``) for the G-XLT matrix.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kb.errors import OptionError
from kb.files import atomic_path, write_json
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import SLOT_KINDS, render
from probes.transfer.miniature.sampling import PATTERNS, RELATIONS, KbWorld, heldout_entities
from probes.transfer.readers.qa import QaExample, mlqa_path, write_squad
from probes.transfer.runs.qa import MLQA_LANGUAGES

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from kb.db import EntityDB

TRAIN_PATTERNS, TEST_PATTERNS = (0, 1), (2,)
TRAIN_QUESTION, TEST_QUESTION = 0, 1
#: Languages whose sentences follow each other without a space.
NO_SPACE = frozenset({"ja", "zh"})


@cache
def load_questions() -> dict[str, Any]:
    """The question patterns: ``{"answer_slots", "subject_slots", "questions": {lang: {relation: [p0, p1]}}}``."""
    return json.loads(resources.files("probes").joinpath("data/miniature_questions.json").read_text(encoding="utf-8"))


Fact = tuple[str, str, str]  # relation, subject key, object key


def named_facts(world: KbWorld, langs: Sequence[str], excluded: dict[str, frozenset[str]]) -> list[Fact]:
    """Facts whose subject and object have a usable name in every language of ``langs`` (none in ``excluded``).

    Args:
        world: the kb's entities and facts.
        langs: the languages.
        excluded: entity keys left out, per kind.

    Returns:
        ``(relation, subject key, object key)`` facts; a symmetric relation's in both directions.
    """
    named = {
        kind: set.intersection(*(set(world.labels(lang)[kind]) - excluded.get(kind, frozenset()) for lang in langs))
        for kind in KbWorld.KINDS
    }
    out = []
    for name, rel in RELATIONS.items():
        sk, ok = SLOT_KINDS[rel.subject], SLOT_KINDS[rel.object]
        for s, o in world.pairs[name]:
            if s in named[sk] and o in named[ok]:
                out.append((name, s, o))
                if rel.symmetric:
                    out.append((name, o, s))
    return out


def draw_passage(
    rng: random.Random,
    facts: Sequence[Fact],
    by_relation: dict[str, list[Fact]],
    sentences: int,
    patterns: Sequence[int],
) -> tuple[list[tuple[Fact, int]], int]:
    """The facts of one passage with their pattern indices, and which of them a question asks about: the target
    fact of a relation drawn first (so that relations are balanced), then other facts whose subject is not the
    target's subject, no two about the same subject or pair.

    Args:
        rng: the draw's random generator.
        facts: the facts to draw from.
        by_relation: the same facts by relation.
        sentences: facts per passage.
        patterns: the pattern indices to draw from.

    Returns:
        ``([(fact, pattern index), ...], index of the target)``.

    Raises:
        OptionError: too few facts for a passage.
    """
    relation = rng.choice(sorted(by_relation))
    target = rng.choice(by_relation[relation])
    chosen = [target]
    for _ in range(1000 * sentences):
        if len(chosen) == sentences:
            break
        fact = rng.choice(facts)
        if target[1] not in fact[1:] and all(fact[1:] != c[1:] and fact[1] != c[1] for c in chosen):
            chosen.append(fact)
    if len(chosen) < sentences:
        raise OptionError(f"too few kb facts to fill a passage of {sentences} sentences")
    rng.shuffle(chosen)
    return [(f, rng.choice(patterns)) for f in chosen], chosen.index(target)


def _example(
    ident: str,
    lang: str,
    passage: list[tuple[Fact, int]],
    target: int,
    question: int,
    names: dict[str, dict[str, str]],
    title: str,
) -> QaExample:
    """Render a passage and its question in ``lang``; ``names[kind][key]`` are the labels."""
    sep = "" if lang in NO_SPACE else " "
    text, answer = "", None
    for n, ((relation, s, o), index) in enumerate(passage):
        rel = RELATIONS[relation]
        slots = {rel.subject: names[SLOT_KINDS[rel.subject]][s], rel.object: names[SLOT_KINDS[rel.object]][o]}
        rendered = render(PATTERNS[lang][relation][index], lang, slots)
        if text:
            text += sep
        if n == target:
            a, b = rendered.chars[rel.object]
            answer = (len(text) + a, rendered.text[a:b])
        text += rendered.text
    relation, s, _ = passage[target][0]
    subject_slot = load_questions()["subject_slots"][relation]
    q = render(
        load_questions()["questions"][lang][relation][question],
        lang,
        {subject_slot: names[SLOT_KINDS[subject_slot]][s]},
    )
    assert answer is not None
    return QaExample(ident, q.text, text, (answer,), title=title, lang=lang)


@dataclass(frozen=True)
class QaSettings:
    """The options of the miniature QA sets, with their defaults.

    Args:
        seed: the seed of every draw.
        train_size: English training questions.
        dev_size: English dev questions.
        test_size: test questions per language.
        sentences: fact sentences per passage.
    """

    seed: int = 0
    train_size: int = 1000
    dev_size: int = 200
    test_size: int = 300
    sentences: int = 4

    def manifest(self, kind: str, languages: Iterable[str]) -> dict[str, Any]:
        """The manifest of sets of ``kind`` (``"qa"``, ``"record"``) drawn with these settings in ``languages``:
        format, seed, languages, sizes, sentences per passage and the passage patterns of each split."""
        return {
            "format": f"mluke-miniature-{kind}",
            "format_version": 1,
            "seed": self.seed,
            "languages": list(languages),
            "sizes": {"train": self.train_size, "dev": self.dev_size, "test": self.test_size},
            "sentences": self.sentences,
            "passage_patterns": {"train": list(TRAIN_PATTERNS), "test": list(TEST_PATTERNS)},
        }


class QaKeywords(TypedDict, total=False):
    """The fields of :class:`QaSettings` as keyword arguments of :func:`generate_qa` and :func:`write_qa_miniature`."""

    seed: int
    train_size: int
    dev_size: int
    test_size: int
    sentences: int


def generate_qa(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[QaKeywords]
) -> dict[str, dict[str, list[QaExample]]]:
    """The miniature QA sets (see the module docs).

    Train and dev leave out 30% of the entities of each kind
    (:func:`~probes.transfer.miniature.sampling.heldout_entities`); the test set may use any entity named in all
    ``languages``.

    Args:
        db: the entity database.
        languages: the languages (default: the 24 of mLUKE).
        **options: the fields of :class:`QaSettings` (seed, sizes, sentences per passage).

    Returns:
        ``{"train": {"en": [...]}, "dev": {"en": [...]}, "test": {lang: [...]}}``.
    """
    return _generate(db, languages, QaSettings(**options))


def _generate(db: EntityDB, languages: Iterable[str], settings: QaSettings) -> dict[str, dict[str, list[QaExample]]]:
    langs = tuple(dict.fromkeys(languages))
    missing = [lang for lang in langs if lang not in load_questions()["questions"] or lang not in PATTERNS]
    if missing or "en" not in langs:
        raise OptionError(f"no miniature QA patterns for {missing}" if missing else "the languages must include 'en'")
    world = KbWorld(db)
    out: dict[str, dict[str, list[QaExample]]] = {}
    for split, (split_langs, draws) in passage_draws(db, world, langs, settings, "qa").items():
        question = TEST_QUESTION if split == "test" else TRAIN_QUESTION
        out[split] = {}
        for lang in split_langs:
            names = {kind: world.labels(lang)[kind] for kind in KbWorld.KINDS}
            out[split][lang] = [
                _example(f"{split}-{n:05d}", lang, passage, target, question, names, passage[target][0][0])
                for n, (passage, target) in enumerate(draws)
            ]
    return out


Draw = tuple[list[tuple[Fact, int]], int]  # (fact, pattern index) per sentence, and the target sentence


def passage_draws(
    db: EntityDB, world: KbWorld, langs: tuple[str, ...], settings: QaSettings, task: str
) -> dict[str, tuple[tuple[str, ...], list[Draw]]]:
    """The passages of each split, drawn once and rendered in every language of the split: train and dev are English,
    leave out 30% of the entities of each kind (:func:`~probes.transfer.miniature.sampling.heldout_entities`) and
    use relation patterns :data:`TRAIN_PATTERNS`; the test set may use any entity named in all ``langs``, with
    patterns :data:`TEST_PATTERNS`.

    Args:
        db: the entity database.
        world: its entities and facts.
        langs: the test languages ("en" among them).
        settings: the seed, sizes and sentences per passage.
        task: names the draws' random streams (``"qa"``, ``"record"``).

    Returns:
        ``{split: (languages, [(passage, target), ...])}``.

    Raises:
        OptionError: fewer than one sentence per passage, or too few kb facts.
    """
    if settings.sentences < 1:
        raise OptionError(f"sentences={settings.sentences}: expected at least 1")
    heldout = heldout_entities(db, seed=settings.seed)
    out: dict[str, tuple[tuple[str, ...], list[Draw]]] = {}
    for split, size, pool_langs, excluded in (
        ("train", settings.train_size, ("en",), heldout),
        ("dev", settings.dev_size, ("en",), heldout),
        ("test", settings.test_size, langs, {}),
    ):
        facts = named_facts(world, pool_langs, excluded)
        by_relation: dict[str, list[Fact]] = {}
        for f in facts:
            by_relation.setdefault(f[0], []).append(f)
        if len(facts) < 4 * settings.sentences:
            raise OptionError(f"too few kb facts named in {', '.join(pool_langs)} for the {split} set ({len(facts)})")
        rng = random.Random(f"{settings.seed}/{task}/{split}")
        patterns = TEST_PATTERNS if split == "test" else TRAIN_PATTERNS
        draws = [draw_passage(rng, facts, by_relation, settings.sentences, patterns) for _ in range(size)]
        out[split] = (pool_langs, draws)
    return out


def write_qa_miniature(
    db: EntityDB,
    folder: str | Path,
    languages: Iterable[str] = MLUKE_LANGUAGES,
    *,
    overwrite: bool = False,
    **options: Unpack[QaKeywords],
) -> Path:
    """Write :func:`generate_qa`'s sets under ``folder``.

    Files: ``train.en.json``, ``dev.en.json``, ``xquad/xquad.{lang}.json``,
    ``mlqa/test-context-{c}-question-{q}.json`` (MLQA's languages among ``languages``) and ``manifest.json``.

    Args:
        db: the entity database.
        folder: the folder to write.
        languages: the languages (default: the 24 of mLUKE).
        overwrite: replace an existing folder (else it is refused).
        **options: the fields of :class:`QaSettings` (seed, sizes, sentences per passage).

    Returns:
        The folder.
    """
    settings = QaSettings(**options)
    sets = _generate(db, languages, settings)
    with atomic_path(folder, overwrite=overwrite) as tmp:
        (tmp / "xquad").mkdir(parents=True)
        (tmp / "mlqa").mkdir()
        write_squad(sets["train"]["en"], tmp / "train.en.json")
        write_squad(sets["dev"]["en"], tmp / "dev.en.json")
        for lang, examples in sets["test"].items():
            write_squad(examples, tmp / "xquad" / f"xquad.{lang}.json")
        mlqa = [lang for lang in MLQA_LANGUAGES if lang in sets["test"]]
        for c in mlqa:
            for q in mlqa:
                pairs = [
                    QaExample(a.id, b.question, a.context, a.answers, a.title, c, q)
                    for a, b in zip(sets["test"][c], sets["test"][q])
                ]
                write_squad(pairs, mlqa_path(tmp / "mlqa", c, q, "test"))
        questions = {"question_patterns": {"train": [TRAIN_QUESTION], "test": [TEST_QUESTION]}}
        write_json(settings.manifest("qa", sets["test"]) | questions, tmp / "manifest.json")
    return Path(folder)
