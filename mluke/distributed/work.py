"""What a worker does with one shard, free of any engine: link its documents (or compute its span vectors) and
write the rows as the shard's Parquet part. The engine (:mod:`mluke.distributed.jobs`) only moves shards.

Linking a shard is what ``mluke link CORPUS --jsonl`` does to the same lines: the same chunks
(:func:`mluke.linking.documents.iter_chunks`, which never straddles a shard's edge), linked by
:meth:`mluke.Linker.link_iter` as the same batches, so the rows hold the same numbers, bit for bit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from mluke.distributed.parts import write_part
from mluke.distributed.shards import Malformed, Shard, read_shard
from mluke.linking.documents import Document, iter_chunks
from mluke.options import LinkOptions
from mluke.results import LinkedMention

#: The columns of a linking job's rows: where the mention is (the file's name in the dataset, its line, the
#: document's id and language, the mention's number in the document), then :class:`mluke.results.LinkedMention`'s
#: fields, as ``mluke link --jsonl`` writes them (``candidates``: their JSON text, null unless asked for).
MENTION_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("line", pa.int64()),
        ("id", pa.string()),
        ("lang", pa.string()),
        ("mention", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("surface", pa.string()),
        ("key", pa.string()),
        ("name", pa.string()),
        ("title", pa.string()),
        ("confidence", pa.float64()),
        ("score", pa.float64()),
        ("prior", pa.float64()),
        ("link_probability", pa.float64()),
        ("nil", pa.bool_()),
        ("candidates", pa.string()),
    ]
)


@dataclass
class ShardDone:
    """What a worker reports for a shard: its counts, the lines it could not read, the worker's process id and
    the seconds it took."""

    number: int
    documents: int = 0
    mentions: int = 0
    linked: int = 0
    malformed: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    pid: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def id_text(value: object) -> str | None:
    """A document's id as the ``id`` column holds it: a string as it is, anything else as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def link_shard(linker: Any, options: LinkOptions, shard: Shard, lang: str, dest: str) -> ShardDone:
    """Link ``shard``'s documents with ``linker`` and write their mentions as its part of ``dest``."""
    started = time.perf_counter()
    done = ShardDone(shard.number, pid=os.getpid())
    malformed = Malformed()
    columns: dict[str, list[Any]] = {name: [] for name in MENTION_SCHEMA.names}
    for chunk in iter_chunks(read_shard(shard, lang, malformed), options):
        texts = [d.text for d in chunk.documents]
        for doc, (_, mentions) in zip(chunk.documents, linker.link_iter(texts, chunk.lang, options=options)):
            done.documents += 1
            for k, m in enumerate(mentions):
                done.mentions += 1
                done.linked += not m.nil and m.key is not None
                _add_mention(columns, shard, doc, k, m)
    write_part(pa.table(columns, schema=MENTION_SCHEMA), dest, shard.number)
    done.malformed, done.malformed_examples = malformed.count, malformed.examples
    done.seconds = time.perf_counter() - started
    return done


def _add_mention(columns: dict[str, list[Any]], shard: Shard, doc: Document, k: int, m: LinkedMention) -> None:
    row = asdict(m)
    if row["candidates"] is not None:
        row["candidates"] = json.dumps(row["candidates"], ensure_ascii=False)
    row.update(source=shard.file.name, line=doc.line, id=id_text(doc.id), lang=doc.lang, mention=k)
    for name, values in columns.items():
        values.append(row[name])


def span_schema(width: int) -> pa.Schema:
    """The columns of a span-vector job's rows: the mention's place (as in :data:`MENTION_SCHEMA`), its span and
    entity key, and its vector (``width`` float32 numbers)."""
    return pa.schema(
        [
            ("source", pa.string()),
            ("line", pa.int64()),
            ("mention", pa.int32()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("key", pa.string()),
            ("vector", pa.list_(pa.float32(), width)),
        ]
    )


@dataclass(frozen=True)
class SpanSettings:
    """How span vectors are computed (:func:`mluke.spans.span_vectors`'s settings), and which mentions get one."""

    features: str = "word"
    layer: int = -1
    normalize: bool = True
    batch_size: int = 32
    max_length: int = 512
    linked_only: bool = True


def shard_spans(
    documents: Iterable[Document], mentions: pa.Table, linked_only: bool
) -> Iterator[tuple[Document, list[dict[str, Any]]]]:
    """Each document with its mentions from a linking job's part (those with a key, or all with
    ``linked_only=False``), documents without any left out."""
    by_line: dict[int, list[dict[str, Any]]] = {}
    for row in mentions.select(["line", "mention", "start", "end", "key", "nil"]).to_pylist():
        if not linked_only or (row["key"] is not None and not row["nil"]):
            by_line.setdefault(row["line"], []).append(row)
    for doc in documents:
        if doc.line in by_line:
            yield doc, by_line[doc.line]


def vectors_shard(
    model: Any, settings: SpanSettings, shard: Shard, lang: str, mentions: pa.Table, dest: str
) -> ShardDone:
    """The span vectors of ``shard``'s linked mentions (one :func:`mluke.spans.span_vectors` call over the
    shard's documents), written as its part of ``dest``."""
    from mluke.spans import span_vectors

    started = time.perf_counter()
    done = ShardDone(shard.number, pid=os.getpid())
    malformed = Malformed()
    items = list(shard_spans(read_shard(shard, lang, malformed), mentions, settings.linked_only))
    texts = [doc.text for doc, _ in items]
    spans: Sequence[Sequence[tuple[int, int]]] = [[(r["start"], r["end"]) for r in rows] for _, rows in items]
    entities = [[r["key"] if not r["nil"] else None for r in rows] for _, rows in items]
    width = model.model.config.hidden_size
    vectors = np.zeros((0, width), dtype=np.float32)
    if items:
        vectors = span_vectors(
            model,
            texts,
            spans,
            features=settings.features,  # type: ignore[arg-type]
            entities=entities if settings.features != "word" else None,
            layer=settings.layer,
            normalize=settings.normalize,
            batch_size=settings.batch_size,
            max_length=settings.max_length,
        )
    rows = [(doc, r) for doc, found in items for r in found]
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    table = pa.table(
        {
            "source": [shard.file.name] * len(rows),
            "line": [doc.line for doc, _ in rows],
            "mention": [r["mention"] for _, r in rows],
            "start": [r["start"] for _, r in rows],
            "end": [r["end"] for _, r in rows],
            "key": [r["key"] for _, r in rows],
            "vector": pa.FixedSizeListArray.from_arrays(flat, width),
        },
        schema=span_schema(width),
    )
    write_part(table, dest, shard.number)
    done.documents, done.mentions = len(items), len(rows)
    done.malformed, done.malformed_examples = malformed.count, malformed.examples
    done.seconds = time.perf_counter() - started
    return done
