"""Adding one relation's facts from the public Wikidata query service (SPARQL), without a dump.

:func:`add_relation` asks the service (``https://query.wikidata.org/sparql``, or ``endpoint``) three kinds of
queries, each answered in the SPARQL 1.1 JSON results format (``{"head": {"vars": [...]}, "results":
{"bindings": [...]}}``):

1. up to ``limit`` (subject, object) pairs of the relation, both items (``?s wdt:P740 ?o``);
2. the labels of those entities in the asked languages (``rdfs:label``), in batches;
3. their Wikipedia page titles in those languages (``schema:about`` / ``schema:isPartOf``), in batches;

and the property's labels. Everything is fetched before anything is written; then, in one transaction, the
entities, labels, titles, the facts and the property go into the kb (created when missing, its languages
extended by the asked ones), and a source row records the endpoint, the relation, the limit and the languages.
A network error leaves the kb unchanged and says what to do instead.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import MlukeError

SPARQL_URL = "https://query.wikidata.org/sparql"
ENTITY_PREFIX = "http://www.wikidata.org/entity/"
USER_AGENT = "mluke-kb/1 (https://github.com/; entity database builder)"
_PID_RE = re.compile(r"^P[1-9][0-9]*$")
_QID_RE = re.compile(r"^Q[1-9][0-9]*$")
BATCH = 200  #: entities per label or title query (the service limits a query's length)

#: Answers one SPARQL query with the parsed JSON results (``run(query)``); tests and mirrors give their own.
Runner = Callable[[str], dict[str, Any]]


@dataclass
class RelationReport:
    """What :func:`add_relation` wrote."""

    relation: str
    facts: int = 0
    entities: int = 0
    labels: int = 0
    titles: int = 0
    languages: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.relation}: {self.facts} facts, {self.entities} entities, {self.labels} labels and "
            f"{self.titles} titles in {', '.join(self.languages)}"
        )


def http_runner(endpoint: str = SPARQL_URL, *, timeout: float = 60.0) -> Runner:
    """A :data:`Runner` that asks ``endpoint`` over HTTP (GET, ``format=json``)."""

    def run(query: str) -> dict[str, Any]:
        url = f"{endpoint}?{urllib.parse.urlencode({'query': query, 'format': 'json'})}"
        request = urllib.request.Request(
            url, headers={"Accept": "application/sparql-results+json", "User-Agent": USER_AGENT}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise MlukeError(
                f"the Wikidata query service at {endpoint} answered HTTP {exc.code} {exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise MlukeError(
                f"could not reach the Wikidata query service at {endpoint} ({reason}); without a network, "
                "build the kb from Wikidata and Wikipedia dumps (mluke kb build --wikidata DUMP --wikipedia "
                "DUMP ...) or use the embedded kb, or give --endpoint a query service you can reach"
            ) from None
        try:
            data = json.loads(body)
            data["results"]["bindings"]
        except (ValueError, KeyError, TypeError):
            raise MlukeError(f"{endpoint}: not a SPARQL JSON results answer ({body[:80]!r})") from None
        return dict(data)

    return run


def _qid(binding: dict[str, Any], var: str) -> str | None:
    """The QID of a ``uri`` binding (None for literals, blank nodes and non-item URIs)."""
    value = binding.get(var)
    if not value or value.get("type") != "uri" or not value["value"].startswith(ENTITY_PREFIX):
        return None
    qid = value["value"][len(ENTITY_PREFIX) :]
    return qid if _QID_RE.match(qid) else None


def _values(keys: Sequence[str]) -> str:
    return " ".join(f"wd:{k}" for k in keys)


def _langs_filter(langs: Sequence[str]) -> str:
    return ", ".join(f'"{lang}"' for lang in langs)


def fetch_relation(
    relation: str, *, limit: int, langs: Sequence[str], run: Runner
) -> tuple[list[tuple[str, str]], dict[str, dict[str, str]], dict[str, dict[str, str]], dict[str, str]]:
    """The relation's (subject, object) pairs, labels ``{key: {lang: label}}``, titles ``{key: {lang: title}}``
    and the property's labels ``{lang: label}``, from the query service (see the module docs)."""
    facts_q = f"SELECT ?s ?o WHERE {{ ?s wdt:{relation} ?o . FILTER(isIRI(?o)) }} LIMIT {limit}"
    pairs: list[tuple[str, str]] = []
    for b in run(facts_q)["results"]["bindings"]:
        s, o = _qid(b, "s"), _qid(b, "o")
        if s and o and (s, o) not in pairs:
            pairs.append((s, o))
    keys = list(dict.fromkeys(k for pair in pairs for k in pair))
    labels: dict[str, dict[str, str]] = {}
    titles: dict[str, dict[str, str]] = {}
    wanted = _langs_filter(langs)
    sites = " ".join(f"<https://{lang}.wikipedia.org/>" for lang in langs)
    for start in range(0, len(keys), BATCH):
        part = _values(keys[start : start + BATCH])
        label_q = f"SELECT ?e ?l WHERE {{ VALUES ?e {{ {part} }} ?e rdfs:label ?l . FILTER(LANG(?l) IN ({wanted})) }}"
        for b in run(label_q)["results"]["bindings"]:
            key, lit = _qid(b, "e"), b.get("l") or {}
            if key and lit.get("xml:lang") in langs:
                labels.setdefault(key, {})[lit["xml:lang"]] = lit["value"]
        title_q = (
            f"SELECT ?e ?site ?t WHERE {{ VALUES ?e {{ {part} }} VALUES ?site {{ {sites} }} "
            "?a schema:about ?e ; schema:isPartOf ?site ; schema:name ?t . }"
        )
        for b in run(title_q)["results"]["bindings"]:
            key, site, lit = _qid(b, "e"), (b.get("site") or {}).get("value", ""), b.get("t") or {}
            m = re.match(r"https://([a-z][a-z0-9-]*)\.wikipedia\.org/", site)
            if key and m and m.group(1) in langs and lit.get("value"):
                titles.setdefault(key, {})[m.group(1)] = lit["value"]
    prop_q = f"SELECT ?l WHERE {{ wd:{relation} rdfs:label ?l . FILTER(LANG(?l) IN ({wanted})) }}"
    prop_labels = {
        b["l"]["xml:lang"]: b["l"]["value"]
        for b in run(prop_q)["results"]["bindings"]
        if (b.get("l") or {}).get("xml:lang") in langs
    }
    return pairs, labels, titles, prop_labels


