"""The entity database: one SQLite file mapping Wikipedia articles in many languages onto one entity
inventory keyed by Wikidata QIDs (or source-prefixed keys).

- ``database``: :class:`EntityDB`, the read side; ``rows``: its row types :class:`Entity`, :class:`Match`,
  :class:`Fact`; ``writer``: :class:`EntityDBWriter`, what :meth:`EntityDB.create` yields;
- ``schema``: the tables and key checks; ``sqlite``: the SQLite plumbing shared with the other
  mluke files (read-only opening with format checks, atomic builds);
- ``titles``: MediaWiki title normalisation; ``templates``: cloze templates with [X] and [Y];
- ``relations``: which relation a user's template expresses (:func:`match_relation`).
"""

from kb.db.database import EntityDB
from kb.db.relations import RelationMatch, match_relation
from kb.db.rows import Entity, Fact, Match
from kb.db.sqlite import chunked
from kb.db.templates import Template, parse_template
from kb.db.writer import EntityDBWriter

__all__ = [
    "Entity",
    "EntityDB",
    "EntityDBWriter",
    "Fact",
    "Match",
    "RelationMatch",
    "Template",
    "chunked",
    "match_relation",
    "parse_template",
]
