"""What the demo model (:mod:`mluke.demo.model`) learns and is evaluated on: the presets of its run and its
documents, built from the embedded knowledge base's facts about countries, continents, capitals, official
languages, currencies and ambiguous city names, with the held-out (fact, language) pairs and the linking
test set."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kb.db import EntityDB
from kb.errors import OptionError
from kb.languages import MLUKE_LANGUAGES

if TYPE_CHECKING:  # imported where used: the presets are read without torch (mluke cache info)
    from mluke.pretraining.corpus import Document

DEMO_RELATIONS = ("P30", "P36", "P1376", "P37", "P38", "P47", "P17")
DEMO_KINDS = ("country", "continent", "language", "currency")


@dataclass
class DemoPreset:
    """Sizes of the demo run. ``demo`` is the default; ``tiny`` is for tests."""

    languages: tuple[str, ...] = MLUKE_LANGUAGES
    languages_per_fact: int = 4  #: training languages drawn per (relation, subject)
    heldout_share: float = 0.5  #: facts with one extra (held-out) language
    linking_languages: int = 4  #: held-out languages per ambiguous city in the linking test set
    max_border_facts: int = 600
    hidden_size: int = 128
    layers: int = 2
    heads: int = 4
    entity_emb_size: int = 64
    epochs: float = 36.0
    batch_size: int = 64
    dropout: float = 0.0
    entity_prob: float = (
        0.5  #: higher than the paper's 0.15: two entities per sentence, and both are often masked, as in linking
    )
    mention_word_prob: float = 0.5  #: the masked entity's words are masked too, as at [Y] in a probe
    mention_single_mask: bool = True  #: ... as one <mask>, whatever the name's length (as at [Y] in a probe)
    entity_drop_prob: float = (
        0.5  #: an unmasked entity is left out of the input (as the subject in an entity [Y] probe)
    )
    stage1_share: float = 0.1
    learning_rate: float = 3e-3
    seed: int = 0  #: draws the documents, the held-out facts and the linking set
    #: seed of the random start, the masking and the batch order (None: ``seed``): another value trains the same
    #: documents from another start, as another machine's arithmetic would (the test suite's MLUKE_TEST_DEMO_SEED)
    init_seed: int | None = None
    minutes: float = 8.0  #: training time on 2 idle CPU cores (longer when other work shares them), told to the user
    #: Training sentences per document: 1 = one fact per document; n > 1 = the training sentences about
    #: one country in one language (its facts and its cities' P17 sentences) shuffled and cut into
    #: documents of 1 to n sentences, so a city's country is also named in other sentences, before or after
    facts_per_document: int = 4
    extra: dict[str, Any] = field(default_factory=dict)


PRESETS = {
    "demo": DemoPreset(),
    "tiny": DemoPreset(
        languages=("en", "ja", "de", "fr"),
        languages_per_fact=3,
        max_border_facts=20,
        hidden_size=32,
        layers=1,
        heads=2,
        entity_emb_size=16,
        epochs=1.0,
        batch_size=16,
        minutes=0.2,
        facts_per_document=1,  # one fact per document: the tests' model and its step counts stay as they were
        extra={"max_facts": 120},
    ),
}


def training_seed(preset: DemoPreset) -> int:
    """The seed of the preset's random start, masking and batch order."""
    return preset.seed if preset.init_seed is None else preset.init_seed


