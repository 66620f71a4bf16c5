"""Saving and loading a :class:`~mluke.knowbert.KnowBertModel` folder (one load/save pair, format versions 1 and 2).

A folder holds:

- ``knowbert.json``: ``format`` ``"mluke-knowbert"``, ``version``, the encoder's class and config and, in version 2,
  ``knowledge_bases``: one object per knowledge base in the model's order, ``{"name", "config", "entities"}`` (its
  :class:`~mluke.knowbert.KnowBertConfig` and the file name of its entity table in the folder) and, when the model
  knows it (``mluke knowbert train`` records it), ``"db"``: the kb its spans and candidates come from (the database's
  absolute path, ``null`` for the embedded kb). Files without ``"db"`` (written before it was recorded) still load:
  the users of the model then take the kb from the caller (:func:`mluke.knowbert.kb_dbs`);
- ``model.safetensors``: the encoder's and the knowledge layers' weights (the first knowledge base's layer under
  ``kar.``, the others under ``extra_kars.NAME.``);
- ``entities.safetensors``: the first knowledge base's entity table; ``entities-NAME.safetensors``: the others'.

Version 1 (written before several knowledge bases) has one knowledge base: its settings under ``"knowbert"`` and
its table in ``entities.safetensors``; it loads as one knowledge base named :data:`DEFAULT_KB`. Its weights are laid
out as version 2's one-knowledge-base model's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

from torch import Tensor, nn

from kb.errors import InputFormatError
from kb.files import atomic_path, read_json_file
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable

CONFIG_FILE = "knowbert.json"
WEIGHTS_FILE = "model.safetensors"
ENTITIES_FILE = "entities.safetensors"
FORMAT, FORMAT_VERSION = "mluke-knowbert", 2
#: the versions :func:`load_knowbert` reads
READABLE_VERSIONS = (1, 2)
#: the name of a model's knowledge base when none is given (and of a version-1 folder's)
DEFAULT_KB = "kb"
_DROPPED_CONFIG_KEYS = ("architectures", "transformers_version", "_name_or_path", "dtype", "torch_dtype")
_COMMON_KEYS = {"format", "version", "encoder_class", "encoder_config", "attn_implementation"}
_KEYS = {1: _COMMON_KEYS | {"knowbert"}, 2: _COMMON_KEYS | {"knowledge_bases"}}
_ENTRY_KEYS = {"name", "config", "entities", "db"}
#: a knowledge base whose kb the file does not record (``None`` means the embedded kb)
_UNRECORDED = object()


def entities_file(name: str, first: bool) -> str:
    """The file name of a knowledge base's entity table in a model folder."""
    return ENTITIES_FILE if first else f"entities-{name}.safetensors"


class SavedParts(NamedTuple):
    """What a model folder holds: the encoder (freshly initialised), each knowledge base's table and settings in the
    model's order, and the weights (tied tensors restored)."""

    encoder: nn.Module
    tables: dict[str, EntityTable]
    configs: dict[str, KnowBertConfig]
    state: dict[str, Tensor]
    #: the recorded kb of each knowledge base that has one (a path, ``None``: the embedded kb), by name
    dbs: dict[str, str | None]


