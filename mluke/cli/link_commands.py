"""``mluke link``: a thin wrapper over :func:`mluke.linking.files.iter_link_file` (a stream: memory does not grow
with the input); ``mluke eval-link`` comes from :mod:`probes.cli.linking_commands`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kb.errors import OptionError
from kb.files import check_text_source
from mluke.cli import checks
from mluke.cli.interrupts import checked, remembered_interrupts
from mluke.cli.output import check_outputs, print_table, wrote
from mluke.cli.params import (
    CandidatesOption,
    DbOption,
    DeviceOption,
    DtypeOption,
    KnowBertKbOption,
    LinkMethodOption,
    ModelOption,
    NilThresholdOption,
    OverwriteOption,
    PriorWeightOption,
)
from mluke.options import LinkOptions


def link(
    source: Annotated[
        str,
        typer.Argument(
            help='Text file with one text per line, a JSONL corpus (one {"id", "text", "lang"} object per line), '
            "or '-' for standard input."
        ),
    ],
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the texts, e.g. ja.")] = "en",
    model: ModelOption = None,
    db: DbOption = None,
    method: LinkMethodOption = "combined",
    prior_weight: PriorWeightOption = 1.0,
    nil_threshold: NilThresholdOption = None,
    candidates: CandidatesOption = False,
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
    workers: Annotated[
        int | None,
        typer.Option(
            help="Link a corpus with this many processes sharing the model's weights, writing --jsonl FILE in input "
            "order as it goes; resumable: after an interruption, the same command goes on where it stopped "
            "(default: 1 process, as a JSONL corpus is linked).",
        ),
    ] = None,
    threads: Annotated[
        int, typer.Option(help="With --workers or a JSONL corpus: torch threads per worker process.")
    ] = 1,
    input_format: Annotated[
        str,
        typer.Option(
            help="'text' (one text per line), 'jsonl' (one JSON document per line), or 'auto': jsonl when the first "
            'line is a JSON object with a "text" string.'
        ),
    ] = "auto",
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
    checks.choice("--input-format", input_format, ["auto", "text", "jsonl"])
    jsonl_input = input_format == "jsonl" or (input_format == "auto" and source != "-" and _is_jsonl(source))
    if workers is not None or jsonl_input:
        checks.at_least("--workers", workers or 1, 1)
        checks.at_least("--threads", threads, 1)
        if not jsonl:
            raise OptionError(
                "a corpus (--workers, or a JSONL input) is linked into a JSONL file: give --jsonl OUT (or --jsonl -)"
            )
        _link_corpus(
            source, jsonl, lang, workers or 1, threads, input_format, db, model, options, kbs, progress, overwrite
        )
        if jsonl != "-":
            wrote(outputs)
        return
    from mluke.linking.files import iter_link_file, write_linked
    from mluke.results import MENTION_COLUMNS, LinkTally

    stream = iter_link_file(
        source, lang, db=db, model=model, options=options, progress=progress, device=device, dtype=dtype, kbs=kbs
    )
    if jsonl:  # each line written as soon as it is linked
        tally = LinkTally()
        try:
            with remembered_interrupts() as check:
                write_linked(checked(stream, check), jsonl, overwrite=overwrite, tally=tally)
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
        with remembered_interrupts() as check:
            for item in checked(stream, check):
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


def _is_jsonl(source: str) -> bool:
    from mluke.linking.documents import corpus_format

    return corpus_format(source) == "jsonl"


def _link_corpus(
    source: str,
    jsonl: str,
    lang: str,
    workers: int,
    threads: int,
    input_format: str,
    db: Any,
    model: Any,
    options: LinkOptions,
    kbs: Any,
    progress: bool,
    overwrite: bool,
) -> None:
    """``mluke link CORPUS --jsonl OUT --workers N``: :func:`mluke.linking.corpus.link_corpus`; counts as a table."""
    from mluke.linking.corpus import CorpusRun, link_corpus
    from mluke.results import LinkTally

    run = CorpusRun(LinkTally())
    try:
        link_corpus(
            source,
            jsonl,
            lang,
            workers=workers,
            threads=threads,
            input_format=input_format,  # type: ignore[arg-type]  # checked above
            db=db,
            model=model,
            options=options,
            kbs=kbs,
            progress=progress,
            overwrite=overwrite,
            run=run,
        )
    except KeyboardInterrupt:
        done = f"interrupted after linking {run.documents:,} document{'s' if run.documents != 1 else ''}"
        if jsonl == "-":
            kept = f"{done}; they were written to standard output; run the command again to link all of {source}"
        elif source == "-":
            kept = f"{done}; nothing was written to {jsonl} (it is written only when complete); run it again"
        else:
            kept = (
                f"{done}; they are kept in {jsonl}.partial ({jsonl} is written only when complete); "
                "run the same command again to go on from there"
            )
        typer.echo(f"\n{kept}", err=True)
        raise
    if jsonl == "-":
        return
    counts = {**run.tally.summary(), "resumed": run.resumed, "docs/s": round(run.docs_per_second, 2)}
    how = f"{workers} worker{'s' if workers != 1 else ''} x {threads} thread{'s' if threads != 1 else ''}"
    title = f"linked {source} ({lang}, {options.method}, {how})"
    print_table(title, list(counts), [list(counts.values())])


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
