"""``mluke eval-lmkbc``, ``eval-aida``, ``eval-nif``, ``eval-xfactr`` and ``eval-bear``: thin wrappers over
:func:`probes.lmkbc.eval_lmkbc`, :func:`probes.aida.eval_aida`, :func:`probes.nif_eval.eval_nif`,
:func:`probes.xfactr.eval_xfactr` and :func:`probes.bear.eval_bear`, added to the ``mluke`` command line through the
entry points of pyproject.toml."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kb.files import split_list
from mluke.cli import checks
from mluke.cli.output import check_outputs, csv_option, json_option, print_table, write_outputs, wrote
from mluke.cli.params import DbOption, MaskedLMsOption, ModelOption, OverwriteOption
from mluke.cli.registry import Command

if TYPE_CHECKING:
    from probes.aida import AidaScores
    from probes.comparison import Comparison

MethodOption = Annotated[str, typer.Option(help="The linking method (see mluke link --help).")]


def eval_lmkbc(
    gold: Annotated[Path, typer.Argument(help="The LM-KBC gold JSON lines file (e.g. val.jsonl of dataset2024).")],
    predictions: Annotated[
        Path, typer.Argument(help="The predictions, in the same layout: one line per gold subject and relation.")
    ],
    json_out: Annotated[str | None, json_option("the scores per relation and per pair")] = None,
    csv_out: Annotated[str | None, csv_option("the per-relation table")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score LM-KBC predictions (object sets as QIDs, empty allowed) by the challenge's rules: macro and micro
    precision, recall and F1 per relation and over all subject-relation pairs."""
    checks.input_file("GOLD", gold)
    checks.input_file("PREDICTIONS", predictions)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes.lmkbc import eval_lmkbc as run

    scores = run(gold, predictions)
    if write_outputs(json_out, csv_out, overwrite=overwrite, data=scores.to_dict, table=scores.table):
        return
    print_table("LM-KBC 2024 scores", *scores.table())
    wrote(outputs)


def _eval_linking(
    file: Path,
    method: str,
    limit: int | None,
    json_out: str | None,
    overwrite: bool,
    run: Callable[..., AidaScores],
    title: Callable[[AidaScores], str],
    **options: Any,
) -> None:
    """What ``eval-aida`` and ``eval-nif`` share: check the file and options, link and score with ``run``, then
    write the JSON or print the table and its notes."""
    checks.input_file("FILE", file)
    checks.choice("--method", method, list(checks.METHODS))
    checks.at_least("--limit", limit, 0)
    outputs = check_outputs(overwrite, json_out)
    scores = run(file, limit=limit, method=method, **options)
    if write_outputs(json_out, None, overwrite=overwrite, data=scores.to_dict):
        return
    print_table(title(scores), *scores.table())
    for note in scores.notes:
        typer.echo(f"note: {note}")
    wrote(outputs)


