"""NIL calibration of entity linking, on data the library builds itself (:mod:`probes.linking_calibration_data`).

- :func:`nil_instances`: gold mentions of a linking set (they should link to their
  entity) and the same mentions with their entity removed from the kb - from every
  mention's candidates and from the model's normaliser and best entity - (what
  linking sees when the kb lacks the entity: they should be NIL);
- :func:`calibrate`: fits :class:`mluke.linking.calibration.Calibration` on the fit half of every set of
  :data:`probes.linking_calibration_data.SETS` (the demo's linking set, its free wording, ordinary text with an
  unrelated country or none; split by (city, language) pair) and reports NIL precision / recall, accuracy and
  the right ambiguous links kept at the fitted default threshold on each held-out half, and on
  :data:`COMMON_WORD_SENTENCES` (hand-written sentences where common words that are also place names must stay
  unlinked and the places must link); :func:`choose_default` applies the rule that picks the shipped default.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kb import open_db
from kb.db import EntityDB
from mluke.options import LinkOptions
from probes.linking_calibration_data import FREE_TEMPLATES

if TYPE_CHECKING:
    from kb.mentions import Mention
    from mluke.linking.calibration import Calibration
    from mluke.linking.linker import Linker
    from probes.mewsli import LinkDoc

#: Hand-written sentences: (language, text, surfaces that must stay unlinked, surfaces that must link).
COMMON_WORD_SENTENCES: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "en",
        "What a nice day: I was reading a mobile phone manual, then we split the bill.",
        ("nice", "reading", "mobile", "split"),
        (),
    ),
    ("en", "We had turkey for dinner and served it on china plates.", ("turkey", "china"), ()),
    ("en", "Paris Hilton met Chad Smith at the party.", ("Paris", "Chad"), ()),
    ("en", "I flew from Reading to Nice and then took a ferry to Split.", (), ("Reading", "Nice", "Split")),
    ("en", "My friend lives in Mobile, close to the coast of the United States.", (), ("Mobile", "United States")),
    ("en", "Turkey and China signed a treaty.", (), ("Turkey", "China")),
    ("de", "Wir wollen heute singen, essen und danach die Schätze bergen.", ("essen", "bergen"), ()),
    ("de", "Ich wohne in Essen und fliege morgen nach Bergen in Norwegen.", (), ("Essen", "Bergen", "Norwegen")),
    (
        "fr",
        "Elle a fait trois tours de piste et mangé une orange avant qu'il vienne.",
        ("tours", "orange", "vienne"),
        (),
    ),
    (
        "fr",
        "Nous habitons à Tours, pas loin d'Orange, et nous allons souvent en Italie.",
        (),
        ("Tours", "Orange", "Italie"),
    ),
    ("es", "Compré una lima y una granada en el mercado mientras el león dormía.", ("lima", "granada", "león"), ()),
    ("es", "Viajamos de Lima a Granada y luego a León, en España.", (), ("Lima", "Granada", "León", "España")),
    ("ja", "ローマ字で名前を書いてから、トルコライスを注文した。", ("ローマ", "トルコ"), ()),
    ("ja", "夏休みにローマとトルコを旅行した。", (), ("ローマ", "トルコ")),
)


@dataclass
class Instance:
    """One mention to decide: its features (:func:`mluke.linking.calibration.features`), link probability, the
    linker's top candidate and the truth (the entity, or ``None`` when the mention should be NIL)."""

    lang: str
    method: str
    top: str | None
    link_probability: float
    x: list[float]
    truth: str | None
    ambiguous: bool