def resolve_preset(preset: str | DemoPreset) -> DemoPreset:
    """The preset named ``preset`` (or ``preset`` itself); an unknown name is an error that lists the known ones."""
    if isinstance(preset, DemoPreset):
        return preset
    if preset not in PRESETS:
        raise OptionError(f"unknown demo preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[preset]


@dataclass
class DemoData:
    """What the demo trains on and what it is evaluated on (see :func:`demo_documents`)."""

    docs: list[Document]  #: shuffled; each made of training (fact, language) sentences only
    heldout: list[dict[str, Any]]  #: held-out (fact, language) pairs for probing
    train: list[dict[str, Any]]  #: training (fact, language) pairs
    linking: list[dict[str, Any]]  #: held-out sentences with an ambiguous city: lang, text, mentions


def ambiguous_cities(db: EntityDB, languages: tuple[str, ...] | list[str]) -> dict[str, set[str]]:
    """City key -> the languages in which its name is shared with a city of another country.

    Only names whose cities all lie in different countries count: there the
    country in the sentence decides which city is meant.
    """
    country = {f.subject: f.object for f in db.facts(property="P17")}
    cities = [k for k in db.keys("city") if k in country]
    out: dict[str, set[str]] = {}
    for lang in languages:
        by_name: dict[str, list[str]] = {}
        for key, label in db.labels(cities, lang).items():
            by_name.setdefault(label, []).append(key)
        for keys in by_name.values():
            if len(keys) > 1 and len({country[k] for k in keys}) == len(keys):
                for key in keys:
                    out.setdefault(key, set()).add(lang)
    return out


def _facts(db: EntityDB, preset: DemoPreset, ambiguous: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """The facts the demo learns: about countries, continents, languages, currencies, capitals and ambiguous cities."""
    rng = random.Random(preset.seed)
    capitals = {f.object for f in db.facts(property="P36")}
    keep = {k for kind in DEMO_KINDS for k in db.keys(kind)} | capitals | set(ambiguous)
    facts = []
    for pid in DEMO_RELATIONS:
        rows = [
            (f.subject, f.property, f.object) for f in db.facts(property=pid) if f.subject in keep and f.object in keep
        ]
        if pid == "P47" and len(rows) > preset.max_border_facts:
            rows = sorted(rng.sample(rows, preset.max_border_facts))
        facts.extend(rows)
    limit = preset.extra.get("max_facts")
    if limit:
        facts = sorted(rng.sample(facts, min(limit, len(facts))))
    return facts


def demo_documents(db: EntityDB, preset: DemoPreset) -> DemoData:
    """Training documents (one fact each, or several: ``preset.facts_per_document``), held-out and training
    (fact, language) pairs, linking set.

    Languages are drawn per (relation, subject), so a held-out language never
    sees any fact of that subject under that relation, while other languages do.
    A held-out language is one whose training sentences (of other relations)
    name the subject, so the pair is answerable from the words alone.
    For an ambiguous city (:func:`ambiguous_cities`), up to
    ``preset.linking_languages`` of its untrained languages in which its name is
    ambiguous give linking test sentences: "<city> is located in <country>" with
    both mentions and their gold entities.
    Documents are made of training pairs' sentences only, whatever their shape.
    """
    from mluke.pretraining.corpus import Document

    rng = random.Random(preset.seed)
    docs: list[Document] = []
    heldout: list[dict[str, Any]] = []
    train: list[dict[str, Any]] = []
    linking: list[dict[str, Any]] = []
    templates = {(p, l): db.template(p, l) for p in DEMO_RELATIONS for l in preset.languages}
    ambiguous = ambiguous_cities(db, preset.languages)
    facts = _facts(db, preset, ambiguous)
    keys = sorted({k for s, _, o in facts for k in (s, o)})
    labels = {lang: db.labels(keys, lang) for lang in preset.languages}
    groups: dict[tuple[str, str], list[str]] = {}
    for s, p, o in facts:
        groups.setdefault((p, s), []).append(o)
    plan = []
    named: dict[str, set[str]] = {lang: set() for lang in preset.languages}  # keys each language names in training
    for (p, s), objects in groups.items():
        langs = [l for l in preset.languages if s in labels[l] and any(o in labels[l] for o in objects)]
        rng.shuffle(langs)
        if len(langs) < 2:
            continue
        n_train = min(preset.languages_per_fact, len(langs) - 1)
        chosen, rest = langs[:n_train], langs[n_train:]
        plan.append((p, s, objects, chosen, rest, rng.random() < preset.heldout_share))
        for lang in chosen:
            named[lang].update([s, *(o for o in objects if o in labels[lang])])
    for p, s, objects, chosen, rest, held in plan:
        # held out in a language where training names the subject (under other relations): answerable in principle
        where = [l for l in rest if s in named[l]]
        if held and where:
            heldout.extend(
                {"property": p, "subject": s, "object": o, "lang": where[0]} for o in objects if o in labels[where[0]]
            )
        if p == "P17" and s in ambiguous:
            for lang in [l for l in rest if l in ambiguous[s]][: preset.linking_languages]:
                text, (xs, xe), (ys, ye) = templates[(p, lang)].fill_spans(labels[lang][s], labels[lang][objects[0]])
                linking.append({"lang": lang, "text": text, "mentions": [[xs, xe, s], [ys, ye, objects[0]]]})
        for lang in chosen:
            for o in objects:
                if o not in labels[lang]:
                    continue
                train.append({"property": p, "subject": s, "object": o, "lang": lang})
                text, (xs, xe), (ys, ye) = templates[(p, lang)].fill_spans(labels[lang][s], labels[lang][o])
                docs.append(Document(lang, text, sorted([(xs, xe, s), (ys, ye, o)]), title=f"{p}:{s}"))
    if preset.facts_per_document > 1:
        docs = _group_documents(docs, preset.facts_per_document, rng)
    order = list(range(len(docs)))
    rng.shuffle(order)
    return DemoData([docs[i] for i in order], heldout, train, linking)


#: Relations whose object (not subject) is the country a sentence is about.
_ABOUT_OBJECT = ("P17", "P1376")
#: Languages whose sentences follow each other without a space.
_NO_SPACE = ("ja", "zh", "th")


def _group_documents(sentences: list[Document], per_doc: int, rng: random.Random) -> list[Document]:
    """Multi-sentence documents from one-fact ``sentences`` (titled ``"<property>:<subject>"``): those about
    the same country (a city's P17 or P1376 sentence goes with its country's own facts) in the same language
    are shuffled and cut into documents of 1 to ``per_doc`` sentences; every link is kept. Deterministic."""
    from mluke.pretraining.corpus import Document

    topics: dict[tuple[str, str], list[Document]] = {}
    for doc in sentences:
        prop, subject = (doc.title or ":").split(":", 1)
        key = next(k for _, _, k in doc.links if k != subject) if prop in _ABOUT_OBJECT else subject
        topics.setdefault((doc.lang, key), []).append(doc)
    out: list[Document] = []
    for (lang, topic), group in sorted(topics.items()):
        rng.shuffle(group)
        pos = 0
        while pos < len(group):
            size = rng.randint(1, per_doc)
            part, pos = group[pos : pos + size], pos + size
            sep = "" if lang in _NO_SPACE else " "
            text, links, offset = [], [], 0
            for doc in part:
                links += [(a + offset, b + offset, k) for a, b, k in doc.links]
                text.append(doc.text)
                offset += len(doc.text) + len(sep)
            out.append(Document(lang, sep.join(text), links, title=f"{topic}:{lang}:{len(out)}"))
    return out
