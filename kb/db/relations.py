"""Relations of a kb seen from a user's template: which relation a cloze template expresses,
and what the kb holds for each relation (label, templates, facts).

A template matches a relation:

1. exactly, when it equals one of the relation's templates in any language after
   normalising case, Unicode forms, punctuation and spacing (:func:`template_key`);
2. otherwise approximately, when the closest template of the query language or of
   English reads alike (:class:`TemplateSpace`, similarity at least :data:`MATCH_SIMILARITY`, with
   [X] and [Y] in the same order); the notes say which relation was assumed, its
   template, the score and the runner-up.

Similarity is the cosine of character 3-gram vectors of the templates' words (the
placeholders left out), each 3-gram weighted by its inverse document frequency
over the templates of that language, so words every template has ("is", "of",
"の", "です") count little and the words that name the relation count most.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kb.db.database import EntityDB
from kb.db.templates import Template, parse_template
from kb.errors import MlukeError, NotFoundError, Option, OptionError, option

_PID_RE = re.compile(r"^P[1-9][0-9]*$")
#: Below this similarity to the relation's own templates, a template given with an explicit
#: relation gets a note asking whether that relation was meant.
MISMATCH_SIMILARITY = 0.3
#: The least similarity at which the closest template's relation is assumed.
MATCH_SIMILARITY = 0.4
_X, _Y = "\x01", "\x02"


def _normal(text: str) -> str:
    """Case-folded NFKC text with [X]/[Y] as single characters, punctuation as spaces, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("[x]", _X).replace("[y]", _Y)
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


def template_key(text: str) -> str:
    """The form templates are matched exactly in: case, Unicode forms, punctuation and spacing do
    not matter ("[X] is in [Y] ." ~ "[x] is in [y]"; "[X]の首都は[Y]です。" ~ "[X]の首都は[Y]です")."""
    return _normal(text).replace(" " + _X, _X).replace(_X + " ", _X).replace(" " + _Y, _Y).replace(_Y + " ", _Y)


def _grams(text: str) -> Counter[str]:
    words = " " + " ".join(text.replace(_X, " ").replace(_Y, " ").split()) + " "
    return Counter(words[i : i + 3] for i in range(len(words) - 2))


def _x_first(key: str) -> bool:
    return key.index(_X) < key.index(_Y)


class TemplateSpace:
    """The templates of some languages as weighted 3-gram vectors, for :meth:`closest` look-ups."""

    def __init__(self, templates: Mapping[tuple[str, str], str], languages: tuple[str, ...]) -> None:
        self.entries = [
            (pid, lang, text, _normal(text)) for (pid, lang), text in sorted(templates.items()) if lang in languages
        ]
        self.idf: dict[str, dict[str, float]] = {}
        for lang in languages:
            docs = [_grams(norm) for _, l, _, norm in self.entries if l == lang]
            df = Counter(g for d in docs for g in d)
            self.idf[lang] = {g: math.log((len(docs) + 1) / (n + 0.5)) for g, n in df.items()}
            self.idf[lang][""] = math.log((len(docs) + 1) / 0.5)  # a 3-gram no template has
        self.vectors = [self._vector(norm, lang) for _, lang, _, norm in self.entries]

    def _vector(self, norm: str, lang: str) -> dict[str, float]:
        idf = self.idf[lang]
        return {g: n * idf.get(g, idf[""]) for g, n in _grams(norm).items()}

    def closest(self, text: str) -> list[tuple[float, str, str, str]]:
        """``[(similarity, pid, lang, template)]``, best first; a template with [X] and [Y] in the
        other order scores 0 (it would be the inverse relation)."""
        norm = _normal(text)
        out = []
        for (pid, lang, template, other), vec in zip(self.entries, self.vectors):
            score = 0.0 if _x_first(norm) != _x_first(other) else _cosine(self._vector(norm, lang), vec)
            out.append((score, pid, lang, template))
        return sorted(out, key=lambda r: (-r[0], r[1], r[2]))


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


@dataclass
class RelationMatch:
    """The relation a template was matched to and the template to use in the query language."""

    relation: str | None
    template: Template
    notes: list[str] = field(default_factory=list)


def check_relation(db: EntityDB, pid: str, extra: Mapping[tuple[str, str], str] | None = None) -> str:
    """``pid`` if this kb (or ``extra`` templates) knows the relation, else a clear error."""
    if not isinstance(pid, str) or not _PID_RE.match(pid):
        raise OptionError(f"relation {pid!r}: expected a Wikidata property id such as 'P36'")
    if pid in db.properties() or db.has_templates(pid) or db.has_facts(pid) or any(p == pid for p, _ in extra or {}):
        return pid
    raise NotFoundError(
        f"relation {pid} is unknown to this kb ({db.path}): it has no label, template or fact "
        f"for it. {relation_overview(db)}"
    )


