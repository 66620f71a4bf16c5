"""``mluke finetune`` and ``mluke evaluate``: thin wrappers over :func:`probes.transfer.finetune` and
:func:`probes.transfer.evaluate` (cross-lingual NER and relation extraction)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kb.errors import OptionError
from mluke.cli.output import OverwriteOption, check_outputs, print_table, show_report

TaskArg = Annotated[str, typer.Argument(help="'ner' (span NER) or 're' (relation extraction).")]


def finetune(
    task: TaskArg,
    train: Annotated[Path, typer.Option("--train", help="Training file: CoNLL-2002/2003 or WikiANN (ner), KBP37/RELX layout (re).")],
    dev: Annotated[Path, typer.Option("--dev", help="Dev file in the same layout; the epoch best on it is kept.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder to write the fine-tuned model to (hub layout, with its labels).")],
    features: Annotated[str, typer.Option(help="'entity' (mLUKE-E: entity [MASK] / [HEAD] [TAIL] vectors) or 'word' (mLUKE-W: word-piece vectors).")] = "entity",
    model: Annotated[Optional[str], typer.Option(help="Pretrained checkpoint folder or hub name (default: the embedded demo model).")] = None,
    lang: Annotated[Optional[str], typer.Option("--lang", "-l", help="Language of CoNLL files without one (WikiANN lines carry theirs).")] = None,
    epochs: Annotated[int, typer.Option(help="Training epochs (the paper: 5).")] = 5,
    learning_rate: Annotated[float, typer.Option(help="Peak learning rate of AdamW (the paper: 2e-5).")] = 2e-5,
    batch_size: Annotated[int, typer.Option(help="Input rows per step (the paper searched 4, 8, 16).")] = 16,
    seed: Annotated[int, typer.Option(help="Seed of the classifier's initial weights, the data order and dropout.")] = 0,
    max_span_pieces: Annotated[int, typer.Option(help="NER: longest span, in word pieces.")] = 16,
    restart: Annotated[bool, typer.Option("--restart", help="Start over instead of continuing an interrupted run.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output folder if it exists.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Fine-tune mLUKE for NER or relation extraction with entity or word features, e.g.
    mluke finetune ner --train en/train.txt --dev en/dev.txt --features entity -o ner-e

    Dev scores are computed after every epoch; an interrupted run continues when the command is run again.
    """
    from mluke.transfer import FineTuneConfig
    from probes.transfer import finetune as run

    config = FineTuneConfig(learning_rate=learning_rate, batch_size=batch_size, epochs=epochs, seed=seed,
                            max_span_pieces=max_span_pieces)
    report = run(task, train, dev, output=output, features=features, model=model, lang=lang, config=config,  # type: ignore[arg-type]
                 overwrite=overwrite, restart=restart, progress=progress)
    print_table("epochs", ["epoch", "train loss", "dev score"],
                [[h["epoch"] + 1, f"{h['loss']:.4f}", f"{100 * h['dev']:.1f}"] for h in report.history])
    typer.echo(report.summary())


def evaluate(
    task: TaskArg,
    model_dir: Annotated[Path, typer.Argument(metavar="MODEL", help="A folder written by `mluke finetune`.")],
    test: Annotated[list[str], typer.Option("--test", help="lang:path of a test file (repeatable), e.g. --test de:de/test.txt")],
    batch_size: Annotated[int, typer.Option(help="Input rows per forward pass.")] = 16,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write every score (per type too) as JSON to this file ('-' for stdout).")] = None,
    csv_out: Annotated[Optional[str], typer.Option("--csv", help="Write the per-language table as CSV to this file ('-' for stdout).")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate a fine-tuned model zero-shot on test files in other languages: a table per language with the
    average, e.g. mluke evaluate ner ner-e --test de:de/test.txt --test ja:ja/test.txt"""
    from probes.transfer import evaluate as run

    tests = []
    for item in test:
        lang, sep, path = item.partition(":")
        if not sep or not lang or not path:
            raise OptionError(f"--test {item!r}: expected lang:path, e.g. de:de/test.txt")
        tests.append((lang, path))
    outputs = check_outputs(overwrite, json_out, csv_out)
    report = run(task, model_dir, tests, batch_size=batch_size, progress=progress)  # type: ignore[arg-type]
    show_report(report, f"{report.task} zero-shot, {report.features} features ({model_dir}; scores x100)", json_out=json_out, csv_out=csv_out, overwrite=overwrite,
                outputs=outputs)
