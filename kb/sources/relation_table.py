"""The relation table shipped with the library, and importing other templates into a kb.

``kb/data/relations.tsv`` holds, for every relation mLAMA uses (T-REx and
Google-RE, the date relation P569 included) and P38, one row per language of the
24: the relation's name in that language, a cloze template written for mluke
with one [X] and one [Y] in the language's word order, and the relation's
English label and description. Every kb gets the whole table, embedded or built
from the dumps (:func:`write_relations`). :func:`add_templates` puts other
templates, e.g. an mLAMA folder's, into an existing kb.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kb.db.database import EntityDB
from kb.db.templates import parse_template, read_templates
from kb.db.writer import EntityDBWriter
from kb.errors import InputFormatError

COLUMNS = ("relation", "lang", "label", "template", "label_en", "description_en")


@cache
def _table() -> tuple[tuple[str, ...], ...]:
    text = resources.files("kb").joinpath("data/relations.tsv").read_text(encoding="utf-8")
    return tuple(tuple(row) for row in csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


def load_relations() -> dict[str, dict[str, Any]]:
    """The relation table: ``{pid: {"label_en", "description", "labels": {lang: ..}, "templates": {lang: ..}}}``,
    relations in the table's order."""
    header, *rows = _table()
    if tuple(header) != COLUMNS:
        raise InputFormatError(f"kb/data/relations.tsv: header {header}; expected {COLUMNS}")
    out: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows, 2):
        if len(row) != len(COLUMNS):
            raise InputFormatError(f"kb/data/relations.tsv, line {n}: {len(row)} fields; expected {len(COLUMNS)}")
        pid, lang, label, template, label_en, description = row
        rel = out.setdefault(pid, {"label_en": label_en, "description": description, "labels": {}, "templates": {}})
        rel["labels"][lang] = label
        rel["templates"][lang] = template
    return out


def write_relations(
    writer: EntityDBWriter,
    languages: Iterable[str],
    properties: Iterable[str] | None = None,
    *,
    datatype: str | None = None,
) -> None:
    """Add the table's relations (or only ``properties``) with our labels, where the kb has none yet
    (e.g. from Wikidata), and our templates, in ``languages``."""
    table = load_relations()
    langs = tuple(languages)
    for pid in table if properties is None else properties:
        rel = table.get(pid, {})
        labels = rel.get("labels", {})
        writer.add_property(
            pid, datatype=datatype, labels={l: labels[l] for l in langs if l in labels}, replace_labels=False
        )
        for lang in langs:
            if lang in rel.get("templates", {}):
                writer.add_template(pid, lang, rel["templates"][lang])


def add_templates(
    db: str | os.PathLike[str],
    source: str | os.PathLike[str] | Mapping[tuple[str, str], str],
    *,
    lang: str | None = None,
) -> dict[str, Any]:
    """Put cloze templates into the database file ``db`` (in place, one transaction), replacing the
    kb's template of the same relation and language: what ``mluke kb add-templates`` does.

    ``source``: ``{(pid, lang): template}``, a ``templates.jsonl`` file (its language from
    ``lang`` or its folder's name) or an mLAMA folder (``mlama1.1/<lang>/templates.jsonl``;
    see :func:`kb.db.templates.read_templates`). Templates of languages the kb does not
    have are left out and counted. Returns counts: added, replaced, other languages,
    and the relations read without a Wikidata id (skipped by the reader).
    """
    path = Path(db)
    skipped: dict[str, int] = {}
    templates = dict(source) if isinstance(source, Mapping) else read_templates(source, lang=lang, skipped=skipped)
    with EntityDB(path) as current:
        languages = set(current.languages)
        existing = current.templates()
    for (pid, code), text in templates.items():
        parse_template(text, where=f"template {pid}/{code}")
    wanted = {k: v for k, v in templates.items() if k[1] in languages}
    report = {
        "added": sum(k not in existing for k in wanted),
        "replaced": sum(k in existing and existing[k] != v for k, v in wanted.items()),
        "unchanged": sum(existing.get(k) == v for k, v in wanted.items()),
        "other_languages": len(templates) - len(wanted),
        **skipped,
    }
    with EntityDB.update(path) as writer:
        for (pid, code), text in sorted(wanted.items()):
            writer.add_property(pid, replace_labels=False)
            writer.add_template(pid, code, text)
        writer.add_source("templates", "mapping" if isinstance(source, Mapping) else str(source), templates=len(wanted))
    return report
