"""NIL calibration and the context test of entity linking, on data the library builds itself.

- :func:`free_wording_docs`: the demo's ambiguous-city sentences written freely, with
  wording the demo never trained on (:data:`FREE_TEMPLATES`, three per language in
  12 languages; the country is named before or after the city, in another clause):
  does the model use the context, or only the prior?
- :func:`nil_instances`: gold mentions of a linking set (they should link to their
  entity) and the same mentions with their entity removed from the kb - from every
  mention's candidates and from the model's normaliser and best entity - (what
  linking sees when the kb lacks the entity: they should be NIL);
- :func:`calibrate`: fits :class:`mluke.confidence.Calibration` on one half of the
  demo's linking set and of the free-wording set (even items / even (city,
  language) pairs) and reports NIL precision / recall and accuracy at the fitted
  default threshold on the other halves, and on :data:`COMMON_WORD_SENTENCES` (hand-written sentences
  where common words that are also place names must stay unlinked and the places must link).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import open_db
from kb.db import EntityDB
from mluke.options import LinkOptions

if TYPE_CHECKING:
    from kb.mentions import Mention
    from mluke.linker import Linker

#: Held-out wording: ``{city}`` and ``{country}`` in sentences unlike the kb's relation templates.
FREE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Last spring my sister spent a week in {city} and came back in love with {country}.",
        "{country} surprised us: the old town of {city} was the highlight of the trip.",
        "My colleague grew up in {city} and still talks about {country} all the time.",
    ),
    "de": (
        "Letzten Sommer war meine Schwester eine Woche in {city} und schwärmt seitdem von {country}.",
        "{country} hat uns überrascht: Die Altstadt von {city} war der schönste Teil der Reise.",
        "Mein Kollege kommt aus {city} und erzählt oft von {country}.",
    ),
    "fr": (
        "L'été dernier, ma sœur a passé une semaine à {city} et elle ne parle plus que de son voyage : {country}.",
        "{country} nous a surpris : la vieille ville de {city} était le meilleur moment du voyage.",
        "Mon collègue a grandi à {city} et il parle souvent de son pays, {country}.",
    ),
    "es": (
        "El verano pasado mi hermana pasó una semana en {city} y volvió enamorada de {country}.",
        "{country} nos sorprendió: el casco antiguo de {city} fue lo mejor del viaje.",
        "Mi compañero creció en {city} y siempre habla de su país, {country}.",
    ),
    "it": (
        "L'estate scorsa mia sorella ha passato una settimana a {city} ed è tornata innamorata del paese: {country}.",
        "{country} ci ha sorpreso: il centro storico di {city} è stato il momento migliore del viaggio.",
        "Il mio collega è cresciuto a {city} e parla spesso del suo paese, {country}.",
    ),
    "pt": (
        "No verão passado a minha irmã passou uma semana em {city} e voltou apaixonada pelo país: {country}.",
        "{country} nos surpreendeu: o centro histórico de {city} foi o melhor da viagem.",
        "O meu colega cresceu em {city} e fala sempre do seu país, {country}.",
    ),
    "nl": (
        "Vorige zomer was mijn zus een week in {city} en sindsdien praat ze alleen nog over {country}.",
        "{country} verraste ons: de oude binnenstad van {city} was het hoogtepunt van de reis.",
        "Mijn collega is opgegroeid in {city} en vertelt vaak over {country}.",
    ),
    "sv": (
        "Förra sommaren var min syster en vecka i {city} och sedan dess pratar hon bara om {country}.",
        "{country} överraskade oss: gamla stan i {city} var resans höjdpunkt.",
        "Min kollega växte upp i {city} och berättar ofta om {country}.",
    ),
    "id": (
        "Musim panas lalu kakak saya menghabiskan seminggu di {city} dan jatuh cinta pada {country}.",
        "{country} membuat kami terkejut: kota tua {city} adalah bagian terbaik dari perjalanan itu.",
        "Rekan kerja saya tumbuh besar di {city} dan sering bercerita tentang {country}.",
    ),
    "vi": (
        "Mùa hè năm ngoái chị tôi ở {city} một tuần và từ đó rất yêu {country}.",
        "{country} làm chúng tôi bất ngờ: phố cổ {city} là điều tuyệt nhất của chuyến đi.",
        "Đồng nghiệp của tôi lớn lên ở {city} và hay kể về {country}.",
    ),
    "ja": (
        "去年の夏、姉は{city}で一週間過ごし、すっかり{country}が好きになった。",
        "{country}には驚かされた。{city}の旧市街が旅の一番の思い出だ。",
        "同僚は{city}で育ち、よく{country}の話をしてくれる。",
    ),
    "zh": (
        "去年夏天，我姐姐在{city}住了一个星期，从此爱上了{country}。",
        "{country}让我们很惊喜：{city}的老城区是这次旅行最美好的回忆。",
        "我的同事在{city}长大，常常给我们讲{country}的事情。",
    ),
}

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


def free_wording_docs(
    model_dir: str | Path, db: EntityDB | None = None, *, languages: Iterable[str] | None = None
) -> list[Any]:
    """The (city, language) pairs of the demo's linking set written with :data:`FREE_TEMPLATES` (all three
    templates each), as :class:`probes.mewsli.LinkDoc` objects with both gold mentions; deterministic."""
    from probes.demo_eval import demo_linking_docs
    from probes.mewsli import GoldMention, LinkDoc

    db = open_db(db)
    wanted = set(FREE_TEMPLATES if languages is None else languages) & set(FREE_TEMPLATES)
    pairs: dict[tuple[str, str], str] = {}
    for doc in demo_linking_docs(model_dir):
        if doc.lang in wanted and len(doc.mentions) == 2:
            pairs[(doc.mentions[0].key, doc.lang)] = doc.mentions[1].key
    out = []
    for (city, lang), country in sorted(pairs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        names = db.labels([city, country], lang)
        if city not in names or country not in names:
            continue
        for n, template in enumerate(FREE_TEMPLATES[lang]):
            text, spans = _fill(template, {"city": names[city], "country": names[country]})
            gold = sorted([(*spans["city"], city), (*spans["country"], country)])
            out.append(
                LinkDoc(
                    f"free-{lang}-{city}-{n}",
                    lang,
                    text,
                    tuple(GoldMention(a, b, text[a:b], key) for a, b, key in gold),
                )
            )
    return out


def _fill(template: str, values: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """``template`` with its ``{name}`` slots filled, and the span of each filled slot."""
    import re

    text, spans, pos = [], {}, 0
    length = 0
    for m in re.finditer(r"\{(\w+)\}", template):
        text.append(template[pos : m.start()])
        length += m.start() - pos
        value = values[m.group(1)]
        spans[m.group(1)] = (length, length + len(value))
        text.append(value)
        length += len(value)
        pos = m.end()
    text.append(template[pos:])
    return "".join(text), spans


@dataclass
class Instance:
    """One mention to decide: its features (:func:`mluke.confidence.features`), link probability, the
    linker's top candidate and the truth (the entity, or ``None`` when the mention should be NIL)."""

    lang: str
    method: str
    top: str | None
    link_probability: float
    x: list[float]
    truth: str | None
    ambiguous: bool


