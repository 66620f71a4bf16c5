"""``mluke.link``: entity linking in any of the kb's languages, to the shared entity inventory.

1. Mentions and candidates come from :class:`kb.MentionIndex` (longest
   non-overlapping matches of the kb's surface forms, link-probability filter,
   top 30 candidates by prior p(e|m)).
2. Each mention gets an entity [MASK] over its words; the model scores the
   candidates with the MEP head restricted to them (softmax over the candidates
   in the entity vocabulary), and the score is combined with the prior:
   ``log p_model(e) + prior_weight * log p(e|m)``. Of n candidates, k in the
   entity vocabulary, each of the others gets the uniform model probability
   1/n and the k known ones share the remaining k/n by their MEP softmax, so
   the model's probabilities sum to one. ``method="prior"`` or ``"model"``
   uses one side only.
   ``method="global"`` follows Yamada et al. (2022): all mentions start as
   entity [MASK]s; at each step the most confident one (softmax of the combined
   scores over its candidates) is resolved and its entity becomes an input
   entity for the remaining ones, one forward pass per step.
3. Every mention gets a confidence in [0, 1] (:mod:`mluke.confidence`): its link
   probability (the kb's anchor statistic, or the estimate of
   :mod:`kb.mentions.linkability` where the kb has none) times the calibrated
   probability that its top candidate is right. A mention whose confidence is
   below ``nil_threshold`` (default: the calibration's, 0.5 or as fitted), or that
   has no candidate, is NIL, even with a single candidate.
4. Entities are shown by a qualified name (:func:`kb.entities.qualified_names`):
   "Cambridge (United Kingdom)" vs "Cambridge (Canada)".

Long texts are cut into windows of about ``window_chars`` characters at spaces
or sentence ends; every window is encoded once with all its mentions.

Streams (:meth:`Linker.link_iter`, :func:`iter_link_file`, what ``mluke link``
runs) link a few hundred texts at a time and hand each text's mentions on as soon
as they are decided, so memory stays flat however long the input: a text longer
than ``chunk_chars`` is linked in segments of ``segment_windows`` windows (its
mentions detected chunk by chunk, :meth:`kb.mentions.MentionIndex.iter_detect`),
with the same windows and mentions as one :meth:`Linker.link` call, hence the same
results (scores may differ in the last bits of float32: a batch pads its windows
to its longest, and other batches hold other windows).
"""

from __future__ import annotations

import ctypes
import functools
import math
import re
import sys
import warnings
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import torch
from tqdm import tqdm

from kb import open_db
from kb.db import EntityDB, chunked
from kb.entities import qualified_names
from kb.errors import MlukeError, OptionError, TextInputError, option
from kb.files import iter_lines, output
from kb.languages import check_language
from kb.mentions import MentionIndex
from kb.mentions.linkability import LinkEstimator
from mluke.confidence import DEFAULT_CALIBRATION, Calibration, features
from mluke.opening import open_model
from mluke.results import LinkedLine, LinkedMention, LinkedTexts, LinkTally

Method = Literal["combined", "prior", "model", "global"]
METHODS = ("combined", "prior", "model", "global")

#: Streams link up to this many texts per :meth:`Linker.link` call ...
CHUNK_TEXTS = 256
#: ... and at most this many characters; a longer text is linked alone, in segments.
CHUNK_CHARS = 1 << 16
#: Windows per segment of a long text.
SEGMENT_WINDOWS = 64
#: Segments of a long text between two returns of freed memory to the system (:func:`_trim_heap`).
TRIM_EVERY = 4


def _iter_windows(text: str, size: int) -> Iterator[tuple[int, int]]:
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


def _windows(text: str, size: int) -> list[tuple[int, int]]:
    return list(_iter_windows(text, size))


@dataclass
class _Job:
    """One window of one text, encoded with up to ``max_entity_length`` of its mentions."""

    text: int
    start: int
    end: int
    mentions: list[int]  # indices into the text's mention list


