"""``mluke index build|search``, ``mluke eval-cwr``, ``mluke modularity`` and ``mluke parallel-spans``: thin
wrappers over :mod:`probes.retrieval`, :mod:`probes.cwr`, :mod:`probes.modularity` and :mod:`probes.parallel`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from kb.errors import OptionError
from kb.files import split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, show_report, write_outputs, wrote
from mluke.cli.params import DbOption, DeviceOption, DtypeOption, ModelOption, OverwriteOption, ProgressOption
from mluke.cli.registry import Command

if TYPE_CHECKING:
    from probes.retrieval import IndexKind

app = typer.Typer(
    help="Build a FAISS index over span vectors and search it by cosine.", no_args_is_help=True, rich_markup_mode=None
)  # plain help (as mluke.cli.app)

SpansArg = Annotated[
    Path,
    typer.Argument(
        metavar="SPANS",
        help="A parallel-spans JSONL file (see `mluke parallel-spans`) or an MLQA folder (with --mlqa-langs).",
    ),
]
MlqaOption = Annotated[
    str | None,
    typer.Option(
        "--mlqa-langs",
        help="SPANS is an MLQA folder: comma-separated languages whose dev-context-L-question-L.json files to read.",
    ),
]
LayerOption = Annotated[
    int, typer.Option(help="Layer to read: 0 = embeddings, 1..L, negative from the last (default: last).")
]


def _spans(spans: Path, mlqa_langs: str | None) -> Any:
    from probes.cwr import read_mlqa_spans, read_parallel_jsonl

    data = read_mlqa_spans(spans, split_list(mlqa_langs) or []) if mlqa_langs else read_parallel_jsonl(spans)
    if data.skipped:
        typer.echo(
            f"note: skipped {sum(data.skipped.values())} record(s): "
            + "; ".join(f"{k}: {v}" for k, v in data.skipped.items())
            + (f" (e.g. {data.examples[0]})" if data.examples else ""),
            err=True,
        )
    return data


@app.command("build", short_help="Embed every span of a spans file and index the vectors.")
def build(
    spans: SpansArg,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Folder to write the index to (index.faiss, meta.json, items.jsonl).")
    ],
    mlqa_langs: MlqaOption = None,
    model: ModelOption = None,
    features: Annotated[
        str,
        typer.Option(
            help=(
                "'word' (mean of the span's pieces), 'entity' (the same with entity tokens over the text's entities) "
                "or 'entity-token' (the entity token's vector)."
            )
        ),
    ] = "word",
    layer: LayerOption = -1,
    kind: Annotated[
        str, typer.Option(help="'flat' (exact), 'hnsw' (graph, approximate) or 'ivfpq' (compressed, approximate).")
    ] = "flat",
    hnsw_m: Annotated[int, typer.Option(help="HNSW: links per node.")] = 32,
    ef_construction: Annotated[int, typer.Option(help="HNSW: candidate list while building.")] = 200,
    ef_search: Annotated[
        int, typer.Option(help="HNSW: candidate list while searching (higher: better recall, slower).")
    ] = 128,
    nlist: Annotated[int | None, typer.Option(help="IVF-PQ: number of cells (default about 4 sqrt(n)).")] = None,
    pq_m: Annotated[int | None, typer.Option(help="IVF-PQ: sub-vectors per code (must divide the dimension).")] = None,
    nprobe: Annotated[int, typer.Option(help="IVF-PQ: cells visited per query.")] = 16,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 32,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output folder if it exists.")] = False,
    progress: ProgressOption = True,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
) -> None:
    """Embed every span of SPANS with the model and index the vectors, e.g.
    mluke index build spans.jsonl --features entity -o spans-index"""
    from kb.files import check_output

    checks.choice("--features", features, checks.SPAN_FEATURES)
    checks.choice("--kind", kind, checks.INDEX_KINDS)
    # the index's own settings, passed on to build_index as they are named there
    settings: dict[str, Any] = {
        "hnsw_m": hnsw_m,
        "ef_construction": ef_construction,
        "ef_search": ef_search,
        "nlist": nlist,
        "pq_m": pq_m,
        "nprobe": nprobe,
    }
    for name, value in {**settings, "batch_size": batch_size}.items():
        checks.at_least("--" + name.replace("_", "-"), value, 1)
    size = checks.hidden_size(model)
    if pq_m is not None and size is not None and size % pq_m:
        raise OptionError(
            f"--pq-m {pq_m}: must divide the model's vector size {size} (e.g. "
            f"{', '.join(str(m) for m in (64, 32, 16, 8, 4) if size % m == 0)})"
        )
    checks.device(device, dtype)
    check_output(output, overwrite=overwrite, what=" (span index)")
    from probes.cwr import item_vectors
    from probes.retrieval import build_index

    items = _spans(spans, mlqa_langs).items
    vectors = item_vectors(
        model,
        items,
        features=features,
        layer=layer,
        batch_size=batch_size,
        progress=progress,
        device=device,
        dtype=dtype,
    )
    records = [
        {"text_id": i.id, "lang": i.lang, "span": list(i.span), "surface": i.surface, "text": i.text} for i in items
    ]
    meta = {
        "model": model or "demo",
        "features": features,
        "layer": layer,
        "pooling": "mean" if features != "entity-token" else "entity token",
        "source": str(spans),
    }
    index = build_index(vectors, records, kind=cast("IndexKind", kind), meta=meta, **settings)
    index.save(output, overwrite=overwrite)
    typer.echo(f"indexed {len(index):,} spans ({features} features, layer {layer}, {kind}) in {output}")


@app.command("search", short_help="The spans nearest to a query span by cosine.")
def search(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX", help="A folder written by `mluke index build`.")],
    text: Annotated[str, typer.Option("--text", help="The text holding the query span.")],
    span: Annotated[
        str | None,
        typer.Option("--span", help="start:end character offsets of the query span (default: the whole text)."),
    ] = None,
    entity: Annotated[
        str | None,
        typer.Option("--entity", help="Entity key (QID) of the query span, for entity features (default: [MASK])."),
    ] = None,
    k: Annotated[int, typer.Option("-k", help="How many nearest spans to show.")] = 10,
    model: Annotated[
        str | None,
        typer.Option(help="Checkpoint to embed the query with (default: the one the index was built with)."),
    ] = None,
    json_out: Annotated[str | None, json_option("the hits")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """The spans of the index nearest to a query span by cosine, e.g.
    mluke index search spans-index --text "Paris is the capital of France." --span 0:5"""
    from mluke.spans import span_vectors
    from probes.retrieval import SpanIndex

    outputs = check_outputs(overwrite, json_out)
    if not index_dir.is_dir():
        raise OptionError(
            f"{index_dir}: not an index folder; INDEX is the folder `mluke index build -o FOLDER` wrote "
            "(build one from a spans file first)"
        )
    index = SpanIndex.load(index_dir)
    start, sep, end = (span or f"0:{len(text)}").partition(":")
    if not sep or not start.isdigit() or not end.isdigit():
        raise OptionError(f"--span {span!r}: expected start:end character offsets, e.g. 0:5")
    meta = index.meta
    chosen = model or (None if meta.get("model") == "demo" else meta.get("model"))
    query = span_vectors(
        chosen,
        [text],
        [[(int(start), int(end))]],
        features=meta["features"],
        layer=meta["layer"],
        entities=[[entity]] if meta["features"] != "word" else None,
    )
    hits = index.hits(query, k)[0]
    if write_outputs(json_out, None, overwrite=overwrite, data=lambda: hits):
        return
    print_table(
        f"nearest spans to {text[int(start) : int(end)]!r} ({meta['features']} features, {meta['kind']} index)",
        ["rank", "score", "lang", "span", "text"],
        [
            [n, f"{h['score']:.3f}", h.get("lang", ""), h.get("surface", ""), h.get("text", "")[:80]]
            for n, h in enumerate(hits, 1)
        ],
    )
    wrote(outputs)


def eval_cwr(
    spans: SpansArg,
    mlqa_langs: MlqaOption = None,
    model: ModelOption = None,
    query_lang: Annotated[str, typer.Option("--query-lang", help="Language of the query spans.")] = "en",
    langs: Annotated[
        str | None,
        typer.Option("--langs", help="Comma-separated target languages (default: all but the query language)."),
    ] = None,
    features: Annotated[
        str, typer.Option(help="Comma-separated feature kinds to compare: entity, word, entity-token.")
    ] = "entity,word",
    layer: LayerOption = -1,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 32,
    json_out: Annotated[str | None, json_option("the report", to_file=False)] = None,
    csv_out: Annotated[str | None, csv_option("the per-language table", to_file=False)] = None,
    progress: ProgressOption = True,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Contextual word retrieval: find each query-language span's translation among all spans of each other
    language; mean reciprocal rank per language and feature kind (x100), e.g. mluke eval-cwr spans.jsonl"""
    checks.choices("--features", split_list(features) or [], checks.SPAN_FEATURES)
    checks.at_least("--batch-size", batch_size, 1)
    checks.device(device, dtype)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes.cwr import evaluate_cwr

    report = evaluate_cwr(
        model,
        _spans(spans, mlqa_langs),
        query_lang=query_lang,
        langs=split_list(langs),
        features=split_list(features) or ["entity", "word"],
        layer=layer,
        batch_size=batch_size,
        progress=progress,
        device=device,
        dtype=dtype,
    )
    show_report(
        report,
        f"contextual word retrieval from {query_lang} (MRR x100, layer {layer})",
        json_out=json_out,
        csv_out=csv_out,
        overwrite=overwrite,
        outputs=outputs,
    )


