"""Contextual word retrieval (mLUKE paper, Table 2): find a span's translation among all spans of another
language by the cosine of their contextual vectors, scored by mean reciprocal rank.

Data: :class:`ParallelSpan` records; records of different languages with the same ``id`` are translations
of each other. Two readers:

- :func:`read_parallel_jsonl` — our own format, one JSON object per line::

    {"id": "f12", "lang": "de", "text": "Berlin ist die Hauptstadt von Deutschland.", "span": [0, 6],
     "entities": [[0, 6, "Q64"], [30, 41, "Q183"]]}

  ``span`` is the span to retrieve (character offsets, end exclusive); ``entities`` (optional) are the
  gold entity mentions of the text with their keys (used only by the ``entities="gold"`` oracle and, as
  positions, by ``entities="mask"``, see :func:`item_vectors`);
- :func:`read_mlqa_spans` — MLQA's layout (``{split}-context-{c}-question-{q}.json``, SQuAD format): the
  answer span of each question in its context; parallel questions share their id across languages.

:func:`evaluate_cwr`: for each target language, every query-language span that has a translation there is
a query, the pool is every span of the target language, and the rank of the translation among the pool
gives the reciprocal rank. Ranks are exact (all similarities are computed); ties count against the gold.

Where mLUKE-E's entity tokens come from (``entities``): by default (``"linked"``) the library finds them
itself, with :class:`mluke.Linker` (mention detection over the kb's names, then the model and the prior
choose an entity); ``"mask"`` puts the entity [MASK] everywhere; ``"gold"`` gives the data's own entity
keys, an oracle (the query and its translation then share their answer's entity) kept for comparison only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

import numpy as np

from kb.errors import InputFormatError, OptionError
from kb.renamed import renamed_keyword
from mluke.options import LinkOptions
from probes.reading import Skips, read_data_lines
from probes.report import TableReport

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from kb.db import EntityDB
    from mluke.models.checkpoint import Mluke
    from mluke.models.devices import Device, DType

Span = tuple[int, int]
EntitySource = Literal["linked", "mask", "gold"]


class VectorKeywords(TypedDict, total=False):
    """The keyword arguments of :func:`item_vectors` that :func:`language_vectors` and :func:`evaluate_cwr`
    pass on to it."""

    layer: int
    entities: EntitySource
    db: EntityDB | str | os.PathLike[str] | None
    batch_size: int
    progress: bool
    device: Device
    dtype: DType


ENTITY_SOURCES: tuple[str, ...] = ("linked", "mask", "gold")


@dataclass(frozen=True)
class ParallelSpan:
    """A span of a text in one language; ``entities``: ``(start, end, key)`` mentions of the text."""

    id: str
    lang: str
    text: str
    span: Span
    entities: tuple[tuple[int, int, str], ...] = ()

    @property
    def surface(self) -> str:
        return self.text[self.span[0] : self.span[1]]


@dataclass
class SpanSet:
    """Records read from a file or folder, and what was skipped (``skipped``: count per reason)."""

    items: list[ParallelSpan]
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def languages(self) -> list[str]:
        return sorted({i.lang for i in self.items})


def _finish(items: list[ParallelSpan], skips: Skips, source: Path, what: str) -> SpanSet:
    if not items:
        raise InputFormatError(skips.nothing_read(source, what))
    seen: set[tuple[str, str]] = set()
    for item in items:
        if (item.id, item.lang) in seen:
            raise InputFormatError(f"{source}: id {item.id!r} occurs twice in language {item.lang!r}")
        seen.add((item.id, item.lang))
    return SpanSet(items, dict(skips.counts), skips.examples)


def _span(value: Any, text: str) -> Span | None:
    if (
        isinstance(value, (list, tuple))
        and len(value) >= 2
        and all(isinstance(v, int) for v in value[:2])
        and 0 <= value[0] < value[1] <= len(text)
    ):
        return value[0], value[1]
    return None


def read_parallel_jsonl(path: str | os.PathLike[str]) -> SpanSet:
    """Records of a parallel-spans JSONL file (see the module docs); bad lines are counted and skipped."""
    path = Path(path)
    lines, _ = read_data_lines(path)
    skips, items = Skips(), []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            skips.add(path, n, "not JSON", str(exc))
            continue
        if not isinstance(record, dict):
            skips.add(path, n, "not a JSON object")
            continue
        text, lang, ident = record.get("text"), record.get("lang"), record.get("id")
        if not isinstance(text, str) or not isinstance(lang, str) or not lang or ident is None:
            skips.add(path, n, "missing id, lang or text")
            continue
        span = _span(record.get("span"), text)
        if span is None:
            skips.add(path, n, "span not [start, end] inside the text", repr(record.get("span")))
            continue
        entities = []
        for e in record.get("entities") or []:
            where = _span(e, text) if isinstance(e, (list, tuple)) and len(e) == 3 and isinstance(e[2], str) else None
            if where is None:
                skips.add(path, n, "entity not [start, end, key] inside the text", repr(e))
                break
            entities.append((*where, e[2]))
        else:
            items.append(ParallelSpan(str(ident), lang, text, span, tuple(entities)))
    return _finish(items, skips, path, "parallel span records")


def write_parallel_jsonl(
    items: Iterable[ParallelSpan], path: str | os.PathLike[str], *, overwrite: bool = False
) -> None:
    """Write records in the format :func:`read_parallel_jsonl` reads."""
    from kb.files import write_jsonl

    write_jsonl(
        (
            {
                "id": i.id,
                "lang": i.lang,
                "text": i.text,
                "span": list(i.span),
                "entities": [list(e) for e in i.entities],
            }
            for i in items
        ),
        path,
        overwrite=overwrite,
    )


def read_mlqa_spans(folder: str | os.PathLike[str], langs: Sequence[str], *, split: str = "dev") -> SpanSet:
    """The answer spans of MLQA's ``{split}-context-{lang}-question-{lang}.json`` files, one per language."""
    from probes.transfer.readers.qa import read_mlqa

    folder = Path(folder)
    skips, items = Skips(), []
    for lang in langs:
        data = read_mlqa(folder, lang, lang, split=split)
        skips.counts.update(data.skipped)
        skips.examples.extend(data.examples_skipped)
        for example in data:
            start, text = example.answers[0]
            items.append(ParallelSpan(example.id, lang, example.context, (start, start + len(text))))
    return _finish(items, skips, folder, "MLQA answers")


