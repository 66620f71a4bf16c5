"""``mluke.probe``: ask an mLUKE model what it knows, with cloze templates and typed querying.

For a template such as ``"[X] was founded in [Y]"`` every subject is put at
[X] and the candidates of the relation are ranked for [Y]:

- ``mode="entity"``: one word ``<mask>`` at [Y] with the entity [MASK] over it;
  candidates are ranked by their MEP log-probability, computed for the
  candidates only. Candidates outside the entity vocabulary fall back to the
  word score below, flagged ``source="word"``.
  ``use_subject_entity=True`` also gives the subject's entity over [X] (the
  paper's "[X] & [Y]" prompts). One forward pass per subject.
- ``mode="word"``: mLAMA's typed querying: a candidate of n pieces is scored by
  the mean log-probability of its pieces at n ``<mask>`` positions; one forward
  pass per subject and candidate length.
- ``mode="both"``: both rankings (``result.modes``).

Scores (``normalize``) - the ranking is the same either way:

- ``"candidates"`` (default): log-probabilities over the candidate set,
  ``log p(c) - log sum_c' p(c')``, which sum to one over the candidates of a
  subject. With every candidate scored by entity, the full-vocabulary
  normaliser cancels out and is never computed (n x c dot products only).
  Word-scored candidates count with ``p(c) = exp(mean piece log-probability)``.
- ``"vocabulary"``: the model's own log-probabilities: MEP normalised over the
  whole entity vocabulary (one pass over the entity table per 128 prompts), and
  the mean piece log-probability over the word vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from kb import open_db
from kb.db import EntityDB, Template
from kb.db.relations import describe, match_relation, no_match_error
from kb.errors import MlukeError, option
from kb.languages import check_language
from mluke.checkpoint import open_model
from mluke.results import Prediction, ProbeResult, SubjectResult
from mluke.scoring import ClozeScorer, over_candidates

Mode = Literal["entity", "word", "both"]
Normalize = Literal["candidates", "vocabulary"]


def probe(
    template: str, lang: str = "en", *, subjects: Sequence[str] | None = None, candidates: Sequence[str] | None = None,
    relation: str | None = None, mode: Mode = "entity", use_subject_entity: bool = False, top_k: int = 5,
    normalize: Normalize = "candidates", exclude_subject: bool = True, model: Any = None,
    kb: EntityDB | str | Path | None = None, batch_size: int = 64,
) -> ProbeResult:
    """Rank candidate objects for each subject of a cloze template (see module docs).

    ``template`` has exactly one [X] and one [Y], in any order and script. The
    relation is matched through the kb's templates unless given (an English
    template with ``lang="ja"`` then uses the Japanese template and labels, and
    says so in ``result.notes``). ``subjects``/``candidates`` are labels in
    ``lang`` or entity keys; by default all subjects with facts under the
    relation and all its objects. ``model``: a loaded ``mluke.load`` bundle, a
    folder or hub name; default: the embedded demo model (trained on first use).
    ``kb``: an :class:`kb.EntityDB` or path; default: the embedded kb.
    ``normalize``: scores as log-probabilities over the candidates (default) or
    over the model's whole vocabularies (see module docs); rankings are the same.
    ``exclude_subject``: a subject that is also a candidate (a country among the
    neighbours of countries) is left out of its own ranking, as "[X] shares a
    border with [X]" is never the answer; the notes say when this happened.
    """
    if mode not in ("entity", "word", "both"):
        raise MlukeError("{mode}: expected 'entity', 'word' or 'both'", options={"mode": option("mode", mode)})
    if top_k < 1:
        raise MlukeError("{top_k}: expected a positive number", options={"top_k": option("top_k", top_k)})
    _check_normalize(normalize)
    db = open_db(kb)
    check_language(lang, db.languages)
    match = match_relation(db, template, lang, relation)
    pid, tpl, notes = match.relation, match.template, match.notes
    if pid is None and (subjects is None or candidates is None):
        raise no_match_error(db, template)
    subj_keys = db.resolve_entities(subjects, lang, "subject") if subjects is not None else db.subjects(pid)
    cand_keys = (db.resolve_entities(candidates, lang, "candidate") if candidates is not None
                 else sorted({f.object for f in db.facts(property=pid)}))
    subj_labels = db.labels(list(subj_keys), lang)
    cand_labels = db.labels(list(cand_keys), lang)
    missing = [k for k in subj_keys if k not in subj_labels]
    if missing:
        notes.append(f"{len(missing)} subject(s) without a {lang!r} label skipped")
    subj_keys = [k for k in subj_keys if k in subj_labels]
    dropped = [k for k in cand_keys if k not in cand_labels]
    if dropped:
        notes.append(f"{len(dropped)} candidate(s) without a {lang!r} label left out")
    cand_keys = list(dict.fromkeys(k for k in cand_keys if k in cand_labels))
    if not subj_keys or not cand_keys:
        what = f" under {describe(db, pid)}" if pid else ""
        raise MlukeError(f"nothing to probe: {len(subj_keys)} subjects and {len(cand_keys)} candidates{what} with "
                         f"{lang!r} labels in {db.path}")

    gold = {s: set(db.objects(s, pid)) if pid else set() for s in subj_keys}
    return run_cloze(tpl, lang, [(k, subj_labels[k]) for k in subj_keys], [(k, cand_labels[k]) for k in cand_keys],
                     gold, model=open_model(model), relation=pid, mode=mode, use_subject_entity=use_subject_entity,
                     top_k=top_k, normalize=normalize, exclude_subject=exclude_subject, batch_size=batch_size, notes=notes,
                     gold_labels=cand_labels)


def run_cloze(
    template: Template, lang: str, subjects: Sequence[tuple[str, str]], candidates: Sequence[tuple[str | None, str]],
    gold: dict[str, set[str]], *, model: Any, relation: str | None = None, mode: Mode = "entity",
    use_subject_entity: bool = False, top_k: int = 5, normalize: Normalize = "candidates", exclude_subject: bool = True,
    batch_size: int = 64, notes: list[str] | None = None, gold_labels: dict[str, str] | None = None,
) -> ProbeResult:
    """Rank ``candidates`` ((key or None, label) pairs) for ``subjects`` ((key, label) pairs) of a template.

    The scoring core of :func:`probe`, usable without a kb (e.g. for mLAMA
    files): ``gold`` maps subject keys to their correct candidate keys (or
    labels, for candidates without a key). Candidates without a key, or outside
    the entity vocabulary, are scored with word masks in entity mode.
    """
    _check_normalize(normalize)
    notes = list(notes or [])
    bundle = open_model(model)
    scorer = ClozeScorer(bundle.model, bundle.tokenizer, batch_size=batch_size)
    cand_keys = [k if k is not None else label for k, label in candidates]
    labels_x = [label for _, label in subjects]
    labels_y = [label for _, label in candidates]
    pieces = scorer.candidate_pieces(labels_y)
    position = {k: c for c, (k, _) in enumerate(candidates) if k is not None}
    own = [(i, position[s]) for i, (s, _) in enumerate(subjects) if s in position] if exclude_subject else []
    if own:
        notes.append(f"{len(own)} subject(s) are also candidates; each is left out of its own ranking")
    own_cells = tuple(torch.tensor(x) for x in zip(*own))  # (subject rows, candidate columns)
    results: dict[str, ProbeResult] = {}
    for m in (("entity", "word") if mode == "both" else (mode,)):
        if m == "word":
            scores = scorer.word_scores(template, labels_x, pieces)
            sources = ["word"] * len(candidates)
        else:
            vocab = scorer.vocab
            if vocab is None:
                raise MlukeError("entity mode needs a model with an entity vocabulary; use {mode}",
                                 options={"mode": option("mode", "word")})
            found = vocab.ids_of_keys([k for k, _ in candidates if k is not None])
            it = iter(found)
            cand_ids = [next(it) if k is not None else None for k, _ in candidates]
            in_vocab = [i for i, v in enumerate(cand_ids) if v is not None]
            out_vocab = [i for i, v in enumerate(cand_ids) if v is None]
            subj_ids = vocab.ids_of_keys([k for k, _ in subjects]) if use_subject_entity else None
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
        label_of = {**dict(zip(cand_keys, labels_y)), **(gold_labels or {})}
        for i, (s, s_label) in enumerate(subjects):
            order = torch.argsort(scores[i], descending=True, stable=True).tolist()
            g = gold.get(s, set())
            rank = next((r + 1 for r, c in enumerate(order) if cand_keys[c] in g), None) if g else None
            preds = [Prediction(cand_keys[c], labels_y[c], float(scores[i, c]), sources[c],  # type: ignore[arg-type]
                                (cand_keys[c] in g) if g else None) for c in order[:top_k]]
            rows.append(SubjectResult(s, s_label, sorted(g), [label_of.get(k, k) for k in sorted(g)], preds, rank))
        results[m] = ProbeResult(template.text, lang, relation, m, use_subject_entity and m == "entity", top_k, rows, list(notes))  # type: ignore[arg-type]
    main = results["entity" if mode in ("entity", "both") else "word"]
    if mode == "both":
        main.modes = results
    return main


def _check_normalize(normalize: str) -> None:
    if normalize not in ("candidates", "vocabulary"):
        raise MlukeError("{normalize}: expected 'candidates' or 'vocabulary'",
                         options={"normalize": option("normalize", normalize)})