def nil_instances(
    linker: Linker, docs: Sequence[LinkDoc], methods: Sequence[str] = ("combined", "prior"), *, removed: bool = True
) -> list[Instance]:
    """Gold mentions of ``docs`` (truth: their entity) and, with ``removed``, each ambiguous gold mention
    again with its entity missing from the kb (truth: NIL).

    A missing entity is removed from everything the scorer sees (:func:`without_entity`): the candidates of
    every mention of the text (priors renormalised; a mention left without candidates is no mention) and the
    model's normaliser and best entity over the vocabulary; the text's other mentions stay, as they would.
    Only mentions left with a candidate count."""
    out: list[Instance] = []
    by_lang: dict[str, list[LinkDoc]] = {}
    for d in docs:
        by_lang.setdefault(d.lang, []).append(d)
    for lang, part in sorted(by_lang.items()):
        found = [linker.index.mentions_at(d.text, [(g.start, g.end) for g in d.mentions], lang) for d in part]
        texts = [d.text for d in part]
        # (texts, mentions, truths, which mention of each text counts (None: all), missing keys per text)
        variants: list[
            tuple[list[str], list[list[Mention]], list[list[str | None]], list[int | None], list[set[str]] | None]
        ] = [(texts, found, [[g.key for g in d.mentions] for d in part], [None] * len(part), None)]
        if removed:
            rt: list[str] = []
            rm: list[list[Mention]] = []
            truths: list[list[str | None]] = []
            which: list[int | None] = []
            missing: list[set[str]] = []
            for d, ms in zip(part, found):
                for j, (g, m) in enumerate(zip(d.mentions, ms)):
                    keys = {c.key for c in m.candidates}
                    if g.key not in keys or len(keys) < 2:
                        continue
                    narrowed, kept = without_entity(ms, g.key)
                    rt.append(d.text)
                    rm.append(narrowed)
                    truths.append([None if k == j else d.mentions[k].key for k in kept])
                    which.append(kept.index(j))
                    missing.append({g.key})
            variants.append((rt, rm, truths, which, missing))
        for method in methods:
            for vt, mentions, truths, counted, gone in variants:
                if not vt:
                    continue
                options = LinkOptions(method=method)  # type: ignore[arg-type]
                feats = linker.mention_features(vt, mentions, lang, options, missing=gone)
                for ms, fs, ts, only in zip(mentions, feats, truths, counted):
                    for k, (m, (top, lp, x), gold) in enumerate(zip(ms, fs, ts)):
                        if top is not None and (only is None or k == only):
                            out.append(Instance(lang, method, top, lp, x, gold, len(m.candidates) >= 2 or gold is None))
    return out


def without_entity(mentions: Sequence[Mention], key: str) -> tuple[list[Mention], list[int]]:
    """``mentions`` as a kb without the entity ``key`` would give them: ``key`` dropped from every mention's
    candidates (priors renormalised), mentions left without a candidate dropped; and the indices kept."""
    from kb.mentions import Candidate

    out: list[Mention] = []
    kept: list[int] = []
    for i, m in enumerate(mentions):
        rest = [c for c in m.candidates if c.key != key]
        if not rest:
            continue
        if len(rest) < len(m.candidates):
            total = sum(c.prior for c in rest) or 1.0
            m = m._replace(candidates=tuple(Candidate(c.key, c.prior / total, c.count, c.source) for c in rest))
        out.append(m)
        kept.append(i)
    return out, kept


@dataclass
class NilScores:
    """Decisions at one threshold: NIL precision / recall, accuracy (right entity, or NIL when it should
    be), and the share of right ambiguous links kept."""

    mentions: int
    should_be_nil: int
    predicted_nil: int
    nil_precision: float | None
    nil_recall: float | None
    accuracy: float
    right_ambiguous_kept: float | None

    def row(self) -> list[int | str]:
        def pct(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.1f}"

        return [
            self.mentions,
            self.should_be_nil,
            self.predicted_nil,
            pct(self.nil_precision),
            pct(self.nil_recall),
            pct(self.accuracy),
            pct(self.right_ambiguous_kept),
        ]


