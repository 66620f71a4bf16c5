"""Result types of :func:`mluke.probe` and :func:`mluke.link`, with their table, JSON and pandas forms."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from kb.files import json_text, write_json, write_jsonl

if TYPE_CHECKING:
    import pandas as pd

    from kb.jsontypes import JsonObject


@dataclass(frozen=True)
class Prediction:
    key: str
    label: str
    score: float
    source: Literal["entity", "word"]
    correct: bool | None


@dataclass
class SubjectResult:
    subject: str | None  # entity key (None: free text in no kb)
    label: str
    gold: list[str]
    gold_labels: list[str]
    predictions: list[Prediction]  # top_k, best first
    rank: int | None  # 1-based rank of the best gold answer among all candidates (None: no gold)
    subject_entity: bool = False  # the subject's entity was given over [X] ("[X] & [Y]")
    gold_known: bool = False  # a kb subject: its true objects (``gold``, possibly none) are known


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


#: The fields that say what was asked, first in :meth:`ProbeResult.to_dict`.
_PROMPT = ("template", "lang", "relation")


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
    open_vocabulary: bool = False  #: answers from the whole vocabulary, not from candidates
    modes: dict[str, ProbeResult] = field(default_factory=dict, repr=False)
    #: answer sets: ``predictions`` are every candidate with probability >= threshold (possibly none)
    threshold: float | None = None
    model: str | None = None  #: the model's folder or hub name, when known

    @property
    def metrics(self) -> dict[str, float | int | None]:
        """P@1, P@top_k and MRR over the subjects with a gold answer (``None`` when no subject has one);
        with a ``threshold``, also the answer sets' macro precision, recall and F1 over the kb subjects,
        those without true objects included (see :mod:`mluke.object_sets`)."""
        ranked = [r.rank for r in self.rows if r.gold]
        n = len(ranked)

        def hits(k: int) -> float | None:
            return sum(1 for r in ranked if r is not None and r <= k) / n if n else None

        mrr = sum(1.0 / r for r in ranked if r is not None) / n if n else None
        out: dict[str, float | int | None] = {
            "subjects": len(self.rows),
            "with_gold": n,
            "P@1": hits(1),
            f"P@{self.top_k}": hits(self.top_k),
            "MRR": mrr,
        }
        if self.threshold is not None:
            from mluke.object_sets import macro_set_scores

            known = [r for r in self.rows if r.gold_known]
            out["scored_sets"] = len(known)
            out.update(macro_set_scores(([p.key for p in r.predictions], r.gold) for r in known))
        return out

    @property
    def results(self) -> list[ProbeResult]:
        """Every mode's result: ``[self]``, or the entity and word results for ``mode="both"``."""
        return list(self.modes.values()) if self.modes else [self]

    def summary(self) -> str:
        """One line: template, language, relation, mode (with how many subjects had their entity over [X]),
        and the metrics."""
        m = self.metrics
        with_entity = sum(r.subject_entity for r in self.rows)
        how = (
            []
            if self.mode == "word"
            else [f"[X]&[Y] for {with_entity} of {len(self.rows)}" if with_entity else "[Y] only"]
        ) + (["open vocabulary"] if self.open_vocabulary else [])
        what = ", ".join([self.lang, self.relation or "no relation", f"{self.mode} mode", *how])
        if self.threshold is not None:
            return (
                f"{self.template}  [{what}, answers with p >= {self.threshold:g}]  precision {_fmt(m['precision'])}  "
                f"recall {_fmt(m['recall'])}  F1 {_fmt(m['F1'])}  ({m['scored_sets']} of {m['subjects']} subjects "
                "with known objects)"
            )
        return (
            f"{self.template}  [{what}]  P@1 {_fmt(m['P@1'])}  P@{self.top_k} {_fmt(m[f'P@{self.top_k}'])}  "
            f"MRR {_fmt(m['MRR'])}  ({m['with_gold']} of {m['subjects']} subjects with answers)"
        )

    def _fields(self, *names: str) -> dict[str, Any]:
        return {name: getattr(self, name) for name in names}

    def _mode_dict(self) -> dict[str, Any]:
        settings = ("mode", "model", "threshold", "use_subject_entity", "open_vocabulary", "notes", "metrics")
        return {**self._fields(*_PROMPT, *settings), "rows": [asdict(r) for r in self.rows]}

    def to_dict(self) -> JsonObject:
        """Plain data; for ``mode="both"``: ``{"mode": "both", "modes": {"entity": {...}, "word": {...}}, ...}``."""
        if not self.modes:
            return self._mode_dict()
        modes = {m: r._mode_dict() for m, r in self.modes.items()}
        return {**self._fields(*_PROMPT), "mode": "both", "notes": self.notes, "modes": modes}

    def to_json(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """The result as JSON; also written to ``path`` when given (an existing file only with ``overwrite``)."""
        if path is not None:
            write_json(self.to_dict(), path, overwrite=overwrite)
        return json_text(self.to_dict())

    def to_pandas(self) -> pd.DataFrame:
        """One row per (subject, prediction) of each mode: subject, rank, label, key, score, source, correct,
        gold, and the mode that ranked it (both modes' rows for ``mode="both"``)."""
        import pandas as pd

        columns = ["subject", "subject_key", "rank", "prediction", "key", "score", "source", "correct", "gold", "mode"]
        # pandas-stubs types DataFrame(list of rows) as Any
        return cast(
            "pd.DataFrame",
            pd.DataFrame(
                [
                    (
                        r.label,
                        r.subject,
                        i + 1,
                        p.label,
                        p.key,
                        p.score,
                        p.source,
                        p.correct,
                        ", ".join(r.gold_labels),
                        res.mode,
                    )
                    for res in self.results
                    for r in res.rows
                    for i, p in enumerate(r.predictions)
                ],
                columns=columns,
            ),
        )

    def __repr__(self) -> str:
        lines = [f"ProbeResult: {res.summary()}" for res in self.results]
        lines += [f"  note: {n}" for n in self.notes]
        for res in self.results:
            if self.modes:
                lines.append(f"  {res.mode} mode:")
            for r in res.rows[:8]:
                preds = ", ".join(
                    f"{p.label}{'*' if p.correct else ''} ({p.score:.2f}{'' if p.source == 'entity' else ' w'})"
                    for p in r.predictions[:3]
                )
                lines.append(f"  {r.label} -> {preds}" + (f"   [gold: {', '.join(r.gold_labels)}]" if r.gold else ""))
            if len(res.rows) > 8:
                lines.append(f"  ... {len(res.rows) - 8} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class LinkedMention:
    """One mention: character span, surface, the chosen entity (``None`` when NIL) and its scores.

    ``name`` and ``title`` are those of the top candidate, also when the mention is NIL (what it would
    have been); ``confidence`` (in [0, 1], :mod:`mluke.linking.calibration`) decides NIL; ``score`` is the
    method's score of the top candidate (a log-probability), ``prior`` its p(e|m),
    ``link_probability`` the kb's anchor statistic or its estimate. ``candidates`` (when asked for):
    every candidate best first, with ``key``, ``name``, ``prior``, ``model`` and ``score``.
    """

    start: int
    end: int
    surface: str
    key: str | None
    name: str | None  # qualified name in the text's language: "Cambridge (United Kingdom)"
    title: str | None  # page title (else label) in the text's language
    confidence: float
    score: float
    prior: float
    link_probability: float | None
    nil: bool
    candidates: list[dict[str, Any]] | None = None

    def to_dict(self) -> JsonObject:
        return asdict(self)


@dataclass
class LinkedTexts:
    """Texts in one language and the mentions linked in each: what ``mluke link`` prints and writes."""

    texts: list[str]
    mentions: list[list[LinkedMention]]
    lang: str
    method: str

    def records(self) -> list[JsonObject]:
        """One record per text: ``{"line", "text", "mentions": [...]}`` (lines count from 1)."""
        return [
            {"line": i + 1, "text": t, "mentions": [m.to_dict() for m in found]}
            for i, (t, found) in enumerate(zip(self.texts, self.mentions))
        ]

    def summary(self) -> dict[str, int]:
        """Counts: texts, mentions, linked mentions, NIL mentions, distinct entities."""
        tally = LinkTally()
        for i, (text, found) in enumerate(zip(self.texts, self.mentions)):
            tally.add(LinkedLine(i + 1, text, found))
        return tally.summary()

    def rows(self) -> list[list[Any]]:
        """One table row per mention: line, surface, entity (or NIL), titles, score, prior."""
        return [mention_row(i + 1, m) for i, found in enumerate(self.mentions) for m in found]

    def to_jsonl(self, path: str | Path, *, overwrite: bool = False) -> None:
        """Write :meth:`records` as JSON lines to ``path`` (``-``: standard output)."""
        write_jsonl(self.records(), path, overwrite=overwrite)

    def to_displacy(self, *, nil: bool = True) -> list[JsonObject]:
        """The texts in displaCy's manual format, one dict per text, for ``spacy.displacy.render(docs,
        style="ent", manual=True)``: ``{"text", "ents": [{"start", "end", "label", "kb_id", "kb_url"}], "title"}``.

        ``label`` is ``"ENT"`` for a linked mention and ``"NIL"`` for a NIL one (left out with ``nil=False``);
        ``kb_id`` the entity key (the top candidate's for NIL), ``kb_url`` its Wikidata page for a QID, else
        ``"#"`` (displaCy's placeholder)."""
        docs: list[JsonObject] = []
        for text, found in zip(self.texts, self.mentions):
            ents = []
            for m in found:
                if m.nil and not nil:
                    continue
                key = m.key or (m.candidates[0]["key"] if m.candidates else "")
                url = f"https://www.wikidata.org/wiki/{key}" if key[:1] == "Q" and key[1:].isdigit() else "#"
                ents.append(
                    {"start": m.start, "end": m.end, "label": "NIL" if m.nil else "ENT", "kb_id": key, "kb_url": url}
                )
            docs.append({"text": text, "ents": ents, "title": None})
        return docs


#: The columns of :func:`mention_row` (``{lang}``: the texts' language); with candidates, a last column
#: "runner-ups".
MENTION_COLUMNS = ("line", "mention", "entity", "name ({lang})", "confidence", "link prob.", "prior", "score")


def mention_row(line: int, m: LinkedMention, runner_ups: int = 0) -> list[Any]:
    """A mention as a table row: line, surface, entity (NIL: "NIL", and the top candidate's name in
    brackets), qualified name, confidence, link probability, prior, score; with ``runner_ups``, that many
    other candidates as "name prior" (needs ``candidates``)."""
    name = m.name or ""
    if m.nil and name:
        name = f"[{name}]"
    lp = "" if m.link_probability is None else f"{m.link_probability:.2f}"
    row = [line, m.surface, m.key or "NIL", name, f"{m.confidence:.2f}", lp, f"{m.prior:.2f}", f"{m.score:.2f}"]
    if runner_ups:
        others = (m.candidates or [])[1 : 1 + runner_ups]
        row.append("; ".join(f"{c.get('name') or c['key']} {c['prior']:.2f}" for c in others))
    return row


@dataclass
class LinkedLine:
    """One text of a stream (:func:`mluke.linking.files.iter_link_file`): its line number (from 1), the text and
    its mentions, a list or, for a long text, an iterator that links it as it is read (once)."""

    line: int
    text: str
    mentions: Iterable[LinkedMention]

    def jsonl(self) -> Iterator[str]:
        """The line's JSON object and newline, as :meth:`LinkedTexts.to_jsonl` writes it, in pieces: one per
        mention, so a text with a million mentions is written without holding them."""
        yield f'{{"line": {self.line}, "text": "'
        for k in range(0, len(self.text), 1 << 20):  # escaped a slice at a time: the same characters
            yield json.dumps(self.text[k : k + (1 << 20)], ensure_ascii=False)[1:-1]
        yield '", "mentions": ['
        for k, m in enumerate(self.mentions):
            yield (", " if k else "") + json.dumps(m.to_dict(), ensure_ascii=False)
        yield "]}\n"


class LinkTally:
    """Running counts over a stream of linked lines (those of :meth:`LinkedTexts.summary`) and the
    table rows of its first ``keep`` mentions; memory grows only with the distinct entities."""

    def __init__(self, keep: int = 0, runner_ups: int = 0) -> None:
        self.keep = keep
        self.runner_ups = runner_ups  #: candidates after the top one shown in each row (:func:`mention_row`)
        self.texts = self.mentions = self.linked = 0
        self.entities: set[str] = set()
        self.rows: list[list[Any]] = []  #: :func:`mention_row` of the first ``keep`` mentions

    def count(self, item: LinkedLine) -> LinkedLine:
        """``item``, its mentions counted as they are read."""
        self.texts += 1
        return LinkedLine(item.line, item.text, self._counted(item.line, item.mentions))

    def add(self, item: LinkedLine) -> None:
        """Count ``item`` and its mentions now."""
        for _ in self.count(item).mentions:
            pass

    def _counted(self, line: int, mentions: Iterable[LinkedMention]) -> Iterator[LinkedMention]:
        for m in mentions:
            self.mentions += 1
            if not m.nil:
                self.linked += 1
                self.entities.add(m.key)  # type: ignore[arg-type]
            if len(self.rows) < self.keep:
                self.rows.append(mention_row(line, m, self.runner_ups))
            yield m

    def summary(self) -> dict[str, int]:
        """Counts: texts, mentions, linked mentions, NIL mentions, distinct entities."""
        return {
            "texts": self.texts,
            "mentions": self.mentions,
            "linked": self.linked,
            "nil": self.mentions - self.linked,
            "entities": len(self.entities),
        }