def save_knowbert(
    directory: str | os.PathLike[str],
    encoder: nn.Module,
    tables: dict[str, EntityTable],
    configs: dict[str, KnowBertConfig],
    state: dict[str, Tensor],
    *,
    dbs: Mapping[str, str | None] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a model's parts (its encoder, tables and settings by knowledge base in order, its ``state_dict``, the
    kb of the knowledge bases in ``dbs``) into ``directory`` (module docs), under a temporary name renamed when
    complete."""
    from safetensors.torch import save_file

    directory = Path(directory)
    empty = directory.is_dir() and not any(directory.iterdir())
    encoder_config = dict(cast(Any, encoder).config.to_dict())
    for key in _DROPPED_CONFIG_KEYS:
        encoder_config.pop(key, None)
    kept, aliases = _without_aliases(state)
    names = list(tables)
    files = {name: entities_file(name, i == 0) for i, name in enumerate(names)}
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "encoder_class": "mluke" if hasattr(encoder, "luke") else "auto",
        "encoder_config": encoder_config,
        # restored as it was: transformers 4.46 builds a model from a config with eager attention, not sdpa
        "attn_implementation": getattr(cast(Any, encoder).config, "_attn_implementation", None),
        "knowledge_bases": [
            {"name": name, "config": configs[name].to_dict(), "entities": files[name]}
            | ({"db": dbs[name]} if dbs is not None and name in dbs else {})
            for name in names
        ],
    }
    with atomic_path(directory, overwrite=overwrite or empty) as tmp:
        tmp.mkdir()
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        save_file(kept, str(tmp / WEIGHTS_FILE), metadata={"format": "pt", "aliases": json.dumps(aliases)})
        for name in names:
            tables[name].save(tmp / files[name])
    return directory


def load_knowbert(directory: str | os.PathLike[str]) -> SavedParts:
    """The parts of a folder written by :func:`save_knowbert` (or of a version-1 folder); the model checks the
    weights against itself when it loads them.

    Raises:
        InputFormatError: a missing or malformed file (a missing entity table, a knowledge base named twice), named.
    """
    from safetensors import safe_open

    directory = Path(directory)
    where = directory / CONFIG_FILE
    meta = _read_meta(where)
    tables: dict[str, EntityTable] = {}
    configs: dict[str, KnowBertConfig] = {}
    dbs: dict[str, str | None] = {}
    for name, config, file, db in _knowledge_bases(meta, where):
        configs[name] = config
        tables[name] = EntityTable.from_safetensors(directory / file)
        if db is not _UNRECORDED:
            dbs[name] = cast("str | None", db)
    encoder = _build_encoder(meta, where)
    path = directory / WEIGHTS_FILE
    try:
        with safe_open(str(path), framework="pt") as f:
            aliases = json.loads((f.metadata() or {}).get("aliases", "{}"))
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118  (a safe_open handle is not iterable)
    except Exception as exc:
        raise InputFormatError(f"{path}: cannot read the weights ({type(exc).__name__}: {exc})") from None
    for alias, source in aliases.items():
        if source in state:
            state[alias] = state[source]
    return SavedParts(encoder, tables, configs, state, dbs)


def _knowledge_bases(meta: dict[str, Any], where: Path) -> list[tuple[str, KnowBertConfig, str, object]]:
    """``(name, config, entity table file, recorded kb)`` of each knowledge base of a folder's description, in order
    (:data:`_UNRECORDED` when the file records no kb)."""
    if meta["version"] == 1:
        config = KnowBertConfig.from_dict(meta.get("knowbert"), f"{where}: 'knowbert'")
        return [(DEFAULT_KB, config, ENTITIES_FILE, _UNRECORDED)]
    listed = meta.get("knowledge_bases")
    if not isinstance(listed, list) or not listed:
        raise InputFormatError(f"{where}: 'knowledge_bases' must be a non-empty list of knowledge bases")
    out: list[tuple[str, KnowBertConfig, str, object]] = []
    for i, entry in enumerate(listed):
        at = f"{where}: knowledge_bases[{i}]"
        if not isinstance(entry, dict) or not {"name", "config", "entities"} <= set(entry) <= _ENTRY_KEYS:
            raise InputFormatError(f"{at}: expected an object with 'name', 'config', 'entities' and optionally 'db'")
        db = entry.get("db", _UNRECORDED)
        if db is not _UNRECORDED and db is not None and (not isinstance(db, str) or not db):
            raise InputFormatError(f"{at}: 'db' must be a kb path or null (the embedded kb), got {db!r}")
        name, file = entry["name"], entry["entities"]
        if not isinstance(name, str) or not isinstance(file, str) or Path(file).name != file or not file:
            raise InputFormatError(f"{at}: 'name' and 'entities' must be strings ('entities': a file in the folder)")
        if any(name == seen for seen, *_ in out):
            raise InputFormatError(f"{at}: the knowledge base {name!r} is listed twice (names must be unique)")
        out.append((name, KnowBertConfig.from_dict(entry["config"], f"{at}: 'config'"), file, db))
    return out


def _without_aliases(state: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The state with tied tensors (e.g. the LM head's decoder = the word embedding) kept once, and which key
    each dropped one repeats (safetensors refuses shared memory)."""
    kept: dict[str, Tensor] = {}
    aliases: dict[str, str] = {}
    by_storage: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for key, value in state.items():
        ident = (value.untyped_storage().data_ptr(), int(value.storage_offset()), tuple(value.shape))
        if ident in by_storage:
            aliases[key] = by_storage[ident]
            continue
        by_storage[ident] = key
        kept[key] = value.detach().contiguous().cpu()
    return kept, aliases


def _read_meta(path: Path) -> dict[str, Any]:
    meta = read_json_file(path, expected="a folder written by KnowBertModel")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputFormatError(f"{path}: not a KnowBert model description (expected format {FORMAT!r})")
    version = meta.get("version")
    if version not in READABLE_VERSIONS:
        raise InputFormatError(
            f"{path}: format version {version!r}; this mluke reads {', '.join(map(str, READABLE_VERSIONS))}"
        )
    unknown = sorted(set(meta) - _KEYS[version])
    if unknown:  # e.g. a version-1 'knowbert' block in a version-2 file: a hand edit that would be ignored
        raise InputFormatError(
            f"{path}: unknown setting(s) {', '.join(unknown)} for format version {version}; "
            f"known: {', '.join(sorted(_KEYS[version]))}"
        )
    return meta


def _build_encoder(meta: dict[str, Any], where: Path) -> nn.Module:
    """A freshly initialised encoder of the saved architecture (its weights are loaded after)."""
    cfg = dict(meta.get("encoder_config") or {})
    if not cfg:
        raise InputFormatError(f"{where}: no 'encoder_config'")
    if meta.get("encoder_class") == "mluke":
        from transformers import LukeConfig

        from mluke.models.masked_lm import MlukeForMaskedLM

        return MlukeForMaskedLM(LukeConfig(**cfg))
    from transformers import AutoConfig, AutoModelForMaskedLM

    model_type = cfg.pop("model_type", None)
    if not model_type:
        raise InputFormatError(f"{where}: 'encoder_config' has no model_type")
    config = AutoConfig.for_model(model_type, **cfg)
    attention = meta.get("attn_implementation")
    extra = {"attn_implementation": attention} if isinstance(attention, str) else {}
    return cast(nn.Module, AutoModelForMaskedLM.from_config(config, **extra))