class Linker:
    """A model, a kb and a mention index, ready to link many texts (see module docs)."""

    def __init__(
        self,
        model: Any = None,
        kb: EntityDB | str | Path | None = None,
        *,
        index: Any = None,
        languages: list[str] | None = None,
        device: Any = None,
        dtype: Any = None,
        calibration: Calibration | None = None,
    ) -> None:
        self.db = open_db(kb)
        self.bundle = open_model(model, device=device, dtype=dtype)
        self.index = index if index is not None else MentionIndex.for_db(self.db, languages=languages)
        #: Maps a mention's scores to the probability that its top candidate is right (:mod:`mluke.confidence`).
        self.calibration = calibration if calibration is not None else DEFAULT_CALIBRATION
        self.estimator = LinkEstimator(self.db)
        self._names = functools.lru_cache(maxsize=1 << 14)(self._qualified)

    def _qualified(self, keys: tuple[str, ...], lang: str) -> dict[str, str]:
        return qualified_names(self.db, list(keys), lang)

    def link(
        self,
        texts: str | list[str],
        lang: str,
        *,
        method: Method = "combined",
        prior_weight: float = 1.0,
        nil_threshold: float | None = None,
        candidates: bool = False,
        spans: list[tuple[int, int]] | list[list[tuple[int, int]]] | None = None,
        window_chars: int = 1000,
        batch_size: int = 16,
        progress: bool = False,
    ) -> list[LinkedMention] | list[list[LinkedMention]]:
        """Link one text or a list of texts (see :func:`link`).

        ``spans``: link these character spans (gold mentions) instead of the
        detected ones, one list per text (one list for one text); a span whose
        surface the kb does not know comes back NIL. ``progress``: a progress
        bar over the text windows the model reads, when there are several batches.
        """
        single = isinstance(texts, str)
        batch = [texts] if single else _text_list(texts)
        check_language(lang, self.db.languages)
        check_methods([method])
        check_nil_threshold(nil_threshold)
        if spans is None:
            mentions = self.index.detect_batch(batch, lang)
        else:
            given = [spans] if single else list(spans)
            if len(given) != len(batch):
                raise MlukeError(f"spans: {len(given)} lists for {len(batch)} texts; give one list of spans per text")
            mentions = [self.index.mentions_at(t, s, lang, row=i) for i, (t, s) in enumerate(zip(batch, given))]
        results = self._resolve(
            batch, mentions, lang, method, prior_weight, nil_threshold, candidates, window_chars, batch_size, progress
        )
        return results[0] if single else results

    def link_iter(
        self,
        texts: Iterable[str],
        lang: str,
        *,
        method: Method = "combined",
        prior_weight: float = 1.0,
        nil_threshold: float | None = None,
        candidates: bool = False,
        window_chars: int = 1000,
        batch_size: int = 16,
        chunk_texts: int = CHUNK_TEXTS,
        chunk_chars: int = CHUNK_CHARS,
        segment_windows: int = SEGMENT_WINDOWS,
        advance: Callable[[int], Any] | None = None,
    ) -> Iterator[tuple[str, Iterable[LinkedMention]]]:
        """:meth:`link` over a stream of texts, in memory that does not grow with it: ``(text, mentions)``
        per text, in order, as soon as its chunk is linked.

        Texts are read and linked ``chunk_texts`` at a time (and at most
        ``chunk_chars`` characters); their mentions come as lists. A text longer
        than ``chunk_chars`` is linked on its own, ``segment_windows`` windows at
        a time, and its mentions come as an iterator that links it as it is read
        (once; it holds one segment's mentions at a time). The results are those of
        :meth:`link` on the same texts (up to the last bits of float32 scores, see the
        module docs). ``advance(n)`` is called with the number of
        characters of each chunk or segment done (a progress bar's ``update``).
        The language and method are checked at once; texts that are not str raise
        :class:`TextInputError` when reached.
        """
        check_language(lang, self.db.languages)
        check_methods([method])
        check_nil_threshold(nil_threshold)
        if min(chunk_texts, chunk_chars, segment_windows, window_chars, batch_size) < 1:
            raise OptionError(
                "chunk_texts, chunk_chars, segment_windows, window_chars and batch_size must be at least 1"
            )
        options = (method, prior_weight, nil_threshold, candidates, window_chars, batch_size)
        return self._stream(iter(texts), lang, options, chunk_texts, chunk_chars, segment_windows, advance or _ignore)

    def _stream(
        self,
        texts: Iterator[str],
        lang: str,
        options: tuple[Any, ...],
        chunk_texts: int,
        chunk_chars: int,
        segment_windows: int,
        advance: Callable[[int], Any],
    ) -> Iterator[tuple[str, Iterable[LinkedMention]]]:
        chunk: list[str] = []
        size = 0
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TextInputError(
                    f"link() takes a text (str) or a list of texts; item {row} is {type(text).__name__}"
                )
            long = len(text) > chunk_chars
            if chunk and (long or len(chunk) == chunk_texts or size + len(text) > chunk_chars):
                yield from zip(chunk, self._resolve(chunk, self.index.detect_batch(chunk, lang), lang, *options))
                advance(size)
                chunk, size = [], 0
            if long:
                yield text, self._segments(text, lang, options, segment_windows, advance)
            else:
                chunk.append(text)
                size += len(text)
        if chunk:
            yield from zip(chunk, self._resolve(chunk, self.index.detect_batch(chunk, lang), lang, *options))
            advance(size)

    def _segments(
        self, text: str, lang: str, options: tuple[Any, ...], segment_windows: int, advance: Callable[[int], Any]
    ) -> Iterator[LinkedMention]:
        """The linked mentions of one long text, ``segment_windows`` windows at a time.

        The windows are those :meth:`link` cuts and the mentions those it detects
        (in order, chunk by chunk); a segment takes the mentions that start in it,
        and one that runs past its end runs past its last window too, so it keeps
        its prior only either way.
        """
        found = self.index.iter_detect(text, lang)
        pending = next(found, None)
        windows = _iter_windows(text, options[4])
        done = segments = 0
        while group := list(islice(windows, segment_windows)):
            end, part = group[-1][1], []
            while pending is not None and pending.start < end:
                part.append(pending)
                pending = next(found, None)
            yield from self._resolve([text], [part], lang, *options, windows=[group])[0]
            advance(end - done)
            done, segments = end, segments + 1
            if segments % TRIM_EVERY == 0:
                _trim_heap()

    def link_mentions(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        lang: str,
        *,
        method: Method = "combined",
        prior_weight: float = 1.0,
        nil_threshold: float | None = None,
        candidates: bool = False,
        window_chars: int = 1000,
        batch_size: int = 16,
    ) -> list[list[LinkedMention]]:
        """Link given :class:`kb.mentions.Mention` objects (one list per text), candidates as they are: a
        caller may narrow them (e.g. drop an entity to see what linking does when the kb lacks it)."""
        check_language(lang, self.db.languages)
        check_methods([method])
        check_nil_threshold(nil_threshold)
        return self._resolve(
            _text_list(texts),
            [list(m) for m in mentions],
            lang,
            method,
            prior_weight,
            nil_threshold,
            candidates,
            window_chars,
            batch_size,
        )

    def mention_features(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        lang: str,
        *,
        method: Method = "combined",
        prior_weight: float = 1.0,
        window_chars: int = 1000,
        batch_size: int = 16,
    ) -> list[list[tuple[str | None, float, list[float]]]]:
        """Per mention: (top candidate, link probability, :func:`mluke.confidence.features`), what
        :meth:`calibration` maps to a confidence; for fitting one (:mod:`probes.linking_calibration`)."""
        check_methods([method])
        mentions, scores = self._scored(
            _text_list(texts), [list(m) for m in mentions], lang, method, prior_weight, None, window_chars, batch_size
        )
        vocab = self.bundle[2]
        out = []
        for t, found in enumerate(mentions):
            row = []
            for i, m in enumerate(found):
                ranked = _rank(m.candidates, _model(scores.get((t, i))), method, prior_weight)
                if not ranked:
                    row.append((None, m.link_probability or 0.0, []))
                    continue
                ms = scores.get((t, i)) if method != "prior" else None
                full = ms.full.get(ranked[0]["key"]) if ms is not None else None
                row.append(
                    (
                        ranked[0]["key"],
                        1.0 if m.link_probability is None else m.link_probability,
                        features(ranked, full, len(vocab) if vocab is not None else 1),
                    )
                )
            out.append(row)
        return out

    def _resolve(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        lang: str,
        method: Method,
        prior_weight: float,
        nil_threshold: float | None,
        candidates: bool,
        window_chars: int,
        batch_size: int,
        progress: bool = False,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> list[list[LinkedMention]]:
        """Score and decide the detected (or given) ``mentions`` of ``texts``; ``windows``: each text's
        windows to encode (default: all of it, cut every ``window_chars`` characters)."""
        mentions, scores = self._scored(
            texts, mentions, lang, method, prior_weight, nil_threshold, window_chars, batch_size, progress, windows
        )
        return [
            [
                self._decide(m, scores.get((t, i)), lang, method, prior_weight, nil_threshold, candidates)
                for i, m in enumerate(found)
            ]
            for t, found in enumerate(mentions)
        ]

    def _scored(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        lang: str,
        method: Method,
        prior_weight: float,
        nil_threshold: float | None,
        window_chars: int,
        batch_size: int,
        progress: bool = False,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> tuple[list[list[Any]], dict[tuple[int, int], ModelScores]]:
        """The mentions with their link probabilities filled in (:class:`kb.mentions.linkability.LinkEstimator`)
        and the model's scores of each (none for ``method="prior"``)."""
        mentions = [self.estimator.fill(texts[t], found, lang) for t, found in enumerate(mentions)]
        scores: dict[tuple[int, int], ModelScores] = {}
        if method != "prior":
            ids = self._candidate_ids(mentions)
            jobs = self._jobs(texts, mentions, ids, window_chars, windows)
            with tqdm(
                total=len(jobs),
                desc="linking",
                unit="windows",
                disable=not progress or len(jobs) <= batch_size,
                mininterval=0.5,
                dynamic_ncols=True,
            ) as bar:
                if method == "global":
                    scores = self._score_global(
                        texts, mentions, ids, jobs, prior_weight, nil_threshold, batch_size, bar
                    )
                else:
                    scores = self._score(texts, mentions, ids, jobs, batch_size, bar)
        return mentions, scores

    def _candidate_ids(self, mentions: list[list[Any]]) -> dict[tuple[int, int], list[tuple[str, int]]]:
        """(text, mention) -> [(key, entity vocabulary id)] of the candidates the model knows."""
        vocab = self.bundle[2]
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

    def _jobs(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], Any],
        window_chars: int,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> list[_Job]:
        """Windows of each text (``windows[t]``, else all of it) with the scorable mentions inside them
        (linear in the number of mentions)."""
        limit = self.bundle[1].max_entity_length
        jobs = []
        for t, text in enumerate(texts):
            order = sorted((i for i in range(len(mentions[t])) if (t, i) in ids), key=lambda i: mentions[t][i].start)
            starts = [mentions[t][i].start for i in order]
            for a, b in (windows[t] if windows is not None else _iter_windows(text, window_chars)) if order else ():
                lo, hi = bisect_left(starts, a), bisect_left(starts, b)
                inside = [i for i in order[lo:hi] if mentions[t][i].end <= b]
                jobs += [_Job(t, a, b, inside[k : k + limit]) for k in range(0, len(inside), limit)]
        return jobs

    def _encode(self, texts: list[str], mentions: list[list[Any]], part: list[_Job]) -> Any:
        """One batch of windows, every mention an entity [MASK]."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mentions cut off by truncation keep their prior only
            return self.bundle[1](
                [texts[j.text][j.start : j.end] for j in part],
                entity_spans=[
                    [(mentions[j.text][i].start - j.start, mentions[j.text][i].end - j.start) for i in j.mentions]
                    for j in part
                ],
            )

    @torch.inference_mode()
    def _part_scores(
        self,
        enc: Any,
        part: list[_Job],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], list[tuple[str, int]]],
        skip: Container[tuple[int, int]] = (),
    ) -> dict[tuple[int, int], ModelScores]:
        """Model log-probabilities of the candidates of the batch's mentions not in ``skip``.

        Of n candidates, those outside the entity vocabulary get 1/n each and the k
        known ones share k/n by their MEP softmax (see the module docs). The known
        ones' log-probabilities over the whole entity vocabulary come along (for the
        confidence: a single candidate is certain among the candidates, not there).
        Their normaliser costs one pass over the entity table per batch (mentions x
        entities dot products): nothing for the demo's vocabulary, not yet measured
        for a 1.2M-entity one.
        """
        model = self.bundle[0]
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
        full = model.entity_scores(states, cand, normalize=True).float().cpu()
        lengths = torch.tensor([len(ids[key]) for _, _, key in where])
        full = full.masked_fill(torch.arange(width)[None, :] >= lengths[:, None], float("-inf"))
        logp = torch.log_softmax(full, -1).tolist()
        out = {}
        for (_, _, key), row, whole in zip(where, logp, full.tolist()):
            found = mentions[key[0]][key[1]].candidates
            scores = dict.fromkeys((c.key for c in found), math.log(1.0 / len(found)))
            share = math.log(len(ids[key]) / len(found))
            scores.update({c: lp + share for (c, _), lp in zip(ids[key], row)})
            out[key] = ModelScores(scores, {c: v for (c, _), v in zip(ids[key], whole)})
        return out

    def _score(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], list[tuple[str, int]]],
        jobs: list[_Job],
        batch_size: int,
        bar: Any,
    ) -> dict[tuple[int, int], ModelScores]:
        """Model log-probabilities of every mention, all of them entity [MASK]s."""
        out: dict[tuple[int, int], ModelScores] = {}
        for part in chunked(jobs, batch_size):
            out.update(self._part_scores(self._encode(texts, mentions, part), part, mentions, ids))
            bar.update(len(part))
        return out

    def _score_global(
        self,
        texts: list[str],
        mentions: list[list[Any]],
        ids: dict[tuple[int, int], list[tuple[str, int]]],
        jobs: list[_Job],
        prior_weight: float,
        nil_threshold: float | None,
        batch_size: int,
        bar: Any,
    ) -> dict[tuple[int, int], ModelScores]:
        """Yamada et al. (2022): resolve the most confident mention of each window, feed its entity in, repeat.

        Each batch of windows is tokenized once; a step changes only entity ids
        and runs one forward pass per batch that still has open mentions, so a
        window with n mentions takes n passes. Each mention keeps the scores of
        the step that resolved it.
        """
        final: dict[tuple[int, int], ModelScores] = {}
        fixed: set[tuple[int, int]] = set()
        for part in chunked(jobs, batch_size):
            enc = self._encode(texts, mentions, part)
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
                step = self._part_scores(enc, part, mentions, ids, skip=fixed)
                for _job, keys in open_jobs:
                    ranked = {
                        key: _rank(mentions[key[0]][key[1]].candidates, _model(step.get(key)), "global", prior_weight)
                        for key in keys
                    }
                    best = max(keys, key=lambda key: _top_probability(ranked[key]))
                    final[best] = step.get(best, ModelScores({}, {}))
                    fixed.add(best)
                    top = ranked[best][0] if ranked[best] else None
                    sure = top is not None and self._confidence(
                        mentions[best[0]][best[1]], ranked[best], final[best]
                    ) >= self._threshold(nil_threshold)
                    if best in slots and sure:
                        chosen = dict(ids[best]).get(top["key"])
                        if chosen is not None:  # NIL or outside the vocabulary: stays an entity [MASK]
                            enc["entity_ids"][slots[best]] = chosen
            bar.update(len(part))
        return final

    def _threshold(self, nil_threshold: float | None) -> float:
        return self.calibration.threshold if nil_threshold is None else nil_threshold

    def _confidence(self, m: Any, rows: list[dict[str, Any]], model_scores: ModelScores | None) -> float:
        """Link probability x calibrated probability that the top of ``rows`` is right (:mod:`mluke.confidence`)."""
        if not rows:
            return 0.0
        full = model_scores.full.get(rows[0]["key"]) if model_scores is not None else None
        vocab = self.bundle[2]
        x = features(rows, full, len(vocab) if vocab is not None else 1)
        lp = 1.0 if m.link_probability is None else m.link_probability
        return lp * self.calibration.probability(x)

    def _decide(
        self,
        m: Any,
        model_scores: ModelScores | None,
        lang: str,
        method: Method,
        prior_weight: float,
        nil_threshold: float | None,
        want_candidates: bool,
    ) -> LinkedMention:
        rows = _rank(m.candidates, _model(model_scores), method, prior_weight)
        best = rows[0] if rows else None
        confidence = self._confidence(m, rows, model_scores if method != "prior" else None)
        nil = best is None or confidence < self._threshold(nil_threshold)
        names = self._names(tuple(r["key"] for r in rows), lang) if rows else {}
        key = best["key"] if best else None
        title = None
        if key is not None:
            title = self.db.titles(key).get(lang) or self.db.label(key, lang)
        if want_candidates:
            for r in rows:
                r["name"] = names.get(r["key"])
        return LinkedMention(
            m.start,
            m.end,
            m.surface,
            None if nil else key,
            names.get(key) if key else None,
            title,
            confidence,
            best["score"] if best else float("-inf"),
            best["prior"] if best else 0.0,
            m.link_probability,
            nil,
            rows if want_candidates else None,
        )


def check_nil_threshold(value: float | None) -> None:
    """A NIL threshold is a confidence in [0, 1] (or ``None``: the calibration's default)."""
    if value is not None and not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise OptionError(
            "{nil_threshold}: expected a confidence between 0 and 1 (mentions below it are NIL)",
            options={"nil_threshold": option("nil_threshold", value)},
        )


@dataclass
class ModelScores:
    """The model's view of one mention: log-probabilities of its candidates among the candidates
    (``restricted``, see :meth:`Linker._part_scores`) and over the whole entity vocabulary (``full``,
    the candidates in the vocabulary only)."""

    restricted: dict[str, float]
    full: dict[str, float]


def _model(scores: ModelScores | None) -> dict[str, float] | None:
    return scores.restricted if scores is not None else None


def check_methods(methods: Iterable[str], name: str = "method") -> tuple[str, ...]:
    """The linking methods asked for, each checked (in order, without repeats), or an error listing the valid
    ones that names the option ``name`` (``method``, or ``methods`` for a list)."""
    chosen = tuple(dict.fromkeys([methods] if isinstance(methods, str) else methods))
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        value = ",".join(bad) if bad else ""
        raise OptionError(
            f"{{method}}: expected {'one' if len(chosen) < 2 else 'a comma-separated list'} of {', '.join(METHODS)}",
            options={"method": option(name, value)},
        )
    return chosen


def _ignore(_: int) -> None:
    pass


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim  # glibc
    except (OSError, AttributeError):  # another C library: nothing to do
        return None


def _trim_heap() -> None:
    """Return the memory the allocator holds freed to the system (glibc only; elsewhere nothing).

    A long text's segments allocate and free tensors and lists of many sizes; glibc keeps
    the freed memory, fragmented, and the resident size crept from 0.7 to 0.9 GB over a
    10 MB line with the live objects flat (``benchmarks/link_memory.py``). Every few
    segments this keeps it at the working set of one segment.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _text_list(texts: Any) -> list[str]:
    """``texts`` as a list of strings, or a :class:`TextInputError` saying what linking takes."""
    what = "link() takes a text (str) or a list of texts"
    if texts is None or isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TextInputError(f"{what}; got {type(texts).__name__}")
    batch = list(texts)
    bad = next((i for i, t in enumerate(batch) if not isinstance(t, str)), None)
    if bad is not None:
        raise TextInputError(f"{what}; item {bad} is {type(batch[bad]).__name__}")
    return batch


def _rank(
    candidates: Any, model_scores: dict[str, float] | None, method: Method, prior_weight: float
) -> list[dict[str, Any]]:
    """Every candidate with its prior, model log-probability and the score ``method`` uses, best first.

    The score is ``log prior`` for "prior" (and for candidates the model cannot
    score), the model's log-probability for "model", and their sum with the
    prior weighted by ``prior_weight`` for "combined" and "global".
    """
    rows = []
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


def _top_probability(rows: list[dict[str, Any]]) -> float:
    """Softmax probability of the best of :func:`_rank`'s rows: the global mode's confidence."""
    if not rows:
        return 0.0
    top = rows[0]["score"]
    return 1.0 / sum(math.exp(r["score"] - top) for r in rows)


def link(
    texts: str | list[str],
    lang: str,
    *,
    kb: EntityDB | str | Path | None = None,
    model: Any = None,
    method: Method = "combined",
    prior_weight: float = 1.0,
    nil_threshold: float | None = None,
    candidates: bool = False,
    spans: list[tuple[int, int]] | list[list[tuple[int, int]]] | None = None,
    device: Any = None,
    dtype: Any = None,
) -> list[LinkedMention] | list[list[LinkedMention]]:
    """Link the entity mentions of one text (or a list of texts) in ``lang`` to kb entities.

    Defaults: the embedded kb and the demo model, like :func:`mluke.probe`. Returns, per
    text, :class:`LinkedMention` objects (character span, surface, entity key, titles,
    score, prior, NIL flag, and with ``candidates=True`` every candidate's scores).
    ``method``: "combined" (model + prior, the default), "prior", "model", or
    "global" (combined, resolving mentions one at a time in order of confidence
    and feeding resolved entities back in). ``spans`` links given character spans
    instead of detecting mentions. For many calls, build a :class:`Linker` once. ``device`` / ``dtype``:
    where and in which precision the model runs (:mod:`mluke.devices`).
    """
    return Linker(model, kb, languages=[lang], device=device, dtype=dtype).link(
        texts,
        lang,
        method=method,
        prior_weight=prior_weight,
        nil_threshold=nil_threshold,
        candidates=candidates,
        spans=spans,
    )


def iter_link_file(
    source: str | Path,
    lang: str,
    *,
    kb: EntityDB | str | Path | None = None,
    model: Any = None,
    method: Method = "combined",
    prior_weight: float = 1.0,
    nil_threshold: float | None = None,
    candidates: bool = False,
    progress: bool = True,
    device: Any = None,
    dtype: Any = None,
    linker: Linker | None = None,
    chunk_texts: int = CHUNK_TEXTS,
    chunk_chars: int = CHUNK_CHARS,
) -> Iterator[LinkedLine]:
    """Link every line of a UTF-8 text file (``-``: standard input) as a stream: a :class:`LinkedLine`
    (line number, text, mentions) per line, in order, in memory that does not grow with the input
    (see :meth:`Linker.link_iter`; the mentions of a line longer than ``chunk_chars`` come as an
    iterator, read once). What ``mluke link FILE`` runs; :func:`write_linked` writes the stream as JSON lines.

    Before any model is loaded: a missing file, a folder, or (for a file) bytes that are
    not UTF-8 raise :class:`kb.errors.InputFormatError` naming the file and line; the
    file is read once for that and once as it is linked. Standard input is read as
    it is linked, so a bad line there stops the stream when it is reached.
    ``linker``: a :class:`Linker` to use instead of building one from ``model``/``kb``.
    ``progress``: a progress bar over the characters linked (after a second).
    """
    lines = iter_lines(source, pipe_hint="mluke link -")
    check_methods([method])
    total = None
    if str(source) != "-":
        total = sum(map(len, lines))  # checks every line's bytes now
        lines = iter_lines(source)
    if linker is None:
        linker = Linker(model, kb, languages=[lang], device=device, dtype=dtype)
    bar = tqdm(
        total=total,
        desc="linking",
        unit="char",
        unit_scale=True,
        disable=not progress,
        delay=1.0,
        mininterval=0.5,
        dynamic_ncols=True,
    )
    stream = linker.link_iter(
        lines,
        lang,
        method=method,
        prior_weight=prior_weight,
        nil_threshold=nil_threshold,
        candidates=candidates,
        chunk_texts=chunk_texts,
        chunk_chars=chunk_chars,
        advance=bar.update,
    )
    return _numbered(stream, bar)


def _numbered(stream: Iterator[tuple[str, Iterable[LinkedMention]]], bar: Any) -> Iterator[LinkedLine]:
    with bar:
        for number, (text, mentions) in enumerate(stream, 1):
            yield LinkedLine(number, text, mentions)


def write_linked(
    stream: Iterable[LinkedLine], dest: str | Path, *, overwrite: bool = False, tally: LinkTally | None = None
) -> LinkTally:
    """Write a stream of linked lines (:func:`iter_link_file`) as JSON lines, each as soon as it is
    linked, to ``dest`` (``-``: standard output); the same lines as :meth:`LinkedTexts.to_jsonl`.

    A file is written under a temporary name next to ``dest`` and renamed when the stream ends,
    so a run that fails or is interrupted leaves no file at ``dest`` (and an existing one, with
    ``overwrite``, as it was). Returns the counts (:class:`LinkTally`, or ``tally`` filled in).
    """
    tally = tally if tally is not None else LinkTally()
    with output(dest, overwrite=overwrite) as f:
        for item in stream:
            f.writelines(tally.count(item).jsonl())
    return tally


def link_file(
    source: str | Path,
    lang: str,
    *,
    kb: EntityDB | str | Path | None = None,
    model: Any = None,
    method: Method = "combined",
    prior_weight: float = 1.0,
    nil_threshold: float | None = None,
    candidates: bool = False,
    progress: bool = True,
    device: Any = None,
    dtype: Any = None,
) -> LinkedTexts:
    """Link every line of a UTF-8 text file (``-``: standard input), all held in memory (for a
    stream, :func:`iter_link_file`).

    A missing file, a folder or bytes that are not UTF-8 raise
    :class:`kb.errors.InputFormatError` naming the file and line, before any model is loaded
    (for a file; standard input is read as it is linked).
    """
    texts, mentions = [], []
    for item in iter_link_file(
        source,
        lang,
        kb=kb,
        model=model,
        method=method,
        prior_weight=prior_weight,
        nil_threshold=nil_threshold,
        candidates=candidates,
        progress=progress,
        device=device,
        dtype=dtype,
    ):
        texts.append(item.text)
        mentions.append(list(item.mentions))
    return LinkedTexts(texts, mentions, lang, method)
