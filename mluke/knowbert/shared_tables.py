"""One entity table in memory, for :class:`mluke.knowbert.KnowBertModel`.

The knowledge layer's buffer is the table's tensor, and a table that is an mLUKE encoder's own entity embedding
(:meth:`~mluke.knowbert.EntityTable.from_checkpoint`, which does not copy it) is that parameter
(``KnowBertModel.table_parameters``: frozen, never trained). ``to``, ``half`` and the like convert it once and keep
it shared (:func:`convert_once`), and ``save_pretrained`` writes it once, in the table's file
(:mod:`mluke.knowbert.saving`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, cast

from torch import Tensor, nn

from mluke.knowbert.entities import EntityTable
from mluke.knowbert.layer import KnowledgeLayer
from mluke.knowbert.saving import memory_key


class TableHolder(Protocol):
    """What :func:`table_tensors` reads of a :class:`~mluke.knowbert.KnowBertModel`."""

    encoder: nn.Module
    tables: dict[str, EntityTable]
    table_parameters: dict[str, str]

    def knowledge_layers(self) -> dict[str, KnowledgeLayer]: ...


def table_parameters(encoder: nn.Module, tables: Mapping[str, EntityTable]) -> dict[str, str]:
    """The knowledge bases whose table is an encoder parameter (the same memory: an mLUKE checkpoint's own entity
    embedding), with that parameter's name; those parameters are frozen (a table is never trained)."""
    params = {memory_key(p): n for n, p in encoder.named_parameters() if not p.is_meta}
    found: dict[str, str] = {}
    for name, table in tables.items():
        param = params.get(memory_key(table.vectors))
        if param is not None:
            found[name] = param
            encoder.get_parameter(param).requires_grad_(False)
    return found


def table_tensors(model: TableHolder) -> list[Tensor]:
    """Every tensor of ``model`` that holds an entity table: the tables', the layers' buffers and the encoder
    parameters that are tables (e.g. for a ``copy.deepcopy`` memo that shares them instead of copying them)."""
    return [
        *(t.vectors for t in model.tables.values()),
        *(layer.entity_vectors for layer in model.knowledge_layers().values()),
        *(model.encoder.get_parameter(p) for p in model.table_parameters.values()),
    ]


def convert_once(
    apply: Callable[[], object],
    fn: Callable[[Tensor], Tensor],
    layers: Mapping[str, KnowledgeLayer],
    tables: Mapping[str, EntityTable],
    parameters: Mapping[str, nn.Parameter],
) -> None:
    """Run ``apply`` (``nn.Module._apply(fn)`` of the model) with the layers' table buffers set aside, then give each
    layer and table the converted table: the parameter it is (``parameters``, by knowledge base), or ``fn`` of the
    buffer, applied once per tensor. If ``apply`` fails, the buffers are put back as they were."""
    held = {name: layer._buffers["entity_vectors"] for name, layer in layers.items()}
    for layer in layers.values():
        layer._buffers["entity_vectors"] = None
    converted = False
    try:
        apply()
        converted = True
    finally:
        done: dict[int, Tensor] = {}
        for name, layer in layers.items():
            old = cast(Tensor, held[name])  # a knowledge layer always has its table
            if not converted:
                new = old
            elif name in parameters:
                new = parameters[name].detach()
            else:
                new = done[id(old)] if id(old) in done else fn(old)
            done[id(old)] = new
            layer._buffers["entity_vectors"] = new
            tables[name].vectors = new
