"""``mluke pretrain`` and ``mluke probe``: thin wrappers over :mod:`mluke.pretraining` and :func:`mluke.probe`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kb.errors import MlukeError
from kb.files import split_list, write_csv, write_json
from mluke.cli.output import OverwriteOption, check_outputs, print_table, wrote


def pretrain(
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="TOML run configuration (see `mluke pretrain --print-config` for the paper's recipe).")] = None,
    preset: Annotated[Optional[str], typer.Option(help="'demo': train the small embedded demo model end to end, no download needed.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="With --preset: where to put the model (default: the cache the library uses).")] = None,
    resume: Annotated[bool, typer.Option("--resume/--no-resume", help="Continue from the newest checkpoint in the run folder.")] = True,
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after this many more steps (the run can be resumed later).")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    print_config: Annotated[bool, typer.Option("--print-config", help="Print the default (paper) configuration as TOML and exit.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="With --preset: replace an --output folder that holds no finished demo model.")] = False,
) -> None:
    """Pretrain mLUKE from XLM-R on a corpus (two stages, MLM + MEP), or train the demo model.

    Several processes or GPUs: start the same command under torchrun, e.g.
    torchrun --nproc_per_node 8 -m mluke pretrain --config run.toml
    """
    from mluke.pretraining.config import TrainConfig

    if print_config:
        typer.echo(TrainConfig().to_toml())
        return
    if preset is not None:
        from mluke.demo import PRESETS, train_demo

        if preset not in PRESETS:
            raise MlukeError(f"unknown preset {preset!r}: expected one of {', '.join(PRESETS)}")
        path = train_demo(output, preset=preset, progress=progress, overwrite=overwrite)
        typer.echo(f"demo model ready: {path}")
        return
    if config is None:
        raise MlukeError("give --config run.toml (or --preset demo); `mluke pretrain --print-config` prints a template")
    from mluke.pretraining.trainer import pretrain as run

    out = run(TrainConfig.from_toml(config), resume=resume, progress=progress, max_steps=max_steps)
    typer.echo(f"done: {out}")


def probe(
    template: Annotated[str, typer.Argument(help="Cloze template with one [X] (subject) and one [Y] (object), e.g. '[X] is the capital of [Y]'.")],
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the prompts and labels (an English template is mapped to this language's template).")] = "en",
    subject: Annotated[Optional[list[str]], typer.Option("--subject", "-s", help="Subject label or entity key (repeatable); default: every subject the kb has facts for.")] = None,
    candidate: Annotated[Optional[list[str]], typer.Option("--candidate", help="Candidate label or key (repeatable); default: every object of the relation.")] = None,
    relation: Annotated[Optional[str], typer.Option(help="Wikidata property id (P36...) when the template is not one of the kb's.")] = None,
    mode: Annotated[str, typer.Option(help="'entity' (entity [MASK] at [Y]), 'word' (word masks, mLAMA's way) or 'both'.")] = "entity",
    subject_entity: Annotated[bool, typer.Option("--subject-entity", help="Also give the subject's entity over [X] (the paper's [X]&[Y] prompts).")] = False,
    top_k: Annotated[int, typer.Option(help="How many predictions to keep per subject.")] = 5,
    normalize: Annotated[str, typer.Option(help="Scores as log-probabilities over the 'candidates' (they sum to 1 per subject) or over the model's whole 'vocabulary' (slower); the ranking is the same.")] = "candidates",
    keep_subject: Annotated[bool, typer.Option("--keep-subject", help="Leave a subject among its own candidates (by default it is left out: a country is not its own neighbour); the reference mLAMA evaluation keeps it.")] = False,
    model: Annotated[Optional[str], typer.Option(help="Checkpoint folder or hub name (default: the embedded demo model, trained on first use).")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Entity database (default: the embedded kb).")] = None,
    limit: Annotated[int, typer.Option(help="Rows to print.")] = 10,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the full result as JSON to this file ('-' for stdout).")] = None,
    csv_out: Annotated[Optional[str], typer.Option("--csv", help="Write one row per prediction (and mode) as CSV to this file ('-' for stdout).")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Ask the model which object each subject has, e.g. mluke probe "[X] is the capital of [Y]" --lang ja"""
    from mluke.cloze import probe as run

    outputs = check_outputs(overwrite, json_out, csv_out)
    result = run(template, lang, subjects=subject, candidates=candidate, relation=relation, mode=mode,  # type: ignore[arg-type]
                 use_subject_entity=subject_entity, top_k=top_k, normalize=normalize,  # type: ignore[arg-type]
                 exclude_subject=not keep_subject, model=model, kb=db)
    if json_out:
        write_json(result.to_dict(), json_out, overwrite=overwrite)
    if csv_out:
        df = result.to_pandas()
        write_csv(list(df.columns), df.values.tolist(), csv_out, overwrite=overwrite)
    if "-" in outputs:
        return
    for note in result.notes:
        typer.echo(f"note: {note}")
    for r in result.results:
        rows = [[row.label, ", ".join(p.label + (" ✓" if p.correct else "") for p in row.predictions[:3]),
                 ", ".join(row.gold_labels) or "?", row.rank or "-"] for row in r.rows[:limit]]
        print_table(r.summary(), ["subject", "top predictions", "answer", "rank"], rows)
    wrote(outputs)


