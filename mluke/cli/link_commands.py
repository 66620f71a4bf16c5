"""``mluke link`` and ``mluke eval-link``: thin wrappers over :func:`mluke.linking.files.iter_link_file` (a
stream: memory does not grow with the input) and :func:`probes.eval_link`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kb.files import check_text_source, split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, records_table, write_outputs, wrote
from mluke.cli.params import (
    DbOption,
    DeviceOption,
    DtypeOption,
    KnowBertKbOption,
    ModelOption,
    OverwriteOption,
    ProgressOption,
)
from mluke.options import LinkOptions


def link(
    source: Annotated[str, typer.Argument(help="Text file with one text per line, or '-' for standard input.")],
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the texts, e.g. ja.")] = "en",
    model: ModelOption = None,
    db: DbOption = None,
    method: Annotated[
        str,
        typer.Option(
            help=(
                "'combined' (model + prior), 'prior', 'model', 'global' (combined, resolving mentions one by one "
                "and feeding each resolved entity back in as context), or 'knowbert' (the integrated linker of a "
                "KnowBert model, with NULL; --model: the folder 'mluke knowbert train' writes, RUN/model)."
            )
        ),
    ] = "combined",
    prior_weight: Annotated[
        float,
        typer.Option(
            help="Weight of log p(entity | mention) next to the model's log-probability in 'combined' and 'global'."
        ),
    ] = 1.0,
    nil_threshold: Annotated[
        float | None,
        typer.Option(
            help=(
                "Mentions whose confidence (0 to 1) is below this are NIL (default: the calibrated threshold, see "
                "the README)."
            )
        ),
    ] = None,
    candidates: Annotated[
        bool,
        typer.Option(
            "--candidates",
            help="Show the runner-up candidates in the table and include every candidate's scores in the JSONL output.",
        ),
    ] = False,
    jsonl: Annotated[
        str | None,
        typer.Option(
            "--jsonl",
            help=(
                "Write one JSON object per input line to this file ('-' for stdout); the terminal then shows a "
                "summary instead of every mention."
            ),
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(help="Mentions to print on the terminal (the rest are counted; --jsonl writes them all).")
    ] = 50,
    knowledge_base: Annotated[
        str | None,
        typer.Option(
            help="--method knowbert: the knowledge base whose integrated linker decides, in a KnowBert model with "
            "several (default: its first)."
        ),
    ] = None,
    kb: KnowBertKbOption = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show a progress bar on long inputs.")
    ] = True,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Link entity mentions in texts to the kb's entities (one text per line), e.g. mluke link --lang ja news.txt"""
    checks.languages("--lang", [lang], checks.db_languages(db), str(db or "the embedded kb"))
    checks.choice("--method", method, checks.LINK_METHODS)
    checks.at_least("--limit", limit, 0)
    checks.between("--nil-threshold", nil_threshold, 0, 1)
    checks.device(device, dtype)
    check_text_source(source, pipe_hint="mluke link -")
    outputs = check_outputs(overwrite, jsonl)
    options = LinkOptions(
        method=method,  # type: ignore[arg-type]  # checked above
        prior_weight=prior_weight,
        nil_threshold=nil_threshold,
        candidates=candidates,
        knowledge_base=knowledge_base,
    )
    kbs = checks.kb_overrides(kb)
    from mluke.linking.files import iter_link_file, write_linked
    from mluke.results import MENTION_COLUMNS, LinkTally

    stream = iter_link_file(
        source, lang, db=db, model=model, options=options, progress=progress, device=device, dtype=dtype, kbs=kbs
    )
    if jsonl:  # each line written as soon as it is linked
        tally = LinkTally()
        try:
            write_linked(stream, jsonl, overwrite=overwrite, tally=tally)
        except KeyboardInterrupt:
            _say_interrupted(tally, source, jsonl)
            raise
        if jsonl == "-":
            return
        counts = tally.summary()
        print_table(f"linked {source} ({lang}, {method})", list(counts), [list(counts.values())])
        _say_if_nothing_found(tally, source, lang)
        wrote(outputs)
        return
    tally = LinkTally(
        keep=limit, runner_ups=3 if candidates else 0
    )  # counts, and the rows of the first --limit mentions
    try:
        for item in stream:
            tally.add(item)
    except KeyboardInterrupt:
        _say_interrupted(tally, source, None)
        raise
    columns = [c.format(lang=lang) for c in MENTION_COLUMNS] + (["runner-ups (name prior)"] if candidates else [])
    print_table(None, columns, tally.rows)
    _say_if_nothing_found(tally, source, lang)
    if tally.mentions > limit:
        typer.echo(
            f"... and {tally.mentions - limit:,} more mentions (--limit N prints more; --jsonl FILE writes them all)"
        )


