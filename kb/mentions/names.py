"""Person names for the mention rules of :mod:`kb.mentions.linkability`: first names and name particles.

First names come from ``nomquamgender`` (MIT; its name data, about 720,000 names with the number of people
counted with each, is read as a file: the package's own code, which needs pandas, is not imported). Names
written in Cyrillic are looked up in Latin letters; Russian й after a vowel is romanised both as *y* and as *i*
(Андрей: Andrey, Andrei; Сергей: Sergey, Sergei), and the name data counts each spelling apart, so a name
counts with its most frequent spelling.
"""

from __future__ import annotations

import functools
import unicodedata

#: People counted with a first name in ``nomquamgender``'s name data from which the word is a first name
#: (Whitney 108,587, Abraham 120,374, Sergey 11,196; the most frequent function words there stay below 6,000:
#: "del" 5,517, "les" 4,579, "general" 4,066).
FIRST_NAME_COUNT = 10_000
#: Lowercase particles between the given name and the family name of a person (Dominique *de* Villepin,
#: Vincent *van* Gogh, Ursula *von der* Leyen, Leonardo *da* Vinci): a name before one opens a person's name.
NAME_PARTICLES = frozenset(
    ["de", "da", "do", "dos", "das", "di", "del", "della", "van", "von", "der", "den", "ter", "ten", "zu", "du", "bin"]
)
#: Cyrillic letters in Latin letters, for looking up first names (Сергей -> sergey).
_CYRILLIC = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "yo", "ж": "zh", "з": "z", "и": "i",
    "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "",
    "э": "e", "ю": "yu", "я": "ya", "і": "i", "ї": "yi", "є": "ye", "ґ": "g", "ў": "u",
}  # fmt: skip


@functools.cache
def _first_names() -> frozenset[str]:
    """The first names of ``nomquamgender``'s name data counted for at least :data:`FIRST_NAME_COUNT` people
    (ASCII, lowercase); empty where the package is not installed."""
    import importlib.util
    import json
    from pathlib import Path

    spec = importlib.util.find_spec("nomquamgender")  # finds the package without running its pandas import
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / "name_data.json"
    if not path.is_file():
        return frozenset()
    data = json.loads(path.read_bytes())
    return frozenset(name for name, row in data.items() if row[1] >= FIRST_NAME_COUNT)


def _plain(spelled: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", spelled) if not unicodedata.combining(c))


def ascii_names(word: str) -> tuple[str, ...]:
    """``word`` lowercase in ASCII letters as ``nomquamgender`` keys names: accents dropped, Cyrillic
    transliterated, with й as *y* and as *i* (Joaquín -> joaquin; Андрей -> andrey, andrei)."""
    lower = word.lower()
    spelled = _plain("".join(_CYRILLIC.get(c, c) for c in lower))
    if "й" not in lower:
        return (spelled,)
    return spelled, _plain("".join("i" if c == "й" else _CYRILLIC.get(c, c) for c in lower))


def is_first_name(word: str) -> bool:
    """Whether ``word`` is a first name counted for many people (:data:`FIRST_NAME_COUNT`) in
    ``nomquamgender``'s name data, in one of its Latin spellings (:func:`ascii_names`)."""
    names = _first_names()
    return any(n in names for n in ascii_names(word))