def _check_source(entities: str) -> None:
    if entities not in ENTITY_SOURCES:
        raise OptionError(f"entities={entities!r}: expected one of {', '.join(ENTITY_SOURCES)}")


def linked_entities(
    model: Mluke | str | os.PathLike[str] | None,
    items: Sequence[ParallelSpan],
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    batch_size: int = 16,
    device: Device = None,
    dtype: DType = None,
) -> list[list[tuple[int, int, str]]]:
    """Per record, the ``(start, end, key)`` mentions that :class:`mluke.Linker` finds and links in its text
    (NIL mentions left out): the entities the library would give mLUKE-E without being told the answer."""
    from mluke.linking.linker import Linker

    by_lang: dict[str, list[int]] = {}
    for n, item in enumerate(items):
        by_lang.setdefault(item.lang, []).append(n)
    out: list[list[tuple[int, int, str]]] = [[] for _ in items]
    for lang, where in by_lang.items():
        linker = Linker(model, db, languages=[lang], device=device, dtype=dtype)
        found = linker.link([items[n].text for n in where], lang, options=LinkOptions(batch_size=batch_size))
        for n, mentions in zip(where, found):
            out[n] = [(m.start, m.end, m.key) for m in mentions if m.key is not None and not m.nil]
    return out


def item_vectors(
    model: Mluke | str | os.PathLike[str] | None,
    items: Sequence[ParallelSpan],
    *,
    features: str = "word",
    layer: int = -1,
    entities: EntitySource = "linked",
    db: EntityDB | str | os.PathLike[str] | None = None,
    batch_size: int = 32,
    progress: bool = False,
    device: Device = None,
    dtype: DType = None,
) -> np.ndarray:
    """Unit-length vectors of each record's span (items x hidden), see :func:`mluke.spans.span_vectors`.

    For the entity kinds, the span always gets an entity token, and so does every other mention of
    ``entities``: ``"linked"`` (default) the mentions :func:`linked_entities` finds in the text with the kb
    ``db`` (the embedded kb by default), the span getting the entity linked at exactly its characters, else
    [MASK]; ``"mask"`` the entity [MASK] over the span and over the record's listed mentions (their
    positions, no identity); ``"gold"`` the record's own entity keys (an oracle: for comparison only).
    """
    from mluke.opening import open_model
    from mluke.spans import span_vectors

    _check_source(entities)
    if features != "word" and entities == "linked":
        model = open_model(model, device=device, dtype=dtype)
        mentions = linked_entities(model, items, db=db, device=device, dtype=dtype)
    else:
        mentions = [list(item.entities) for item in items]
    spans, refs = [], []
    for item, found in zip(items, mentions):
        own = next((key for s, e, key in found if (s, e) == item.span), None)
        others = [(s, e, key) for s, e, key in found if (s, e) != item.span]
        spans.append([item.span, *((s, e) for s, e, _ in others)])
        refs.append([own, *(key for _, _, key in others)] if entities != "mask" else [None] * len(spans[-1]))
    vectors = span_vectors(
        model,
        [i.text for i in items],
        spans,
        features=features,  # type: ignore[arg-type]
        entities=refs if features != "word" else None,
        layer=layer,
        normalize=True,
        batch_size=batch_size,
        progress=progress,
        device=device,
        dtype=dtype,
    )
    first = np.cumsum([0, *(len(s) for s in spans[:-1])])
    return cast("np.ndarray", vectors[first])


