"""The relation table shipped with the library: relation labels and cloze templates written for mluke
(``kb/data/relations.json``), which every kb gets, embedded or built from the dumps."""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources

from kb.db.writer import EntityDBWriter


def load_relations() -> dict[str, dict[str, dict[str, str]]]:
    """Our relation labels and cloze templates: ``{pid: {"labels": {lang: ..}, "templates": {lang: ..}}}``."""
    text = resources.files("kb").joinpath("data/relations.json").read_text(encoding="utf-8")
    return json.loads(text)["relations"]


def write_relations(writer: EntityDBWriter, properties: Iterable[str], languages: Iterable[str], *,
                    datatype: str | None = None) -> None:
    """Add ``properties`` with our labels (where the kb has none yet, e.g. from Wikidata) and our
    templates, in ``languages``."""
    table = load_relations()
    langs = tuple(languages)
    for pid in properties:
        rel = table.get(pid, {})
        labels = rel.get("labels", {})
        writer.add_property(pid, datatype=datatype, labels={l: labels[l] for l in langs if l in labels},
                            replace_labels=False)
        for lang in langs:
            if lang in rel.get("templates", {}):
                writer.add_template(pid, lang, rel["templates"][lang])
