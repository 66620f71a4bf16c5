"""``mluke.link``: entity linking in any of the kb's languages, to the shared entity inventory.

1. Mentions and candidates come from :class:`kb.MentionIndex` (longest
   non-overlapping matches of the kb's surface forms, link-probability filter,
   top 30 candidates by prior p(e|m)).
2. Each mention gets an entity [MASK] over its words; the model scores the
   candidates with the MEP head restricted to them (softmax over the candidates
   in the entity vocabulary), and the score is combined with the prior:
   ``log p_model(e) + prior_weight * log p(e|m)``. Candidates outside the entity
   vocabulary get the uniform model score. ``method="prior"`` or ``"model"``
   uses one side only.
3. A mention whose best combined score is below ``nil_threshold`` (or that has
   no candidate) is NIL.

Long texts are cut into windows of about ``window_chars`` characters at spaces
or sentence ends; every window is encoded once with all its mentions.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from kb.db import EntityDB
from kb.errors import MlukeError
from kb.languages import check_language

Method = Literal["combined", "prior", "model"]


@dataclass(frozen=True)
class LinkedMention:
    """One mention: character span, surface, the chosen entity (``None`` when NIL) and its scores."""

    start: int
    end: int
    surface: str
    key: str | None
    title: str | None  # title (else label) in the text's language
    title_en: str | None
    score: float
    prior: float
    nil: bool
    candidates: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _windows(text: str, size: int) -> list[tuple[int, int]]:
    """Cut ``text`` into spans of about ``size`` characters, preferring sentence ends, then spaces."""
    out, pos, n = [], 0, len(text)
    while pos < n:
        end = min(n, pos + size)
        if end < n:
            tail = text[pos:end]
            cut = max((m.end() for m in re.finditer(r"[.!?。！？]\s*|\s+", tail)), default=0)
            if cut > size // 2:
                end = pos + cut
        out.append((pos, end))
        pos = end
    return out


class Linker:
    """A model, a kb and a mention index, ready to link many texts (see module docs)."""

    def __init__(self, model: Any = None, kb: EntityDB | str | Path | None = None, *, index: Any = None,
                 languages: list[str] | None = None) -> None:
        from kb.embedded import default_db
        from kb.mentions import MentionIndex
        from mluke.cloze import _load_model

        self.db = kb if isinstance(kb, EntityDB) else (EntityDB(kb) if kb is not None else default_db())
        self.bundle = _load_model(model)
        self.index = index if index is not None else MentionIndex.for_db(self.db, languages=languages)

    def link(self, texts: str | list[str], lang: str, *, method: Method = "combined", prior_weight: float = 1.0,
             nil_threshold: float | None = None, candidates: bool = False, window_chars: int = 1000,
             batch_size: int = 16) -> list[LinkedMention] | list[list[LinkedMention]]:
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        if not all(isinstance(t, str) for t in batch):
            raise MlukeError("link() expects a text or a list of texts")
        check_language(lang, self.db.languages)
        if method not in ("combined", "prior", "model"):
            raise MlukeError(f"method={method!r}: expected 'combined', 'prior' or 'model'")
        results = []
        for text in batch:
            mentions = self.index.detect(text, lang) if text.strip() else []
            scored = self._score(text, mentions, window_chars, batch_size) if method != "prior" else {}
            results.append([self._decide(m, scored.get(i), lang, method, prior_weight, nil_threshold, candidates)
                            for i, m in enumerate(mentions)])
        return results[0] if single else results

    @torch.inference_mode()
    def _score(self, text: str, mentions: list[Any], window_chars: int, batch_size: int) -> dict[int, dict[str, float]]:
        """Model log-probabilities over each mention's candidates: {mention index: {key: log p}}."""
        model, tok, vocab = self.bundle
        if vocab is None:
            raise MlukeError("linking needs a model with an entity vocabulary")
        jobs = []  # (window text, [(mention index, local span)])
        for a, b in _windows(text, window_chars):
            inside = [(i, (m.start - a, m.end - a)) for i, m in enumerate(mentions)
                      if a <= m.start and m.end <= b and m.candidates]
            for k in range(0, len(inside), tok.max_entity_length):
                jobs.append((text[a:b], inside[k:k + tok.max_entity_length]))
        out: dict[int, dict[str, float]] = {}
        for start in range(0, len(jobs), batch_size):
            part = jobs[start:start + batch_size]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # mentions cut off by truncation keep their prior only
                enc = tok([t for t, _ in part], entity_spans=[[s for _, s in spans] for _, spans in part])
            _, hidden = model.encode(**enc)
            for row, (_, spans) in enumerate(part):
                kept = enc.kept_entities[row]
                for slot, k in enumerate(kept):
                    i = spans[k][0]
                    keys = [c.key for c in mentions[i].candidates]
                    ids = vocab.ids_of_keys(keys)
                    known = [(key, v) for key, v in zip(keys, ids) if v is not None]
                    if not known:
                        continue
                    logits = model.entity_scores(hidden[row, slot][None], torch.tensor([v for _, v in known]), normalize=False)[0]
                    logp = torch.log_softmax(logits, -1).tolist()
                    uniform = math.log(1.0 / len(keys))
                    scores = {key: uniform for key in keys}
                    scores.update({key: lp for (key, _), lp in zip(known, logp)})
                    out[i] = scores
        return out

    def _decide(self, m: Any, model_scores: dict[str, float] | None, lang: str, method: Method, prior_weight: float,
                nil_threshold: float | None, want_candidates: bool) -> LinkedMention:
        rows = []
        for c in m.candidates:
            lp = math.log(max(c.prior, 1e-12))
            ms = model_scores.get(c.key) if model_scores else None
            if method == "prior" or ms is None:
                score = lp if method != "model" else (ms if ms is not None else lp)
            elif method == "model":
                score = ms
            else:
                score = ms + prior_weight * lp
            rows.append({"key": c.key, "prior": c.prior, "model": ms, "score": score})
        rows.sort(key=lambda r: (-r["score"], r["key"]))
        best = rows[0] if rows else None
        nil = best is None or (nil_threshold is not None and best["score"] < nil_threshold)
        key = None if nil else best["key"]
        title = title_en = None
        if key is not None:
            titles = self.db.titles(key)
            title = titles.get(lang) or self.db.label(key, lang)
            title_en = titles.get("en") or self.db.label(key, "en")
        return LinkedMention(m.start, m.end, m.surface, key, title, title_en, best["score"] if best else float("-inf"),
                             best["prior"] if best else 0.0, nil, rows if want_candidates else None)


def link(texts: str | list[str], lang: str, *, kb: EntityDB | str | Path | None = None, model: Any = None,
         method: Method = "combined", prior_weight: float = 1.0, nil_threshold: float | None = None,
         candidates: bool = False) -> list[LinkedMention] | list[list[LinkedMention]]:
    """Link the entity mentions of one text (or a list of texts) in ``lang`` to kb entities.

    Defaults: the embedded kb and the demo model, like :func:`mluke.probe`. Returns, per
    text, :class:`LinkedMention` objects (character span, surface, entity key, titles,
    score, prior, NIL flag, and with ``candidates=True`` every candidate's scores).
    For many calls, build a :class:`Linker` once.
    """
    return Linker(model, kb, languages=[lang]).link(texts, lang, method=method, prior_weight=prior_weight,
                                                     nil_threshold=nil_threshold, candidates=candidates)