def reciprocal_ranks(queries: np.ndarray, pool: np.ndarray, gold: np.ndarray, *, chunk: int = 1024) -> np.ndarray:
    """1 / rank of ``pool[gold[i]]`` among all of ``pool`` by inner product with ``queries[i]`` (unit vectors:
    cosine); a tie with the gold counts as ranked above it."""
    out = np.empty(len(queries), dtype=np.float64)
    for start in range(0, len(queries), chunk):
        q = queries[start : start + chunk]
        scores = q @ pool.T
        mine = scores[np.arange(len(q)), gold[start : start + chunk]]
        out[start : start + chunk] = 1.0 / (scores >= mine[:, None]).sum(1)
    return out


@dataclass
class CwrReport(TableReport):
    """MRR per target language and feature kind (``rows``: lang, queries, pool, mrr_<features>...)."""

    query_lang: str
    features: list[str]
    layer: int
    model: str
    rows: list[dict[str, Any]]
    entities: str = "linked"
    head = ("query_lang", "features", "layer", "model", "entities")

    @property
    def average(self) -> dict[str, float]:
        return {f: float(np.mean([r[f"mrr_{f}"] for r in self.rows])) for f in self.features} if self.rows else {}

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows for printing (MRR x100), the average last."""
        rows = [
            [r["lang"], r["queries"], r["pool"], *(round(100 * r[f"mrr_{f}"], 1) for f in self.features)]
            for r in self.rows
        ]
        rows.append(
            [
                "average",
                sum(r["queries"] for r in self.rows),
                sum(r["pool"] for r in self.rows),
                *(round(100 * self.average[f], 1) for f in self.features),
            ]
        )
        return ["lang", "queries", "pool", *(f"MRR {f}" for f in self.features)], rows


@renamed_keyword("kb", "db")
def by_language(items: Iterable[ParallelSpan]) -> dict[str, list[ParallelSpan]]:
    """The records of each language, in their order.

    Args:
        items: parallel-span records.

    Returns:
        ``{lang: [record, ...]}``.
    """
    out: dict[str, list[ParallelSpan]] = {}
    for item in items:
        out.setdefault(item.lang, []).append(item)
    return out


def language_vectors(
    bundle: Mluke,
    by_lang: dict[str, list[ParallelSpan]],
    langs: Sequence[str],
    features: Sequence[str],
    **options: Unpack[VectorKeywords],
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`item_vectors` of each language's records for each feature kind.

    Args:
        bundle: the opened model.
        by_lang: the records of each language (:func:`by_language`).
        langs: the languages to embed.
        features: the feature kinds.
        **options: :func:`item_vectors`'s other keyword arguments (:class:`VectorKeywords`).

    Returns:
        ``{feature: {lang: vectors}}``.
    """
    return {f: {lang: item_vectors(bundle, by_lang[lang], features=f, **options) for lang in langs} for f in features}


def evaluate_cwr(
    model: Mluke | str | os.PathLike[str] | None,
    items: Sequence[ParallelSpan] | SpanSet,
    *,
    query_lang: str = "en",
    langs: Sequence[str] | None = None,
    features: Sequence[str] = ("entity", "word"),
    **options: Unpack[VectorKeywords],
) -> CwrReport:
    """MRR of retrieving each ``query_lang`` span's translation among all spans of each other language.

    ``options`` are :func:`item_vectors`'s (``layer``, ``entities``, ``db``, ``batch_size``, ``progress``,
    ``device``, ``dtype``). ``entities``: where mLUKE-E's entity tokens come from: ``"linked"`` (the library's
    own linker, default), ``"mask"`` or the ``"gold"`` oracle; recorded in the report, with the layer."""
    from mluke.opening import open_model

    layer, entities = options.get("layer", -1), options.get("entities", "linked")

    records = list(items.items if isinstance(items, SpanSet) else items)
    by_lang = by_language(records)
    if query_lang not in by_lang:
        raise OptionError(f"no spans in the query language {query_lang!r}; languages: {', '.join(sorted(by_lang))}")
    targets = [lang for lang in (langs or sorted(by_lang)) if lang != query_lang]
    missing = [lang for lang in targets if lang not in by_lang]
    if missing or not targets:
        raise OptionError(
            f"no spans in {', '.join(missing) or 'any language but the query language'}; "
            f"languages: {', '.join(sorted(by_lang))}"
        )
    _check_source(entities)
    bundle = open_model(model, device=options.get("device"), dtype=options.get("dtype"))
    vectors = language_vectors(bundle, by_lang, [query_lang, *targets], features, **options)
    query_pos = {item.id: n for n, item in enumerate(by_lang[query_lang])}
    rows = []
    for lang in targets:
        pairs = [(query_pos[item.id], n) for n, item in enumerate(by_lang[lang]) if item.id in query_pos]
        if not pairs:
            raise OptionError(f"no {lang!r} span shares an id with a {query_lang!r} span: nothing to retrieve")
        q, gold = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        row: dict[str, Any] = {"lang": lang, "queries": len(pairs), "pool": len(by_lang[lang])}
        for f in features:
            row[f"mrr_{f}"] = float(reciprocal_ranks(vectors[f][query_lang][q], vectors[f][lang], gold).mean())
        rows.append(row)
    model_name = str(model) if isinstance(model, (str, os.PathLike)) else "demo" if model is None else "given model"
    return CwrReport(query_lang, list(features), layer, model_name, rows, entities)