def nil_scores(instances: Sequence[Instance], calibration: Calibration, threshold: float | None = None) -> NilScores:
    """Score the NIL decisions ``calibration`` makes on ``instances`` at ``threshold`` (default: its own)."""
    t = calibration.threshold if threshold is None else threshold
    tp = pred = should = right = amb = amb_kept = 0
    for i in instances:
        nil = i.link_probability * calibration.probability(i.x) < t
        pred += nil
        should += i.truth is None
        tp += nil and i.truth is None
        right += (nil and i.truth is None) or (not nil and i.top == i.truth)
        if i.ambiguous and i.truth is not None and i.top == i.truth:
            amb += 1
            amb_kept += not nil
    n = len(instances)
    return NilScores(
        n,
        should,
        pred,
        tp / pred if pred else None,
        tp / should if should else None,
        right / n if n else 0.0,
        amb_kept / amb if amb else None,
    )


@dataclass
class CalibrationReport:
    """:func:`calibrate`'s result: the fitted calibration and its scores on each evaluation set."""

    calibration: Calibration
    scores: dict[str, NilScores] = field(default_factory=dict)
    common_words: dict[str, int] = field(default_factory=dict)


#: Per set of :data:`probes.linking_calibration_data.SETS`: (fit half, held-out half) of its decisions.
SetInstances = dict[str, tuple[list[Instance], list[Instance]]]


def calibration_instances(linker: Linker, model_dir: str | Path, db: EntityDB | None = None) -> SetInstances:
    """The decisions of every calibration set, split into halves by (city, language) pair: the fit half with
    methods combined and prior, the held-out half with combined (what :func:`calibrate` fits and scores)."""
    from probes.linking_calibration_data import calibration_sets, split_halves

    db = open_db(db)
    countries = list(db.keys(kind="country"))
    out: SetInstances = {}
    for name, docs in calibration_sets(model_dir, db).items():
        fit, held = split_halves(docs, countries)
        out[name] = (nil_instances(linker, fit), nil_instances(linker, held, ("combined",)))
    return out


def calibrate(
    model_dir: str | Path,
    db: EntityDB | None = None,
    *,
    linker: Linker | None = None,
    min_kept: float = 0.9,
    drop: Sequence[str] = (),
    instances: SetInstances | None = None,
) -> CalibrationReport:
    """Fit the confidence calibration of ``model_dir`` (a demo model folder) and score it (module docs).

    The threshold is the one (on a 0.05 grid) with the best accuracy on the fitting half among those
    that keep at least ``min_kept`` of the right links of ambiguous mentions; of equally accurate ones, the
    highest (it leaves more low-confidence mentions, such as common words, unlinked at no cost on the fit).
    ``drop``: names of :data:`mluke.linking.calibration.FEATURES` to fit without (their weights are 0; e.g.
    :data:`mluke.linking.calibration.KB_FEATURES` for a confidence without kb coherence). ``instances``: the
    decisions of :func:`calibration_instances`, when already computed with ``linker``.
    """
    from mluke.linking.calibration import FEATURES, Calibration, fit_logistic
    from mluke.linking.linker import Linker

    unknown = set(drop) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; the features are {', '.join(FEATURES)}")
    db = open_db(db)
    if linker is None:
        langs = sorted(set(FREE_TEMPLATES) | {s[0] for s in COMMON_WORD_SENTENCES} | _linking_languages(model_dir))
        linker = Linker(model_dir, db, languages=langs)
    if instances is None:
        instances = calibration_instances(linker, model_dir, db)
    zero = [FEATURES.index(f) for f in drop]
    fit_set = [i for fit, _ in instances.values() for i in fit]
    x = [[0.0 if k in zero else v for k, v in enumerate(i.x)] for i in fit_set]
    y = [int(i.truth is not None and i.top == i.truth) for i in fit_set]
    weights = fit_logistic(x, y)
    combined = [i for i in fit_set if i.method == "combined"]
    best = None
    for k in range(1, 20):
        t = k / 20
        s = nil_scores(combined, Calibration(weights, t))
        if s.right_ambiguous_kept is not None and s.right_ambiguous_kept < min_kept:
            continue
        if best is None or s.accuracy >= best[1].accuracy:  # ties: the highest (more NIL for what it does not see)
            best = (t, s)
    threshold = best[0] if best else 0.5
    calibration = Calibration(
        weights,
        threshold,
        {
            "fitted_on": f"the fit halves (by (city, language) pair) of {', '.join(instances)} for "
            f"{Path(model_dir).name} ({len(fit_set)} decisions, gold and entity-removed, methods combined "
            "and prior)",
            "threshold_rule": f"best accuracy (combined) keeping >= {min_kept:.0%} of right ambiguous links; "
            "the highest of equals",
            "without": list(drop),
            "date": datetime.date.today().isoformat(),
        },
    )
    report = score_calibration(calibration, instances, linker)
    report.scores = {"fit half (all sets)": nil_scores(combined, calibration), **report.scores}
    return report


