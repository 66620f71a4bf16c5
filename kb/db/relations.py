"""Relations of a kb seen from a user's template: which relation a cloze template expresses,
and what the kb holds for each relation (label, templates, facts)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from kb.db.database import EntityDB
from kb.db.templates import Template, parse_template
from kb.errors import MlukeError, NotFoundError, option

_PID_RE = re.compile(r"^P[1-9][0-9]*$")
#: Below this similarity to the relation's own templates, a template given with an explicit
#: relation gets a note asking whether that relation was meant.
MISMATCH_SIMILARITY = 0.5


def template_key(text: str) -> str:
    """The form templates are compared in: case, spacing and final punctuation do not matter
    ("[X] is in [Y] ." ~ "[x] is in [y]")."""
    return re.sub(r"[\s.。।!?！？]+$", "", " ".join(text.split()).casefold())


def similarity(a: str, b: str) -> float:
    """How alike two templates read, 0 to 1 (a character-level ratio; [X] and [Y] count as one character)."""
    def key(text: str) -> str:
        return template_key(text).replace("[x]", "\x01").replace("[y]", "\x02")

    return difflib.SequenceMatcher(None, key(a), key(b), autojunk=False).ratio()


@dataclass
class RelationMatch:
    """The relation a template was matched to and the template to use in the query language."""

    relation: str | None
    template: Template
    notes: list[str] = field(default_factory=list)


def check_relation(db: EntityDB, pid: str) -> str:
    """``pid`` if this kb knows the relation (a property row, a template or a fact), else a clear error."""
    if not isinstance(pid, str) or not _PID_RE.match(pid):
        raise MlukeError(f"relation {pid!r}: expected a Wikidata property id such as 'P36'")
    if pid in db.properties() or db.has_templates(pid) or db.has_facts(pid):
        return pid
    raise NotFoundError(f"relation {pid} is unknown to this kb ({db.path}): it has no label, template or fact "
                        f"for it. {relation_overview(db)}")


def match_relation(db: EntityDB, template: str, lang: str, relation: str | None = None) -> RelationMatch:
    """Find the relation ``template`` expresses and the template to use in ``lang``.

    With ``relation`` given, the user's template is used as it is, with a note
    when it reads very differently from that relation's own templates in
    ``lang`` and English. Otherwise the template is matched exactly (see
    :func:`template_key`) against the kb's templates in every language; an
    English (or other) template with a kb template in ``lang`` is replaced by
    it, and the notes say so. No match gives ``relation=None``.
    """
    given = parse_template(template)
    if relation is not None:
        check_relation(db, relation)
        own = {l: t for (p, l), t in db.templates().items() if p == relation and l in (lang, "en")}
        best = max((similarity(template, t) for t in own.values()), default=1.0)
        notes = []
        if best < MISMATCH_SIMILARITY:
            shown = " / ".join(repr(t) for _, t in sorted(own.items(), key=lambda kv: kv[0] != lang))
            notes.append(f"the template {template!r} reads very differently from {describe(db, relation)}'s own "
                         f"({shown}); is {relation} the relation you meant?")
        return RelationMatch(relation, given, notes)
    wanted = template_key(template)
    for (pid, tlang), text in sorted(db.templates().items()):
        if template_key(text) != wanted:
            continue
        if tlang == lang:
            return RelationMatch(pid, given)
        try:
            local = db.template(pid, lang)
        except NotFoundError:
            return RelationMatch(pid, given, [f"matched {pid} in {tlang!r} but the kb has no {lang!r} template; "
                                              "using the given one"])
        return RelationMatch(pid, local, [f"matched {describe(db, pid)} from the {tlang!r} template; using the "
                                          f"{lang!r} template {local.text!r}"])
    return RelationMatch(None, given)


def describe(db: EntityDB, pid: str, lang: str = "en") -> str:
    """``"P36 (capital)"``: the id with its label in ``lang`` (else English) when the kb has one."""
    label = db.property_label(pid, lang) or db.property_label(pid, "en")
    return f"{pid} ({label})" if label else pid


def relation_overview(db: EntityDB) -> str:
    """One sentence listing the relations the kb has templates for, with labels and whether it has facts."""
    pids = sorted({p for p, _ in db.templates()}, key=lambda p: int(p[1:]))
    if not pids:
        return "This kb has no relation templates."
    parts = [f"{describe(db, p)}{'' if db.has_facts(p) else ', no facts'}" for p in pids]
    return f"This kb has templates for {len(pids)} relations: {'; '.join(parts)}."


def no_match_error(db: EntityDB, template: str) -> MlukeError:
    """The error for a template that matches no relation, naming what the kb has and what to do."""
    return MlukeError(
        f"the template {template!r} matches no relation template of this kb ({db.path}). "
        f"{relation_overview(db)} Pass {{relation}} to name the relation, or give both subjects and candidates.",
        options={"relation": option("relation", "P..")})
