"""``mluke pretrain`` and ``mluke corpus``: thin wrappers over :func:`mluke.pretraining.pretrain` (or
:func:`mluke.demo.model.train_demo` for ``--preset``) and :func:`mluke.pretraining.build_wiki_corpus`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kb.errors import MlukeError
from kb.files import check_output, split_list
from mluke.cli import checks
from mluke.cli.output import print_table
from mluke.cli.params import TrainDtypeOption


def pretrain(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="TOML run configuration (see `mluke pretrain --print-config` for the paper's recipe).",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help=(
                "Train the embedded demo model end to end, no download needed: 'demo' (the one the library uses, "
                "about 8 minutes on 2 idle cores) or 'tiny' (a seconds-long miniature, for tests)."
            )
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="With --preset: where to put the model (default: the cache the library uses)."
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="Continue from the newest checkpoint in the run folder.")
    ] = True,
    max_steps: Annotated[
        int | None, typer.Option(help="Stop after this many more steps (the run can be resumed later).")
    ] = None,
    dtype: TrainDtypeOption = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    print_config: Annotated[
        bool, typer.Option("--print-config", help="Print the default (paper) configuration as TOML and exit.")
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="With --preset: replace an --output folder that holds no finished demo model."
        ),
    ] = False,
) -> None:
    """Pretrain mLUKE from XLM-R on a corpus (two stages, MLM + MEP), or train the demo model.

    Several processes or GPUs: start the same command under torchrun, e.g.
    torchrun --nproc_per_node 8 -m mluke pretrain --config run.toml
    """
    checks.training_dtype("mluke pretrain", dtype)
    checks.preset(preset)
    checks.at_least("--max-steps", max_steps, 1)
    checks.config_file(config)
    if preset is not None and output is not None:
        checks.demo_output(output, overwrite)
    from mluke.pretraining import TrainConfig, pretrain as run

    if print_config:
        typer.echo(TrainConfig().to_toml())
        return
    if preset is not None:
        from mluke.demo.model import train_demo

        typer.echo(f"demo model ready: {train_demo(output, preset=preset, progress=progress, overwrite=overwrite)}")
        return
    if config is None:
        raise MlukeError("give --config run.toml (or --preset demo); `mluke pretrain --print-config` prints a template")
    typer.echo(f"done: {run(config, resume=resume, progress=progress, max_steps=max_steps)}")


def corpus(
    pages: Annotated[
        Path, typer.Argument(help="The page-text corpus a dump build wrote (kb.corpus/ next to kb.sqlite).")
    ],
    tokenizer: Annotated[
        Path,
        typer.Option(
            "--tokenizer", help="Folder with the XLM-R tokenizer (tokenizer.json or sentencepiece.bpe.model)."
        ),
    ],
    vocab: Annotated[Path, typer.Option("--vocab", help="Entity vocabulary (SQLite) from `mluke kb vocab`.")],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Corpus folder to write (memory-mapped shards + meta.json).")
    ],
    languages: Annotated[
        str | None, typer.Option(help="Comma-separated languages (default: all in the page corpus).")
    ] = None,
    unknown_links: Annotated[
        str, typer.Option(help="Links to entities outside the vocabulary: 'drop' or 'unk'.")
    ] = "drop",
    keep_without_entities: Annotated[
        bool, typer.Option("--keep-without-entities", help="Also keep sequences without any entity.")
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output folder if it exists.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Build the pretraining corpus (sentences, word pieces, entity links packed into sequences)
    from the page texts of a dump build, e.g. mluke corpus kb.corpus --tokenizer xlmr/ --vocab vocab.sqlite -o corpus"""
    checks.choice("--unknown-links", unknown_links, ["drop", "unk"])
    checks.input_path("PAGES", pages)
    checks.input_path("--tokenizer", tokenizer)
    checks.input_path("--vocab", vocab)
    check_output(output, overwrite=overwrite)
    from mluke.pretraining import build_wiki_corpus

    meta = build_wiki_corpus(
        pages,
        tokenizer,
        vocab,
        output,
        languages=split_list(languages),
        unknown_links=unknown_links,  # type: ignore[arg-type]
        keep_without_entities=keep_without_entities,
        overwrite=overwrite,
        progress=progress,
    )
    print_table(
        f"wrote {output}",
        ["lang", "sequences", "words", "entities"],
        [[l, c["sequences"], c["words"], c["entities"]] for l, c in meta["languages"].items()],
    )
