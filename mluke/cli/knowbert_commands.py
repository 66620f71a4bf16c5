"""``mluke knowbert train``: a thin wrapper over :func:`mluke.knowbert.run.train_knowbert`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kb.files import check_writable, split_list
from mluke.cli import checks
from mluke.cli.params import DbOption, DeviceOption, ProgressOption, TrainDtypeOption

app = typer.Typer(
    help="KnowBert: a knowledge layer with an integrated entity linker inside an mLUKE or XLM-R encoder.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("train")
def train(
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="Run folder: checkpoints, log.jsonl and, at the end, the trained model in OUTPUT/model.",
        ),
    ],
    model: Annotated[
        str | None,
        typer.Option(
            help="What to start from: an mLUKE checkpoint folder or hub name, an XLM-R masked-LM folder, or the "
            "OUTPUT/model folder of a --stage 1 run (to continue with --stage 2). Default: the demo model."
        ),
    ] = None,
    documents: Annotated[
        str,
        typer.Option(
            help="Training documents with hyperlinks: 'demo' (the demo world's sentences) or the page-text corpus "
            "folder of a dump build (kb.corpus/ next to kb.sqlite). Their links are the linker's supervision."
        ),
    ] = "demo",
    db: DbOption = None,
    entities: Annotated[
        Path | None,
        typer.Option(
            help="Entity vectors to link to: a safetensors file (tensor 'vectors', keys in its metadata). "
            "Default: the start checkpoint's mLUKE entity embeddings."
        ),
    ] = None,
    kb: Annotated[
        list[str] | None,
        typer.Option(
            "--kb",
            help="A knowledge base as NAME=DB or NAME=DB:ENTITIES (DB: a kb file or 'embedded'; ENTITIES: a "
            "safetensors table, default the start checkpoint's entity embeddings). Repeat for several knowledge "
            "bases, each with its own knowledge layer and linker (KnowBert-W+W); the first is the default one. "
            "Replaces --db and --entities. Default: one knowledge base 'kb' from --db and --entities.",
        ),
    ] = None,
    kb_layer: Annotated[
        list[str] | None,
        typer.Option(
            "--kb-layer",
            help="NAME=L: put knowledge base NAME's layer after encoder layer L (default: 10/12 of the depth). "
            "Repeatable.",
        ),
    ] = None,
    stage: Annotated[
        str,
        typer.Option(
            help="1: train the linker alone (encoder frozen); 2: masked LM + linking, all layers; both: 1 then 2."
        ),
    ] = "both",
    stage1_steps: Annotated[int, typer.Option(help="Steps of stage 1.")] = 1000,
    stage2_steps: Annotated[int, typer.Option(help="Steps of stage 2.")] = 1000,
    batch_size: Annotated[int, typer.Option(help="Windows per step.")] = 32,
    learning_rate: Annotated[
        float,
        typer.Option(
            help="Peak learning rate of the knowledge layer; in stage 2 the encoder below it gets 1/4 of "
            "it, above it 1/2 (KnowBert's recipe)."
        ),
    ] = 1e-4,
    max_length: Annotated[
        int, typer.Option(help="Word pieces per training window (a longer page is read in several).")
    ] = 128,
    languages: Annotated[str | None, typer.Option(help="Comma-separated languages (default: all).")] = None,
    seed: Annotated[int, typer.Option(help="Random seed (masks, batch order, new weights).")] = 0,
    save_every: Annotated[int, typer.Option(help="Write a checkpoint every N steps.")] = 100,
    log_every: Annotated[int, typer.Option(help="Write the losses to OUTPUT/log.jsonl every N steps.")] = 10,
    device: DeviceOption = None,
    dtype: TrainDtypeOption = None,
    resume: Annotated[
        bool,
        typer.Option("--resume/--no-resume", help="Continue from the newest checkpoint in OUTPUT (the default)."),
    ] = True,
    max_steps: Annotated[
        int | None, typer.Option(help="Stop after this many more steps (run the command again to continue).")
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Train a KnowBert knowledge layer on documents with hyperlinks.

    Stage 1 trains the entity linker alone on the documents' hyperlinks; stage 2 trains everything on
    masked-LM and linking batches (4:1). A killed run continues where its last checkpoint left off when
    started again with the same options, with any number of processes. Example:

    mluke knowbert train -o runs/kb --documents demo --stage1-steps 200 --stage2-steps 200

    Several processes or GPUs (each computes its share of every batch; --device auto: process i uses GPU i):

    torchrun --nproc_per_node 4 -m mluke knowbert train -o runs/kb --batch-size 32 --device auto
    """
    checks.training_dtype("mluke knowbert train", dtype)
    checks.choice("--stage", stage, ["1", "2", "both"])
    checks.at_least("--max-steps", max_steps, 1)
    checks.at_least("--log-every", log_every, 1)
    checks.positive("--learning-rate", learning_rate)
    checks.at_least("--batch-size", batch_size, 1)
    checks.at_least("--save-every", save_every, 1)
    checks.at_least("--stage1-steps", stage1_steps, 0)
    checks.at_least("--stage2-steps", stage2_steps, 0)
    checks.device(device)
    check_writable(output)  # the run folder, before anything is imported or loaded
    from mluke.knowbert.run import knowledge_base_sources, train_knowbert

    done = train_knowbert(
        output,
        model=model,
        documents=documents,
        db=db,
        entities=entities,
        knowledge_bases=knowledge_base_sources(kb or [], kb_layer or []) or None,
        stage=stage,  # type: ignore[arg-type]  # checked above
        languages=split_list(languages),
        max_length=max_length,
        resume=resume,
        max_steps=max_steps,
        progress=progress,
        stage1_steps=stage1_steps,
        stage2_steps=stage2_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        save_every=save_every,
        log_every=log_every,
        device=device or "cpu",
    )
    typer.echo(f"done: {done}")
