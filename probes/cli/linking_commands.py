"""``mluke eval-link``: a thin wrapper over :func:`probes.eval_link`, added to the ``mluke`` command line through
the entry points of pyproject.toml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kb.files import split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, records_table, write_outputs, wrote
from mluke.cli.params import (
    ModelOption,
    OverwriteOption,
    ProgressOption,
)
from mluke.cli.registry import Command


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


EVAL_LINK = Command("eval-link", "Evaluate entity linking on Mewsli-9.", eval_link, after="link")
