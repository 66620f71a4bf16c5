"""How the model scores a mention's candidates for :class:`mluke.Linker`: texts cut into windows, every
mention an entity [MASK], the MEP head restricted to the candidates (see :mod:`mluke.linking.texts`), and the
ranking of candidates by model and prior that every linking method shares."""

from __future__ import annotations

import math
import re
import warnings
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from kb.db import chunked
from kb.errors import MlukeError
from kb.mentions import Candidate, Mention
from mluke.models.checkpoint import Mluke
from mluke.models.masked_lm import check_normaliser
from mluke.models.normaliser import Normaliser
from mluke.options import LinkOptions, Method


def iter_windows(text: str, size: int) -> Iterator[tuple[int, int]]:
    """Cut ``text`` into spans of about ``size`` characters, preferring sentence ends, then spaces."""
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + size)
        if end < n:
            tail = text[pos:end]
            cut = max((m.end() for m in re.finditer(r"[.!?。！？]\s*|\s+", tail)), default=0)
            if cut > size // 2:
                end = pos + cut
        yield pos, end
        pos = end


def cut_windows(text: str, size: int) -> list[tuple[int, int]]:
    """The spans of :func:`iter_windows`, as a list."""
    return list(iter_windows(text, size))


@dataclass
class Job:
    """One window of one text, encoded with up to ``max_entity_length`` of its mentions."""

    text: int
    start: int
    end: int
    mentions: list[int]  # indices into the text's mention list


@dataclass
class ModelScores:
    """The model's view of one mention: log-probabilities of its candidates among the candidates
    (``restricted``, see :meth:`WindowScorer.part_scores`) and over the whole entity vocabulary (``full``,
    the candidates in the vocabulary only)."""

    restricted: dict[str, float]
    full: dict[str, float]
    best: float | None = None  #: the best log-probability of any entity in the vocabulary (the same normaliser)


def restricted(scores: ModelScores | None) -> dict[str, float] | None:
    """The log-probabilities among the candidates, if the model scored the mention."""
    return scores.restricted if scores is not None else None


def rank_candidates(
    candidates: Iterable[Candidate], model_scores: dict[str, float] | None, method: Method, prior_weight: float
) -> list[dict[str, Any]]:
    """Every candidate with its prior, model log-probability and the score ``method`` uses, best first.

    The score is ``log prior`` for "prior" (and for candidates the model cannot
    score), the model's log-probability for "model", and their sum with the
    prior weighted by ``prior_weight`` for "combined" and "global".
    """
    rows: list[dict[str, Any]] = []
    for c in candidates:
        lp = math.log(max(c.prior, 1e-12))
        ms = model_scores.get(c.key) if model_scores else None
        if method == "prior" or ms is None:
            score = lp
        elif method == "model":
            score = ms
        else:
            score = ms + prior_weight * lp
        rows.append({"key": c.key, "prior": c.prior, "model": ms, "score": score})
    rows.sort(key=lambda r: (-r["score"], r["key"]))
    return rows


def top_probability(rows: list[dict[str, Any]]) -> float:
    """Softmax probability of the best of :func:`rank_candidates`'s rows: the global mode's confidence."""
    if not rows:
        return 0.0
    top = rows[0]["score"]
    return 1.0 / sum(math.exp(r["score"] - top) for r in rows)


