"""kb: the inter-language entity database, the entity vocabulary and mention detection.

``kb`` knows nothing of models. Public names:

- :class:`EntityDB` — read an entity database (:meth:`EntityDB.create` writes one);
  :func:`open_db` — the given database or the default embedded one; :func:`default_db`;
- :func:`lookup` — what a name refers to, or one entity with its facts;
- :func:`build` — build a database: the embedded one (CLDR + GeoNames) or one from the Wikidata and
  Wikipedia dumps (:func:`build_embedded`, :func:`build_from_dumps`); :func:`add_entities` — a few
  entities from the live Wikidata API; :func:`add_templates` — cloze templates (e.g. mLAMA's) into a
  database; :class:`WikiCorpus` — the page texts a dump build leaves;
- :class:`EntityVocab` — the multilingual entity vocabulary (build, import, export, look-up);
- :class:`MentionIndex` — kb names found in text, with candidate entities;
- :func:`parse_template` — validate a relation template with [X] and [Y];
- :data:`MLUKE_LANGUAGES`, :data:`MLAMA_PROPERTIES`; :class:`MlukeError`, the base of every error
  (all of them in :mod:`kb.errors`).

Sub-packages, by job: :mod:`kb.db` (the database), :mod:`kb.mentions` (surfaces, candidates, the
mention index), :mod:`kb.sources` (the embedded world, dump readers, building); shared modules:
:mod:`kb.errors`, :mod:`kb.files` (the output policy), :mod:`kb.languages`, :mod:`kb.cache`.
"""

from typing import TYPE_CHECKING, Any

from kb import errors
from kb.db import EntityDB, parse_template
from kb.entities import lookup
from kb.errors import MlukeError
from kb.languages import MLUKE_LANGUAGES
from kb.mentions import MentionIndex
from kb.sources import (
    MLAMA_PROPERTIES,
    WikiCorpus,
    add_entities,
    add_templates,
    build,
    build_embedded,
    build_from_dumps,
    default_db,
    open_db,
)
from kb.vocab import EntityVocab

if TYPE_CHECKING:  # the names of _MOVED below, visible to IDEs and type checkers
    from kb.db import Entity as Entity, Fact as Fact, Match as Match, Template as Template
    from kb.errors import (
        InputFormatError as InputFormatError,
        KbFormatError as KbFormatError,
        NotFoundError as NotFoundError,
        OptionError as OptionError,
        OutputError as OutputError,
        OutputExistsError as OutputExistsError,
        SchemaVersionError as SchemaVersionError,
        TemplateError as TemplateError,
        TextInputError as TextInputError,
        UnknownLanguageError as UnknownLanguageError,
    )
    from kb.mentions import (
        AnchorCandidates as AnchorCandidates,
        Candidate as Candidate,
        CandidateGenerator as CandidateGenerator,
        CombinedCandidates as CombinedCandidates,
        Mention as Mention,
        NameCandidates as NameCandidates,
        surface_key as surface_key,
    )
    from kb.sources import (
        AddReport as AddReport,
        BuildReport as BuildReport,
        CorpusLink as CorpusLink,
        CorpusPage as CorpusPage,
        embedded_path as embedded_path,
    )
    from kb.vocab import VocabEntry as VocabEntry

__all__ = [
    "MLAMA_PROPERTIES",
    "MLUKE_LANGUAGES",
    "EntityDB",
    "EntityVocab",
    "MentionIndex",
    "MlukeError",
    "WikiCorpus",
    "add_entities",
    "add_templates",
    "build",
    "build_embedded",
    "build_from_dumps",
    "default_db",
    "errors",
    "lookup",
    "open_db",
    "parse_template",
]

#: Names ``kb`` exported before its sub-packages existed, still reachable as ``kb.<name>`` (not in
#: ``__all__``; their homes are the modules named here).
_MOVED = {
    **dict.fromkeys((name for name in errors.__all__ if name not in __all__), "kb.errors"),
    **dict.fromkeys(("Entity", "Fact", "Match", "Template"), "kb.db"),
    **dict.fromkeys(
        (
            "AnchorCandidates",
            "Candidate",
            "CandidateGenerator",
            "CombinedCandidates",
            "Mention",
            "NameCandidates",
            "surface_key",
        ),
        "kb.mentions",
    ),
    **dict.fromkeys(("AddReport", "BuildReport", "CorpusLink", "CorpusPage", "embedded_path"), "kb.sources"),
    "VocabEntry": "kb.vocab",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'kb' has no attribute {name!r}")
