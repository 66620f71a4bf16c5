"""kb: the inter-language entity database, the embedded knowledge base and the entity vocabulary.

``kb`` knows nothing of models. Public names:

- :class:`EntityDB` — read (and, with :meth:`EntityDB.create`, write) an entity database;
- :func:`default_db` / :func:`build_embedded` — the embedded CLDR + GeoNames knowledge base;
- :class:`EntityVocab` — the multilingual entity vocabulary (build, import, export, look-up);
- :func:`parse_template` — validate a relation template with [X] and [Y];
- :data:`MLUKE_LANGUAGES` — the 24 mLUKE languages;
- :class:`MlukeError` and its subclasses.
"""

from kb.db import Entity, EntityDB, Fact, Match
from kb.embedded import build_embedded, default_db, embedded_path
from kb.errors import (
    KbFormatError,
    MlukeError,
    NotFoundError,
    OutputExistsError,
    SchemaVersionError,
    TemplateError,
    UnknownLanguageError,
)
from kb.languages import MLUKE_LANGUAGES
from kb.templates import Template, parse_template
from kb.vocab import EntityVocab, VocabEntry

__all__ = [
    "MLUKE_LANGUAGES",
    "Entity",
    "EntityDB",
    "EntityVocab",
    "Fact",
    "KbFormatError",
    "Match",
    "MlukeError",
    "NotFoundError",
    "OutputExistsError",
    "SchemaVersionError",
    "Template",
    "TemplateError",
    "UnknownLanguageError",
    "VocabEntry",
    "build_embedded",
    "default_db",
    "embedded_path",
    "parse_template",
]