def match_relation(
    db: EntityDB,
    template: str,
    lang: str,
    relation: str | None = None,
    templates: Mapping[tuple[str, str], str] | None = None,
) -> RelationMatch:
    """Find the relation ``template`` expresses and the template to use in ``lang`` (see the module docs).

    ``templates``: ``{(pid, lang): text}`` used beside the kb's for this call (and
    winning over them). With ``relation`` given, the user's template is used as it
    is, with a note when it reads very differently from that relation's own
    templates in ``lang`` and English. A template matched in another language is
    replaced by the relation's template in ``lang`` when there is one (the notes say
    so). No match gives ``relation=None``.
    """
    given = parse_template(template)
    known = {**db.templates(), **(templates or {})}
    if relation is not None:
        check_relation(db, relation, templates)
        own = {l: t for (p, l), t in known.items() if p == relation and l in (lang, "en")}
        space = TemplateSpace({k: v for k, v in known.items() if k[1] in (lang, "en")}, (lang, "en"))
        best = max((s for s, p, _, _ in space.closest(template) if p == relation), default=1.0 if not own else 0.0)
        notes = []
        if best < MISMATCH_SIMILARITY:
            shown = " / ".join(repr(t) for _, t in sorted(own.items(), key=lambda kv: kv[0] != lang))
            notes.append(
                f"the template {template!r} reads very differently from {describe(db, relation)}'s own "
                f"({shown}); is {relation} the relation you meant?"
            )
        return RelationMatch(relation, given, notes)
    wanted = template_key(template)
    for (pid, tlang), text in sorted(known.items()):
        if template_key(text) == wanted:
            return _in_language(db, pid, tlang, lang, given, known, "matched")
    space = TemplateSpace(known, tuple(dict.fromkeys((lang, "en"))))
    ranked = space.closest(template)
    if not ranked or ranked[0][0] < MATCH_SIMILARITY:
        return RelationMatch(None, given)
    score, pid, tlang, text = ranked[0]
    runner = next((r for r in ranked[1:] if r[1] != pid), None)
    found = _in_language(db, pid, tlang, lang, given, known, "assumed")
    found.notes.insert(
        0,
        f"no template of this kb is {template!r}; assumed {describe(db, pid)}, whose {tlang!r} "
        f"template {text!r} reads closest (similarity {score:.2f}"
        + (f"; next: {describe(db, runner[1])} {runner[0]:.2f}" if runner else "")
        + "); choose another with relation= (CLI: --relation)",
    )
    return found


def _in_language(
    db: EntityDB, pid: str, tlang: str, lang: str, given: Template, known: Mapping[tuple[str, str], str], how: str
) -> RelationMatch:
    """The match of ``pid`` found through a ``tlang`` template, using the relation's ``lang`` template."""
    if tlang == lang:
        return RelationMatch(pid, given)
    local = known.get((pid, lang))
    if local is None:
        return RelationMatch(
            pid, given, [f"{how} {pid} in {tlang!r} but the kb has no {lang!r} template; using the given one"]
        )
    return RelationMatch(
        pid,
        parse_template(local),
        [f"{how} {describe(db, pid)} from the {tlang!r} template; using the {lang!r} template {local!r}"],
    )


def describe(db: EntityDB, pid: str, lang: str = "en") -> str:
    """``"P36 (capital)"``: the id with its label in ``lang`` (else English) when the kb has one."""
    label = db.property_label(pid, lang) or db.property_label(pid, "en")
    return f"{pid} ({label})" if label else pid


def relation_overview(db: EntityDB) -> str:
    """One sentence listing the relations the kb has templates for, with labels and whether it has facts."""
    pids = sorted({p for p, _ in db.templates()}, key=lambda p: int(p[1:]))
    if not pids:
        return "This kb has no relation templates."
    with_facts = [p for p in pids if db.has_facts(p)]
    parts = [describe(db, p) + ("" if p in with_facts else ", no facts") for p in pids]
    facts = f" ({len(with_facts)} with facts here)" if len(with_facts) < len(pids) else ""
    return f"This kb has templates for {len(pids)} relations{facts}: {'; '.join(parts)}."


def no_match_error(db: EntityDB, template: str) -> MlukeError:
    """The error for a template that matches no relation, naming what the kb has and what to do."""
    return MlukeError(
        f"the template {template!r} matches no relation template of this kb ({db.path}), not even roughly. "
        f"{relation_overview(db)} Pass {{relation}} to name the relation, or give {{subjects}} to ask about them "
        "without one (answers then come from the candidates you give, or the model's whole entity vocabulary).",
        options={"relation": option("relation", "P.."), "subjects": Option("subjects=[...]", "--subject NAME")},
    )
