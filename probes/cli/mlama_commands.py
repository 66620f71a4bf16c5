"""``mluke eval-mlama`` and ``mluke eval-demo``: thin wrappers over :func:`probes.eval_mlama` and
:func:`probes.eval_demo`, added to the ``mluke`` command line through the entry points of pyproject.toml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kb.files import split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, records_table, write_outputs, wrote
from mluke.cli.params import (
    DeviceOption,
    DtypeOption,
    KnowledgeOption,
    OverwriteOption,
    ProgressOption,
)
from mluke.cli.registry import Command


def eval_mlama(
    folder: Annotated[
        Path,
        typer.Argument(help="The mLAMA data folder (holding mlama1.1/<lang>/ and the *_objects/ candidate files)."),
    ],
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=(
                "mLUKE checkpoint, KnowBert folder or any Hugging Face masked LM, as a folder or hub name, or 'demo' "
                "(the default): the embedded demo model; repeat to compare models side by side."
            )
        ),
    ] = None,
    knowledge: KnowledgeOption = True,
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated languages to evaluate, e.g. en,ja,de.")] = "en",
    mode: Annotated[
        str | None,
        typer.Option(
            help=(
                "'entity' (entity [MASK] at [Y]) or 'word' (word masks, mLAMA's way). Default: entity for mLUKE "
                "checkpoints, word for other masked LMs; models without an entity vocabulary always use word mode."
            )
        ),
    ] = None,
    subject_entity: Annotated[
        bool, typer.Option("--subject-entity", help="Also give the subject's entity ([X]&[Y] prompts).")
    ] = False,
    relations: Annotated[
        str | None, typer.Option(help="Comma-separated relation ids to keep (default: all but date relations).")
    ] = None,
    keep_subject: Annotated[
        bool,
        typer.Option(
            "--keep-subject",
            help=(
                "Leave a subject among its own candidates (by default it is left out: a country is not its own "
                "neighbour); the reference mLAMA evaluation keeps it."
            ),
        ),
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(
            help=(
                "Also answer each subject with every candidate whose probability is at least this (possibly none), "
                "scored by precision/recall/F1 against all its true objects (N-M relations such as P47 have "
                "several), macro-averaged like P@1."
            )
        ),
    ] = None,
    json_out: Annotated[
        str | None, json_option("P@1 per relation, macro averages and language bias", to_file=False)
    ] = None,
    csv_out: Annotated[str | None, csv_option("P@1 per (language, relation)", to_file=False)] = None,
    progress: ProgressOption = True,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate a model on mLAMA 1.1: P@1 per relation, macro-averaged per language, and language bias;
    with several --model, one table of models (rows) by languages (columns)."""
    checks.input_path("FOLDER", folder, "folder", "the mLAMA data folder")
    if mode is not None:
        checks.choice("--mode", mode, ["entity", "word"])
    checks.between("--threshold", threshold, 0, 1)
    checks.device(device, dtype)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes import compare_mlama, eval_mlama as run

    options: dict[str, Any] = {
        "mode": mode,
        "use_subject_entity": subject_entity,
        "exclude_subject": not keep_subject,
        "relations": split_list(relations),
        "progress": progress,
        "device": device,
        "dtype": dtype,
        "threshold": threshold,
        "knowledge": knowledge,
    }
    sets = ["precision", "recall", "F1"] if threshold is not None else []
    if model and len(model) > 1:
        comparison = compare_mlama(folder, list(model), split_list(langs) or [], **options)
        keys = ["model", "mode", "lang", "relation", "subjects", "P@1", *sets]
        if write_outputs(
            json_out,
            csv_out,
            overwrite=overwrite,
            data=comparison.to_dict,
            table=lambda: records_table(keys, comparison.rows()),
        ):
            return
        columns, rows = comparison.table()
        typer.echo(
            "mLAMA P@1 x 100, macro-averaged over relations; entity modes apply to mLUKE checkpoints only, "
            "other models are asked in word mode"
        )  # a line, not a title: titles wrap inside the table
        print_table(None, columns, rows)
        if threshold is not None:
            typer.echo(f"answer sets (p >= {threshold:g}): F1 x 100, macro-averaged over relations")
            print_table(None, *comparison.set_table())
        for report in comparison.reports:
            for note in report.notes:
                typer.echo(f"note: {report.model}: {note}")
        wrote(outputs)
        return
    report = run(folder, model[0] if model else None, split_list(langs) or [], **options)
    keys = ["lang", "relation", "subjects", "P@1", *sets]
    if write_outputs(
        json_out, csv_out, overwrite=overwrite, data=report.to_dict, table=lambda: records_table(keys, report.rows())
    ):
        return
    print_table(
        f"mLAMA P@1 ({report.mode} mode)" + (f", answer sets p >= {threshold:g}" if sets else ""),
        ["lang", "relation", "subjects", "P@1", *sets],
        [
            [r["lang"], r["relation"], r["subjects"], f"{100 * r['P@1']:.1f}", *(f"{100 * r[m]:.1f}" for m in sets)]
            for r in report.rows()
        ],
    )
    macro_sets = report.macro_sets
    print_table(
        "macro average over relations",
        ["lang", "P@1", *sets],
        [[l, f"{100 * p:.1f}", *(f"{100 * macro_sets[l][m]:.1f}" for m in sets)] for l, p in report.macro.items()],
    )
    print_table(
        "language bias: most common false positive",
        ["lang", "relation", "wrong", "top false positive", "share"],
        [
            [
                b["lang"],
                b["relation"],
                b["false_predictions"],
                b["top_false_positive"] or "-",
                f"{100 * b['share']:.0f}%",
            ]
            for b in report.bias
        ],
    )
    for note in report.notes:
        typer.echo(f"note: {note}")
    wrote(outputs)


def eval_demo(
    model: Annotated[
        Path | None, typer.Option(help="Demo model folder (default: the cached demo model, trained on first use).")
    ] = None,
    json_out: Annotated[str | None, json_option("all tables")] = None,
    train_sample: Annotated[
        int, typer.Option(help="Training subjects sampled per (relation, language) for the 'train' rows.")
    ] = 20,
    progress: ProgressOption = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Probe the demo model on held-out and training (fact, language) pairs in word, entity [Y] and
    entity [X]&[Y] modes, beside random and most-common-answer baselines (P@1 x 100); then link its
    held-out ambiguous-city sentences with each linking method (accuracy x 100 per language)."""
    checks.at_least("--train-sample", train_sample, 1)
    outputs = check_outputs(overwrite, json_out)
    from probes import eval_demo as run

    report = run(model, max_train_per_cell=train_sample, progress=progress)
    if write_outputs(json_out, None, overwrite=overwrite, data=report.to_dict):
        return
    typer.echo(report.to_markdown())
    wrote(outputs)


EVAL_MLAMA = Command("eval-mlama", "Evaluate a model on mLAMA 1.1 (P@1, language bias).", eval_mlama, after="probe")
EVAL_DEMO = Command(
    "eval-demo", "Probe and link with the demo model on its held-out facts.", eval_demo, after="eval-mlama"
)