def eval_aida(
    file: Annotated[Path, typer.Argument(help="The AIDA-YAGO2 TSV file (AIDA-YAGO2-dataset.tsv).")],
    split: Annotated[str, typer.Option(help="testb (the test set), testa (development) or train.")] = "testb",
    model: ModelOption = None,
    db: DbOption = None,
    method: MethodOption = "combined",
    limit: Annotated[int | None, typer.Option(help="Only the first N documents of the split.")] = None,
    json_out: Annotated[str | None, json_option("the scores")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Link AIDA-CoNLL's documents and score them as GERBIL does (strong match): A2KB micro and macro precision,
    recall and F1 over (span, entity) pairs, then D2KB in-kb accuracy with the gold mentions given."""
    checks.choice("--split", split, ["train", "testa", "testb"])
    from probes.aida import eval_aida as run

    def title(scores: AidaScores) -> str:
        return f"AIDA-CoNLL {split}, {scores.documents} documents"

    _eval_linking(file, method, limit, json_out, overwrite, run, title, split=split, db=db, model=model)


def eval_nif(
    file: Annotated[
        Path,
        typer.Argument(
            help="A NIF 2.0 Turtle corpus as GERBIL's datasets ship (KORE50, N3-Reuters-128, N3-RSS-500, OKE): "
            "nif:Context documents and their phrases with itsrdf:taIdentRef links."
        ),
    ],
    lang: Annotated[str, typer.Option("--lang", "-l", help="The language of the corpus's texts, e.g. en.")] = "en",
    model: ModelOption = None,
    db: DbOption = None,
    method: MethodOption = "combined",
    limit: Annotated[int | None, typer.Option(help="Only the first N documents (in order of their IRIs).")] = None,
    json_out: Annotated[str | None, json_option("the scores")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Link a NIF corpus's documents and score them as eval-aida does (GERBIL's strong match): A2KB micro and macro
    precision, recall and F1 over (span, entity) pairs, then D2KB in-kb accuracy with the gold mentions given.

    Gold links to DBpedia (any language), Wikipedia or Wikidata become kb entities through --db (titles follow
    redirects); any other IRI, such as GERBIL's http://aksw.org/notInWiki/..., is an entity outside the kb (NIL):
    not scored, like AIDA's --NME--. A gold entity the kb lacks counts as a link no linker can get."""
    checks.input_file("FILE", file)
    checks.languages("--lang", [lang], checks.db_languages(db), str(db or "the embedded kb"))
    from probes.nif_eval import eval_nif as run

    def title(scores: AidaScores) -> str:
        return f"{file.name}, {scores.documents} documents"

    _eval_linking(file, method, limit, json_out, overwrite, run, title, lang=lang, db=db, model=model)


def _side_by_side(
    comparison: Comparison[Any],
    title: str,
    json_out: str | None,
    csv_out: str | None,
    overwrite: bool,
    outputs: list[str],
) -> None:
    """What ``eval-xfactr`` and ``eval-bear`` do with several ``--model``: write the JSON (every model's report)
    or the CSV (one row per model and table row), or print one table with a column per model and each model's
    notes."""
    if write_outputs(json_out, csv_out, overwrite=overwrite, data=comparison.to_dict, table=comparison.records):
        return
    print_table(title, *comparison.table())
    for name, report in zip(comparison.models, comparison.reports):
        for note in getattr(report, "notes", []):
            typer.echo(f"note: {name}: {note}")
    wrote(outputs)


def eval_xfactr(
    folder: Annotated[Path, typer.Argument(help="X-FACTR's repository or its data/ folder.")],
    model: MaskedLMsOption = None,
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated languages, e.g. en,fr,ja.")] = "en",
    relations: Annotated[str | None, typer.Option(help="Comma-separated relation ids (default: all).")] = None,
    decoding: Annotated[str, typer.Option(help="independent, left-to-right or confidence.")] = "confidence",
    max_pieces: Annotated[int, typer.Option(help="The most masks an answer takes.")] = 5,
    beam: Annotated[int, typer.Option(help="Partial answers kept at each step.")] = 5,
    limit: Annotated[int | None, typer.Option(help="Only the first N facts of each relation.")] = None,
    json_out: Annotated[str | None, json_option("the accuracies")] = None,
    csv_out: Annotated[str | None, csv_option("the accuracy table")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Probe X-FACTR's facts with multi-piece decoding and score them by its rule: exact match against the
    object's label or aliases, accuracy per relation, macro over relations per language; with several --model,
    one table with a column per model."""
    checks.input_path("FOLDER", folder, "folder", "X-FACTR's repository or its data/ folder")
    checks.choice("--decoding", decoding, ["independent", "left-to-right", "confidence"])
    checks.at_least("--max-pieces", max_pieces, 1)
    checks.at_least("--beam", beam, 1)
    checks.at_least("--limit", limit, 0)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes.xfactr import compare_xfactr, eval_xfactr as run

    options: dict[str, Any] = {
        "relations": split_list(relations) if relations else None,
        "method": decoding,
        "max_pieces": max_pieces,
        "beam": beam,
        "limit": limit,
    }
    chosen_langs = split_list(langs) or ["en"]
    if model and len(model) > 1:
        comparison = compare_xfactr(folder, list(model), chosen_langs, **options)
        _side_by_side(comparison, "X-FACTR accuracy (x 100)", json_out, csv_out, overwrite, outputs)
        return
    report = run(folder, model[0] if model else None, chosen_langs, **options)
    if write_outputs(json_out, csv_out, overwrite=overwrite, data=report.to_dict, table=report.table):
        return
    print_table("X-FACTR accuracy (x 100)", *report.table())
    for note in report.notes:
        typer.echo(f"note: {note}")
    wrote(outputs)


def eval_bear(
    folder: Annotated[Path, typer.Argument(help="The BEAR dataset folder (P*.jsonl and metadata_relations.json).")],
    model: MaskedLMsOption = None,
    template_index: Annotated[int, typer.Option(help="Which template of each relation.")] = 0,
    relations: Annotated[str | None, typer.Option(help="Comma-separated relation ids (default: all).")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N instances of each relation.")] = None,
    capitalize: Annotated[
        bool, typer.Option(help="Upper-case each statement's first letter (lm-pub-quiz's default).")
    ] = True,
    json_out: Annotated[str | None, json_option("the accuracies")] = None,
    csv_out: Annotated[str | None, csv_option("the per-relation table")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score BEAR's multiple-choice statements by pseudo-log-likelihood (lm-pub-quiz's within_word_l2r) with any
    masked LM: the best statement's answer is the prediction; accuracy per relation and overall; with several
    --model, one table with a column per model."""
    checks.input_path("FOLDER", folder, "folder", "a BEAR dataset folder")
    checks.at_least("--template-index", template_index, 0)
    checks.at_least("--limit", limit, 0)
    outputs = check_outputs(overwrite, json_out, csv_out)
    from probes.bear import compare_bear, eval_bear as run

    options: dict[str, Any] = {
        "template_index": template_index,
        "relations": split_list(relations) if relations else None,
        "limit": limit,
        "capitalize": capitalize,
    }
    if model and len(model) > 1:
        comparison = compare_bear(folder, list(model), **options)
        _side_by_side(comparison, "BEAR accuracy (x 100)", json_out, csv_out, overwrite, outputs)
        return
    report = run(folder, model[0] if model else None, **options)
    if write_outputs(json_out, csv_out, overwrite=overwrite, data=report.to_dict, table=report.table):
        return
    print_table("BEAR accuracy (x 100)", *report.table())
    wrote(outputs)


EVAL_BEAR = Command(
    "eval-bear", "Score BEAR's statements by pseudo-log-likelihood (lm-pub-quiz).", eval_bear, after="eval-xfactr"
)
EVAL_XFACTR = Command(
    "eval-xfactr", "Probe X-FACTR (multi-piece answers, exact match with aliases).", eval_xfactr, after="eval-mlama"
)
EVAL_AIDA = Command(
    "eval-aida", "Link AIDA-CoNLL and score it as GERBIL does (A2KB, D2KB).", eval_aida, after="eval-link"
)
EVAL_NIF = Command(
    "eval-nif", "Link a NIF corpus (KORE50, N3, OKE) and score it as eval-aida does.", eval_nif, after="eval-aida"
)
EVAL_LMKBC = Command(
    "eval-lmkbc", "Score LM-KBC predictions (QID sets) by the challenge's rules.", eval_lmkbc, after="eval-demo"
)
