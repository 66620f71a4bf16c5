"""Miniature cross-lingual NER and relation-extraction sets built from the entity kb, written to a folder.

(The shared draws are in :mod:`probes.transfer.miniature.sampling`, the two generators in
:mod:`probes.transfer.miniature.ner` and :mod:`probes.transfer.miniature.relations`; the patterns themselves
are data, :mod:`probes.transfer.miniature.patterns`.)

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

import json
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import atomic_path
from kb.languages import MLUKE_LANGUAGES
from probes.transfer.miniature.ner import ner_splits
from probes.transfer.miniature.patterns import CHAR_LANGUAGES, NO_RELATION_SLOTS, SLOT_KINDS
from probes.transfer.miniature.relations import re_splits
from probes.transfer.miniature.sampling import (
    NER_HELDOUT,
    NER_TYPES,
    PATTERNS,
    RE_HELDOUT,
    RE_LABELS,
    RELATIONS,
    SPLITS,
    KbWorld,
    check_languages,
    check_sizes,
    heldout_entities,
    pattern_split,
)
from probes.transfer.miniature.settings import SplitSettings
from probes.transfer.readers.ner import write_conll
from probes.transfer.readers.relations import write_kbp37

FORMAT = "mluke-miniature"
FORMAT_VERSION = 1
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

    The folder appears only once complete.

    Args:
        db: the entity database the entities and facts come from.
        folder: the folder to write.
        languages: the languages (default: the 24 of mLUKE).
        seed: the seed of every draw.
        heldout_share: the share of the entities of each kind kept out of train and dev.
        no_relation_share: the share of ``no_relation`` examples in each RE split.
        ner_heldout_patterns: the NER pattern indices kept for the test sets.
        re_heldout_patterns: the RE pattern indices kept for the test sets.
        overwrite: replace an existing folder (else it is refused).
        **sizes: any of ``ner_train``, ``ner_dev``, ``ner_test``, ``re_train``, ``re_dev``, ``re_test``
            (defaults 2000/300/300 for each task).

    Returns:
        The folder.

    Raises:
        OptionError: an unknown size name, language or share, or a kb too small to fill the patterns.
    """
    unknown = sorted(set(sizes) - set(SIZE_NAMES))
    if unknown:
        raise OptionError(f"unknown size {', '.join(unknown)}; sizes: {', '.join(SIZE_NAMES)}")
    n = {**DEFAULT_SIZES, **sizes}
    langs = check_languages(languages)
    world = KbWorld(db)
    heldout = heldout_entities(db, seed=seed, share=heldout_share)
    ner_split = pattern_split("ner", ner_heldout_patterns)
    re_split = pattern_split("re", re_heldout_patterns)
    if not 0 <= no_relation_share <= 1:
        raise OptionError(f"no_relation_share must be in [0, 1]; got {no_relation_share}")
    ner_sizes = check_sizes(n["ner_train"], n["ner_dev"], n["ner_test"])
    ner = ner_splits(SplitSettings(world, langs, seed, ner_sizes, ner_split["ner"], heldout))
    re_sizes = check_sizes(n["re_train"], n["re_dev"], n["re_test"])
    rel = re_splits(SplitSettings(world, langs, seed, re_sizes, re_split, heldout), no_relation_share)
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
    """The manifest a :func:`write_miniature` folder holds.

    Args:
        folder: the folder.

    Returns:
        The manifest's content.
    """
    manifest: dict[str, Any] = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    return manifest