def score_calibration(calibration: Calibration, instances: SetInstances, linker: Linker) -> CalibrationReport:
    """``calibration``'s NIL scores on each held-out half of ``instances`` and its hand-written sentences."""
    report = CalibrationReport(calibration)
    for name, (_, held) in instances.items():
        report.scores[f"held-out half, {name}"] = nil_scores(held, calibration)
    report.common_words = common_word_outcomes(linker, calibration)
    return report


def meets_default_rule(report: CalibrationReport, min_kept: float = 0.9) -> list[str]:
    """What keeps ``report``'s calibration from being the default (empty: nothing): it must keep at least
    ``min_kept`` of the right ambiguous links on every held-out half, leave every hand-written common word
    unlinked and link every hand-written place."""
    failed = []
    for name, s in report.scores.items():
        if name.startswith("held-out") and s.right_ambiguous_kept is not None and s.right_ambiguous_kept < min_kept:
            failed.append(f"{name}: {100 * s.right_ambiguous_kept:.1f}% of right ambiguous links kept")
    cw = report.common_words
    if cw["common words unlinked"] < cw["common words"]:
        failed.append(f"common words unlinked {cw['common words unlinked']}/{cw['common words']}")
    if cw["places linked"] < cw["places"]:
        failed.append(f"places linked {cw['places linked']}/{cw['places']}")
    return failed


def held_out_recall(report: CalibrationReport) -> float:
    """NIL recall over all held-out halves together (what :func:`choose_default` maximises)."""
    held = [s for name, s in report.scores.items() if name.startswith("held-out")]
    should = sum(s.should_be_nil for s in held)
    found = sum(round((s.nil_recall or 0.0) * s.should_be_nil) for s in held)
    return found / should if should else 0.0


def choose_default(reports: dict[str, CalibrationReport], min_kept: float = 0.9) -> tuple[str, list[str]]:
    """The default among ``reports`` (by name): of those that meet :func:`meets_default_rule`, the one with the
    highest :func:`held_out_recall`; if none does, the one that fails fewest rules (then the highest recall).
    Returns its name and the rules it fails."""
    ranked = sorted(
        reports, key=lambda n: (len(meets_default_rule(reports[n], min_kept)), -held_out_recall(reports[n]))
    )
    return ranked[0], meets_default_rule(reports[ranked[0]], min_kept)


def _linking_languages(model_dir: str | Path) -> set[str]:
    from probes.demo_eval import demo_linking_docs

    return {d.lang for d in demo_linking_docs(model_dir)}


def common_word_outcomes(linker: Linker, calibration: Calibration | None = None) -> dict[str, int]:
    """Link :data:`COMMON_WORD_SENTENCES`: how many common words stayed unlinked and how many places linked."""
    counts = {"common words": 0, "common words unlinked": 0, "places": 0, "places linked": 0}
    before = linker.calibration
    if calibration is not None:
        linker.calibration = calibration
    try:
        for lang, text, unlinked, linked in COMMON_WORD_SENTENCES:
            found = {m.surface: m for m in linker.link(text, lang)}
            for s in unlinked:
                counts["common words"] += 1
                counts["common words unlinked"] += s not in found or found[s].nil
            for s in linked:
                counts["places"] += 1
                counts["places linked"] += s in found and not found[s].nil
    finally:
        linker.calibration = before
    return counts
