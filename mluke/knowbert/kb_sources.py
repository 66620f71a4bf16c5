"""Which kb gives each knowledge base of a KnowBert model its spans and candidates when the model is used (linking,
word-mode probing, knowbert-features fine-tuning): :func:`kb_dbs`, :func:`parse_kb_overrides`.

``mluke knowbert train`` records each knowledge base's kb in ``knowbert.json`` (:mod:`mluke.knowbert.saving`). At
use time a knowledge base takes, in this order: the caller's override (``--kb NAME=DB``, ``kbs={name: db}``); for
the first knowledge base only, the caller's ``db`` (``--db``: the first or only knowledge base's kb); the recorded
kb; for the first knowledge base, the embedded kb. A later knowledge base with neither an override nor a recorded
kb (a file written before kbs were recorded) is an error naming the file and the missing key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kb.errors import MlukeError, OptionError, option

if TYPE_CHECKING:
    from kb.db import EntityDB
    from mluke.knowbert.model import KnowBertModel


def parse_kb_overrides(texts: Sequence[str]) -> dict[str, str | None]:
    """The ``--kb NAME=DB`` options of a command that uses a KnowBert model (``DB``: a kb file or ``embedded``), by
    name.

    Raises:
        OptionError: a text that is not ``NAME=DB``, or a name given twice.
    """
    out: dict[str, str | None] = {}
    for text in texts:
        name, sep, db = text.partition("=")
        if not sep or not name or not db or name in out:
            why = "each knowledge base once" if name in out else "expected NAME=DB (DB: a kb file or 'embedded')"
            raise OptionError("{kb}: " + why, options={"kb": option("kb", text)})
        out[name] = None if db == "embedded" else db
    return out


def kb_dbs(
    model: KnowBertModel,
    db: EntityDB | str | os.PathLike[str] | None = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
) -> dict[str, EntityDB | str | os.PathLike[str] | None]:
    """The kb of every knowledge base of ``model``, by name in the model's order (module docs for the order of
    precedence).

    Args:
        model: the KnowBert model (its ``kb_dbs``: what its file records).
        db: the first knowledge base's kb (``None``: the recorded one, else the embedded kb).
        kbs: overrides by knowledge base name.

    Raises:
        OptionError: an override for a knowledge base the model does not have.
        MlukeError: a knowledge base after the first with no recorded kb and no override.
    """
    return {name: kb_db(model, name, db, kbs) for name in model.names}


def kb_db(
    model: KnowBertModel,
    name: str,
    db: EntityDB | str | os.PathLike[str] | None = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
) -> EntityDB | str | os.PathLike[str] | None:
    """The kb of one knowledge base ``name`` of ``model`` (as :func:`kb_dbs`)."""
    given = dict(kbs or {})
    unknown = sorted(set(given) - set(model.names))
    if unknown:
        raise OptionError(
            "{kb}: no knowledge base " + ", ".join(unknown) + " in the model; it has " + ", ".join(model.names),
            options={"kb": option("kb", ", ".join(f"{n}=..." for n in unknown))},
        )
    first = name == model.names[0]
    if name in given:
        return given[name]
    if first and db is not None:
        return db
    if name in model.kb_dbs:
        return model.kb_dbs[name]
    if first:
        return None
    raise unrecorded_kb(model, name)


def unrecorded_kb(model: KnowBertModel, name: str) -> MlukeError:
    """The error for knowledge base ``name`` of ``model`` that has no kb recorded and none given: it names the
    model's ``knowbert.json``, the missing key and the option that gives it."""
    from mluke.knowbert.saving import CONFIG_FILE

    where = f"{model.source / CONFIG_FILE}" if model.source is not None else "the KnowBert model"
    return MlukeError(
        f"{where}: the knowledge base {name!r} records no kb (no 'db' in its knowledge_bases entry: a file written "
        f"before mluke recorded it), so its candidates cannot be found: give it with --kb {name}=DB "
        f"(Python: kbs={{{name!r}: DB}})"
    )


def open_kb_dbs(specs: Mapping[str, EntityDB | str | os.PathLike[str] | None]) -> dict[str, EntityDB]:
    """Each knowledge base's kb opened (:func:`kb.open_db`), one database per distinct path."""
    from kb import open_db

    opened: dict[object, EntityDB] = {}
    out: dict[str, EntityDB] = {}
    for name, spec in specs.items():
        key: object = spec if not isinstance(spec, (str, os.PathLike)) else os.fspath(spec)
        key = id(spec) if not isinstance(key, (str, type(None))) else key
        if key not in opened:
            opened[key] = open_db(os.fspath(spec) if isinstance(spec, os.PathLike) else spec)
        out[name] = opened[key]
    return out


def recorded_db(spec: EntityDB | str | os.PathLike[str] | None) -> str | None:
    """What ``knowbert.json`` records for a kb: its absolute path (a relative one would be read against
    whatever folder the model is used from; an opened database: its file; ``None`` and ``"embedded"``: ``None``,
    the embedded kb). A model moved to another machine takes ``--kb NAME=DB`` there."""
    if spec is None or (isinstance(spec, str) and spec == "embedded"):
        return None
    if isinstance(spec, (str, os.PathLike)):
        return os.path.abspath(os.fspath(spec))
    from kb.sources.embedded import embedded_path

    path = os.fspath(spec.path)
    return None if os.path.abspath(path) == os.path.abspath(embedded_path()) else path
