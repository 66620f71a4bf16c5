"""Saving and loading a :class:`~mluke.knowbert.KnowBertModel` folder (one load/save pair, format versions 1 to 3).

A folder holds:

- ``knowbert.json``: ``format`` ``"mluke-knowbert"``, ``version``, the encoder's class and config and, in version 2,
  ``knowledge_bases``: one object per knowledge base in the model's order, ``{"name", "config", "entities"}`` (its
  :class:`~mluke.knowbert.KnowBertConfig` and the file name of its entity table in the folder) and, when the model
  knows it (``mluke knowbert train`` records it), ``"db"``: the kb its spans and candidates come from (the database's
  absolute path, ``null`` for the embedded kb). Files without ``"db"`` (written before it was recorded) still load:
  the users of the model then take the kb from the caller (:func:`mluke.knowbert.kb_dbs`);
- ``model.safetensors``: the encoder's and the knowledge layers' weights (the first knowledge base's layer under
  ``kar.``, the others under ``extra_kars.NAME.``), each tensor once: a tied weight (the word decoder of the
  masked-LM head is the word embedding) is listed in the metadata ``aliases`` (key -> the key it repeats), and an
  encoder weight that is a knowledge base's entity table (an mLUKE encoder's entity embedding, when the model uses
  the checkpoint's own table) is not in the file at all but in the metadata ``tables`` (key -> knowledge base name):
  it is read from that knowledge base's table file;
- ``entities.safetensors``: the first knowledge base's entity table; ``entities-NAME.safetensors``: the others'.

Loading builds the encoder without initialising its weights (they are on the ``meta`` device until the file's are
put in their place) and puts the file's tensors in the model as they are (``load_state_dict(assign=True)``): the
tensors are views of the mapped files (:mod:`safetensors`), so the weights are in memory once, read when used.

Version 2 wrote an mLUKE encoder's entity embedding in ``model.safetensors`` even when it was the table too (the
table twice on disk); such a folder still loads, and an encoder weight equal byte for byte to a table (compared
from the file, a block at a time) becomes that table's tensor, so in memory the table is held once. Version 1
(written before several knowledge bases) has one knowledge base: its settings under ``"knowbert"`` and its table
in ``entities.safetensors``; it loads as one knowledge base named :data:`DEFAULT_KB`. Its weights are laid out as
version 2's one-knowledge-base model's.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

import torch
from torch import Tensor, nn

from kb.errors import InputFormatError
from kb.files import atomic_path, read_json_file
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable

CONFIG_FILE = "knowbert.json"
WEIGHTS_FILE = "model.safetensors"
ENTITIES_FILE = "entities.safetensors"
FORMAT, FORMAT_VERSION = "mluke-knowbert", 3
#: the versions :func:`load_knowbert` reads
READABLE_VERSIONS = (1, 2, 3)
#: the name of a model's knowledge base when none is given (and of a version-1 folder's)
DEFAULT_KB = "kb"
_DROPPED_CONFIG_KEYS = ("architectures", "transformers_version", "_name_or_path", "dtype", "torch_dtype")
_COMMON_KEYS = {"format", "version", "encoder_class", "encoder_config", "attn_implementation"}
_KEYS = {1: _COMMON_KEYS | {"knowbert"}, 2: _COMMON_KEYS | {"knowledge_bases"}, 3: _COMMON_KEYS | {"knowledge_bases"}}
_ENTRY_KEYS = {"name", "config", "entities", "db"}
#: a knowledge base whose kb the file does not record (``None`` means the embedded kb)
_UNRECORDED = object()


def entities_file(name: str, first: bool) -> str:
    """The file name of a knowledge base's entity table in a model folder."""
    return ENTITIES_FILE if first else f"entities-{name}.safetensors"