class WindowScorer:
    """The model side of linking: candidate ids, windows, and the MEP scores of mentions in them."""

    def __init__(self, bundle: Mluke, normaliser: Normaliser = "int8") -> None:
        self.bundle = bundle
        #: how the normaliser over the whole entity vocabulary is computed (:mod:`mluke.models.normaliser`)
        self.normaliser = check_normaliser(normaliser)

    def candidate_ids(self, mentions: list[list[Mention]]) -> dict[tuple[int, int], list[tuple[str, int]]]:
        """(text, mention) -> [(key, entity vocabulary id)] of the candidates the model knows."""
        vocab = self.bundle.entity_vocab
        if vocab is None:
            raise MlukeError("linking needs a model with an entity vocabulary")
        out = {}
        for t, found in enumerate(mentions):
            for i, m in enumerate(found):
                keys = [c.key for c in m.candidates]
                known = [(k, v) for k, v in zip(keys, vocab.ids_of_keys(keys) if keys else []) if v is not None]
                if known:
                    out[(t, i)] = known
        return out

    def jobs(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], Any],
        window_chars: int,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> list[Job]:
        """Windows of each text (``windows[t]``, else all of it) with the scorable mentions inside them
        (linear in the number of mentions)."""
        limit = self.bundle.tokenizer.max_entity_length
        jobs = []
        for t, text in enumerate(texts):
            order = sorted((i for i in range(len(mentions[t])) if (t, i) in ids), key=lambda i: mentions[t][i].start)
            starts = [mentions[t][i].start for i in order]
            for a, b in (windows[t] if windows is not None else iter_windows(text, window_chars)) if order else ():
                lo, hi = bisect_left(starts, a), bisect_left(starts, b)
                inside = [i for i in order[lo:hi] if mentions[t][i].end <= b]
                jobs += [Job(t, a, b, inside[k : k + limit]) for k in range(0, len(inside), limit)]
        return jobs

    def encode(self, texts: list[str], mentions: list[list[Any]], part: list[Job]) -> Any:
        """One batch of windows, every mention an entity [MASK]."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mentions cut off by truncation keep their prior only
            return self.bundle.tokenizer(
                [texts[j.text][j.start : j.end] for j in part],
                entity_spans=[
                    [(mentions[j.text][i].start - j.start, mentions[j.text][i].end - j.start) for i in j.mentions]
                    for j in part
                ],
            )

    @torch.inference_mode()
    def part_scores(
        self,
        enc: Any,
        part: list[Job],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], list[tuple[str, int]]],
        skip: Container[tuple[int, int]] = (),
        exclude: dict[int, list[int]] | None = None,
    ) -> dict[tuple[int, int], ModelScores]:
        """Model log-probabilities of the candidates of the batch's mentions not in ``skip``.

        Of n candidates, those outside the entity vocabulary get 1/n each and the k
        known ones share k/n by their MEP softmax (see the module docs). The known
        ones' log-probabilities over the whole entity vocabulary come along (for the
        confidence: a single candidate is certain among the candidates, not there),
        with the best log-probability of any entity (:attr:`ModelScores.best`).
        Both cost one pass over the entity table per batch (mentions x entities dot
        products; by default from an int8 copy of the table, :mod:`mluke.models.normaliser`;
        see benchmarks/link_cost.py for a 1.2M-entity table). ``exclude``: text ->
        entity ids treated as missing from the kb, left out of the normaliser and the best.
        """
        model = self.bundle.model
        hidden = model.encode_entities(**enc)
        where = [
            (row, slot, (job.text, job.mentions[k]))
            for row, job in enumerate(part)
            for slot, k in enumerate(enc.kept_entities[row])
            if (job.text, job.mentions[k]) not in skip
        ]
        if not where:
            return {}
        width = max(len(ids[key]) for _, _, key in where)
        cand = torch.zeros(len(where), width, dtype=torch.long)
        for n, (_, _, key) in enumerate(where):
            cand[n, : len(ids[key])] = torch.tensor([v for _, v in ids[key]])
        states = hidden[[r for r, _, _ in where], [s for _, s, _ in where]]
        drop = None
        if exclude:
            rows = [exclude.get(key[0], []) for _, _, key in where]
            drop = torch.full((len(where), max(1, max(map(len, rows)))), -1, dtype=torch.long)
            for n, r in enumerate(rows):
                drop[n, : len(r)] = torch.tensor(r, dtype=torch.long)
        full_t, best_t = model.entity_scores_and_best(states, cand, exclude=drop, normaliser=self.normaliser)
        full, best = full_t.float().cpu(), best_t.float().cpu().tolist()
        lengths = torch.tensor([len(ids[key]) for _, _, key in where])
        full = full.masked_fill(torch.arange(width)[None, :] >= lengths[:, None], float("-inf"))
        logp = torch.log_softmax(full, -1).tolist()
        out = {}
        for (_, _, key), row, whole, top in zip(where, logp, full.tolist(), best):
            found = mentions[key[0]][key[1]].candidates
            scores = dict.fromkeys((c.key for c in found), math.log(1.0 / len(found)))
            share = math.log(len(ids[key]) / len(found))
            scores.update({c: lp + share for (c, _), lp in zip(ids[key], row)})
            out[key] = ModelScores(scores, {c: v for (c, _), v in zip(ids[key], whole)}, top)
        return out

    def score(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], list[tuple[str, int]]],
        jobs: list[Job],
        options: LinkOptions,
        bar: Any,
        sure: Callable[[tuple[int, int], list[dict[str, Any]], ModelScores], bool] | None = None,
        exclude: dict[int, list[int]] | None = None,
    ) -> dict[tuple[int, int], ModelScores]:
        """Model log-probabilities of every mention (``exclude``: see :meth:`part_scores`).

        Without ``sure``, all of them entity [MASK]s, in one pass per batch. With it, Yamada et al. (2022):
        resolve the most confident mention of each window, feed its entity in, repeat.

        Each batch of windows is tokenized once; a step changes only entity ids
        and runs one forward pass per batch that still has open mentions, so a
        window with n mentions takes n passes. Each mention keeps the scores of
        the step that resolved it. ``sure((text, mention), ranked candidates, scores)``: whether a
        resolved mention is linked (not NIL), so that its entity is fed in.
        """
        final: dict[tuple[int, int], ModelScores] = {}
        fixed: set[tuple[int, int]] = set()
        for part in chunked(jobs, options.batch_size):
            enc = self.encode(texts, mentions, part)
            if sure is None:
                final.update(self.part_scores(enc, part, mentions, ids, exclude=exclude))
                bar.update(len(part))
                continue
            slots = {
                (job.text, job.mentions[k]): (row, slot)
                for row, job in enumerate(part)
                for slot, k in enumerate(enc.kept_entities[row])
            }
            while True:
                open_jobs = [(job, [(job.text, i) for i in job.mentions if (job.text, i) not in fixed]) for job in part]
                open_jobs = [(job, keys) for job, keys in open_jobs if keys]
                if not open_jobs:
                    break
                step = self.part_scores(enc, part, mentions, ids, skip=fixed, exclude=exclude)
                for _job, keys in open_jobs:
                    ranked = {
                        key: rank_candidates(
                            mentions[key[0]][key[1]].candidates,
                            restricted(step.get(key)),
                            "global",
                            options.prior_weight,
                        )
                        for key in keys
                    }
                    best = max(keys, key=lambda key: top_probability(ranked[key]))
                    final[best] = step.get(best, ModelScores({}, {}))
                    fixed.add(best)
                    top = ranked[best][0] if ranked[best] else None
                    linked = top is not None and sure(best, ranked[best], final[best])
                    if best in slots and linked and top is not None:
                        chosen = dict(ids[best]).get(top["key"])
                        if chosen is not None:  # NIL or outside the vocabulary: stays an entity [MASK]
                            enc["entity_ids"][slots[best]] = chosen
            bar.update(len(part))
        return final
