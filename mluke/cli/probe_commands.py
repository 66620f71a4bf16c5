"""``mluke probe``: a thin wrapper over :func:`mluke.probe` (``mluke eval-mlama`` and ``mluke eval-demo`` come
from :mod:`probes.cli.mlama_commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, write_outputs, wrote
from mluke.cli.params import (
    DbOption,
    DeviceOption,
    DtypeOption,
    KnowBertKbOption,
    KnowledgeOption,
    OverwriteOption,
)
from mluke.options import ProbeOptions


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
    from mluke.probing.cloze import probe as run

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


def _frame_table(result: Any) -> tuple[list[str], list[list[Any]]]:
    """A probing result's rows (:meth:`to_pandas`) as CSV columns and rows."""
    df = result.to_pandas()
    return list(df.columns), df.values.tolist()