def nil_instances(
    linker: Any, docs: Sequence[Any], methods: Sequence[str] = ("combined", "prior"), *, removed: bool = True
) -> list[Instance]:
    """Gold mentions of ``docs`` (truth: their entity) and, with ``removed``, each ambiguous gold mention
    again with its entity missing from the kb (truth: NIL).

    A missing entity is removed from everything the scorer sees (:func:`without_entity`): the candidates of
    every mention of the text (priors renormalised; a mention left without candidates is no mention) and the
    model's normaliser and best entity over the vocabulary; the text's other mentions stay, as they would.
    Only mentions left with a candidate count."""
    out: list[Instance] = []
    by_lang: dict[str, list[Any]] = {}
    for d in docs:
        by_lang.setdefault(d.lang, []).append(d)
    for lang, part in sorted(by_lang.items()):
        found = [linker.index.mentions_at(d.text, [(g.start, g.end) for g in d.mentions], lang) for d in part]
        texts = [d.text for d in part]
        # (texts, mentions, truths, which mention of each text counts (None: all), missing keys per text)
        variants: list[tuple[list[str], list[list[Mention]], list[list[str | None]], list[int | None], Any]] = [
            (texts, found, [[g.key for g in d.mentions] for d in part], [None] * len(part), None)
        ]
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
            for vt, mentions, truths, counted, missing in variants:
                if not vt:
                    continue
                options = LinkOptions(method=method)  # type: ignore[arg-type]
                feats = linker.mention_features(vt, mentions, lang, options, missing=missing)
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

    def row(self) -> list[Any]:
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
        return [
            self.mentions,
            self.should_be_nil,
            self.predicted_nil,
            pct(self.nil_precision),
            pct(self.nil_recall),
            pct(self.accuracy),
            pct(self.right_ambiguous_kept),
        ]


