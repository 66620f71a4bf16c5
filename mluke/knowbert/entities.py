"""The frozen entity vectors a knowledge layer links to (:class:`EntityTable`).

Two sources, one layout:

- :meth:`EntityTable.from_checkpoint`: the entity embedding table of an mLUKE checkpoint (256-dimensional
  for mLUKE), keys from its entity vocabulary, so that one checkpoint gives both ways of using entities
  (mLUKE's entity tokens and KnowBert's knowledge layer);
- :meth:`EntityTable.from_safetensors`: any key -> vector table, e.g. QID -> vector. The file holds one
  tensor ``vectors`` [N, d] and, in its metadata, ``keys``: a JSON list of the N keys in row order
  (:meth:`EntityTable.save` writes this layout).

Row 0 is always ``[PAD]`` (never a candidate) and ``[MASK]`` has a row of its own: a span that overlaps a
masked word piece gets its candidates replaced by ``mask_row`` (KnowBert §3.4). A table without these two
keys gets them added, as zero vectors ([PAD] at row 0, [MASK] at row 1); a table with a ``[PAD]`` elsewhere
has that row moved to 0.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from kb.errors import InputFormatError
from kb.files import atomic_path

if TYPE_CHECKING:
    from mluke.opening import ModelSource

PAD_KEY = "[PAD]"  #: key of row 0, the padding of candidate lists
MASK_KEY = "[MASK]"  #: key of the entity that replaces the candidates of spans over masked word pieces
VECTORS = "vectors"  #: the tensor's name in a table file
KEYS = "keys"  #: the metadata field holding the JSON list of keys
FORMAT = "mluke-entity-table"


class EntityTable:
    """Frozen entity vectors ``vectors`` [N, d] with their ``keys`` in row order."""

    pad_row = 0  #: the padding row of candidate lists (``[PAD]``)

    def __init__(self, vectors: Tensor, keys: Sequence[str]) -> None:
        """A table as it is: ``keys[0]`` must be ``[PAD]`` and ``[MASK]`` must be among the keys (see
        :meth:`from_vectors` to have them added)."""
        if vectors.dim() != 2 or not vectors.is_floating_point():
            raise ValueError(f"entity vectors must be a 2-D float tensor, got {tuple(vectors.shape)} {vectors.dtype}")
        if len(keys) != vectors.shape[0]:
            raise ValueError(f"{len(keys)} keys for {vectors.shape[0]} entity vectors")
        self.keys: list[str] = list(keys)
        self.key_to_row: dict[str, int] = {k: i for i, k in enumerate(self.keys)}
        if len(self.key_to_row) != len(self.keys):
            dup = next(k for k, n in Counter(self.keys).items() if n > 1)
            raise ValueError(f"entity key {dup!r} appears more than once")
        if not self.keys or self.keys[0] != PAD_KEY:
            raise ValueError(f"row 0 of an entity table must be {PAD_KEY} (use EntityTable.from_vectors)")
        if MASK_KEY not in self.key_to_row:
            raise ValueError(f"an entity table needs a {MASK_KEY} row (use EntityTable.from_vectors)")
        self.vectors: Tensor = vectors.detach().requires_grad_(False)
        self.mask_row: int = self.key_to_row[MASK_KEY]

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"EntityTable({len(self)} entities, dim {self.dim})"

    @property
    def dim(self) -> int:
        """``d``: the size of each entity vector."""
        return int(self.vectors.shape[1])

    def rows(self, keys: Sequence[str], default: int | None = None) -> list[int | None]:
        """The rows of ``keys`` (``default`` for keys not in the table)."""
        return [self.key_to_row.get(k, default) for k in keys]

    @classmethod
    def from_vectors(cls, vectors: Tensor, keys: Sequence[str]) -> EntityTable:
        """A table from vectors and keys in any order: ``[PAD]`` is moved to row 0, and ``[PAD]`` / ``[MASK]``
        are added as zero vectors when missing."""
        keys = list(keys)
        if len(keys) != vectors.shape[0]:
            raise ValueError(f"{len(keys)} keys for {vectors.shape[0]} entity vectors")
        extra = [k for k in (PAD_KEY, MASK_KEY) if k not in keys]
        if extra:
            vectors = torch.cat([vectors.new_zeros(len(extra), vectors.shape[1]), vectors])
            keys = extra + keys
        pad = keys.index(PAD_KEY)
        if pad != 0:
            order = [pad, *range(pad), *range(pad + 1, len(keys))]
            vectors = vectors[torch.tensor(order)]
            keys = [keys[i] for i in order]
        return cls(vectors, keys)

    @classmethod
    def from_safetensors(cls, path: str | os.PathLike[str]) -> EntityTable:
        """A key -> vector table from a safetensors file (tensor ``vectors`` [N, d], a JSON list of the N keys
        in the metadata field ``keys``).

        Raises:
            InputFormatError: no such file, not a safetensors file, or a missing or malformed part, named.
        """
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            raise InputFormatError(f"{path}: no such entity table (expected a safetensors file)")
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                names = list(f.keys())
                vectors = f.get_tensor(VECTORS) if VECTORS in names else None
        except Exception as exc:  # safetensors raises its own error types for a damaged header
            raise InputFormatError(f"{path}: not a safetensors file ({type(exc).__name__}: {exc})") from None
        if vectors is None:
            raise InputFormatError(f"{path}: no tensor {VECTORS!r} (found: {', '.join(names) or 'none'})")
        if vectors.dim() != 2 or not vectors.is_floating_point():
            raise InputFormatError(
                f"{path}: tensor {VECTORS!r} is {tuple(vectors.shape)} {vectors.dtype}; expected float [N, d]"
            )
        if KEYS not in meta:
            raise InputFormatError(f"{path}: no {KEYS!r} in the metadata (expected a JSON list of the entity keys)")
        try:
            keys = json.loads(meta[KEYS])
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{path}: metadata {KEYS!r} is not valid JSON ({exc})") from None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise InputFormatError(f"{path}: metadata {KEYS!r} must be a JSON list of strings")
        if len(keys) != vectors.shape[0]:
            raise InputFormatError(f"{path}: {len(keys)} keys for {vectors.shape[0]} rows of {VECTORS!r}")
        try:
            return cls.from_vectors(vectors, keys)
        except ValueError as exc:
            raise InputFormatError(f"{path}: {exc}") from None

    @classmethod
    def from_checkpoint(cls, model: ModelSource) -> EntityTable:
        """The entity embedding table of an mLUKE checkpoint (a loaded bundle, a folder or a hub name), its rows
        keyed by the entity vocabulary: the entity's key (QID) where the vocabulary has one, else the special
        name (``[PAD]``, ``[MASK]``, ...), else ``lang:title`` of its English title (else of its first title),
        else ``#id``. The vectors are the checkpoint's entity embedding itself, not a copy, where it is a float32
        CPU tensor whose ``[PAD]`` is row 0 (mluke-base's order; a lite checkpoint's 4 rows are reordered).

        Raises:
            CheckpointError: a model without an entity vocabulary, or a vocabulary of another size.
        """
        from mluke.errors import CheckpointError
        from mluke.opening import open_model

        bundle = open_model(model)
        vocab = bundle.entity_vocab
        luke = getattr(bundle.model, "luke", None)
        if vocab is None or luke is None:
            raise CheckpointError("EntityTable.from_checkpoint needs an mLUKE checkpoint with an entity vocabulary")
        # the checkpoint's own tensor (no copy for a float32 model on the CPU): a KnowBert model on this encoder
        # then holds the table once, shared with the encoder's (unused) entity embedding
        weight = luke.entity_embeddings.entity_embeddings.weight.detach().float().cpu()
        if len(vocab) != weight.shape[0]:
            raise CheckpointError(
                f"the entity vocabulary has {len(vocab)} ids but the entity embedding has {weight.shape[0]} rows"
            )
        keys = [f"#{i}" for i in range(weight.shape[0])]
        taken: set[str] = set()
        for entry in vocab:
            names = sorted(entry.names, key=lambda n: (n[0] != "en", n))  # an English title first, if any
            title = f"{names[0][0]}:{names[0][1]}" if names else None
            key = entry.key or entry.special or title or f"#{entry.id}"
            keys[entry.id] = key if key not in taken else f"{key}#{entry.id}"
            taken.add(keys[entry.id])
        return cls.from_vectors(weight, keys)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the table in the layout :meth:`from_safetensors` reads (through a temporary name)."""
        from mluke.models.weight_files import write_safetensors

        path = Path(path)
        with atomic_path(path, overwrite=overwrite) as tmp:
            meta = {"format": FORMAT, KEYS: json.dumps(self.keys, ensure_ascii=False)}
            write_safetensors(tmp, {VECTORS: self.vectors}, meta)  # from the table's memory, no bytes copy
        return path
