"""The scoring cores of :func:`mluke.probe`: :func:`run_cloze` (typed querying: candidates ranked) and
:func:`run_open` (open vocabulary: the model's own best answers), and what they share. Usable without a
kb (e.g. for mLAMA files); see :mod:`mluke.probing.cloze` for the modes and scores."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import torch

from kb.db import Template
from kb.errors import MlukeError, Option, OptionError, option
from kb.vocab import EntityVocab, VocabEntry
from mluke.models.checkpoint import Mluke
from mluke.models.tokenizer import MlukeTokenizer
from mluke.opening import open_model
from mluke.options import Mode, ProbeOptions, merge_options
from mluke.probing.decoding import decode
from mluke.probing.scoring import ClozeScorer, over_candidates
from mluke.results import Prediction, ProbeResult, SubjectResult

if TYPE_CHECKING:
    import os

    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.options import ProbeKeywords


def run_cloze(
    template: Template,
    lang: str,
    subjects: Sequence[tuple[str | None, str]],
    candidates: Sequence[tuple[str | None, str]],
    gold: dict[str, set[str]],
    *,
    model: Mluke | str | os.PathLike[str] | None,
    options: ProbeOptions | None = None,
    relation: str | None = None,
    notes: list[str] | None = None,
    gold_labels: dict[str, str] | None = None,
    **keywords: Unpack[ProbeKeywords],
) -> ProbeResult:
    """Rank ``candidates`` for ``subjects`` of a template: the typed-querying core of :func:`mluke.probe`.

    Args:
        template: the parsed template.
        lang: the language of the prompts and labels.
        subjects: (key or None, label) pairs.
        candidates: (key or None, label) pairs; those without a key, or outside the entity
            vocabulary, are scored with word masks in entity mode.
        gold: subject keys -> their correct candidate keys (or labels, for candidates without a
            key); also says which subjects' true objects are known (for ``threshold``: a subject in
            ``gold`` with an empty set has none).
        model: a loaded bundle, a folder or hub name (any masked LM in word mode); ``None``: the demo model.
        options: how to ask (:class:`mluke.ProbeOptions`); or give its fields as keywords.
        relation: the relation's id, recorded in the result.
        notes: notes to start the result's notes with.
        gold_labels: labels of gold keys that are no candidates.
        **keywords: the fields of :class:`mluke.ProbeOptions`, when ``options`` is not given.

    Returns:
        The :class:`mluke.ProbeResult` (with ``modes`` for ``mode="both"``).

    Raises:
        MlukeError: a bad option, entity mode without an entity vocabulary, a prompt too long.
    """
    options = merge_options(ProbeOptions, options, keywords, "run_cloze")
    threshold, top_k = options.threshold, options.top_k
    notes = list(notes or [])
    bundle = open_model(model, word_models=True)
    mode_result = partial(_mode_result, template, lang, relation, top_k, notes, bundle)
    mode = resolve_mode(options.mode, bundle)
    if getattr(bundle.tokenizer, "reads_language", False):
        cast(Any, bundle.tokenizer).knowledge = options.knowledge  # a KnowBert model: its knowledge layer on or off
    scorer = ClozeScorer(bundle.model, bundle.tokenizer, batch_size=options.batch_size, lang=lang)
    cand_keys = [k if k is not None else label for k, label in candidates]
    labels_x = [label for _, label in subjects]
    labels_y = [label for _, label in candidates]
    pieces = scorer.candidate_pieces(labels_y, template)
    check_prompt_lengths(bundle.tokenizer, template, labels_x, max((len(p) for p in pieces), default=1))
    position = {k: c for c, (k, _) in enumerate(candidates) if k is not None}
    own = [(i, position[s]) for i, (s, _) in enumerate(subjects) if s in position] if options.exclude_subject else []
    if own:
        notes.append(f"{len(own)} subject(s) are also candidates; each is left out of its own ranking")
    own_cells = tuple(torch.tensor(x) for x in zip(*own))  # (subject rows, candidate columns)
    results: dict[str, ProbeResult] = {}
    for m in ("entity", "word") if mode == "both" else (mode,):
        subj_ids: list[int | None] = [None] * len(subjects)
        if m == "word":
            scores = scorer.word_scores(template, labels_x, pieces)
            sources = ["word"] * len(candidates)
        else:
            vocab = _entity_vocab(scorer)
            found = vocab.ids_of_keys([k for k, _ in candidates if k is not None])
            it = iter(found)
            cand_ids = [next(it) if k is not None else None for k, _ in candidates]
            in_vocab = [i for i, v in enumerate(cand_ids) if v is not None]
            out_vocab = [i for i, v in enumerate(cand_ids) if v is None]
            subj_ids = _subject_ids(vocab, subjects, options.use_subject_entity, notes)
            scores = torch.full((len(subjects), len(candidates)), float("-inf"))
            if in_vocab:
                ids = torch.tensor([cand_ids[i] for i in in_vocab])
                # over the candidates alone, the full normaliser cancels out unless word scores join in
                full = options.normalize == "vocabulary" or bool(out_vocab)
                scores[:, in_vocab] = scorer.entity_scores(template, labels_x, ids, subj_ids, normalize=full)
            if out_vocab:
                scores[:, out_vocab] = scorer.word_scores(template, labels_x, [pieces[i] for i in out_vocab])
                notes.append(f"{len(out_vocab)} candidate(s) outside the entity vocabulary scored with word masks")
            sources = ["entity" if v is not None else "word" for v in cand_ids]
        if own:
            scores = scores.index_put(own_cells, torch.tensor(float("-inf")))
        if options.normalize == "candidates":
            scores = over_candidates(scores)
        rows = []
        cut = math.log(threshold) if threshold is not None else 0.0
        label_of = {**dict(zip(cand_keys, labels_y)), **(gold_labels or {})}
        for i, (s, s_label) in enumerate(subjects):
            order = torch.argsort(scores[i], descending=True, stable=True).tolist()
            g = gold.get(s, set()) if s is not None else set()
            rank = next((r + 1 for r, c in enumerate(order) if cand_keys[c] in g), None) if g else None
            known = s is not None and s in gold
            if threshold is None:
                chosen = order[:top_k]
            else:  # every candidate at or above the threshold (scores are log-probabilities; -inf never)
                chosen = [c for c in order if float(scores[i, c]) >= cut]
            preds = [
                Prediction(
                    cand_keys[c],
                    labels_y[c],
                    float(scores[i, c]),
                    sources[c],
                    (cand_keys[c] in g) if (g or known) else None,
                )
                for c in chosen
            ]
            rows.append(
                SubjectResult(
                    s,
                    s_label,
                    sorted(g),
                    [label_of.get(k, k) for k in sorted(g)],
                    preds,
                    rank,
                    subj_ids[i] is not None,
                    known,
                )
            )
        results[m] = mode_result(m, subj_ids, rows, threshold=threshold)
    return _combine(results, mode)


def run_open(
    template: Template,
    lang: str,
    subjects: Sequence[tuple[str | None, str]],
    gold: dict[str, set[str]],
    *,
    model: Mluke,
    options: ProbeOptions,
    relation: str | None = None,
    notes: list[str] | None = None,
    labels: Callable[[list[str | None]], list[str | None]] | None = None,
) -> ProbeResult:
    """Open-vocabulary answers for ``subjects`` of a template: the ``top_k`` entities of the model's whole
    entity vocabulary (entity mode), with their log-probabilities over it, or the best words of
    1..``max_pieces`` pieces (word mode, :func:`mluke.probing.decoding.decode`), with their mean piece
    log-probability. ``labels(keys)`` names entity keys in ``lang`` (else the vocabulary's title is
    shown); a word answer is correct when it is a gold object's label (ignoring case). A gold answer
    counts when it is among the ``top_k``; its rank beyond them is not computed."""
    top_k = options.top_k
    notes = list(notes or [])
    bundle = model
    mode_result = partial(_mode_result, template, lang, relation, top_k, notes, bundle)
    mode = resolve_mode(options.mode, bundle)
    if getattr(bundle.tokenizer, "reads_language", False):  # a KnowBert model: decoding runs the bare encoder
        if options.knowledge:
            raise MlukeError(
                "open-vocabulary word answers are decoded without a KnowBert model's knowledge layer: give "
                "{knowledge} (or candidates)",
                options={"knowledge": Option("knowledge=False", "--no-knowledge")},
            )
        cast(Any, bundle.tokenizer).knowledge = False
    scorer = ClozeScorer(bundle.model, bundle.tokenizer, batch_size=options.batch_size, lang=lang)
    labels_x = [label for _, label in subjects]
    check_prompt_lengths(bundle.tokenizer, template, labels_x, 1)
    results: dict[str, ProbeResult] = {}
    for m in ("entity", "word") if mode == "both" else (mode,):
        subj_ids: list[int | None] = [None] * len(subjects)
        if m == "entity":
            vocab = _entity_vocab(scorer)
            subj_ids = _subject_ids(vocab, subjects, options.use_subject_entity, notes)
            scores, ids = scorer.entity_topk(
                template,
                labels_x,
                top_k,
                subj_ids,
                exclude=list(vocab.special_ids.values()),
                exclude_subject=options.exclude_subject,
            )
            entries = vocab.entries(sorted(set(ids.flatten().tolist())))
            named = dict(
                zip((e.id for e in entries), (labels or (lambda keys: [None] * len(keys)))([e.key for e in entries]))
            )
            answer = {
                e.id: (
                    e.key or _vocab_key(e),
                    named[e.id] or e.title(lang) or e.title("en") or (e.names[0][1] if e.names else f"#{e.id}"),
                )
                for e in entries
            }
        else:
            tok = scorer.tokenizer
            specials = [
                i
                for i in (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id, tok.mask_id, tok.ent_id, tok.ent2_id)
                if i is not None
            ]
            decoded = decode(
                bundle.model,
                tok,
                template,
                labels_x,
                max_pieces=options.max_pieces,
                method=options.decoding,
                beam=options.beam,
                top_k=top_k,
                exclude=specials,
                batch_size=options.batch_size,
            )
        rows = []
        for i, (s, s_label) in enumerate(subjects):
            g = gold.get(s, set()) if s is not None else set()
            if m == "entity":
                preds = [
                    Prediction(answer[c][0], answer[c][1], float(v), m, (answer[c][0] in g) if g else None)
                    for v, c in zip(scores[i].tolist(), ids[i].tolist())
                ]
            else:
                gold_keys: list[str | None] = [*sorted(g)]
                gold_names = (labels or (lambda ks: ks))(gold_keys)
                names = {str(n).casefold(): k for k, n in zip(sorted(g), gold_names) if n}
                preds = [
                    Prediction(
                        names.get(a.text.casefold(), "pieces:" + ",".join(map(str, a.pieces))),
                        a.text,
                        a.score,
                        "word",
                        (a.text.casefold() in names) if g else None,
                    )
                    for a in decoded[i]
                ]
            rank = next((r + 1 for r, p in enumerate(preds) if p.correct), None) if g else None
            rows.append(SubjectResult(s, s_label, sorted(g), sorted(g), preds, rank, subj_ids[i] is not None))
        results[m] = mode_result(m, subj_ids, rows, open_vocabulary=True)
    return _combine(results, mode)


def _mode_result(
    template: Template,
    lang: str,
    relation: str | None,
    top_k: int,
    notes: Sequence[str],
    bundle: Mluke,
    mode: str,
    subj_ids: Sequence[int | None],
    rows: list[SubjectResult],
    **extra: Any,
) -> ProbeResult:
    """The :class:`ProbeResult` of one mode's ``rows`` (the run's arguments first, bound once per run, then the
    mode's own); ``extra``: ``threshold`` or ``open_vocabulary``."""
    return ProbeResult(
        template.text,
        lang,
        relation,
        mode,  # type: ignore[arg-type]
        any(i is not None for i in subj_ids),
        top_k,
        rows,
        list(notes),
        model=_model_name(bundle),
        **extra,
    )