def add_relation(
    db: str | os.PathLike[str],
    relation: str,
    *,
    limit: int = 2000,
    langs: Sequence[str] = ("en",),
    endpoint: str = SPARQL_URL,
    run: Runner | None = None,
) -> RelationReport:
    """Fetch up to ``limit`` facts of ``relation`` with their entities' labels and titles in ``langs`` and add
    them to the kb ``db`` (created when missing); see the module docs.

    Raises:
        MlukeError: a bad relation id, limit or language list; the service unreachable or answering something
            else than SPARQL JSON results (then nothing is written).
    """
    from kb.db.database import EntityDB
    from kb.languages import check_language

    if not _PID_RE.match(relation):
        raise MlukeError(f"relation {relation!r}: expected a Wikidata property id such as P740")
    if limit < 1:
        raise MlukeError(f"limit {limit}: expected at least 1")
    langs = tuple(dict.fromkeys(check_language(lang) for lang in langs))
    if not langs:
        raise MlukeError("no languages given (e.g. --langs ja,en)")
    pairs, labels, titles, prop_labels = fetch_relation(
        relation, limit=limit, langs=langs, run=run or http_runner(endpoint)
    )
    report = RelationReport(relation, languages=langs)
    path = Path(db)
    if not path.exists():
        with EntityDB.create(path, provenance={"built_from": "wikidata-sparql"}) as w:
            w.add_languages(langs)
    with EntityDB.update(path) as w:
        w.add_languages(langs)
        keys = list(dict.fromkeys(k for pair in pairs for k in pair))
        for key in keys:
            w.add_entity(key, "item")
            for lang, label in labels.get(key, {}).items():
                w.add_label(key, lang, label)
                report.labels += 1
            for lang, title in titles.get(key, {}).items():
                w.add_title(lang, title, key)
                report.titles += 1
        for s, o in pairs:
            w.add_fact(s, relation, o)
        w.add_property(relation, datatype="wikibase-item", labels=prop_labels)
        w.add_source("wikidata-sparql", endpoint, relation=relation, limit=limit, langs=list(langs))
        report.facts, report.entities = len(pairs), len(keys)
    if len(pairs) == limit:
        report.notes.append(f"the limit of {limit} facts was reached: the relation may have more")
    return report
