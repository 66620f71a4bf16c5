"""Entity linking scored on a NIF corpus, as GERBIL scores its NIF datasets (KORE50, N3-Reuters-128, N3-RSS-500,
OKE, ...), with the scorer of AIDA-CoNLL (:mod:`probes.aida`).

The file is NIF 2.0 in Turtle, read by :func:`mluke.serve.nif.read_nif`: each ``nif:Context`` is a document (its
text is ``nif:isString``); each ``nif:Phrase`` or ``nif:String`` with a ``nif:referenceContext`` is a mention at
``nif:beginIndex``/``nif:endIndex`` of that text (``nif:anchorOf`` must agree with the text there), linked by
``itsrdf:taIdentRef`` to an entity IRI. Documents come in the order of their IRIs. A phrase whose offsets or anchor
are wrong is skipped and counted in a note; a file that is not Turtle or has no ``nif:Context`` is an error that
names it.

Gold entities become kb keys through the kb (:func:`gold_keys`), the rule of AIDA: a title follows redirects
(:meth:`kb.EntityDB.resolve_title`) and a gold entity the kb lacks stays a gold link no linker can get (its key is
``"iri:<IRI>"``). The IRIs understood (:func:`entity_target`):

- DBpedia resources, ``http://dbpedia.org/resource/Title`` (English) and ``http://de.dbpedia.org/resource/Titel``
  (that language's DBpedia): the title in that language, ``_`` read as a space and %-escapes decoded;
- Wikipedia pages, ``https://en.wikipedia.org/wiki/Title``: the title in that language;
- Wikidata entities, ``http://www.wikidata.org/entity/Q42``: the key ``Q42`` itself, when the kb has it.

Every other IRI (GERBIL's ``http://aksw.org/notInWiki/...``, a dataset's own namespace) names an entity outside the
knowledge base: the mention is NIL, as AIDA's ``--NME--``, unless the file says the IRI is ``owl:sameAs`` one of the
forms above (OKE's layout), which is then used. A phrase with several ``itsrdf:taIdentRef`` uses the first (in
sorted order) the kb knows. A phrase without any ``itsrdf:taIdentRef`` is no entity annotation (GERBIL reads it as
a bare span, which neither A2KB nor D2KB scores) and is left out.

What GERBIL does, and what is scored here (:func:`probes.aida.score_aida`, strong annotation match):

- **A2KB** (GERBIL's end-to-end experiment: the system gets plain text, finds the mentions and links them): a
  predicted (span, entity) is right when a gold mention has the same character span and entity; micro
  P/R/F1 over the summed counts, macro P/R/F1 the mean of each document's (a document with nothing gold and nothing
  predicted scoring 1/1/1, as GERBIL's calculator does).
- **D2KB** (GERBIL's disambiguation experiment: the system gets the text with its mentions marked and links
  them): the gold spans are given; in-kb accuracy over the gold mentions whose entity is in the kb, a NIL answer
  wrong (GERBIL reports D2KB as P/R/F1 too; mluke gives the figure AIDA-CoNLL papers report).
- **Entity identity**: GERBIL calls two meanings equal when their IRI sets intersect after expanding them with
  ``owl:sameAs`` (from the dataset, DBpedia and Wikipedia) and treats a URI as in the knowledge base when it lies
  in a namespace of its list of well-known KBs. Here the kb plays both parts: titles and QIDs map to kb keys
  (redirects followed), the file's ``owl:sameAs`` is followed, nothing is fetched.
- **Emerging entities (NIL)**: GERBIL's default matcher counts a gold outside the well-known KBs as matched by any
  prediction outside them too (an artificial IRI, i.e. a NIL answer). mluke scores NIF corpora the way it scores
  AIDA instead: a NIL gold is not a gold annotation and predictions on its span are left out, so figures on NIF
  corpora and on AIDA read the same; ``counts["gold_nil"]`` says how many gold mentions this leaves out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from kb.errors import InputFormatError, OptionError
from probes.aida import AidaScores, Linker, link_and_score
from probes.reading import MAX_EXAMPLES, ReadSet

_DBPEDIA = re.compile(r"^https?://(?:([a-z][a-z0-9-]*)\.)?dbpedia\.org/(?:resource|page)/([^#?]+)$")
_WIKIPEDIA = re.compile(r"^https?://([a-z][a-z0-9-]*)\.(?:m\.)?wikipedia\.org/wiki/([^#?]+)(?:#.*)?$")
_WIKIDATA = re.compile(r"^https?://(?:www\.)?wikidata\.org/(?:entity|wiki)/(Q[1-9][0-9]*)$")


class EntityTarget(NamedTuple):
    """What an entity IRI names in a kb: a page title in a language, or (``lang`` None) a Wikidata QID."""

    lang: str | None
    name: str


def entity_target(iri: str) -> EntityTarget | None:
    """The title or QID an entity IRI names (see the module docs), or None for an IRI outside DBpedia, Wikipedia
    and Wikidata (an entity outside the kb: NIL)."""
    if m := _WIKIDATA.match(iri):
        return EntityTarget(None, m.group(1))
    m = _DBPEDIA.match(iri) or _WIKIPEDIA.match(iri)
    if m is None:
        return None
    title = unquote(m.group(2)).replace("_", " ").strip()
    return EntityTarget(m.group(1) or "en", title) if title else None


@dataclass(frozen=True)
class NifMention:
    """One gold mention: its character span in the document text, its surface, and the entity IRIs of the file
    (the ``itsrdf:taIdentRef`` IRIs, then those said ``owl:sameAs`` them)."""

    start: int
    end: int
    surface: str
    iris: tuple[str, ...]

    @property
    def nil(self) -> bool:
        """No IRI of DBpedia, Wikipedia or Wikidata: an entity outside the kb."""
        return all(entity_target(i) is None for i in self.iris)


@dataclass
class NifGoldDocument:
    """One ``nif:Context``: its IRI, text and gold mentions (in order of offsets)."""

    id: str
    text: str
    mentions: list[NifMention] = field(default_factory=list)


@dataclass
class NifCorpus(ReadSet[NifGoldDocument]):
    """Documents read from one NIF file, and what was skipped (phrases without an entity IRI, bad phrases)."""

    documents: list[NifGoldDocument]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None

    def records(self) -> list[NifGoldDocument]:
        return self.documents

    def __repr__(self) -> str:
        mentions = sum(len(d.mentions) for d in self.documents)
        head = f"NifCorpus({len(self.documents):,} documents, {mentions:,} mentions)"
        return self._described(head, self.examples_skipped)


def read_nif_corpus(path: str | os.PathLike[str]) -> NifCorpus:
    """The documents and gold mentions of a NIF 2.0 Turtle file (see the module docs).

    Raises:
        InputFormatError: a missing file, one that is not Turtle, or one without any ``nif:Context`` (the message
            names the file).
        MlukeError: rdflib is not installed (the ``serve`` extra).
    """
    from kb.files import file_bytes
    from mluke.serve.nif import read_nif

    path = Path(path)
    data = file_bytes(path, expected="a NIF 2.0 Turtle file")
    bad: list[str] = []
    try:
        docs = read_nif(data, skipped=bad)
    except InputFormatError as exc:
        raise InputFormatError(f"{path}: {exc}") from None
    if not docs:
        detail = f" (skipped: {bad[0]})" if bad else ""
        raise InputFormatError(f"{path}: no NIF document (a nif:Context with nif:isString) found{detail}")
    skipped: dict[str, int] = {}
    examples = [f"{path}: {b}" for b in bad[:MAX_EXAMPLES]]
    if bad:
        skipped["bad context or phrase"] = len(bad)
    out = []
    for doc in docs:
        mentions = []
        for p in doc.phrases:
            if not p.entities:
                skipped["phrase without itsrdf:taIdentRef"] = skipped.get("phrase without itsrdf:taIdentRef", 0) + 1
                continue
            mentions.append(NifMention(p.start, p.end, p.surface, p.entities + p.same_as))
        out.append(NifGoldDocument(doc.uri, doc.text, mentions))
    return NifCorpus(out, skipped, examples, str(path))


def gold_keys(documents: Sequence[NifGoldDocument], db: Any) -> list[list[str | None]]:
    """Each gold mention's entity key: None for NIL, the kb's key of its first IRI the kb knows (titles after
    redirects), else ``"iri:<IRI>"`` (a gold link no linker can get).

    Raises:
        OptionError: the corpus names titles in a language the kb has no titles in (give a kb built with them).
    """
    targets = [[[t for i in m.iris if (t := entity_target(i)) is not None] for m in d.mentions] for d in documents]
    needed = {t.lang for doc in targets for ts in doc for t in ts if t.lang is not None}
    lacking = sorted(needed - set(db.languages))
    if lacking:
        raise OptionError(
            f"the kb has no titles in {', '.join(lacking)}: the corpus's gold entities are DBpedia or Wikipedia "
            "titles in these languages; give a kb built with them (--db)"
        )
    out = []
    for doc, doc_targets in zip(documents, targets):
        keys: list[str | None] = []
        for m, ts in zip(doc.mentions, doc_targets):
            if not ts:
                keys.append(None)
                continue
            key = next((k for t in ts if (k := _key(db, t)) is not None), None)
            first = next(i for i in m.iris if entity_target(i) is not None)
            keys.append(key if key is not None else f"iri:{first}")
        out.append(keys)
    return out


def _key(db: Any, target: EntityTarget) -> str | None:
    if target.lang is None:
        return target.name if target.name in db else None
    return db.resolve_title(target.lang, target.name)


def eval_nif(
    path: str | os.PathLike[str],
    *,
    lang: str = "en",
    db: Any = None,
    model: Any = None,
    limit: int | None = None,
    linker: Linker | None = None,
    **link_options: Any,
) -> AidaScores:
    """Link the documents of a NIF corpus with :func:`mluke.link` and score them as AIDA-CoNLL is scored (what
    ``mluke eval-nif`` does): A2KB end to end, then D2KB with the gold mentions.

    Args:
        path: the NIF 2.0 Turtle file.
        lang: the language of its texts.
        db: the kb that maps the gold entities to keys; default: the embedded kb.
        model: the linking model (default: the embedded demo model).
        limit: only the first documents (in order of their IRIs).
        linker: link with this instead of :func:`mluke.link` (see :data:`probes.aida.Linker`).
        **link_options: the fields of :class:`mluke.LinkOptions` (``method="prior"``, ...).
    """
    import kb as kb_package

    corpus = read_nif_corpus(path)
    documents = corpus.documents[:limit] if limit is not None else corpus.documents
    if not documents:
        raise OptionError(f"--limit {limit}: no document of {path} left to score")
    database = kb_package.open_db(db)
    keys = gold_keys(documents, database)
    scores = link_and_score(documents, keys, lang, db=database, model=model, linker=linker, **link_options)
    if corpus.skipped:
        said = ", ".join(f"{n} {reason}" for reason, n in sorted(corpus.skipped.items()))
        example = f" (e.g. {corpus.examples_skipped[0]})" if corpus.examples_skipped else ""
        scores.notes.insert(0, f"left out: {said}{example}")
    return scores
