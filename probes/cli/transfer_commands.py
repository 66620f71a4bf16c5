"""``mluke finetune`` and ``mluke evaluate``: thin wrappers over :func:`probes.transfer.finetune` and
:func:`probes.transfer.evaluate` (cross-lingual NER, relation extraction and entity typing),
:func:`probes.transfer.finetune_qa` / :func:`probes.transfer.evaluate_qa` (extractive QA) and
:func:`probes.transfer.finetune_record` / :func:`probes.transfer.evaluate_record` (ReCoRD)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from kb.errors import OptionError
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, output_option, print_table, show_report, wrote
from mluke.cli.params import (
    DeviceOption,
    DtypeOption,
    KnowBertKbOption,
    OverwriteOption,
    ProgressOption,
    TrainDtypeOption,
)
from mluke.cli.registry import Command

if TYPE_CHECKING:
    from probes.transfer import FineTuneReport, QaFineTuneReport

if TYPE_CHECKING:
    from probes.transfer.metrics.qa import Scorer
    from probes.transfer.runs.qa_linking import LinkSource

TASKS = ("ner", "re", "qa", "typing", "record")
TASK_HELP = (
    "'ner' (span NER), 're' (relation extraction), 'typing' (entity typing), 'qa' (extractive QA) or 'record' "
    "(ReCoRD: pick the passage entity that fills @placeholder in a query)."
)
TaskArg = Annotated[str, typer.Argument(metavar="TASK", help=TASK_HELP)]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        help=(
            "re: layout of the data files, 'kbp37' (KBP37/RELX blocks with <e1>/<e2> markers; the default) or 'tacred' "
            "(TACRED JSON: token, subj_start/end, obj_start/end, relation; scored by micro F1 over the positive "
            "relations)."
        ),
    ),
]
KbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="QA: entity database whose names are linked in questions and passages; knowbert features: whose "
        "mention index gives the knowledge layer's spans and candidates (default: the embedded kb).",
    ),
]


def finetune(
    task: TaskArg,
    train: Annotated[
        Path,
        typer.Option(
            "--train",
            help=(
                "Training file: CoNLL-2002/2003 or WikiANN (ner), KBP37/RELX layout or TACRED JSON with --format "
                "tacred (re), Open Entity JSON or JSON lines with sent/start/end/labels (typing), SQuAD 1.1 JSON (qa), "
                "ReCoRD JSON or SuperGLUE ReCoRD JSON lines (record)."
            ),
        ),
    ],
    dev: Annotated[Path, typer.Option("--dev", help="Dev file in the same layout; the epoch best on it is kept.")],
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="Folder to write the fine-tuned model to (hub layout, with its labels)."),
    ],
    features: Annotated[
        str,
        typer.Option(
            help=(
                "'entity' (mLUKE-E: entity [MASK] / [HEAD] [TAIL] vectors; typing: an entity [MASK] over the mention; "
                "qa: entity tokens over linked names; record: an entity [MASK] at @placeholder and over every passage "
                "entity), 'word' (mLUKE-W: word-piece vectors only) or 'knowbert' (word-piece vectors of a KnowBert "
                "--model folder, its knowledge layer reading each text's kb mentions; ner, re, typing; qa: "
                "the question's and the passage window's; record: the query's and the passage's)."
            )
        ),
    ] = "entity",
    model: Annotated[
        str | None, typer.Option(help="Pretrained checkpoint folder or hub name (default: the embedded demo model).")
    ] = None,
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            "-l",
            help=(
                "Language of CoNLL files without one (WikiANN lines carry theirs); qa: of the training file (default "
                "en); record: of train and dev queries without one (needed with --features knowbert)."
            ),
        ),
    ] = None,
    epochs: Annotated[int, typer.Option(help="Training epochs (the paper: 5).")] = 5,
    learning_rate: Annotated[float, typer.Option(help="Peak learning rate of AdamW (the paper: 2e-5).")] = 2e-5,
    batch_size: Annotated[int, typer.Option(help="Input rows per step (the paper searched 4, 8, 16).")] = 16,
    seed: Annotated[
        int, typer.Option(help="Seed of the classifier's initial weights, the data order and dropout.")
    ] = 0,
    max_span_pieces: Annotated[int, typer.Option(help="NER: longest span, in word pieces.")] = 16,
    max_length: Annotated[
        int | None,
        typer.Option(
            help=(
                "qa: pieces per input window, question + passage (default 384); record: pieces per query + passage "
                "(default 512; passage entities beyond it are dropped and counted)."
            )
        ),
    ] = None,
    doc_stride: Annotated[
        int, typer.Option(help="QA: pieces between the starts of a passage's overlapping windows.")
    ] = 128,
    all_labels: Annotated[
        bool,
        typer.Option(
            "--all-labels",
            help=(
                "typing: learn every label of the files; by default only the nine general types (entity, location, "
                "time, organization, object, event, place, person, group), as the LUKE and KnowBert papers do."
            ),
        ),
    ] = False,
    fmt: FormatOption = None,
    db: KbOption = None,
    kb: KnowBertKbOption = None,
    device: DeviceOption = None,
    dtype: TrainDtypeOption = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Start over instead of continuing an interrupted run.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output folder if it exists.")] = False,
    progress: ProgressOption = True,
) -> None:
    """Fine-tune mLUKE (or English LUKE, with --model) for NER, relation extraction, entity typing or extractive
    QA with entity or word features, e.g.
    mluke finetune ner --train en/train.txt --dev en/dev.txt --features entity -o ner-e, or
    mluke finetune typing --train open_entity/train.json --dev open_entity/dev.json -o typing-e, or
    mluke finetune re --format tacred --train tacred/train.json --dev tacred/dev.json -o tacred-e, or
    mluke finetune record --train record/train.json --dev record/dev.json -o record-e
    (TASK: ner, re, typing, qa or record; qa reads SQuAD 1.1 JSON; typing: several types per mention, scored by
    loose micro F1; record: ReCoRD's cloze queries, each passage entity scored for @placeholder, EM/F1 as ReCoRD's
    official script).

    Dev scores are computed after every epoch; an interrupted run continues when the command is run again.
    """
    checks.training_dtype("mluke finetune", dtype)
    checks.choice("TASK", task, TASKS)
    checks.choice("--features", features, ["entity", "word", "knowbert"])
    checks.at_least("--epochs", epochs, 1)
    checks.positive("--learning-rate", learning_rate)
    checks.at_least("--batch-size", batch_size, 1)
    checks.at_least("--max-span-pieces", max_span_pieces, 1)
    if max_length is not None:
        checks.at_least("--max-length", max_length, 16)
    checks.at_least("--doc-stride", doc_stride, 1)
    checks.device(device)
    _check_format(task, fmt)
    checks.input_file("--train", train)
    checks.input_file("--dev", dev)
    checks.output_path(output, overwrite)
    kbs = checks.kb_overrides(kb)
    if kbs and features != "knowbert":
        raise OptionError("--kb gives a KnowBert model's knowledge bases their kbs: only with --features knowbert")
    from mluke.finetuning import FineTuneConfig
    from probes.transfer import finetune as run

    config = FineTuneConfig(
        learning_rate=learning_rate, batch_size=batch_size, epochs=epochs, seed=seed, max_span_pieces=max_span_pieces
    )
    common: dict[str, Any] = {
        "output": output,
        "features": features,
        "model": model,
        "config": config,
        "overwrite": overwrite,
        "restart": restart,
        "progress": progress,
        "device": device,
    }
    if task == "qa":
        from probes.transfer import finetune_qa

        settings = {"max_length": max_length or 384, "doc_stride": doc_stride}
        report: FineTuneReport | QaFineTuneReport = finetune_qa(
            train, dev, db=db, lang=lang or "en", settings=settings, kbs=kbs, **common
        )
        dev_column = "dev F1"
    elif task == "record":
        if all_labels:
            raise OptionError("--all-labels is for `finetune typing`")
        from probes.transfer import finetune_record

        sizes = {"max_length": max_length} if max_length is not None else {}
        report = finetune_record(train, dev, lang=lang, settings=sizes, db=db, kbs=kbs, **common)
        dev_column = "dev F1"
    else:
        if all_labels and task != "typing":
            raise OptionError("--all-labels is for `finetune typing`")
        extra: dict[str, Any] = {"all_labels": all_labels} if task == "typing" else {"fmt": fmt}
        if features == "knowbert":
            extra["db"], extra["kbs"] = db, kbs
        report = run(task, train, dev, lang=lang, **common, **extra)  # type: ignore[arg-type]
        dev_column = "dev score"
    print_table(
        "epochs",
        ["epoch", "train loss", dev_column],
        [[h["epoch"] + 1, f"{h['loss']:.4f}", f"{100 * h['dev']:.1f}"] for h in report.history],
    )
    typer.echo(report.summary())


def evaluate(
    task: TaskArg,
    model_dir: Annotated[Path, typer.Argument(metavar="MODEL", help="A folder written by `mluke finetune`.")],
    test: Annotated[
        list[str] | None,
        typer.Option(
            "--test",
            help="ner/re/typing/record: lang:path of a test file (repeatable), e.g. --test de:de/test.txt",
        ),
    ] = None,
    xquad: Annotated[Path | None, typer.Option("--xquad", help="qa: folder of xquad.LANG.json files.")] = None,
    mlqa: Annotated[
        Path | None, typer.Option("--mlqa", help="qa: folder of MLQA's SPLIT-context-C-question-Q.json files.")
    ] = None,
    langs: Annotated[
        str | None,
        typer.Option("--langs", help="qa: comma-separated languages to read (default: all found; MLQA: its seven)."),
    ] = None,
    gxlt: Annotated[
        bool,
        typer.Option("--gxlt", help="qa: every MLQA context x question language pair, printed as the G-XLT F1 matrix."),
    ] = False,
    split: Annotated[str, typer.Option(help="qa: MLQA split, 'dev' or 'test'.")] = "dev",
    link_source: Annotated[
        str,
        typer.Option(
            "--link-source",
            help=(
                "qa: 'anchors' (names of the kb in each language) or 'english' (XQuAD: only entities of the English "
                "source, read from xquad.en.json)."
            ),
        ),
    ] = "anchors",
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            help=(
                "qa: answer normalisation, 'squad' (SQuAD v1.1), 'mlqa' (MLQA's, per context language) or 'mlqa-fixed' "
                "(MLQA's with its Arabic bug fixed); default: the official one of each data set (squad for XQuAD, mlqa "
                "for MLQA)."
            ),
        ),
    ] = None,
    db: KbOption = None,
    fmt: FormatOption = None,
    batch_size: Annotated[int, typer.Option(help="Input rows per forward pass.")] = 16,
    json_out: Annotated[str | None, json_option("every score (per type too)")] = None,
    csv_out: Annotated[str | None, csv_option("the per-language table")] = None,
    gxlt_csv: Annotated[str | None, output_option("--gxlt-csv", "the G-XLT matrix", "CSV", lead="qa: write")] = None,
    progress: ProgressOption = True,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate a fine-tuned model zero-shot on test files in other languages: a table per language with the
    average, e.g. mluke evaluate ner ner-e --test de:de/test.txt --test ja:ja/test.txt, or
    mluke evaluate typing typing-e --test en:open_entity/test.json (loose micro P/R/F1), or
    mluke evaluate re tacred-e --test en:tacred/test.json (a model fine-tuned with --format tacred reads TACRED
    JSON and reports TACRED's micro P/R/F1 over the positive relations), or
    mluke evaluate qa qa-e --xquad xquad/ --mlqa mlqa/ --gxlt, or
    mluke evaluate record record-e --test en:record/dev.json (EM and F1 as ReCoRD's official script, with the
    passage entities and answers the input size cut off)"""
    from kb.files import split_list, write_csv

    checks.choice("TASK", task, TASKS)
    checks.at_least("--batch-size", batch_size, 1)
    checks.device(device, dtype)
    _check_format(task, fmt)
    if task == "qa":
        _check_qa_sets(xquad, mlqa, split_list(langs), gxlt, split, link_source)
    elif xquad or mlqa or gxlt or gxlt_csv:
        raise OptionError(
            "--xquad, --mlqa, --gxlt and --gxlt-csv are for `evaluate qa`; ner, re, typing and record take --test "
            "lang:path"
        )
    elif not test:
        raise OptionError(f"evaluate {task} needs at least one --test lang:path, e.g. --test de:de/test.txt")
    if task == "qa":
        from probes.transfer import evaluate_qa

        outputs = check_outputs(overwrite, json_out, csv_out, gxlt_csv)
        qa = evaluate_qa(
            model_dir,
            xquad=xquad,
            mlqa=mlqa,
            langs=split_list(langs),
            gxlt=gxlt,
            split=split,
            db=db,
            link_source=cast("LinkSource", link_source),
            batch_size=batch_size,
            progress=progress,
            device=device,
            dtype=dtype,
            scorer=cast("Scorer | None", scorer),
        )
        if gxlt_csv:
            write_csv(*qa.gxlt_table(), gxlt_csv, overwrite=overwrite)
        show_report(
            qa,
            f"qa zero-shot, {qa.features} features ({model_dir}; scores x100)",
            json_out=json_out,
            csv_out=csv_out,
            overwrite=overwrite,
            outputs=[o for o in outputs if o != gxlt_csv],
        )
        if qa.gxlt and "-" not in outputs:
            print_table("G-XLT F1 x100 (rows: context language, columns: question language)", *qa.gxlt_table())
            wrote([gxlt_csv] if gxlt_csv else [])
        return
    from probes.transfer import evaluate as run

    tests = []
    for item in test or []:
        lang, sep, path = item.partition(":")
        if not sep or not lang or not path:
            raise OptionError(f"--test {item!r}: expected lang:path, e.g. de:de/test.txt")
        tests.append((lang, path))
    outputs = check_outputs(overwrite, json_out, csv_out)
    if task == "record":
        from probes.transfer import evaluate_record

        record = evaluate_record(model_dir, tests, batch_size=batch_size, progress=progress, device=device, dtype=dtype)
        show_report(
            record,
            f"record, {record.features} features ({model_dir}; EM and F1 x100)",
            json_out=json_out,
            csv_out=csv_out,
            overwrite=overwrite,
            outputs=outputs,
        )
        return
    report = run(
        task,  # type: ignore[arg-type]
        model_dir,
        tests,
        batch_size=batch_size,
        progress=progress,
        device=device,
        dtype=dtype,
        fmt=fmt,
    )
    show_report(
        report,
        f"{report.task} zero-shot, {report.features} features ({model_dir}; scores x100)",
        json_out=json_out,
        csv_out=csv_out,
        overwrite=overwrite,
        outputs=outputs,
    )