def _say_interrupted(tally: Any, source: str, jsonl: str | None) -> None:
    """What Ctrl-C kept: the lines on standard output, or nothing (a --jsonl file is written only when
    complete, so no half file is left), and how to get the rest."""
    done = f"interrupted after linking {tally.texts:,} line{'s' if tally.texts != 1 else ''}"
    if jsonl == "-":
        kept = f"{done}; they were written to standard output"
    elif jsonl:
        kept = f"{done}; nothing was written to {jsonl} (it is written only when complete, so no half file is left)"
    else:
        kept = f"{done} ({tally.mentions:,} mentions); nothing was printed"
    rest = "standard input" if source == "-" else source
    typer.echo(f"\n{kept}; run the command again to link all of {rest}", err=True)


def _say_if_nothing_found(tally: Any, source: str, lang: str) -> None:
    """A note under an empty table: an empty input, or texts where no kb name of ``lang`` occurs (often
    texts in another language than ``--lang``)."""
    if not tally.texts:
        typer.echo(f"note: {'standard input' if source == '-' else source} holds no text to link")
    elif not tally.mentions:
        typer.echo(
            f"note: no {lang!r} name of the kb occurs in the {tally.texts:,} text(s); texts in another "
            f"language need --lang (e.g. --lang ja)"
        )


def eval_link(
    folder: Annotated[
        Path,
        typer.Argument(
            help=(
                "The Mewsli-9 'dataset' folder written by its extraction script (holding <lang>/docs.tsv, "
                "<lang>/mentions.tsv, <lang>/text/), or one language folder."
            )
        ),
    ],
    langs: Annotated[
        str | None,
        typer.Option(
            "--langs", help="Comma-separated languages to evaluate, e.g. ja,de (default: every language folder found)."
        ),
    ] = None,
    methods: Annotated[
        str,
        typer.Option(
            "--methods",
            help=(
                "Comma-separated linking methods to compare: 'prior' (most common entity for the name), 'model' (the "
                "model alone), 'combined' (model + prior), 'global' (combined, resolving the most confident mention "
                "first; the slowest), 'knowbert' (a KnowBert model's integrated linker; needs --knowbert-model)."
            ),
        ),
    ] = "prior,model,combined,global",
    model: ModelOption = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help=(
                "Entity database whose keys match the dataset's qid column, e.g. a kb built from the Wikidata dump "
                "(default: the embedded kb)."
            ),
        ),
    ] = None,
    end_to_end: Annotated[
        bool,
        typer.Option(
            "--end-to-end/--no-end-to-end",
            help=(
                "Also let the linker find the mentions itself and report precision, recall and F1 against the gold "
                "mentions (exact span and entity); --no-end-to-end halves the time."
            ),
        ),
    ] = True,
    nil_threshold: Annotated[
        float | None,
        typer.Option(
            help=(
                "Treat mentions whose confidence (0 to 1) is below this as NIL (not linked; default: the calibrated "
                "threshold)."
            )
        ),
    ] = None,
    knowbert_model: Annotated[
        Path | None,
        typer.Option(
            "--knowbert-model",
            help="The KnowBert model folder method 'knowbert' links with ('mluke knowbert train' writes RUN/model).",
        ),
    ] = None,
    json_out: Annotated[str | None, json_option("every score and the skipped-record counts")] = None,
    csv_out: Annotated[str | None, csv_option("one row per (language, method)")] = None,
    progress: ProgressOption = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate entity linking on Mewsli-9: in-KB accuracy (gold mentions given), the same on ambiguous
    mentions (two or more candidates), and end-to-end precision / recall / F1, per language and method.

    Example: mluke eval-link path/to/mewsli-9/output/dataset --langs ja,de --methods prior,combined --db kb.sqlite --model path/to/mluke-base
    """  # noqa: E501
    checks.choices("--methods", split_list(methods) or [], checks.LINK_METHODS)
    checks.between("--nil-threshold", nil_threshold, 0, 1)
    from probes import eval_link as run
    from probes.linking_eval import METRIC_COLUMNS

    outputs = check_outputs(overwrite, json_out, csv_out)
    report = run(
        folder,
        langs=split_list(langs),
        methods=split_list(methods) or [],
        model=model,
        db=db,
        end_to_end=end_to_end,
        nil_threshold=nil_threshold,
        progress=progress,
        knowbert_model=knowbert_model,
    )
    if write_outputs(
        json_out,
        csv_out,
        overwrite=overwrite,
        data=report.to_dict,
        table=lambda: records_table(METRIC_COLUMNS, report.rows),
    ):
        return
    columns, rows = report.table()
    print_table(f"entity linking on {folder} ({report.documents:,} documents; scores x100)", columns, rows)
    if report.skipped:
        print_table("skipped records", ["reason", "count"], sorted(report.skipped.items(), key=lambda kv: -kv[1]))
        for example in report.skipped_examples:
            typer.echo(f"  e.g. {example}")
    wrote(outputs)