def eval_mlama(
    folder: Annotated[Path, typer.Argument(help="The mLAMA data folder (holding mlama1.1/<lang>/ and the *_objects/ candidate files).")],
    model: Annotated[Optional[str], typer.Option(help="Checkpoint folder or hub name (default: the embedded demo model).")] = None,
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated languages to evaluate, e.g. en,ja,de.")] = "en",
    mode: Annotated[str, typer.Option(help="'entity' (entity [MASK] at [Y]) or 'word' (word masks, mLAMA's way).")] = "entity",
    subject_entity: Annotated[bool, typer.Option("--subject-entity", help="Also give the subject's entity ([X]&[Y] prompts).")] = False,
    relations: Annotated[Optional[str], typer.Option(help="Comma-separated relation ids to keep (default: all but date relations).")] = None,
    keep_subject: Annotated[bool, typer.Option("--keep-subject", help="Leave a subject among its own candidates (by default it is left out: a country is not its own neighbour); the reference mLAMA evaluation keeps it.")] = False,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write P@1 per relation, macro averages and language bias as JSON ('-' for stdout).")] = None,
    csv_out: Annotated[Optional[str], typer.Option("--csv", help="Write P@1 per (language, relation) as CSV ('-' for stdout).")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate a model on mLAMA 1.1: P@1 per relation, macro-averaged per language, and language bias."""
    from probes.mlama import evaluate_mlama

    outputs = check_outputs(overwrite, json_out, csv_out)
    report = evaluate_mlama(folder, model, split_list(langs) or [], mode=mode,
                            use_subject_entity=subject_entity, exclude_subject=not keep_subject,
                            relations=split_list(relations), progress=progress)
    if json_out:
        write_json(report.to_dict(), json_out, overwrite=overwrite)
    if csv_out:
        rows = report.rows()
        write_csv(["lang", "relation", "subjects", "P@1"], [[r["lang"], r["relation"], r["subjects"], r["P@1"]] for r in rows],
                  csv_out, overwrite=overwrite)
    if "-" in outputs:
        return
    print_table(f"mLAMA P@1 ({report.mode} mode)", ["lang", "relation", "subjects", "P@1"],
                [[r["lang"], r["relation"], r["subjects"], f"{100 * r['P@1']:.1f}"] for r in report.rows()])
    print_table("macro average over relations", ["lang", "P@1"], [[l, f"{100 * p:.1f}"] for l, p in report.macro.items()])
    print_table("language bias: most common false positive", ["lang", "relation", "wrong", "top false positive", "share"],
                [[b["lang"], b["relation"], b["false_predictions"], b["top_false_positive"] or "-", f"{100 * b['share']:.0f}%"]
                 for b in report.bias])
    wrote(outputs)


def eval_demo(
    model: Annotated[Optional[Path], typer.Option(help="Demo model folder (default: the cached demo model, trained on first use).")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write all tables as JSON to this file ('-' for stdout).")] = None,
    train_sample: Annotated[int, typer.Option(help="Training subjects sampled per (relation, language) for the 'train' rows.")] = 20,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Probe the demo model on held-out and training (fact, language) pairs in word, entity [Y] and
    entity [X]&[Y] modes, beside random and most-common-answer baselines (P@1 x 100); then link its
    held-out ambiguous-city sentences with each linking method (accuracy x 100 per language)."""
    from probes.demo_eval import evaluate_demo, evaluate_demo_linking, to_markdown

    outputs = check_outputs(overwrite, json_out)
    summary = evaluate_demo(model, max_train_per_cell=train_sample, progress=progress)
    linking = evaluate_demo_linking(model, progress=progress)
    summary["linking"] = linking.to_dict()
    if json_out:
        write_json(summary, json_out, overwrite=overwrite)
        if json_out == "-":
            return
    typer.echo(to_markdown(summary, "by_relation"))
    typer.echo("")
    typer.echo(to_markdown(summary, "by_language"))
    typer.echo("")
    typer.echo(linking.to_markdown())
    wrote(outputs)


def link(
    source: Annotated[str, typer.Argument(help="Text file with one text per line, or '-' for standard input.")],
    lang: Annotated[str, typer.Option("--lang", "-l", help="Language of the texts, e.g. ja.")] = "en",
    model: Annotated[Optional[str], typer.Option(help="Checkpoint folder or hub name (default: the embedded demo model).")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Entity database (default: the embedded kb).")] = None,
    method: Annotated[str, typer.Option(help="'combined' (model + prior), 'prior', 'model', or 'global' (combined, resolving mentions one by one and feeding each resolved entity back in as context).")] = "combined",
    prior_weight: Annotated[float, typer.Option(help="Weight of log p(entity | mention) next to the model's log-probability in 'combined' and 'global'.")] = 1.0,
    nil_threshold: Annotated[Optional[float], typer.Option(help="Mentions whose best score is below this are NIL.")] = None,
    candidates: Annotated[bool, typer.Option("--candidates", help="Include every candidate's scores in the JSONL output.")] = False,
    jsonl: Annotated[Optional[str], typer.Option("--jsonl", help="Write one JSON object per input line to this file ('-' for stdout); the terminal then shows a summary instead of every mention.")] = None,
    limit: Annotated[int, typer.Option(help="Mentions to print on the terminal (the rest are counted; --jsonl writes them all).")] = 50,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar on long inputs.")] = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Link entity mentions in texts to the kb's entities (one text per line), e.g. mluke link --lang ja news.txt"""
    from kb.files import read_lines, write_jsonl
    from mluke.linking import Linker, link_records, link_summary

    outputs = check_outputs(overwrite, jsonl)
    lines = read_lines(source, pipe_hint="mluke link -")
    linker = Linker(model, db, languages=[lang])
    results = linker.link(lines, lang, method=method, prior_weight=prior_weight,  # type: ignore[arg-type]
                          nil_threshold=nil_threshold, candidates=candidates, progress=progress)
    if jsonl:
        write_jsonl(link_records(lines, results), jsonl, overwrite=overwrite)  # type: ignore[arg-type]
        if jsonl == "-":
            return
        counts = link_summary(results)  # type: ignore[arg-type]
        print_table(f"linked {source} ({lang}, {method})", list(counts), [list(counts.values())])
        wrote(outputs)
        return
    rows = [[i + 1, m.surface, m.key or "NIL", m.title or "", m.title_en or "", f"{m.score:.2f}", f"{m.prior:.2f}"]
            for i, found in enumerate(results) for m in found]  # type: ignore[union-attr]
    print_table(None, ["line", "mention", "entity", f"title ({lang})", "title (en)", "score", "prior"], rows[:limit])
    if len(rows) > limit:
        typer.echo(f"... and {len(rows) - limit:,} more mentions (--limit N prints more; --jsonl FILE writes them all)")


def eval_link(
    folder: Annotated[Path, typer.Argument(help="The Mewsli-9 'dataset' folder written by its extraction script (holding <lang>/docs.tsv, <lang>/mentions.tsv, <lang>/text/), or one language folder.")],
    langs: Annotated[Optional[str], typer.Option("--langs", help="Comma-separated languages to evaluate, e.g. ja,de (default: every language folder found).")] = None,
    methods: Annotated[str, typer.Option("--methods", help="Comma-separated linking methods to compare: 'prior' (most common entity for the name), 'model' (the model alone), 'combined' (model + prior), 'global' (combined, resolving the most confident mention first; the slowest).")] = "prior,model,combined,global",
    model: Annotated[Optional[str], typer.Option(help="Checkpoint folder or hub name (default: the embedded demo model).")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Entity database whose keys match the dataset's qid column, e.g. a kb built from the Wikidata dump (default: the embedded kb).")] = None,
    end_to_end: Annotated[bool, typer.Option("--end-to-end/--no-end-to-end", help="Also let the linker find the mentions itself and report precision, recall and F1 against the gold mentions (exact span and entity); --no-end-to-end halves the time.")] = True,
    nil_threshold: Annotated[Optional[float], typer.Option(help="Treat mentions whose best score (a log-probability, e.g. -3.0) is below this as NIL (not linked).")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write every score and the skipped-record counts as JSON to this file ('-' for stdout).")] = None,
    csv_out: Annotated[Optional[str], typer.Option("--csv", help="Write one row per (language, method) as CSV to this file ('-' for stdout).")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    overwrite: OverwriteOption = False,
) -> None:
    """Evaluate entity linking on Mewsli-9: in-KB accuracy (gold mentions given), the same on ambiguous
    mentions (two or more candidates), and end-to-end precision / recall / F1, per language and method.

    Example: mluke eval-link path/to/mewsli-9/output/dataset --langs ja,de --methods prior,combined --db kb.sqlite --model path/to/mluke-base
    """
    from mluke.linking import METHODS, Linker
    from probes.linking_eval import METRIC_COLUMNS, evaluate_linking, read_mewsli

    chosen = split_list(methods) or []
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        raise MlukeError(f"--methods {methods!r}: expected a comma-separated list of {', '.join(METHODS)}")
    outputs = check_outputs(overwrite, json_out, csv_out)
    languages = split_list(langs)
    data = read_mewsli(folder, languages)
    if not data.docs:
        raise MlukeError(f"{folder}: no usable documents ({sum(data.skipped.values())} records skipped)")
    linker = Linker(model, db, languages=list(data.languages))
    report = evaluate_linking(data, linker, methods=chosen, end_to_end=end_to_end, nil_threshold=nil_threshold,
                              progress=progress)
    if json_out:
        write_json(report.to_dict(), json_out, overwrite=overwrite)
    if csv_out:
        write_csv(list(METRIC_COLUMNS), [[r[c] for c in METRIC_COLUMNS] for r in report.rows], csv_out, overwrite=overwrite)
    if "-" in outputs:
        return
    columns, rows = report.table()
    print_table(f"entity linking on {folder} ({len(data.docs):,} documents; scores x100)", columns, rows)
    if data.skipped:
        print_table("skipped records", ["reason", "count"], sorted(data.skipped.items(), key=lambda kv: -kv[1]))
        for example in data.examples:
            typer.echo(f"  e.g. {example}")
    wrote(outputs)


def corpus(
    pages: Annotated[Path, typer.Argument(help="The page-text corpus a dump build wrote (kb.corpus/ next to kb.sqlite).")],
    tokenizer: Annotated[Path, typer.Option("--tokenizer", help="Folder with the XLM-R tokenizer (tokenizer.json or sentencepiece.bpe.model).")],
    vocab: Annotated[Path, typer.Option("--vocab", help="Entity vocabulary (SQLite) from `mluke kb vocab`.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Corpus folder to write (memory-mapped shards + meta.json).")],
    languages: Annotated[Optional[str], typer.Option(help="Comma-separated languages (default: all in the page corpus).")] = None,
    unknown_links: Annotated[str, typer.Option(help="Links to entities outside the vocabulary: 'drop' or 'unk'.")] = "drop",
    keep_without_entities: Annotated[bool, typer.Option("--keep-without-entities", help="Also keep sequences without any entity.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the output folder if it exists.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Build the pretraining corpus (sentences, word pieces, entity links packed into sequences)
    from the page texts of a dump build, e.g. mluke corpus kb.corpus --tokenizer xlmr/ --vocab vocab.sqlite -o corpus"""
    from kb.vocab import EntityVocab
    from mluke.pretraining.corpus import build_corpus, documents_from_wiki_corpus
    from mluke.tokenizer import MlukeTokenizer

    if unknown_links not in ("drop", "unk"):
        raise MlukeError(f"--unknown-links {unknown_links!r}: expected 'drop' or 'unk'")
    entity_vocab = EntityVocab(vocab)
    tok = MlukeTokenizer.from_pretrained(tokenizer, entity_vocab=entity_vocab)
    meta = build_corpus(documents_from_wiki_corpus(pages, split_list(languages)), tok, entity_vocab, output,
                        unknown_links=unknown_links, keep_without_entities=keep_without_entities,  # type: ignore[arg-type]
                        overwrite=overwrite, progress=progress)
    print_table(f"wrote {output}", ["lang", "sequences", "words", "entities"],
                [[l, c["sequences"], c["words"], c["entities"]] for l, c in meta["languages"].items()])