def _vocab_key(entry: VocabEntry) -> str:
    """A vocabulary entry without an entity key, named as in ``entity_vocab.json`` ("en:Tokyo")."""
    return f"{entry.names[0][0]}:{entry.names[0][1]}" if entry.names else f"#{entry.id}"


def _entity_vocab(scorer: ClozeScorer) -> EntityVocab:
    if scorer.vocab is None:
        source = getattr(scorer.tokenizer, "source_dir", None)
        raise MlukeError(
            f"entity mode needs an mLUKE model with an entity vocabulary"
            f"{f', and {source} has none' if source else ''}; use {{mode}}",
            options={"mode": option("mode", "word")},
        )
    return cast(EntityVocab, scorer.vocab)  # the tokenizer's, untyped in the scorer


def resolve_mode(mode: Mode | None, bundle: Mluke) -> Mode:
    """``mode`` as given, or by default entity mode for an mLUKE checkpoint and word mode for a word-only
    masked LM (no entity vocabulary)."""
    if mode is not None:
        return mode
    return "word" if getattr(bundle.tokenizer, "entity_vocab", None) is None else "entity"


def _model_name(bundle: Mluke) -> str | None:
    source = getattr(bundle.tokenizer, "source_dir", None)
    return str(source) if source is not None else None


def _subject_ids(
    vocab: EntityVocab, subjects: Sequence[tuple[str | None, str]], use: bool | None, notes: list[str]
) -> list[int | None]:
    """Entity ids to give over [X] (the "[X] & [Y]" prompts): the subjects' ids where they are in the entity
    vocabulary, unless ``use`` is False; the notes count the subjects asked with [Y] only."""
    if use is False:
        return [None] * len(subjects)
    keys = [k for k, _ in subjects if k is not None]
    found = dict(zip(keys, vocab.ids_of_keys(keys))) if keys else {}
    ids = [found.get(k) if k is not None else None for k, _ in subjects]
    missing = [label for (k, label), i in zip(subjects, ids) if i is None]
    if missing and len(missing) < len(subjects):
        notes.append(
            f"[X]&[Y]: {len(subjects) - len(missing)} of {len(subjects)} subjects were given with their "
            f"entity; {len(missing)} not in the model's entity vocabulary were asked with [Y] only: "
            + ", ".join(map(repr, missing[:5]))
            + (" ..." if len(missing) > 5 else "")
        )
    elif missing:
        notes.append(
            "no subject is in the model's entity vocabulary: asked with [Y] only"
            + (" (their entities could not be added)" if use else "")
        )
    return ids


def _combine(results: dict[str, ProbeResult], mode: str) -> ProbeResult:
    main = results["entity" if mode in ("entity", "both") else "word"]
    if mode == "both":
        main.modes = results
    return main


def check_prompt_lengths(
    tokenizer: MlukeTokenizer, template: Template, subjects: Sequence[str], answer_pieces: int
) -> None:
    """An error naming the subject whose prompt (with ``answer_pieces`` masks at [Y]) is longer than the
    model reads: cut to fit, it would lose its [Y] and the scores would mean nothing."""
    limit = tokenizer.max_length
    for label in subjects:
        text = template.fill(label, "")
        if len(text) + answer_pieces + 3 <= limit:  # a piece holds at least one character (or a word start)
            continue
        n = len(tokenizer.encode_words([text])[0]) + answer_pieces + 2
        if n > limit:
            shown = repr(label[:40]) + (f"... ({len(label.split()):,} words)" if len(label) > 40 else "")
            raise OptionError(
                f"{{subject}} {shown} makes the prompt {n:,} word pieces long, but the model reads at "
                f"most {limit:,}; shorten it",
                options={"subject": Option("subject", "--subject")},
            )