def _check_format(task: str, fmt: str | None) -> None:
    """--format: a known relation layout, and only for `re`."""
    if fmt is None:
        return
    if task != "re":
        raise OptionError(f"--format is for `finetune re` / `evaluate re` (relation data layouts), not {task!r}")
    checks.choice("--format", fmt, ["kbp37", "tacred"])


def _check_qa_sets(
    xquad: Path | None, mlqa: Path | None, langs: list[str] | None, gxlt: bool, split: str, link_source: str
) -> None:
    """The QA evaluation's options, before the model is loaded: a data set given, MLQA languages, --gxlt with --mlqa."""
    if xquad is None and mlqa is None:
        raise OptionError("evaluate qa needs --xquad FOLDER and/or --mlqa FOLDER")
    if gxlt and mlqa is None:
        raise OptionError("--gxlt reads every MLQA context x question language pair: it needs --mlqa FOLDER")
    checks.choice("--split", split, ["dev", "test"])
    checks.choice("--link-source", link_source, ["anchors", "english"])
    if mlqa is not None and xquad is None and langs:
        checks.languages("--langs", langs, checks.MLQA_LANGUAGES, "MLQA")


FINETUNE = Command(
    "finetune", "Fine-tune mLUKE for NER, relation extraction, entity typing or QA.", finetune, after="corpus"
)
EVALUATE = Command("evaluate", "Evaluate a fine-tuned model zero-shot in other languages.", evaluate, after="finetune")
