"""kb: the inter-language entity database, the embedded knowledge base and the entity vocabulary.

``kb`` knows nothing of models. Public names:

- :class:`EntityDB` — read (and, with :meth:`EntityDB.create`, write) an entity database;
- :func:`default_db` / :func:`build_embedded` — the embedded CLDR + GeoNames knowledge base;
- :func:`build_from_dumps` — a database (and page-text corpus) from the Wikidata JSON dump and
  Wikipedia XML dumps, in parallel and resumable; :class:`WikiCorpus` reads the corpus;
- :func:`add_entities` — add or refresh a few entities from the live Wikidata API;
- :class:`EntityVocab` — the multilingual entity vocabulary (build, import, export, look-up);
- :class:`MentionIndex` — find kb surface forms in text (:class:`Mention`) with their candidates;
  :class:`CandidateGenerator` and its sources :class:`AnchorCandidates`, :class:`NameCandidates`,
  :class:`CombinedCandidates` give :class:`Candidate` entities with a prior p(e|m);
  :func:`surface_key` is the normalised form names and text are compared in;
- :func:`parse_template` — validate a relation template with [X] and [Y];
- :data:`MLUKE_LANGUAGES` — the 24 mLUKE languages;
- :class:`MlukeError` and its subclasses.
"""

from kb.building import build, open_db
from kb.candidates import AnchorCandidates, Candidate, CandidateGenerator, CombinedCandidates, NameCandidates
from kb.corpus import CorpusLink, CorpusPage, WikiCorpus
from kb.db import Entity, EntityDB, Fact, Match
from kb.dump_build import BuildReport, build_from_dumps
from kb.embedded import build_embedded, default_db, embedded_path
from kb.errors import (
    InputFormatError,
    KbFormatError,
    MlukeError,
    NotFoundError,
    OptionError,
    OutputExistsError,
    SchemaVersionError,
    TemplateError,
    TextInputError,
    UnknownLanguageError,
)
from kb.languages import MLUKE_LANGUAGES
from kb.lookups import lookup
from kb.mentions import Mention, MentionIndex
from kb.surfaces import surface_key
from kb.templates import Template, parse_template
from kb.vocab import EntityVocab, VocabEntry
from kb.wikidata_api import AddReport, add_entities
from kb.wikidata_dump import MLAMA_PROPERTIES

__all__ = [
    "MLAMA_PROPERTIES",
    "MLUKE_LANGUAGES",
    "AddReport",
    "AnchorCandidates",
    "BuildReport",
    "Candidate",
    "CandidateGenerator",
    "CombinedCandidates",
    "CorpusLink",
    "CorpusPage",
    "Entity",
    "EntityDB",
    "EntityVocab",
    "Fact",
    "InputFormatError",
    "KbFormatError",
    "Match",
    "Mention",
    "MentionIndex",
    "MlukeError",
    "NameCandidates",
    "NotFoundError",
    "OptionError",
    "OutputExistsError",
    "SchemaVersionError",
    "Template",
    "TemplateError",
    "TextInputError",
    "UnknownLanguageError",
    "VocabEntry",
    "WikiCorpus",
    "add_entities",
    "build",
    "build_embedded",
    "build_from_dumps",
    "default_db",
    "embedded_path",
    "lookup",
    "open_db",
    "parse_template",
    "surface_key",
]
