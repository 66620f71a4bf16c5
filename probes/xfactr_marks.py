"""X-FACTR's template marks, filled per language by the rules of X-FACTR's probe (Jiang et al., EMNLP 2020).

A template of X-FACTR's ``TREx_prompts.csv`` carries, beside ``[X]`` and ``[Y]``, marks that agree with the subject
or the object::

    [DEF;X] [X.Nom] γεννήθηκε [PREPDEF;Y] [Y.Acc] .           Greek: articles by gender, number and case
    [X] est [né;X-Gender=MASC|née;X-Gender=FEM] [PREPLOC;Y] [Y] .   French: a choice, a preposition
    [X.Gen] resmi dili [Y;be] .                                Turkish: the copula suffix on the answer

Each entity gets a gender and a number: the gender of ``mTRExf_gender.txt`` (``male``, ``female``, else none),
for an entity without one a guess from the ending of its name (fr, es, el, ru), then rules on its instance-of classes
(``mTRExf_instanceof.txt``; a class matches when its word occurs in the entity's line, as X-FACTR tests it, so
``human settlement`` counts as ``human``). The tables (articles by gender, number, case; endings; class rules) are
data: ``probes/data/xfactr_marks.json``, with their origin, or the ``lang_resource/<lang>/articles.txt`` that
X-FACTR's folder ships, which replace the embedded ones for their language.

The marks and what they become:

- choices ``[w1;X-Gender=MASC|w2;X-Gender=FEM|w3;X-Number=PL]``: an option of the entity's number when it is
  plural, else of its gender, else of its number, else the first;
- articles and prepositions: French ``ARTDEF`` (only before a country, ``l'`` before a small vowel), ``ARTIND``,
  ``PREPDEF``, ``PREPDEF-à`` (``de``, ``à`` before any other name), ``PREPLOC`` (``à`` a city, else ``en``);
  Greek ``DEF``, ``DEF.Gen``, ``PREPDEF``, ``INDEF`` by gender, number and the case of the entity's mark
  (``[DEF;Y.Fem]`` feminine); Spanish ``DEF`` and ``ART;X-Gender``;
- case marks ``[X.Gen]``, ``[Y.IN+ESS]``: the placeholder. The name is not inflected: X-FACTR inflects it with
  trained inflection models (``unimorph_inflect``) in el, ru, tr, hu and bn, and :attr:`Filled.unresolved` says
  ``case`` there; Marathi's ``[Y.LOC]`` is a suffix (``त``) on the answer, as in X-FACTR;
- Turkish ``[X;be]``/``[Y;be]``: the copula (``'dır``, ``'tir``, ... by the last vowel and letter) on the
  subject, or on the answer, which must then read so;
- Bengali's ``[human: ... ; non-human: ...]``: the first word for a human (an entity without gender whose classes
  say ``human``), else the second.

The object's marks follow the gold object, as in X-FACTR (the article before ``[Y]`` is the gold object's).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kb.errors import InputFormatError

_MARK = re.compile(r"\[[^\[\]]*\]")
_CASE = re.compile(r"\[([XY])((?:\.[A-Za-z+]+)+)\]")
_ARTICLE = re.compile(r"\[([^\[\];|\s]+);([XY])(?:\.([A-Za-z]+)|-Gender)?\]")
_HUMAN = re.compile(r"\[\s*human:\s*([^;\]]*?)\s*;\s*non-human:\s*([^\]]*?)\s*\]")
_GENDERS = {"MASC", "FEM", "NEUT"}


@dataclass(frozen=True)
class Entity:
    """An entity as the marks see it: its name in the language, its gender (``MASC``, ``FEM`` or None, from
    ``mTRExf_gender.txt``) and its instance-of line (``mTRExf_instanceof.txt``'s columns joined by commas)."""

    name: str
    gender: str | None = None
    types: str = ""


@dataclass(frozen=True)
class Features:
    """What the marks agree with: gender (``MASC``, ``FEM``, ``NEUT``), number (``SG``, ``PL``) and the classes
    French prepositions and Bengali articles ask about."""

    gender: str = "NEUT"
    number: str = "SG"
    country: bool = False
    city: bool = False
    human: bool = False


@dataclass(frozen=True)
class Filled:
    """A template with its marks filled: only ``[X]`` and ``[Y]`` left; the subject's text at ``[X]``; the form
    the answer must take (``be``, ``LOC`` or empty) and what could not be done (``case``, ``article``)."""

    template: str
    subject: str
    answer_form: str = ""
    unresolved: tuple[str, ...] = ()


@cache
def embedded_rules() -> dict[str, Any]:
    """``probes/data/xfactr_marks.json``: per language its articles, endings and class rules, and their origin."""
    text = resources.files("probes").joinpath("data/xfactr_marks.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def read_articles(path: Path) -> dict[str, str]:
    """An X-FACTR ``lang_resource/<lang>/articles.txt``: lines ``word<TAB>KEY`` -> {KEY: word}."""
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        word, tab, key = line.strip("\n").partition("\t")
        if not tab or not key.strip():
            raise InputFormatError(f"{path}, line {n}: expected 'word<TAB>KEY' (e.g. 'du<TAB>PREPDEF;MASC;SG')")
        out[key.strip()] = word.strip()
    return out


def _has_latin(text: str) -> bool:
    return any(c.isalpha() and "LATIN" in unicodedata.name(c, "") for c in text)


class Marks:
    """The rules of one language (see the module docs); ``articles`` replace the embedded article table."""

    def __init__(self, lang: str, articles: Mapping[str, str] | None = None) -> None:
        self.lang = lang
        self.rules: dict[str, Any] = dict(embedded_rules()["languages"].get(lang, {}))
        self.articles: dict[str, str] = dict(self.rules.get("articles", {}))
        self.articles_source = "probes/data/xfactr_marks.json" if self.articles else ""
        if articles:
            self.articles.update(articles)

    @classmethod
    def for_folder(cls, data: Path, lang: str) -> Marks:
        """The rules of ``lang``, with the article table of X-FACTR's folder when it ships one
        (``data/lang_resource/<lang>/articles.txt``, looked for beside and above ``data``)."""
        for folder in (data, data.parent):
            path = folder / "lang_resource" / lang / "articles.txt"
            if path.is_file():
                marks = cls(lang, read_articles(path))
                marks.articles_source = str(path)
                return marks
        return cls(lang)

    def features(self, entity: Entity, side: str = "X") -> Features:
        """The gender, number and classes of ``entity`` as subject (``X``) or object (``Y``)."""
        gender = entity.gender if entity.gender in _GENDERS else "NEUT"
        unknown = gender == "NEUT"
        values: dict[str, Any] = {"gender": gender, "number": "SG"}
        endings = self.rules.get("endings")
        name = entity.name.strip()
        if unknown and endings and name:
            word = name.split(" ")[0] if endings["word"] == "first" else name
            values["gender"] = next(
                (g for g, ends in endings["rules"] if any(word.endswith(e) for e in ends)), endings["default"]
            )
        types = self.rules.get("types")
        if types and entity.types and (unknown if types["when"] == "unknown" else values["gender"] == "NEUT"):
            for group in types["groups"]:
                for words, action in group:
                    if any(w in entity.types for w in words):
                        action = dict(action)
                        if name and name[-1] in action.pop("unless_last", ()):
                            action.pop("gender", None)
                        values.update(action)
                        break
        plural = self.rules.get("plural_endings", {}).get(side, ())
        if any(name.endswith(e) for e in plural):
            values.update(gender="FEM", number="PL")
        return Features(**values)

    def copula(self, word: str) -> str:
        """Turkish: ``word`` with the copula suffix ``-dir`` in its harmony (``Ankara'dır``, ``Paris'tir``); every
        entity is singular in X-FACTR's Turkish."""
        rule = self.rules.get("copula") or embedded_rules()["languages"]["tr"]["copula"]
        last = next((c for c in reversed(word) if c in rule["vowels"]), None)
        vowel = rule["vowels"][last] if last else rule["default"]
        consonant = "t" if word and word[-1] in rule["voiceless"] else "d"
        return f"{word}'{consonant}{vowel}r"

    def answer(self, form: str, name: str) -> str:
        """``name`` in the form the answer must take (:attr:`Filled.answer_form`)."""
        if form == "be":
            return self.copula(name)
        suffix = self.rules.get("suffixes", {}).get(form)
        if suffix and not (_has_latin(name) or name.isupper()):
            return name + suffix
        return name

    def fill(self, template: str, subject: Entity, obj: Entity) -> Filled:
        """``template`` with its marks filled for this subject and (gold) object."""
        feats = {"X": self.features(subject, "X"), "Y": self.features(obj, "Y")}
        unresolved: list[str] = []
        cases: dict[str, str] = {}
        subject_text, answer_form = subject.name, ""

        def case_mark(m: re.Match[str]) -> str:
            who, parts = m.group(1), m.group(2).strip(".").split(".")
            case = parts[-1].upper()
            cases[who] = case
            for p in parts[:-1]:
                if p.upper() in _GENDERS:
                    feats[who] = replace(feats[who], gender=p.upper())
            if case != "NOM":
                if case in self.rules.get("suffixes", {}) and who == "Y":
                    nonlocal answer_form
                    answer_form = case
                elif self.rules.get("inflects_case"):
                    unresolved.append("case")
            return f"[{who}]"

        text = _CASE.sub(case_mark, template)
        if "[X;be]" in text:
            text, subject_text = text.replace("[X;be]", "[X]"), self.copula(subject.name)
        if "[Y;be]" in text:
            text, answer_form = text.replace("[Y;be]", "[Y]"), "be"
        text = _HUMAN.sub(lambda m: m.group(1) if feats["X"].human else m.group(2), text)

        def other_mark(m: re.Match[str]) -> str:
            mark = m.group(0)
            if mark in ("[X]", "[Y]"):
                return mark
            if "|" in mark and ("-Gender=" in mark or "-Number=" in mark):
                return _choose(mark[1:-1], feats)
            art = _ARTICLE.fullmatch(mark)
            if not art:
                return mark
            kind, who, feature = art.group(1), art.group(2), art.group(3)
            rest = text[m.end() :].lstrip()
            following = subject.name if rest.startswith("[X]") else "" if rest.startswith("[Y]") else rest
            word = self._article(kind, who, feature, feats[who], cases.get(who, "NOM"), following)
            if word is None:
                unresolved.append("article")
                return ""
            return word

        text = _MARK.sub(other_mark, text)
        text = re.sub(r"\s{2,}", " ", text).strip()
        return Filled(text, subject_text, answer_form, tuple(dict.fromkeys(unresolved)))

    def _article(self, kind: str, who: str, feature: str | None, f: Features, case: str, following: str) -> str | None:
        """The word of an article or preposition mark; "" to drop it, None when the tables have none."""
        table = self.articles
        if self.lang == "fr":
            if kind == "ARTDEF":
                if not f.country:
                    return ""
                if following[:1] in self.rules.get("vowels", ()):
                    return table.get("ARTDEF;VOWEL")
                return table.get(f"ARTDEF;{f.gender};SG" if f.number == "SG" else "ARTDEF;PL")
            if kind in ("PREPDEF", "PREPDEF-à"):
                if not f.country:
                    return table.get(f"{kind};PROPN")
                return table.get(f"{kind};{f.gender};SG" if f.number == "SG" else f"{kind};PL")
            if kind == "ARTIND":
                return table.get(f"ARTIND;{f.gender};SG" if f.number == "SG" else "ARTIND;PL")
            if kind == "PREPLOC":
                return table.get("PREPLOC;CITY" if f.city else "PREPLOC;COUNTRY")
            return None
        if self.lang == "el":
            gender = "FEM" if feature == "Fem" else f.gender
            base, _, forced = kind.partition(".")
            return table.get(f"ART;{base};{gender};{f.number};{forced.upper() or case}")
        if self.lang == "es":
            return table.get(f"{kind};{f.gender}")
        return None


def _choose(body: str, feats: Mapping[str, Features]) -> str:
    """A choice mark's word for the entity it names (see the module docs)."""
    options = []
    for option in body.split("|"):
        word, _, cond = option.partition(";")
        who, _, feature = cond.strip().partition("-")
        name, _, value = feature.partition("=")
        options.append((word.strip(), who, name, value))
    f = feats.get(options[0][1], Features())
    own = {"Gender": f.gender, "Number": f.number}
    order = ["Number", "Gender", "Number"] if f.number == "PL" else ["Gender", "Number"]
    for wanted in order:
        for word, _who, name, value in options:
            if name == wanted and own[name] == value:
                return word
    return options[0][0]
