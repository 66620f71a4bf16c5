"""``kb.build``: one entry point for building an entity database, from packaged data or from the dumps
(what ``mluke kb build`` does)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kb.errors import Option, OptionError, OutputExistsError, flag
from kb.files import string_list

if TYPE_CHECKING:
    from kb.sources.assembly import BuildReport

_OPTIONS = {
    "embedded": flag("embedded"),
    "wikidata": Option("wikidata=", "--wikidata"),
    "wikipedia": Option("wikipedia=", "--wikipedia"),
    "output": Option("output=", "-o/--output"),
}


@dataclass(frozen=True)
class EmbeddedReport:
    """What an embedded build wrote."""

    output: Path
    entities: int
    facts: int
    languages: int
    kept: bool = False  #: the cached embedded kb already had these settings and was left as it was

    def summary(self) -> str:
        counts = f"{self.entities:,} entities, {self.facts:,} facts, {self.languages} languages"
        if self.kept:
            return f"kept {self.output} (already built with these settings: {counts}); --overwrite rebuilds it"
        return f"wrote {self.output}: {counts}"


def build(
    output: str | os.PathLike[str] | None = None,
    *,
    embedded: bool = False,
    wikidata: str | os.PathLike[str] | None = None,
    wikipedia: Iterable[str | os.PathLike[str]] = (),
    languages: str | Iterable[str] | None = None,
    properties: str | Iterable[str] | None = None,
    all_items: bool = False,
    corpus: str | os.PathLike[str] | None = None,
    keep_corpus: bool = True,
    workers: int | None = None,
    overwrite: bool = False,
    restart: bool = False,
    progress: bool = True,
    min_city_population: int | None = None,
) -> BuildReport | EmbeddedReport:
    """Build an entity database at ``output``: the embedded one (``embedded=True``; default output: the
    cache file the library uses, which is refreshed) or one from the Wikidata dump and Wikipedia dumps
    (``wikidata=``; see :func:`kb.build_from_dumps` for the options). Returns a report with ``summary()``.
    """
    from kb.cache import remove_orphaned_indexes
    from kb.languages import MLUKE_LANGUAGES
    from kb.sources.dumps import build_from_dumps
    from kb.sources.embedded import (
        DEFAULT_MIN_CITY_POPULATION,
        build_embedded,
        embedded_path,
    )
    from kb.sources.wikidata import MLAMA_PROPERTIES

    wikipedia = list(wikipedia)
    languages, properties = string_list(languages, "languages"), string_list(properties, "properties")
    langs = tuple(languages) if languages else MLUKE_LANGUAGES
    if embedded and (wikidata or wikipedia):
        raise OptionError(
            "{embedded} builds from packaged data: do not combine it with {wikidata} or {wikipedia}", options=_OPTIONS
        )
    if wikipedia and not wikidata:
        raise OptionError(
            "{wikipedia} needs {wikidata}: titles are mapped to entities through Wikidata sitelinks", options=_OPTIONS
        )
    if wikidata:
        if output is None:
            raise OptionError("a dump build needs {output} (e.g. kb.sqlite)", options=_OPTIONS)
        return build_from_dumps(
            output,
            wikidata=wikidata,
            wikipedia=wikipedia,
            languages=langs,
            properties=tuple(properties) if properties else MLAMA_PROPERTIES,
            all_items=all_items,
            corpus=corpus,
            keep_corpus=keep_corpus,
            workers=workers,
            overwrite=overwrite,
            restart=restart,
            progress=progress,
        )
    if not embedded:
        raise OptionError(
            "nothing to build from: pass {embedded} for the built-in knowledge base, or {wikidata} "
            "(and {wikipedia} dumps) with {output}",
            options=_OPTIONS,
        )
    from kb.db.database import EntityDB

    path = Path(output) if output is not None else embedded_path()
    population = DEFAULT_MIN_CITY_POPULATION if min_city_population is None else min_city_population
    if output is None and path.exists() and not overwrite:
        # the cached kb other processes may be using (and mention indexes were built for): kept when it has
        # these settings, replaced only on request
        with EntityDB(path) as db:
            made = db.provenance
            if made.get("languages") == list(langs) and made.get("min_city_population") == population:
                return EmbeddedReport(path, len(db), db.stats["facts"], len(db.languages), kept=True)
        raise OutputExistsError(
            f"the cached embedded kb {path} was built with other settings (languages "
            f"{','.join(made.get('languages') or [])}, min city population "
            f"{made.get('min_city_population')}); pass {{overwrite}} to rebuild it (the mention "
            "indexes built for it are then deleted, as unused), or {output} to build elsewhere",
            options={**_OPTIONS, "overwrite": flag("overwrite")},
        )
    build_embedded(path, overwrite=overwrite, languages=langs, min_city_population=population)
    if output is None:
        remove_orphaned_indexes()  # those of the cached kb it replaced
    with EntityDB(path) as db:
        return EmbeddedReport(path, len(db), db.stats["facts"], len(db.languages))
