"""``mluke probe``, ``mluke eval-mlama`` and ``mluke eval-demo``: thin wrappers over :func:`mluke.probe`,
:func:`probes.eval_mlama` and :func:`probes.eval_demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kb.files import split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, records_table, write_outputs, wrote
from mluke.cli.params import DbOption, DeviceOption, DtypeOption, KnowBertKbOption, OverwriteOption, ProgressOption
from mluke.options import ProbeOptions

#: ``--knowledge/--no-knowledge``: a KnowBert model's knowledge layer on or off (P@1 with and without it)
KnowledgeOption = Annotated[
    bool,
    typer.Option(
        "--knowledge/--no-knowledge",
        help="KnowBert --model: its knowledge layer over the prompts' kb mentions, or the bare encoder.",
    ),
]


def probe(
    template: Annotated[
        str,
        typer.Argument(
            help="Cloze template with one [X] (subject) and one [Y] (object), e.g. '[X] is the capital of [Y]'."
        ),
    ],
    lang: Annotated[
        str,
        typer.Option(
            "--lang",
            "-l",
            help="Language of the prompts and labels (an English template is mapped to this language's template).",
        ),
    ] = "en",
    subject: Annotated[
        list[str] | None,
        typer.Option(
            "--subject", "-s", help="Subject label, key or any name (repeatable); default: every subject with facts."
        ),
    ] = None,
    candidate: Annotated[
        list[str] | None,
        typer.Option("--candidate", help="Candidate label or key (repeatable); default: the relation's objects."),
    ] = None,
    relation: Annotated[
        str | None, typer.Option(help="Wikidata property id (P36...) when the template is not one of the kb's.")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(help="'entity', 'word' (mLAMA's typed querying) or 'both'; default: entity for mLUKE, else word."),
    ] = None,
    subject_entity: Annotated[
        bool | None,
        typer.Option(
            "--subject-entity/--no-subject-entity",
            help="Give the subject's entity over [X] ([X]&[Y], the default) or not ([Y] only).",
        ),
    ] = None,
    templates: Annotated[
        Path | None, typer.Option("--templates", help="More templates: an mLAMA folder or a templates.jsonl file.")
    ] = None,
    top_k: Annotated[int, typer.Option(help="How many predictions to keep per subject.")] = 5,
    normalize: Annotated[
        str, typer.Option(help="Log-probabilities over the 'candidates' or the whole 'vocabulary' (same ranking).")
    ] = "candidates",
    keep_subject: Annotated[
        bool,
        typer.Option("--keep-subject", help="Keep a subject among its own candidates (as mLAMA's evaluation does)."),
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(help="Answer with every candidate of at least this probability (P/R/F1 over all objects)."),
    ] = None,
    max_pieces: Annotated[int, typer.Option(help="Open-vocabulary word answers: longest answer, in word pieces.")] = 5,
    decoding: Annotated[
        str, typer.Option(help="Open-vocabulary: 'independent', 'left-to-right' or 'confidence' order.")
    ] = "confidence",
    beam: Annotated[int, typer.Option(help="Open-vocabulary word answers: partial answers kept at each step.")] = 5,
    model: Annotated[
        str | None,
        typer.Option(
            help="mLUKE checkpoint, KnowBert folder or any masked LM, folder or hub name (default: the demo model)."
        ),
    ] = None,
    knowledge: KnowledgeOption = True,
    db: DbOption = None,
    kb: KnowBertKbOption = None,
    limit: Annotated[int, typer.Option(help="Rows to print.")] = 10,
    json_out: Annotated[str | None, json_option("the full result")] = None,
    csv_out: Annotated[str | None, csv_option("one row per prediction (and mode)")] = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Ask the model which object each subject has, e.g. mluke probe "[X] is the capital of [Y]" --lang ja"""
    checks.languages("--lang", [lang], checks.db_languages(db), str(db or "the embedded kb"))
    if mode is not None:
        checks.choice("--mode", mode, ["entity", "word", "both"])
    checks.choice("--normalize", normalize, ["candidates", "vocabulary"])
    checks.choice("--decoding", decoding, ["independent", "left-to-right", "confidence"])
    checks.between("--threshold", threshold, 0, 1)
    checks.at_least("--limit", limit, 0)
    checks.input_path("--templates", templates)
    checks.device(device, dtype)
    outputs = check_outputs(overwrite, json_out, csv_out)
    options = ProbeOptions(  # checks --top-k, --max-pieces and --beam; the choices are checked above
        mode=mode,  # type: ignore[arg-type]
        use_subject_entity=subject_entity,
        top_k=top_k,
        normalize=normalize,  # type: ignore[arg-type]
        exclude_subject=not keep_subject,
        threshold=threshold,
        max_pieces=max_pieces,
        decoding=decoding,  # type: ignore[arg-type]
        beam=beam,
        knowledge=knowledge,
    )
    from mluke.probing.probe import probe as run

    kbs = checks.kb_overrides(kb)
    result = run(
        template,
        lang,
        subjects=subject,
        candidates=candidate,
        relation=relation,
        templates=templates,
        model=model,
        db=db,
        options=options,
        device=device,
        dtype=dtype,
        kbs=kbs,
    )
    if write_outputs(json_out, csv_out, overwrite=overwrite, data=result.to_dict, table=lambda: _frame_table(result)):
        return
    for note in result.notes:
        typer.echo(f"note: {note}")
    for r in result.results:
        shown = None if threshold is not None else 3  # answer sets are shown whole
        rows = [
            [
                row.label,
                ", ".join(p.label + (" ✓" if p.correct else "") for p in row.predictions[:shown])
                or ("(none)" if shown is None else ""),
                ", ".join(row.gold_labels) or ("(none)" if row.gold_known else "?"),
                row.rank or "-",
            ]
            for row in r.rows[:limit]
        ]
        typer.echo(r.summary())  # above the table, not as its title: long lines do not wrap inside the table
        print_table(
            None, ["subject", "top predictions" if shown else f"answers (p >= {threshold:g})", "answer", "rank"], rows
        )
    wrote(outputs)


def eval_mlama(
    folder: Annotated[
        Path,
        typer.Argument(help="The mLAMA data folder (holding mlama1.1/<lang>/ and the *_objects/ candidate files)."),
    ],
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=(
                "mLUKE checkpoint, KnowBert folder or any Hugging Face masked LM, as a folder or hub name (default: "
                "the embedded demo model); repeat to compare models side by side."
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


def _frame_table(result: Any) -> tuple[list[str], list[list[Any]]]:
    """A probing result's rows (:meth:`to_pandas`) as CSV columns and rows."""
    df = result.to_pandas()
    return list(df.columns), df.values.tolist()
