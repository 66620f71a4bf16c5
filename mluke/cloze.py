"""``mluke.probe``: ask an mLUKE model what it knows, with cloze templates.

For a template such as ``"[X] was founded in [Y]"`` every subject is put at
[X] and the model answers at [Y]:

- **typed querying** (as in the mLUKE paper): the relation's candidate objects
  (its objects in the kb, or ``candidates=``) are ranked;
- **open vocabulary**: with no candidates given and none in the kb for the
  relation, the model's whole entity vocabulary is ranked (its top-k, with
  labels in the query language, else English, else the vocabulary's title).

Modes:

- ``mode="entity"`` (the default for mLUKE checkpoints): one word ``<mask>`` at [Y] with the entity [MASK]
  over it; candidates are ranked by their MEP log-probability, computed for the
  candidates only (or, open vocabulary, in one chunked pass over the entity
  table). Candidates outside the entity vocabulary fall back to the word score
  below, flagged ``source="word"``. By default the subject's entity is also given
  over [X] wherever the subject is in the entity vocabulary (the paper's
  "[X] & [Y]" prompts, its best setting); ``use_subject_entity=False`` asks with
  [Y] only. One forward pass per subject.
- ``mode="word"``: mLAMA's typed querying: a candidate of n pieces is scored by
  the mean log-probability of its pieces at n ``<mask>`` positions; one forward
  pass per subject and candidate length. Open vocabulary: answers of 1..``max_pieces`` word pieces
  decoded as X-FACTR does (``decoding``: independent, left-to-right or confidence-order filling, with
  a ``beam``), ranked across lengths by their mean piece log-probability (:mod:`mluke.decoding`).
- ``mode="both"``: both rankings (``result.modes``).
- ``mode=None`` (default): entity mode for an mLUKE checkpoint, word mode for any other masked LM.

Models: an mLUKE checkpoint (all modes), or any Hugging Face masked LM (BERT, mBERT, XLM-R,
RoBERTa, DistilBERT, English LUKE, ...; folder or hub name, see :mod:`mluke.word_models`) in word mode.

Object sets (``threshold``): instead of the ``top_k``, every candidate whose probability (``exp`` of
its score, see below) is at least ``threshold`` is the answer, possibly none; the result's metrics
add precision, recall and F1 against all true objects of each kb subject (:mod:`mluke.object_sets`).

Scores (``normalize``) - the ranking is the same either way:

- ``"candidates"`` (default): log-probabilities over the candidate set,
  ``log p(c) - log sum_c' p(c')``, which sum to one over the candidates of a
  subject. With every candidate scored by entity, the full-vocabulary
  normaliser cancels out and is never computed (n x c dot products only).
  Word-scored candidates count with ``p(c) = exp(mean piece log-probability)``.
- ``"vocabulary"``: the model's own log-probabilities: MEP normalised over the
  whole entity vocabulary (one pass over the entity table per 128 prompts), and
  the mean piece log-probability over the word vocabulary. Open-vocabulary
  answers are always these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from kb import open_db
from kb.db import EntityDB, Template
from kb.db.relations import describe, match_relation, no_match_error
from kb.db.templates import read_templates
from kb.errors import MlukeError, Option, OptionError, option
from kb.languages import check_language
from mluke.decoding import Method, decode
from mluke.opening import open_model
from mluke.results import Prediction, ProbeResult, SubjectResult
from mluke.scoring import ClozeScorer, over_candidates

Mode = Literal["entity", "word", "both"]
Normalize = Literal["candidates", "vocabulary"]


def probe(
    template: str,
    lang: str = "en",
    *,
    subjects: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
    relation: str | None = None,
    mode: Mode | None = None,
    use_subject_entity: bool | None = None,
    top_k: int = 5,
    normalize: Normalize = "candidates",
    exclude_subject: bool = True,
    templates: Mapping[tuple[str, str], str] | str | Path | None = None,
    model: Any = None,
    kb: EntityDB | str | Path | None = None,
    batch_size: int = 64,
    device: Any = None,
    dtype: Any = None,
    threshold: float | None = None,
    max_pieces: int = 5,
    decoding: Method = "confidence",
    beam: int = 5,
) -> ProbeResult:
    """Ask the model for the object of each subject of a cloze template (see module docs).

    ``template`` has exactly one [X] and one [Y], in any order and script. The
    relation is matched through the kb's templates unless given: exactly in any
    language, else the closest template of ``lang`` or English (the notes say
    which relation was assumed). An English template with ``lang="ja"`` uses the
    Japanese template and labels. ``templates``: more templates for this call,
    ``{(pid, lang): text}`` or mLAMA's ``templates.jsonl`` files (a file or folder).
    ``subjects``: labels in ``lang``, entity keys, or free text in no kb (asked
    with words only); default: every subject with facts under the relation.
    ``candidates``: labels or keys; default: the relation's objects in the kb, else
    the whole entity vocabulary. ``model``: a loaded ``mluke.load`` bundle, a
    folder or hub name of an mLUKE checkpoint or of any masked LM (word mode); default: the embedded demo
    model (trained on first use). ``threshold``: answer sets (see module docs). ``max_pieces``,
    ``decoding``, ``beam``: open-vocabulary word answers (see module docs).
    ``kb``: an :class:`kb.EntityDB` or path; default: the embedded kb.
    ``use_subject_entity``: default (``None``) as ``True``, the subject's entity
    over [X] where it is in the entity vocabulary; ``False``: [Y] only.
    ``exclude_subject``: a subject is never its own answer (a country among the
    neighbours of countries); the notes say when this happened. ``device`` / ``dtype``: where and in
    which precision the model runs (``"auto"``: a GPU when there is one; ``"bf16"``; see
    :mod:`mluke.devices`); default: as the model is.
    """
    if mode is not None and mode not in ("entity", "word", "both"):
        raise MlukeError("{mode}: expected 'entity', 'word' or 'both'", options={"mode": option("mode", mode)})
    if not isinstance(top_k, int) or top_k < 1:
        raise MlukeError("{top_k}: expected a positive number", options={"top_k": option("top_k", top_k)})
    _check_normalize(normalize)
    check_threshold(threshold)
    db = open_db(kb)
    check_language(lang, db.languages)
    extra = read_templates(templates) if isinstance(templates, (str, Path)) else dict(templates or {})
    match = match_relation(db, template, lang, relation, extra)
    pid, tpl, notes = match.relation, match.template, match.notes
    if pid is None and subjects is None:
        raise no_match_error(db, template)
    if subjects is None:
        subjects = db.subjects(pid)  # type: ignore[arg-type]
        if not subjects:
            raise MlukeError(
                _nothing_to_ask(db, pid, template, model),
                options={"subject": Option("subjects=[...]", "--subject NAME (repeated)"), "kb": Option("kb=", "--db")},
            )
    subj = _subjects(db, list(subjects), lang, notes)
    if candidates is not None:
        cand_keys = db.resolve_entities(list(candidates), lang, "candidate")
    else:
        cand_keys = sorted({f.object for f in db.facts(property=pid)}) if pid else []
    gold = {k: set(db.objects(k, pid)) for k, _ in subj if k is not None and pid}
    bundle = open_model(model, device=device, dtype=dtype, word_models=True)
    mode = resolve_mode(mode, bundle)
    if not cand_keys:
        if threshold is not None:
            raise MlukeError(
                "{threshold} picks answers among candidates, and this relation has none in the kb; give {candidates}",
                options={
                    "threshold": option("threshold", threshold),
                    "candidates": Option("candidates=[...]", "--candidate NAME"),
                },
            )
        what = {
            "entity": "the model's whole entity vocabulary",
            "word": f"words of 1-{max_pieces} pieces decoded ({decoding}, beam {beam})",
        }
        notes.append(
            f"{describe(db, pid) if pid else 'this relation'} has no objects in the kb: answers are "
            + " and ".join(what[m] for m in (("entity", "word") if mode == "both" else (mode,)))
        )
        return run_open(
            tpl,
            lang,
            subj,
            gold,
            model=bundle,
            relation=pid,
            mode=mode,
            max_pieces=max_pieces,
            decoding=decoding,
            beam=beam,
            use_subject_entity=use_subject_entity,
            top_k=top_k,
            exclude_subject=exclude_subject,
            batch_size=batch_size,
            notes=notes,
            labels=lambda keys: _labels(db, keys, lang),
        )
    cand_labels = db.labels(cand_keys, lang)
    dropped = [k for k in cand_keys if k not in cand_labels]
    if dropped:
        notes.append(f"{len(dropped)} candidate(s) without a {lang!r} label left out")
    cand_keys = list(dict.fromkeys(k for k in cand_keys if k in cand_labels))
    if not cand_keys:
        raise MlukeError(
            f"nothing to probe: no candidate{f' under {describe(db, pid)}' if pid else ''} has a "
            f"{lang!r} label in {db.path}"
        )
    return run_cloze(
        tpl,
        lang,
        subj,
        [(k, cand_labels[k]) for k in cand_keys],
        gold,
        model=bundle,
        relation=pid,
        mode=mode,
        use_subject_entity=use_subject_entity,
        top_k=top_k,
        normalize=normalize,
        exclude_subject=exclude_subject,
        batch_size=batch_size,
        notes=notes,
        gold_labels=cand_labels,
        threshold=threshold,
    )


def check_prompt_lengths(tokenizer: Any, template: Template, subjects: Sequence[str], answer_pieces: int) -> None:
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


def _subjects(db: EntityDB, items: list[str], lang: str, notes: list[str]) -> list[tuple[str | None, str]]:
    """(key, label in ``lang``) per subject: kb entities by key or name; free text in no kb keeps its words
    (key ``None``); a kb entity without a ``lang`` label is skipped (counted in the notes)."""
    keys = db.find_entities(items, lang)
    labels = db.labels([k for k in keys if k is not None], lang)
    out, missing = [], 0
    for item, key in zip(items, keys):
        if key is None:
            out.append((None, item))
        elif key in labels:
            out.append((key, labels[key]))
        else:
            missing += 1
    if missing:
        notes.append(f"{missing} subject(s) without a {lang!r} label skipped")
    unknown = [label for key, label in out if key is None]
    if unknown:
        notes.append(
            f"{len(unknown)} subject(s) in no kb, asked with their words only: "
            + ", ".join(map(repr, unknown[:5]))
            + (" ..." if len(unknown) > 5 else "")
        )
    if not out:
        raise MlukeError(f"nothing to probe: no subject has a {lang!r} label in {db.path}")
    return out


def _nothing_to_ask(db: EntityDB, pid: str, template: str, model: Any) -> str:
    """The one sentence for a recognised relation the kb has no subjects for: what to do instead."""
    if model is None:
        model_name = "the embedded demo model"
    elif isinstance(model, (str, Path)):
        model_name = f"the model {model}"
    else:
        source = getattr(getattr(model, "tokenizer", None), "source_dir", None)
        model_name = f"the model from {source}" if source else "the given model"
    return (
        f"{template!r} asks about {describe(db, pid)}, but this kb ({db.path}) has no subjects for it, so there "
        f"is nothing to ask {model_name} about. Name your own subjects with {{subject}}, or build a kb from the "
        f"Wikidata and Wikipedia dumps (mluke kb build --wikidata latest-all.json.bz2 ... -o kb.sqlite) and use "
        "it with {kb}."
    )


def _labels(db: EntityDB, keys: list[str | None], lang: str) -> list[str | None]:
    """Labels of entity keys in ``lang``, else English (``None`` where neither exists)."""
    known = [k for k in keys if k is not None]
    local, english = db.labels(known, lang), db.labels(known, "en")
    return [None if k is None else local.get(k) or english.get(k) for k in keys]


def run_cloze(
    template: Template,
    lang: str,
    subjects: Sequence[tuple[str | None, str]],
    candidates: Sequence[tuple[str | None, str]],
    gold: dict[str, set[str]],
    *,
    model: Any,
    relation: str | None = None,
    mode: Mode | None = None,
    use_subject_entity: bool | None = None,
    top_k: int = 5,
    normalize: Normalize = "candidates",
    exclude_subject: bool = True,
    batch_size: int = 64,
    notes: list[str] | None = None,
    gold_labels: dict[str, str] | None = None,
    threshold: float | None = None,
) -> ProbeResult:
    """Rank ``candidates`` ((key or None, label) pairs) for ``subjects`` ((key or None, label) pairs) of a template.

    The scoring core of :func:`probe`, usable without a kb (e.g. for mLAMA
    files): ``gold`` maps subject keys to their correct candidate keys (or
    labels, for candidates without a key). Candidates without a key, or outside
    the entity vocabulary, are scored with word masks in entity mode. ``gold`` also says which subjects'
    true objects are known (for ``threshold``: a subject in ``gold`` with an empty set has none).
    """
    _check_normalize(normalize)
    check_threshold(threshold)
    notes = list(notes or [])
    bundle = open_model(model, word_models=True)
    mode = resolve_mode(mode, bundle)
    scorer = ClozeScorer(bundle.model, bundle.tokenizer, batch_size=batch_size)
    cand_keys = [k if k is not None else label for k, label in candidates]
    labels_x = [label for _, label in subjects]
    labels_y = [label for _, label in candidates]
    pieces = scorer.candidate_pieces(labels_y, template)
    check_prompt_lengths(bundle.tokenizer, template, labels_x, max((len(p) for p in pieces), default=1))
    position = {k: c for c, (k, _) in enumerate(candidates) if k is not None}
    own = [(i, position[s]) for i, (s, _) in enumerate(subjects) if s in position] if exclude_subject else []
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
            subj_ids = _subject_ids(vocab, subjects, use_subject_entity, notes)
            scores = torch.full((len(subjects), len(candidates)), float("-inf"))
            if in_vocab:
                ids = torch.tensor([cand_ids[i] for i in in_vocab])
                # over the candidates alone, the full normaliser cancels out unless word scores join in
                full = normalize == "vocabulary" or bool(out_vocab)
                scores[:, in_vocab] = scorer.entity_scores(template, labels_x, ids, subj_ids, normalize=full)
            if out_vocab:
                scores[:, out_vocab] = scorer.word_scores(template, labels_x, [pieces[i] for i in out_vocab])
                notes.append(f"{len(out_vocab)} candidate(s) outside the entity vocabulary scored with word masks")
            sources = ["entity" if v is not None else "word" for v in cand_ids]
        if own:
            scores = scores.index_put(own_cells, torch.tensor(float("-inf")))
        if normalize == "candidates":
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
                    sources[c],  # type: ignore[arg-type]
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
        results[m] = ProbeResult(
            template.text,
            lang,
            relation,
            m,
            any(i is not None for i in subj_ids),
            top_k,
            rows,
            list(notes),  # type: ignore[arg-type]
            threshold=threshold,
            model=_model_name(bundle),
        )
    return _combine(results, mode)


def run_open(
    template: Template,
    lang: str,
    subjects: Sequence[tuple[str | None, str]],
    gold: dict[str, set[str]],
    *,
    model: Any,
    relation: str | None = None,
    mode: Mode | None = None,
    use_subject_entity: bool | None = None,
    top_k: int = 5,
    exclude_subject: bool = True,
    batch_size: int = 64,
    notes: list[str] | None = None,
    labels: Callable[[list[str | None]], list[str | None]] | None = None,
    max_pieces: int = 5,
    decoding: Method = "confidence",
    beam: int = 5,
) -> ProbeResult:
    """Open-vocabulary answers for ``subjects`` of a template: the ``top_k`` entities of the model's whole
    entity vocabulary (entity mode), with their log-probabilities over it, or the best words of
    1..``max_pieces`` pieces (word mode, :func:`mluke.decoding.decode`), with their mean piece
    log-probability. ``labels(keys)`` names entity keys in ``lang`` (else the vocabulary's title is
    shown); a word answer is correct when it is a gold object's label (ignoring case). A gold answer
    counts when it is among the ``top_k``; its rank beyond them is not computed."""
    notes = list(notes or [])
    bundle = open_model(model, word_models=True)
    mode = resolve_mode(mode, bundle)
    scorer = ClozeScorer(bundle.model, bundle.tokenizer, batch_size=batch_size)
    labels_x = [label for _, label in subjects]
    check_prompt_lengths(bundle.tokenizer, template, labels_x, 1)
    results: dict[str, ProbeResult] = {}
    for m in ("entity", "word") if mode == "both" else (mode,):
        subj_ids: list[int | None] = [None] * len(subjects)
        if m == "entity":
            vocab = _entity_vocab(scorer)
            subj_ids = _subject_ids(vocab, subjects, use_subject_entity, notes)
            scores, ids = scorer.entity_topk(
                template,
                labels_x,
                top_k,
                subj_ids,
                exclude=list(vocab.special_ids.values()),
                exclude_subject=exclude_subject,
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
                max_pieces=max_pieces,
                method=decoding,
                beam=beam,
                top_k=top_k,
                exclude=specials,
                batch_size=batch_size,
            )
        rows = []
        for i, (s, s_label) in enumerate(subjects):
            g = gold.get(s, set()) if s is not None else set()
            if m == "entity":
                preds = [
                    Prediction(answer[c][0], answer[c][1], float(v), m, (answer[c][0] in g) if g else None)  # type: ignore[arg-type]
                    for v, c in zip(scores[i].tolist(), ids[i].tolist())
                ]
            else:
                names = {str(n).casefold(): k for k, n in zip(sorted(g), (labels or (lambda ks: ks))(sorted(g))) if n}
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
        results[m] = ProbeResult(
            template.text,
            lang,
            relation,
            m,
            any(i is not None for i in subj_ids),
            top_k,
            rows,
            list(notes),  # type: ignore[arg-type]
            open_vocabulary=True,
            model=_model_name(bundle),
        )
    return _combine(results, mode)


def _vocab_key(entry: Any) -> str:
    """A vocabulary entry without an entity key, named as in ``entity_vocab.json`` ("en:Tokyo")."""
    return f"{entry.names[0][0]}:{entry.names[0][1]}" if entry.names else f"#{entry.id}"


def _entity_vocab(scorer: ClozeScorer) -> Any:
    if scorer.vocab is None:
        source = getattr(scorer.tokenizer, "source_dir", None)
        raise MlukeError(
            f"entity mode needs an mLUKE model with an entity vocabulary"
            f"{f', and {source} has none' if source else ''}; use {{mode}}",
            options={"mode": option("mode", "word")},
        )
    return scorer.vocab


def resolve_mode(mode: Mode | None, bundle: Any) -> Mode:
    """``mode`` as given, or by default entity mode for an mLUKE checkpoint and word mode for a word-only
    masked LM (no entity vocabulary)."""
    if mode is not None:
        return mode
    return "word" if getattr(bundle.tokenizer, "entity_vocab", None) is None else "entity"


def _model_name(bundle: Any) -> str | None:
    source = getattr(bundle.tokenizer, "source_dir", None)
    return str(source) if source is not None else None


def check_threshold(threshold: float | None) -> None:
    """An error unless ``threshold`` (when given) is a probability in (0, 1]: 0 would answer with everything."""
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 < threshold <= 1):
        raise MlukeError(
            "{threshold}: expected a probability in (0, 1]", options={"threshold": option("threshold", threshold)}
        )


def _subject_ids(
    vocab: Any, subjects: Sequence[tuple[str | None, str]], use: bool | None, notes: list[str]
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


def _check_normalize(normalize: str) -> None:
    if normalize not in ("candidates", "vocabulary"):
        raise MlukeError(
            "{normalize}: expected 'candidates' or 'vocabulary'", options={"normalize": option("normalize", normalize)}
        )
