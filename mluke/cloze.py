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

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from kb.db import EntityDB
from kb.errors import MlukeError, option
from kb.files import json_text, write_json
from kb.languages import check_language
from kb.relations import describe, match_relation, no_match_error
from kb.templates import Template

Mode = Literal["entity", "word", "both"]
Normalize = Literal["candidates", "vocabulary"]
_KEY_RE = re.compile(r"^(Q[1-9][0-9]*|[a-z][a-z0-9_.-]*:[^\s:]\S*)$")




@dataclass(frozen=True)
class Prediction:
    key: str
    label: str
    score: float
    source: Literal["entity", "word"]
    correct: bool | None


@dataclass
class SubjectResult:
    subject: str
    label: str
    gold: list[str]
    gold_labels: list[str]
    predictions: list[Prediction]  # top_k, best first
    rank: int | None  # 1-based rank of the best gold answer among all candidates (None: no gold)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@dataclass
class ProbeResult:
    """Ranked predictions per subject and the metrics over subjects with a known answer.

    With ``mode="both"`` this is the entity-mode result and ``modes`` holds both
    (``{"entity": ..., "word": ...}``); ``to_dict``/``to_json``/``to_pandas``
    then cover both modes.
    """

    template: str
    lang: str
    relation: str | None
    mode: Literal["entity", "word"]
    use_subject_entity: bool
    top_k: int
    rows: list[SubjectResult]
    notes: list[str] = field(default_factory=list)
    modes: dict[str, ProbeResult] = field(default_factory=dict, repr=False)

    @property
    def metrics(self) -> dict[str, float | int | None]:
        """P@1, P@top_k and MRR over the subjects with a gold answer (``None`` when no subject has one)."""
        ranked = [r.rank for r in self.rows if r.gold]
        n = len(ranked)
        hits = lambda k: sum(1 for r in ranked if r is not None and r <= k) / n if n else None  # noqa: E731
        mrr = sum(1.0 / r for r in ranked if r is not None) / n if n else None
        return {"subjects": len(self.rows), "with_gold": n, "P@1": hits(1), f"P@{self.top_k}": hits(self.top_k), "MRR": mrr}

    @property
    def results(self) -> list[ProbeResult]:
        """Every mode's result: ``[self]``, or the entity and word results for ``mode="both"``."""
        return list(self.modes.values()) if self.modes else [self]

    def summary(self) -> str:
        """One line: template, language, relation, mode, and the metrics."""
        m = self.metrics
        what = ", ".join([self.lang, self.relation or "no relation", f"{self.mode} mode"]
                         + (["subject entity"] if self.use_subject_entity else []))
        return (f"{self.template}  [{what}]  P@1 {_fmt(m['P@1'])}  P@{self.top_k} {_fmt(m[f'P@{self.top_k}'])}  "
                f"MRR {_fmt(m['MRR'])}  ({m['with_gold']} of {m['subjects']} subjects with answers)")

    def _mode_dict(self) -> dict[str, Any]:
        return {"template": self.template, "lang": self.lang, "relation": self.relation, "mode": self.mode,
                "use_subject_entity": self.use_subject_entity, "notes": self.notes, "metrics": self.metrics,
                "rows": [asdict(r) for r in self.rows]}

    def to_dict(self) -> dict[str, Any]:
        """Plain data; for ``mode="both"``: ``{"mode": "both", "modes": {"entity": {...}, "word": {...}}, ...}``."""
        if not self.modes:
            return self._mode_dict()
        return {"template": self.template, "lang": self.lang, "relation": self.relation, "mode": "both",
                "notes": self.notes, "modes": {m: r._mode_dict() for m, r in self.modes.items()}}

    def to_json(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """The result as JSON; also written to ``path`` when given (an existing file only with ``overwrite``)."""
        if path is not None:
            write_json(self.to_dict(), path, overwrite=overwrite)
        return json_text(self.to_dict())

    def to_pandas(self) -> Any:
        """One row per (subject, prediction) of each mode: subject, rank, label, key, score, source, correct,
        gold, and the mode that ranked it (both modes' rows for ``mode="both"``)."""
        import pandas as pd

        columns = ["subject", "subject_key", "rank", "prediction", "key", "score", "source", "correct", "gold", "mode"]
        return pd.DataFrame([
            (r.label, r.subject, i + 1, p.label, p.key, p.score, p.source, p.correct, ", ".join(r.gold_labels), res.mode)
            for res in self.results for r in res.rows for i, p in enumerate(r.predictions)
        ], columns=columns)

    def __repr__(self) -> str:
        lines = [f"ProbeResult: {res.summary()}" for res in self.results]
        lines += [f"  note: {n}" for n in self.notes]
        for res in self.results:
            if self.modes:
                lines.append(f"  {res.mode} mode:")
            for r in res.rows[:8]:
                preds = ", ".join(f"{p.label}{'*' if p.correct else ''} ({p.score:.2f}{'' if p.source == 'entity' else ' w'})"
                                  for p in r.predictions[:3])
                lines.append(f"  {r.label} -> {preds}" + (f"   [gold: {', '.join(r.gold_labels)}]" if r.gold else ""))
            if len(res.rows) > 8:
                lines.append(f"  ... {len(res.rows) - 8} more")
        return "\n".join(lines)


#: Prompts whose entity scores share one pass of the full-vocabulary normaliser (measured on a
#: 1.2M x 256 table on 2 cores: about 10 ms per row at 32 rows, 6 ms at 128).
NORMALIZER_ROWS = 128


class ClozeScorer:
    """Batched cloze scoring with one model (see module docs)."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 64) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.vocab = tokenizer.entity_vocab
        self.batch_size = batch_size

    def candidate_pieces(self, labels: Sequence[str]) -> list[list[int]]:
        """Word pieces of each candidate as it would stand at [Y]."""
        return self.tokenizer.encode_words(list(labels))

    @torch.inference_mode()
    def entity_scores(self, template: Template, subjects: Sequence[str], candidate_ids: torch.Tensor,
                      subject_ids: Sequence[int | None] | None = None, *, normalize: bool = True) -> torch.Tensor:
        """(n_subjects, n_candidates) MEP log-probabilities with the entity [MASK] over [Y]
        (unnormalised logits, which rank alike, when not ``normalize``).

        The encoder runs ``batch_size`` prompts at a time; the states at [Y] are then
        scored :data:`NORMALIZER_ROWS` at a time, because the full-vocabulary
        normaliser reads the whole entity table once per call, whatever the rows.
        """
        states = []
        for start in range(0, len(subjects), self.batch_size):
            texts, spans, ents = [], [], []
            for i in range(start, min(start + self.batch_size, len(subjects))):
                text, (xs, xe), (ys, ye) = template.fill_spans(subjects[i], "<mask>")
                sid = subject_ids[i] if subject_ids is not None else None
                texts.append(text)
                spans.append([(ys, ye)] + ([(xs, xe)] if sid is not None else []))
                ents.append([None] + ([sid] if sid is not None else []))
            enc = self.tokenizer(texts, entity_spans=spans, entities=ents)
            states.append(self.model.encode_entities(**enc)[:, 0])
        if not states:
            return torch.zeros(0, len(candidate_ids))
        hidden = torch.cat(states)
        return torch.cat([self.model.entity_scores(hidden[i:i + NORMALIZER_ROWS], candidate_ids, normalize=normalize)
                          for i in range(0, len(hidden), NORMALIZER_ROWS)])

    @torch.inference_mode()
    def word_scores(self, template: Template, subjects: Sequence[str], pieces: Sequence[Sequence[int]]) -> torch.Tensor:
        """(n_subjects, n_candidates) mean log-probability of each candidate's pieces at its number of masks."""
        scores = torch.full((len(subjects), len(pieces)), float("-inf"))
        by_len: dict[int, list[int]] = {}
        for c, p in enumerate(pieces):
            if p:
                by_len.setdefault(len(p), []).append(c)
        mask_id = self.tokenizer.mask_id
        for n, cands in sorted(by_len.items()):
            table = torch.tensor([pieces[c] for c in cands])  # (n_cand, n)
            for start in range(0, len(subjects), self.batch_size):
                batch = [template.fill(s, "<mask>" * n) for s in subjects[start:start + self.batch_size]]
                enc = self.tokenizer(batch)
                words, _ = self.model.encode(**enc)
                where = enc["input_ids"] == mask_id
                h = words[where].view(len(batch), n, -1)
                total = torch.zeros(len(batch), len(cands))
                for i in range(n):
                    uniq, inverse = torch.unique(table[:, i], return_inverse=True)
                    logp = self.model.word_scores(h[:, i], uniq)
                    total += logp[:, inverse]
                scores[start:start + len(batch), cands] = total / n
        return scores


def _resolve_entities(db: EntityDB, items: Sequence[str], lang: str, what: str) -> list[str]:
    keys = []
    for item in items:
        if _KEY_RE.match(item) and item in db:
            keys.append(item)
            continue
        matches = db.lookup(lang, item)
        if not matches:
            raise MlukeError(f"{what} {item!r}: no entity with that key or {lang!r} name in {db.path}")
        keys.append(matches[0].key)
    return keys


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
    from kb.embedded import default_db

    if mode not in ("entity", "word", "both"):
        raise MlukeError("{mode}: expected 'entity', 'word' or 'both'", options={"mode": option("mode", mode)})
    if top_k < 1:
        raise MlukeError("{top_k}: expected a positive number", options={"top_k": option("top_k", top_k)})
    _check_normalize(normalize)
    db = kb if isinstance(kb, EntityDB) else (EntityDB(kb) if kb is not None else default_db())
    check_language(lang, db.languages)
    match = match_relation(db, template, lang, relation)
    pid, tpl, notes = match.relation, match.template, match.notes
    if pid is None and (subjects is None or candidates is None):
        raise no_match_error(db, template)
    subj_keys = _resolve_entities(db, subjects, lang, "subject") if subjects is not None else db.subjects(pid)
    cand_keys = (_resolve_entities(db, candidates, lang, "candidate") if candidates is not None
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
                     gold, model=_load_model(model), relation=pid, mode=mode, use_subject_entity=use_subject_entity,
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
    bundle = _load_model(model)
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


def over_candidates(scores: torch.Tensor) -> torch.Tensor:
    """Log-scores (subjects x candidates) renormalised over each row's candidates; rows with no finite score stay."""
    total = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.where(torch.isfinite(total), scores - total, scores)


def _check_normalize(normalize: str) -> None:
    if normalize not in ("candidates", "vocabulary"):
        raise MlukeError("{normalize}: expected 'candidates' or 'vocabulary'",
                         options={"normalize": option("normalize", normalize)})


def _load_model(model: Any) -> Any:
    from mluke.checkpoint import Mluke, load

    if model is None:
        from mluke.demo import demo_model

        return load(demo_model())
    if isinstance(model, (Mluke, tuple)):
        return Mluke(*model)
    return load(model)