class SavedParts(NamedTuple):
    """What a model folder holds: the encoder (its weights on the ``meta`` device, to be assigned from ``state``),
    each knowledge base's table and settings in the model's order, and the weights (tied tensors and tables
    restored)."""

    encoder: nn.Module
    tables: dict[str, EntityTable]
    configs: dict[str, KnowBertConfig]
    state: dict[str, Tensor]
    #: the recorded kb of each knowledge base that has one (a path, ``None``: the embedded kb), by name
    dbs: dict[str, str | None]
    #: the tied weights: key -> the key whose tensor it is (the same parameter once loaded)
    aliases: dict[str, str]


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
    from mluke.models.weight_files import write_safetensors

    directory = Path(directory)
    empty = directory.is_dir() and not any(directory.iterdir())
    encoder_config = dict(cast(Any, encoder).config.to_dict())
    for key in _DROPPED_CONFIG_KEYS:
        encoder_config.pop(key, None)
    kept, aliases = _without_aliases(state)
    idents = {memory_key(table.vectors): name for name, table in tables.items()}
    in_tables = {key: idents[memory_key(state[key])] for key in kept if memory_key(state[key]) in idents}
    for key in in_tables:
        del kept[key]
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
        file_meta = {"format": "pt", "aliases": json.dumps(aliases), "tables": json.dumps(in_tables)}
        write_safetensors(tmp / WEIGHTS_FILE, kept, file_meta)
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
            file_meta = f.metadata() or {}
            aliases = json.loads(file_meta.get("aliases", "{}"))
            in_tables = json.loads(file_meta.get("tables", "{}"))
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118  (a safe_open handle is not iterable)
    except Exception as exc:
        raise InputFormatError(f"{path}: cannot read the weights ({type(exc).__name__}: {exc})") from None
    for key, name in in_tables.items():
        if name not in tables:
            raise InputFormatError(f"{path}: {key} is the table of {name!r}, which {CONFIG_FILE} does not list")
        state[key] = tables[name].vectors
    if meta["version"] < 3:
        _share_equal_tables(state, tables, path)
    for alias, source in aliases.items():
        if source in state:
            state[alias] = state[source]
    return SavedParts(encoder, tables, configs, state, dbs, aliases)


def assign_weights(model: nn.Module, parts: SavedParts, where: Path) -> None:
    """Put the folder's tensors in ``model`` in place of its own (its encoder's on the ``meta`` device), tie the
    aliased weights again (one parameter, not two over one tensor), strictly: a missing, unexpected or unset weight
    is a :class:`~mluke.errors.CheckpointError` naming ``where``."""
    from mluke.errors import CheckpointError

    result = model.load_state_dict(parts.state, strict=False, assign=True)
    missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if missing or unexpected:
        raise CheckpointError(
            f"{where}: the weights do not match {CONFIG_FILE}: missing "
            f"{', '.join(missing[:6]) or 'none'}; unexpected {', '.join(unexpected[:6]) or 'none'}"
        )
    for alias, source in parts.aliases.items():
        owner, _, attr = alias.rpartition(".")
        module = model.get_submodule(owner)
        if attr in module._parameters:
            setattr(module, attr, model.get_parameter(source))
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise CheckpointError(f"{where}: no value for {', '.join(left[:6])}")


def _share_equal_tables(state: dict[str, Tensor], tables: dict[str, EntityTable], path: Path) -> None:
    """In a folder written before version 3: a weight of ``path`` with the bytes of a table (an mLUKE encoder's
    entity embedding, saved beside the table that is its copy) becomes that table's tensor (compared from the file
    a block at a time: the file's copy never becomes resident)."""
    from mluke.models.weight_files import same_bytes

    for key, value in state.items():
        for table in tables.values():
            vectors = table.vectors
            if value.shape == vectors.shape and value.dtype == vectors.dtype and same_bytes(path, key, vectors):
                state[key] = vectors
                break


def memory_key(tensor: Tensor) -> tuple[int, int, tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]:
    """What makes two tensors the same memory: storage, offset, shape, strides, type and device."""
    storage, offset = tensor.untyped_storage().data_ptr(), int(tensor.storage_offset())
    return storage, offset, tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype, tensor.device


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
    by_storage: dict[tuple[object, ...], str] = {}
    for key, value in state.items():
        ident = memory_key(value)
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


@contextlib.contextmanager
def weights_on_meta() -> Iterator[None]:
    """Modules built inside get their parameters on the ``meta`` device (no memory, no initialisation), while
    their buffers (position ids and other non-persistent ones, which no file holds) are built as usual."""
    register = nn.Module.register_parameter

    def on_meta(self: nn.Module, name: str, param: nn.Parameter | None) -> None:
        register(self, name, param)
        if param is not None and not param.is_meta:
            self._parameters[name] = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)

    nn.Module.register_parameter = on_meta  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.register_parameter = register  # type: ignore[method-assign]


def _build_encoder(meta: dict[str, Any], where: Path) -> nn.Module:
    """An encoder of the saved architecture with its weights on the ``meta`` device (:func:`weights_on_meta`),
    for the file's to be assigned."""
    with weights_on_meta():
        return _new_encoder(meta, where)


def _new_encoder(meta: dict[str, Any], where: Path) -> nn.Module:
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
