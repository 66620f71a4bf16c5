"""Miniature ReCoRD sets made from the embedded kb's facts, parallel across 24 languages.

Each passage is a few sentences, each stating one kb fact (a city's country, a country's capital, continent,
official language, currency or neighbour) with a relation pattern of the miniature RE sets
(:mod:`probes.transfer.miniature.patterns`), every name in it marked as an entity mention. The query states one of
those facts again with another pattern of the same relation, its object replaced by ``@placeholder`` ("@placeholder
is the capital of France."); the answer is the object's name, and the candidates are every mention of the passage.
The other sentences are about other subjects, so the query has one right answer.

Passages are drawn as for the miniature QA sets (:func:`probes.transfer.miniature.qa.passage_draws`: train and dev
English, with 30% of the entities held out; relation patterns 0-1 in train and dev, 2 in the test set). A train or
dev query uses the other of patterns 0 and 1; a test query pattern 0 or 1. The test set is the same facts in every
language (same ids), one file per language, for zero-shot evaluation.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from kb.errors import OptionError
from kb.files import atomic_path, write_json
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.patterns import SLOT_KINDS, render
from probes.transfer.miniature.qa import NO_SPACE, Draw, QaSettings, passage_draws
from probes.transfer.miniature.sampling import PATTERNS, RELATIONS, KbWorld
from probes.transfer.readers.record import PLACEHOLDER, RecordExample, write_record

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from kb.db import EntityDB
    from probes.transfer.miniature.qa import QaKeywords


def _example(ident: str, lang: str, draw: Draw, query_pattern: int, names: dict[str, dict[str, str]]) -> RecordExample:
    """Render a passage with every name marked, and the query about its target fact, in ``lang``."""
    passage, target = draw
    sep = "" if lang in NO_SPACE else " "
    text, entities = "", []
    for (relation, s, o), index in passage:
        rel = RELATIONS[relation]
        slots = {rel.subject: names[SLOT_KINDS[rel.subject]][s], rel.object: names[SLOT_KINDS[rel.object]][o]}
        if text:
            text += sep
        rendered = render(PATTERNS[lang][relation][index], lang, slots)
        entities += [(len(text) + a, len(text) + b) for a, b in rendered.chars.values()]
        text += rendered.text
    relation, s, o = passage[target][0]
    rel = RELATIONS[relation]
    answer = names[SLOT_KINDS[rel.object]][o]
    slots = {rel.subject: names[SLOT_KINDS[rel.subject]][s], rel.object: answer}
    query = render(PATTERNS[lang][relation][query_pattern], lang, slots)
    a, b = query.chars[rel.object]
    spans = tuple(sorted(set(entities)))
    answer_spans = tuple((x, y) for x, y in spans if text[x:y] == answer)
    return RecordExample(
        ident, ident, text, spans, query.text[:a] + PLACEHOLDER + query.text[b:], (answer,), answer_spans, lang
    )


def write_record_miniature(
    db: EntityDB,
    folder: str | Path,
    *,
    settings: QaSettings | None = None,
    overwrite: bool = False,
    languages: Iterable[str] = MLUKE_LANGUAGES,
) -> Path:
    """Write :func:`generate_record`'s sets under ``folder`` in the original ReCoRD layout.

    Files: ``train.en.json``, ``dev.en.json``, ``test/test.{lang}.json`` and ``manifest.json``.

    Args:
        db: the entity database.
        folder: the folder to write.
        languages: the test languages (default: the 24 of mLUKE).
        overwrite: replace an existing folder (else it is refused).
        settings: seed, sizes and sentences per passage (:class:`~probes.transfer.miniature.qa.QaSettings`; its
            defaults when not given).

    Returns:
        The folder.
    """
    settings = settings or QaSettings()
    sets = generate_record(db, languages, **asdict(settings))
    with atomic_path(folder, overwrite=overwrite) as tmp:
        (tmp / "test").mkdir(parents=True)
        write_record(sets["train"]["en"], tmp / "train.en.json")
        write_record(sets["dev"]["en"], tmp / "dev.en.json")
        for lang, examples in sets["test"].items():
            write_record(examples, tmp / "test" / f"test.{lang}.json")
        queries = {"query_patterns": {"train": "the other of 0 and 1", "test": [0, 1]}}
        write_json(settings.manifest("record", sets["test"]) | queries, tmp / "manifest.json")
    return Path(folder)


def generate_record(
    db: EntityDB, languages: Iterable[str] = MLUKE_LANGUAGES, **options: Unpack[QaKeywords]
) -> dict[str, dict[str, list[RecordExample]]]:
    """The miniature ReCoRD sets (see the module docs).

    Args:
        db: the entity database.
        languages: the test languages (default: the 24 of mLUKE; "en" among them).
        **options: the fields of :class:`~probes.transfer.miniature.qa.QaSettings` (seed, sizes, sentences per
            passage).

    Returns:
        ``{"train": {"en": [...]}, "dev": {"en": [...]}, "test": {lang: [...]}}``.

    Raises:
        OptionError: a language without patterns, no "en", or too few kb facts.
    """
    settings = QaSettings(**options)
    langs = tuple(dict.fromkeys(languages))
    missing = [lang for lang in langs if lang not in PATTERNS]
    if missing or "en" not in langs:
        raise OptionError(f"no miniature patterns for {missing}" if missing else "the languages must include 'en'")
    world = KbWorld(db)
    out: dict[str, dict[str, list[RecordExample]]] = {}
    for split, (split_langs, draws) in passage_draws(db, world, langs, settings, "record").items():
        rng = random.Random(f"{settings.seed}/record/{split}/query")
        # train/dev: the other of patterns 0 and 1 than the target sentence's; test (pattern 2): 0 or 1
        queries = [1 - d[0][d[1]][1] if split != "test" else rng.choice((0, 1)) for d in draws]
        out[split] = {}
        for lang in split_langs:
            names = {kind: world.labels(lang)[kind] for kind in KbWorld.KINDS}
            out[split][lang] = [
                _example(f"{split}-{n:05d}", lang, draw, q, names) for n, (draw, q) in enumerate(zip(draws, queries))
            ]
    return out