def nil_scores(instances: Sequence[Instance], calibration: Any, threshold: float | None = None) -> NilScores:
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

    calibration: Any
    scores: dict[str, NilScores] = field(default_factory=dict)
    common_words: dict[str, int] = field(default_factory=dict)


def calibrate(
    model_dir: str | Path,
    db: EntityDB | None = None,
    *,
    linker: Linker | None = None,
    min_kept: float = 0.9,
    drop: Sequence[str] = (),
) -> CalibrationReport:
    """Fit the confidence calibration of ``model_dir`` (a demo model folder) and score it (module docs).

    The threshold is the one (on a 0.05 grid) with the best accuracy on the fitting half among those
    that keep at least ``min_kept`` of the right links of ambiguous mentions; of equally accurate ones, the
    highest (it leaves more low-confidence mentions, such as common words, unlinked at no cost on the fit).
    ``drop``: names of :data:`mluke.confidence.FEATURES` to fit without (their weights are 0; e.g.
    :data:`mluke.confidence.KB_FEATURES` for a confidence without kb coherence).
    """
    from mluke.confidence import FEATURES, Calibration, fit_logistic
    from mluke.linker import Linker
    from probes.demo_eval import demo_linking_docs

    db = open_db(db)
    docs = demo_linking_docs(model_dir)
    free = free_wording_docs(model_dir, db)
    langs = sorted({d.lang for d in docs} | {d.lang for d in free} | {s[0] for s in COMMON_WORD_SENTENCES})
    linker = linker if linker is not None else Linker(model_dir, db, languages=langs)
    fit_docs = [d for i, d in enumerate(docs) if i % 2 == 0]
    test_docs = [d for i, d in enumerate(docs) if i % 2 == 1]
    per_pair = len(FREE_TEMPLATES["en"])  # a (city, language) pair's sentences stay in one half
    fit_free = [d for i, d in enumerate(free) if (i // per_pair) % 2 == 0]
    test_free = [d for i, d in enumerate(free) if (i // per_pair) % 2 == 1]
    unknown = set(drop) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; the features are {', '.join(FEATURES)}")
    zero = [FEATURES.index(f) for f in drop]
    fit_set = nil_instances(linker, fit_docs + fit_free)
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
            "fitted_on": f"even items of the demo linking set of {Path(model_dir).name} and of its free-wording "
            f"(city, language) pairs ({len(fit_set)} decisions, gold and entity-removed, methods combined "
            "and prior)",
            "threshold_rule": f"best accuracy (combined) keeping >= {min_kept:.0%} of right ambiguous links; "
            "the highest of equals",
            "without": list(drop),
            "date": datetime.date.today().isoformat(),
        },
    )
    report = CalibrationReport(calibration)
    report.scores["fit half (template + free wording)"] = nil_scores(combined, calibration)
    report.scores["held-out half, template wording"] = nil_scores(
        nil_instances(linker, test_docs, ("combined",)), calibration
    )
    report.scores["held-out half, free wording"] = nil_scores(
        nil_instances(linker, test_free, ("combined",)), calibration
    )
    report.common_words = common_word_outcomes(linker, calibration)
    return report


def common_word_outcomes(linker: Any, calibration: Any = None) -> dict[str, int]:
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
