"""Adding or refreshing a few entities from the live Wikidata API, without a dump.

:func:`add_entities` fetches items (and properties) with the ``wikidata`` client
package (optional extra ``mluke[wikidata]``), which reads
``<base_url>/wiki/Special:EntityData/<id>.json``, extracts them with the same
code as the dump builder (:func:`kb.sources.wikidata.extract`) for the database's
languages and properties, and replaces what the database held about them, in
one transaction: every entity is fetched before anything is written, so a
network error or an unknown id leaves the database unchanged.
"""

from __future__ import annotations

import os
import re
import urllib.error
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.db.database import EntityDB
from kb.errors import MlukeError, NotFoundError
from kb.sources.wikidata import (
    MLAMA_PROPERTIES,
    Rows,
    WikidataOptions,
    convert_entity,
    extract,
)

WIKIDATA_URL = "https://www.wikidata.org/"
_ID_RE = re.compile(r"^[QP][1-9][0-9]*$")


@dataclass
class AddReport:
    """What :func:`add_entities` did: entities written, ids that were redirects, items skipped."""

    added: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    redirected: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    facts: int = 0

    def summary(self) -> str:
        parts = [f"added {len(self.added)}", f"refreshed {len(self.refreshed)}", f"{self.facts} facts"]
        if self.properties:
            parts.append(f"properties {', '.join(self.properties)}")
        if self.redirected:
            parts.append("redirects " + ", ".join(f"{a} -> {b}" for a, b in self.redirected.items()))
        if self.skipped:
            parts.append(f"skipped {', '.join(self.skipped)} (no Wikipedia article in the database's languages)")
        return "; ".join(parts)


def _client(base_url: str) -> Any:  # a wikidata.client.Client: the wikidata package ships no type information
    try:
        from wikidata.client import Client
    except ImportError:
        raise MlukeError("fetching from Wikidata needs the 'wikidata' package: pip install 'mluke[wikidata]'") from None
    return Client(base_url)


def fetch_entity(client: Any, entity_id: str) -> dict[str, Any]:
    """The JSON of one entity (after a redirect: of the entity it redirects to)."""
    where = f"{client.base_url.rstrip('/')}/wiki/Special:EntityData/{entity_id}.json"
    try:
        entity = client.get(entity_id, load=True)
    except urllib.error.HTTPError as exc:
        if exc.code in (400, 404):
            raise NotFoundError(f"Wikidata has no entity {entity_id!r} ({where} answered {exc.code})") from None
        raise MlukeError(f"could not fetch {entity_id} from {where}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MlukeError(
            f"could not fetch {entity_id} from {where}: {reason}; check the network or --base-url"
        ) from None
    except (ValueError, KeyError, AssertionError) as exc:
        raise MlukeError(f"{where}: not a Wikidata entity response ({exc})") from None
    if entity.data is None:
        raise NotFoundError(f"Wikidata has no entity {entity_id!r} ({where})")
    return dict(entity.data)


def add_entities(
    db: str | os.PathLike[str],
    ids: Iterable[str],
    *,
    base_url: str = WIKIDATA_URL,
    client: Any = None,
) -> AddReport:
    """Add or refresh entities (``Q17``) and properties (``P36``) of the database ``db`` from Wikidata.

    For each item: sitelinks of the database's languages (titles), labels, aliases and
    the item-valued claims of the database's properties (facts whose object is in the
    database), exactly as :func:`kb.build_from_dumps` keeps them; old rows of the
    entity are replaced. An item without a Wikipedia article in those languages is
    skipped (as the dump builder does). A property id adds the property and its labels.
    Statistics are recomputed. Raises :class:`NotFoundError` for an unknown id and
    :class:`MlukeError` for network errors; then nothing is written.
    """
    path = Path(db)
    ids = list(dict.fromkeys(ids))
    bad = [i for i in ids if not _ID_RE.match(i)]
    if bad or not ids:
        raise MlukeError(
            f"not Wikidata ids: {', '.join(map(repr, bad))} (expected e.g. Q17 or P36)"
            if bad
            else "no Wikidata ids given"
        )
    with EntityDB(path) as current:
        languages = current.languages
        properties = tuple(current.properties()) or MLAMA_PROPERTIES
        all_items = bool(current.provenance.get("all_items", False))
    client = client or _client(base_url)
    fetched = [(i, fetch_entity(client, i)) for i in ids]  # everything before any write

    report = AddReport()
    wanted_props = tuple(dict.fromkeys((*properties, *(i for i in ids if i.startswith("P")))))
    opts = WikidataOptions(languages, wanted_props, all_items)
    rows = Rows()
    entities = []
    for asked, data in fetched:
        entity = convert_entity(data, opts)
        if entity.id != asked:
            report.redirected[asked] = entity.id
        before = len(rows.entities)
        extract(entity, opts, rows)
        if entity.type == "item" and len(rows.entities) == before:
            report.skipped.append(entity.id)
        entities.append(entity)
    _write(path, rows, languages, wanted_props, report, base_url, [e.id for e in entities])
    return report


def _write(
    path: Path,
    rows: Rows,
    languages: tuple[str, ...],
    props: tuple[str, ...],
    report: AddReport,
    base_url: str,
    ids: list[str],
) -> None:
    with EntityDB.update(path) as w:
        q = w.execute
        lang_marks = ",".join("?" * len(languages))
        keys = [k for k, _ in rows.entities]
        for key in keys:
            existed = q("SELECT 1 FROM entities WHERE key = ?", (key,)).fetchone() is not None
            (report.refreshed if existed else report.added).append(key)
            q(f"DELETE FROM titles WHERE entity = ? AND lang IN ({lang_marks})", (key, *languages))
            q(f"DELETE FROM names WHERE entity = ? AND lang IN ({lang_marks})", (key, *languages))
            q(f"DELETE FROM facts WHERE subject = ? AND property IN ({','.join('?' * len(props))})", (key, *props))
            w.add_entity(key, "item")
        for lang, pairs in rows.titles.items():
            for title, key in pairs:
                w.add_title(lang, title, key)
        for lang, pairs in rows.labels.items():
            for name, key in pairs:
                w.add_label(key, lang, name)
        for lang, pairs in rows.aliases.items():
            for name, key in pairs:
                w.add_aliases(key, lang, [name])
        for subject, pid, obj in rows.facts:
            if q("SELECT 1 FROM entities WHERE key = ?", (obj,)).fetchone() is not None:
                w.add_fact(subject, pid, obj)
                report.facts += 1
        for pid, datatype in rows.properties:
            w.add_property(pid, datatype=datatype, labels={l: t for p, l, t in rows.property_labels if p == pid})
            report.properties.append(pid)
        w.add_source("wikidata-api", base_url, ids=ids)