def modularity(
    spans: SpansArg,
    mlqa_langs: MlqaOption = None,
    model: ModelOption = None,
    base: Annotated[str, typer.Option("--base", help="Language paired with each other language.")] = "en",
    langs: Annotated[
        str | None, typer.Option("--langs", help="Comma-separated languages to pair with the base (default: all).")
    ] = None,
    features: Annotated[
        str, typer.Option(help="Comma-separated feature kinds: entity-token, entity, word.")
    ] = "entity-token,word",
    k: Annotated[int, typer.Option("-k", help="Neighbours per node in the k-NN graph.")] = 3,
    layer: LayerOption = -1,
    json_out: Annotated[str | None, json_option("the table", to_file=False)] = None,
    csv_out: Annotated[str | None, csv_option("the table", to_file=False)] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Modularity of the k-NN graph of span features, communities = languages (lower: more
    language-agnostic), for the base language paired with each other one, e.g. mluke modularity spans.jsonl"""
    from kb.languages import MLUKE_LANGUAGES

    kinds = checks.choices("--features", split_list(features) or ["entity-token", "word"], checks.SPAN_FEATURES)
    checks.languages("--base", [base], MLUKE_LANGUAGES, "mLUKE")
    others = [
        lang for lang in checks.languages("--langs", split_list(langs) or [], MLUKE_LANGUAGES, "mLUKE") if lang != base
    ]
    if langs is not None and not others:
        raise OptionError(
            f"--langs {langs}: name at least one language besides the base language {base} "
            "(each is paired with the base)"
        )
    checks.at_least("-k", k, 1)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes.modularity import modularity_by_language

    frame = modularity_by_language(
        model, _spans(spans, mlqa_langs).items, base=base, langs=split_list(langs), features=kinds, k=k, layer=layer
    )
    if write_outputs(
        json_out,
        csv_out,
        overwrite=overwrite,
        data=lambda: frame.to_dict(orient="records"),
        table=lambda: (list(frame.columns), frame.values.tolist()),
    ):
        return
    print_table(
        f"modularity, {base} + each language (k={k})",
        ["lang", "spans", *kinds],
        [
            [r["lang"], int(r["spans"]), *(round(float(r[f]), 3) for f in kinds)]
            for r in frame.to_dict(orient="records")
        ],
    )
    wrote(outputs)


def parallel_spans(
    output: Annotated[Path, typer.Option("-o", "--output", help="JSONL file to write.")],
    langs: Annotated[
        str | None, typer.Option("--langs", help="Comma-separated languages (default: the 24 mLUKE languages).")
    ] = None,
    size: Annotated[int, typer.Option(help="Sentences (each gives two spans per language).")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the fact and pattern draw.")] = 0,
    db: DbOption = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output file if it exists.")] = False,
) -> None:
    """Write parallel sentences stating kb facts in every language, with their entity spans, as the
    parallel-spans JSONL that `mluke eval-cwr`, `mluke modularity` and `mluke index build` read."""
    checks.output_path(output, overwrite)
    from kb import open_db
    from kb.languages import MLUKE_LANGUAGES
    from probes.cwr import write_parallel_jsonl
    from probes.parallel import parallel_spans as make

    items = make(open_db(db), split_list(langs) or MLUKE_LANGUAGES, size=size, seed=seed)
    write_parallel_jsonl(items, output, overwrite=overwrite)
    typer.echo(
        f"wrote {len(items):,} spans ({len({i.id for i in items}) // 2:,} sentences x "
        f"{len({i.lang for i in items})} languages) to {output}"
    )


INDEX = Command("index", "Build and search a FAISS index of span vectors.", app, after="knowbert")
EVAL_CWR = Command("eval-cwr", "Contextual word retrieval across languages (MRR).", eval_cwr, after="evaluate")
MODULARITY = Command(
    "modularity", "Modularity of span features, communities = languages.", modularity, after="eval-cwr"
)
PARALLEL_SPANS = Command(
    "parallel-spans", "Write parallel sentences with entity spans from kb facts.", parallel_spans, after="modularity"
)
