"""End-to-end entity linking with a KnowBert model's integrated linker (``method="knowbert"``).

:class:`KnowBertLinker` is a :class:`mluke.Linker` over a folder ``mluke knowbert train`` wrote
(:meth:`mluke.knowbert.KnowBertModel.from_pretrained`, its tokenizer in ``tokenizer/``):

1. Mentions are those the other methods link: the kb mention index's longest non-overlapping names
   (:meth:`kb.mentions.MentionIndex.detect`, what the knowledge layer was trained on), or the spans a
   caller gives (``spans=``); a mention of more than ``max_span_words`` words (KnowBert: 5) is not read.
2. Each mention's candidates in the model's entity table (at most 30, best prior first, with log p(e|m))
   go with the text through the encoder up to the knowledge layer (:class:`mluke.knowbert.CandidateSelector`
   builds the windows: a text longer than the encoder's input is read in several, cut between spans).
   In a model with several knowledge bases, the one whose linker decides has these mentions and candidates (from
   its kb); every knowledge base whose layer runs before it (below it, or at its depth earlier in the model's
   order) gets the mentions its own kb's index detects in the text, with their candidates in its own table, as in
   training (:class:`mluke.knowbert.MultiSelector`), and the layers above it do not run. Each knowledge base's kb
   is the one ``knowbert.json`` records, or the caller's (:func:`mluke.knowbert.kb_dbs`).
3. The integrated linker decides (:meth:`mluke.knowbert.KnowledgeLayer.decode`): the best candidate when
   its score is above the layer's threshold, else NULL. The mention's ``confidence`` is the top
   candidate's probability under the linker's softmax over the candidates and NULL (for a linked mention,
   the probability of the decision), ``score`` its log; with ``candidates=True`` every scored candidate
   comes with its prior, ``model`` (that probability) and ``score`` (its log), best first. A NULL decision
   is NIL; so is, when ``nil_threshold`` is given, a mention whose confidence is below it. A mention
   with no candidate in the entity table is NIL with confidence 0.
4. Overlapping mentions (given spans may overlap; detected ones never do): of each group of mentions
   that overlap one another, only the linked one with the highest confidence stays linked, the others
   are NIL (they stay in the output, one :class:`LinkedMention` per mention, as with the other methods).

The output has the same fields as the other methods' (:class:`mluke.LinkedMention`: qualified names,
titles, link probability from the kb or its estimate), so tables, JSON lines and CSV look the same.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from kb.db import EntityDB
from kb.errors import MlukeError, OptionError, option
from kb.mentions import Mention, MentionIndex
from kb.mentions.linkability import LinkEstimator
from mluke.knowbert.batch import IGNORE
from mluke.knowbert.candidates import (
    CandidateSelector,
    KbSpans,
    MultiSelector,
    SelectionStats,
    Window,
    collate_knowledge,
    span_words,
)
from mluke.knowbert.kb_sources import kb_db, open_kb_dbs, unrecorded_kb
from mluke.knowbert.layer import NULL_CHOICE
from mluke.knowbert.model import KnowBertModel
from mluke.linking.knowbert_folder import load_knowbert, not_a_knowbert_model
from mluke.linking.linker import Linker
from mluke.options import LinkOptions
from mluke.results import LinkedMention

if TYPE_CHECKING:
    from mluke.models.checkpoint import Mluke
    from mluke.models.devices import Device, DType
    from mluke.models.tokenizer import MlukeTokenizer


class _GivenSpans(CandidateSelector):
    """The candidate selector over the mentions the linker gives it instead of its own detection (a window's
    spans, candidates and priors are built as for training, so inference reads what training read)."""

    given: Sequence[Mention] = ()

    def _spans(
        self, text: str, lang: str, links: Any, stats: SelectionStats
    ) -> list[tuple[int, int, list[int], list[float], int]]:
        found: dict[tuple[int, int], tuple[list[int], list[float], int]] = {}
        for m in self.given:
            rows, priors, _ = self._candidates(m, stats)
            if rows and (m.start, m.end) not in found:
                found[(m.start, m.end)] = (rows, priors, IGNORE)
        return [(a, b, *found[(a, b)]) for a, b in sorted(found)]


class KnowBertLinker(Linker):
    """A KnowBert model's integrated linker over the kb's mentions (module docs); links like :class:`mluke.Linker`
    (``link``, ``link_iter``, ``link_mentions``, files and streams) with ``method="knowbert"``.

    Args:
        model: a KnowBert model folder (``mluke knowbert train``'s ``RUN/model``), or a loaded
            :class:`~mluke.knowbert.KnowBertModel` (then ``tokenizer`` too).
        db: the first knowledge base's kb (the only one's): an :class:`kb.EntityDB` or its path (default: the kb the
            model records, else the embedded kb); its keys are the entity table's.
        kbs: the kb of knowledge bases by name, overriding what the model records (``--kb NAME=DB``).
        index: the mention index to detect mentions with (default: one over the deciding knowledge base's kb).
        languages: the languages the default index covers.
        device: where the model runs.
        dtype: the precision it runs in.
        tokenizer: the model's tokenizer, with a loaded model.
        max_span_words: longer mentions are not read (NIL).
        knowledge_base: the knowledge base whose linker decides, in a model with several (default: the first;
            ``LinkOptions.knowledge_base`` chooses per call, among those with the same kb). Its kb detects the
            mentions and gives their candidates, titles and names; the knowledge bases below it get their own
            (module docs).

    Raises:
        CheckpointError: a folder that is no KnowBert model (the error says how to make one).
        MlukeError: a knowledge base with no kb recorded or given that would run (the error names the file).
    """

    def __init__(
        self,
        model: KnowBertModel | Mluke | str | os.PathLike[str] | None,
        db: EntityDB | str | os.PathLike[str] | None = None,
        *,
        kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
        index: MentionIndex | None = None,
        languages: list[str] | None = None,
        device: Device = None,
        dtype: DType = None,
        tokenizer: MlukeTokenizer | None = None,
        max_span_words: int = 5,
        knowledge_base: str | None = None,
    ) -> None:
        from mluke.models.devices import place

        if isinstance(model, KnowBertModel):
            if tokenizer is None:
                raise MlukeError("KnowBertLinker(model=a loaded KnowBertModel) needs its tokenizer= too")
            self.model = model.eval()
        elif isinstance(model, (str, os.PathLike)):
            self.model, tokenizer = load_knowbert(model)
        elif model is None:
            raise MlukeError(
                "method 'knowbert' needs a KnowBert model folder (--model RUN/model); 'mluke knowbert train' makes one"
            )
        else:
            raise not_a_knowbert_model(None)
        place(self.model, device, dtype)
        self.tokenizer = tokenizer
        self.max_span_words = max_span_words
        self.languages = languages
        self.knowledge_base = self._known(knowledge_base or self.model.names[0])
        #: the kb of every knowledge base whose layer runs when the deciding one links, by name
        self.dbs: dict[str, EntityDB] = open_kb_dbs(self._needed(self.model, db, kbs, self.knowledge_base))
        self.db = self.dbs[self.knowledge_base]
        self.index = index if index is not None else MentionIndex.for_db(self.db, languages=languages)
        self.estimator = LinkEstimator(self.db)
        self._selectors: dict[str, _GivenSpans] = {}
        self._others: dict[str, CandidateSelector] = {}
        self.selector = self._selector(self.knowledge_base)
        self._names = functools.lru_cache(maxsize=1 << 14)(self._qualified)

    @staticmethod
    def _needed(
        model: KnowBertModel,
        db: EntityDB | str | os.PathLike[str] | None,
        kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None,
        name: str,
    ) -> dict[str, EntityDB | str | os.PathLike[str] | None]:
        """The kbs of the knowledge bases that run when ``name`` links, with every one that resolves (so that a
        per-call choice can use it): one that has none is an error only when it would run."""
        order = model.run_order
        needed = set(order[: order.index(name) + 1])
        out: dict[str, EntityDB | str | os.PathLike[str] | None] = {}
        for kb_name in model.names:
            try:
                out[kb_name] = kb_db(model, kb_name, db, kbs)
            except MlukeError:
                if kb_name in needed:
                    raise
        return out

    def _known(self, name: str) -> str:
        if name not in self.model.names:
            raise OptionError(
                "{knowledge_base}: the model's knowledge bases are " + ", ".join(self.model.names),
                options={"knowledge_base": option("knowledge_base", name)},
            )
        return name

    def _selector(self, name: str) -> _GivenSpans:
        """The candidate selector of the deciding knowledge base ``name`` over the linker's mentions (its entity
        table's rows), made once; it must share the linker's kb (mentions, titles and names come from there)."""
        self._known(name)
        if name not in self.dbs:
            raise unrecorded_kb(self.model, name)
        if self.dbs[name] is not self.db:
            raise OptionError(
                "{knowledge_base}: " + name + "'s kb is not the linker's (" + str(self.db.path) + "): build a "
                "KnowBertLinker with knowledge_base=" + name + " to link with it",
                options={"knowledge_base": option("knowledge_base", name)},
            )
        if name not in self._selectors:
            self._selectors[name] = _GivenSpans(self.tokenizer, self.index, self.model.tables[name].key_to_row)
        return self._selectors[name]

    def _windows_source(self, name: str) -> MultiSelector:
        """The deciding knowledge base's selector (over the given mentions, in the windows' own fields) with the
        selectors of the knowledge bases whose layers run before it (each over its own kb's mention index)."""
        order = self.model.run_order
        sources: dict[str, CandidateSelector] = {name: self._selector(name)}
        for other in order[: order.index(name)]:
            if other not in self.dbs:  # only when a per-call choice needs one the constructor's did not
                raise unrecorded_kb(self.model, other)
            if other not in self._others:
                db = self.dbs[other]
                index = self.index if db is self.db else MentionIndex.for_db(db, languages=self.languages)
                rows = self.model.tables[other].key_to_row
                self._others[other] = CandidateSelector(self.tokenizer, index, rows, max_span_words=self.max_span_words)
            sources[other] = self._others[other]
        return MultiSelector(sources)

    def mention_features(self, *args: Any, **kwargs: Any) -> list[list[tuple[str | None, float, list[float]]]]:
        """Not for a KnowBert linker: its confidence is the integrated linker's probability, not calibrated."""
        raise MlukeError("mention_features() fits the calibration of the mLUKE methods; a KnowBert linker has none")

    def _resolve(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        lang: str,
        options: LinkOptions,
        progress: bool = False,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> list[list[LinkedMention]]:
        """Decide the mentions of ``texts`` with the integrated linker; ``windows``: per text, the character
        windows of a segment of a long text (:meth:`Linker._segments`): only that stretch is read."""
        if options.method != "knowbert":
            raise OptionError(
                "{method}: a KnowBert model links with method 'knowbert' (an mLUKE checkpoint links with the others)",
                options={"method": option("method", options.method)},
            )
        name = options.knowledge_base or self.knowledge_base
        self.selector = self._selector(name)
        source = self._windows_source(name)
        mentions = [self.estimator.fill(texts[t], found, lang) for t, found in enumerate(mentions)]
        jobs: list[tuple[int, int, Window]] = []  # (text, offset of the stretch read, window)
        for t, (text, found) in enumerate(zip(texts, mentions)):
            lo, hi = (0, len(text)) if windows is None else (windows[t][0][0], windows[t][-1][1])
            hi = max([hi, *(m.end for m in found)])
            readable = [m for m in found if span_words(m.surface) <= self.max_span_words]
            self.selector.given = [m._replace(start=m.start - lo, end=m.end - lo) for m in readable]
            jobs += [(t, lo, w) for w in source._windows(text[lo:hi], lang, None, first_only=False)]
        decided: dict[tuple[int, int, int], dict[str, Any]] = {}  # (text, start, end) -> the linker's verdict
        for i in range(0, len(jobs), options.batch_size):
            batch = jobs[i : i + options.batch_size]
            for (t, lo, win), verdicts in zip(batch, self._decide_windows([w for _, _, w in batch], name)):
                for (a, b), verdict in zip(win.char_spans, verdicts):
                    decided.setdefault((t, a + lo, b + lo), verdict)
        return [
            _resolve_overlaps([self._linked(m, decided.get((t, m.start, m.end)), lang, options) for m in found])
            for t, found in enumerate(mentions)
        ]

    @torch.no_grad()
    def _decide_windows(self, windows: list[Window], name: str) -> list[list[dict[str, Any]]]:
        """Per window and span: the decision of knowledge base ``name``'s linker (a candidate index or NULL_CHOICE)
        and every candidate's key and probability under its softmax over the candidates and NULL. The knowledge
        bases in the windows' ``others`` with spans in this batch run with theirs (one without is not there)."""
        carried = [n for n in self.model.names if any(n in w.others for w in windows)]
        with_spans = {n for n in carried if any(w.others.get(n, _NO_SPANS).spans for w in windows)}
        ids, mask, cands = collate_knowledge(windows, self.tokenizer.pad_id, [name, *carried])
        device = self.model.device
        given = {n: c.to(device) for n, c in cands.items() if n == name or n in with_spans}
        out = self.model(ids.to(device), mask.to(device), given, linking_only=True)
        scores = out.kb_scores[name]
        layer = self.model.knowledge_layer(name)
        decision = layer.decode(scores)
        null = scores.new_full((*scores.shape[:-1], 1), layer.config.threshold)
        probs = torch.cat([scores, null], dim=-1).float().softmax(-1).cpu()
        chosen = decision.candidate.cpu()
        keys = self.model.tables[name].keys
        result = []
        for b, win in enumerate(windows):
            result.append(
                [
                    {
                        "choice": int(chosen[b, s]),
                        "candidates": [(keys[row], float(probs[b, s, k])) for k, row in enumerate(rows)],
                    }
                    for s, rows in enumerate(win.entity_ids)
                ]
            )
        return result

    def _linked(self, m: Mention, verdict: dict[str, Any] | None, lang: str, options: LinkOptions) -> LinkedMention:
        """One mention as a :class:`LinkedMention` from the linker's verdict (``None``: not read, NIL)."""
        priors = {c.key: c.prior for c in m.candidates}
        rows = []
        if verdict is not None:
            for key, p in verdict["candidates"]:
                rows.append({"key": key, "prior": priors.get(key, 0.0), "model": p, "score": _log(p)})
            rows.sort(key=lambda r: (-r["score"], r["key"]))
        top = rows[0] if rows else None
        confidence = top["model"] if top else 0.0
        linked = verdict is not None and verdict["choice"] != NULL_CHOICE
        if options.nil_threshold is not None and confidence < options.nil_threshold:
            linked = False
        names = self._names(tuple(r["key"] for r in rows), lang) if rows else {}
        key = top["key"] if top else None
        return LinkedMention(
            start=m.start,
            end=m.end,
            surface=m.surface,
            key=key if linked else None,
            name=names.get(key) if key else None,
            title=(self.db.titles(key).get(lang) or self.db.label(key, lang)) if key else None,
            confidence=confidence,
            score=top["score"] if top else float("-inf"),
            prior=top["prior"] if top else 0.0,
            link_probability=m.link_probability,
            nil=not linked,
            candidates=[{**r, "name": names.get(r["key"])} for r in rows] if options.candidates else None,
        )


_NO_SPANS = KbSpans()


def _log(p: float) -> float:
    return math.log(p) if p > 0 else float("-inf")


def _resolve_overlaps(found: list[LinkedMention]) -> list[LinkedMention]:
    """Of each group of mutually overlapping mentions, only the most confident linked one stays linked
    (module docs); the order and the number of mentions are kept."""
    order = sorted(range(len(found)), key=lambda i: (found[i].start, found[i].end))
    groups: list[list[int]] = []
    end = -1
    for i in order:
        if groups and found[i].start < end:
            groups[-1].append(i)
            end = max(end, found[i].end)
        else:
            groups.append([i])
            end = found[i].end
    out = list(found)
    for group in groups:
        linked = [i for i in group if not found[i].nil]
        if len(linked) < 2:
            continue
        best = max(linked, key=lambda i: (found[i].confidence, found[i].end - found[i].start, -found[i].start))
        for i in linked:
            if i != best:
                out[i] = dataclasses.replace(found[i], key=None, nil=True)
    return out


def open_linker(
    model: Mluke | KnowBertModel | str | os.PathLike[str] | None,
    db: EntityDB | str | os.PathLike[str] | None,
    method: str | LinkOptions,
    *,
    languages: list[str] | None = None,
    device: Device = None,
    dtype: DType = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
) -> Linker:
    """The linker for ``method`` (or the options' method): a :class:`KnowBertLinker` for "knowbert" (``model``: a
    KnowBert folder; ``kbs``: kbs by knowledge base name; the options' ``knowledge_base`` decides), else a
    :class:`mluke.Linker` (``model``: an mLUKE checkpoint)."""
    knowledge_base = method.knowledge_base if isinstance(method, LinkOptions) else None
    method = method.method if isinstance(method, LinkOptions) else method
    if method == "knowbert":
        return KnowBertLinker(
            model, db, kbs=kbs, languages=languages, device=device, dtype=dtype, knowledge_base=knowledge_base
        )
    if kbs:
        raise OptionError("{kb}: only with method 'knowbert'", options={"kb": option("kb", ", ".join(kbs))})
    if isinstance(model, KnowBertModel):
        raise OptionError(
            "{method}: a KnowBert model links with method 'knowbert'", options={"method": option("method", method)}
        )
    return Linker(model, db, languages=languages, device=device, dtype=dtype)
