"""Interrupted jobs lose nothing: ``mluke kb build`` (Wikidata and Wikipedia stages), ``mluke pretrain`` and
``mluke finetune`` are killed with SIGKILL at seeded moments while they work, run again to completion, and
compared with a run that was never interrupted.

Each command runs as its own process (:mod:`tests.jobs`): ``kb build`` in a fresh interpreter, the training
commands forked from a server that has imported torch (which takes longer than their work). The kills of a
command form a chain in one folder: each run continues what the killed ones left, and is killed in turn.
Kill moments are seeded shares of the uninterrupted run's working time (measured from where the next run
resumes: the last committed chunk of a build, the newest checkpoint or saved state of a training run), and
the moments a file appears: a temporary checkpoint or state being written, the corpus and the database
being moved into place.

After every kill: what is at a final output path is complete (the database, checkpoints, the exported or
fine-tuned model appear by a rename; the corpus is moved into place just before the database, which is
the sign that a build is complete), and every checkpoint and saved state is bit for bit the one the
uninterrupted run saved at that point. After the last run: the same rows in every table of the database
(only meta's ``created``, the wall-clock time of the build, may differ), the same corpus bytes, the same
model files, parameters and optimizer states bit for bit, and the same training log (but for its two
clock-time fields).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import kb
from tests.jobs import ROOT, Job, signature, start, wait_for
from tests.kb_builds import KB_PRELUDE, db_rows, kb_build_args, tree_bytes, write_grown_dumps
from tests.mluke import conftest as _mluke_fixtures, test_pretraining as _pretraining

# the smallest pretraining fixtures (a tiny corpus and XLM-R) of tests/mluke, used here too
spm_model, tiny_checkpoint = _mluke_fixtures.spm_model, _mluke_fixtures.tiny_checkpoint
pt_tokenizer, corpus_dir, xlmr_dir = _pretraining.pt_tokenizer, _pretraining.corpus_dir, _pretraining.xlmr_dir

SEED = 20240518


# -- mluke kb build ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return write_grown_dumps(tmp_path_factory.mktemp("dumps"))


def _check_kb_outputs(folder: Path, reference: Path) -> None:
    """Whatever is at the final paths is complete: the database and the corpus of the uninterrupted run."""
    if (folder / "kb.sqlite").exists():
        assert db_rows(folder / "kb.sqlite") == db_rows(reference / "kb.sqlite")
    if (folder / "kb.corpus").exists():
        assert tree_bytes(folder / "kb.corpus") == tree_bytes(reference / "kb.corpus")


def _kill_after(job: Job, delay: float) -> bool:
    end = time.monotonic() + delay
    while job.running and time.monotonic() < end:
        time.sleep(0.001)
    return job.kill()


def _changed(path: Path) -> Callable[[], bool]:
    """A test for "``path`` was (re)written since now"."""
    before = signature(path)
    return lambda: signature(path) not in (before, None)


def _reference(job: Job, started: Callable[[], bool], output: Path) -> float:
    """Wait for an uninterrupted run; its working time (from ``started()`` holding until ``output`` appears)."""
    assert wait_for(started, job), job.output()
    t0 = time.monotonic()
    wait_for(output.exists, job)
    work = time.monotonic() - t0
    job.check()
    return work


def kill_chain(
    plan: list[float | Path],
    launch: Callable[[], tuple[Job, Callable[[], bool]]],
    work: float,
    after_kill: Callable[[], tuple[str, bool]],
    finish: Callable[[], None],
    resumes_at: Callable[[], float] | None = None,
) -> list[str]:
    """Run a command again and again in one folder, killing each run as ``plan`` says: at a moment of the
    uninterrupted run's working time (a share of ``work`` seconds, counted from when ``started()`` holds),
    or as soon as a path appears (``{pid}`` in its name: the run's own process id).

    A re-run skips what the killed runs saved: ``resumes_at()`` says where the next run starts, as a share
    of the uninterrupted run's working time (default: where the last kill was), so it is killed after the
    time from there to its moment. ``after_kill()`` checks what a kill left and says what it was and whether
    the command's output was complete (it was killed on its way out). A run that finishes before its kill,
    or whose output was complete, ends the chain: ``finish()`` checks the output and clears the folder, and
    the next kill starts a new chain (a moment that came too late is tried again). Returns what each kill hit.
    """
    kills: list[str] = []
    last, retries = 0.0, 0
    while plan:
        moment = plan[0]
        start_at = resumes_at() if resumes_at else last
        job, started = launch()
        if isinstance(moment, Path):
            name = moment.name.format(pid=job.pid)
            killed = wait_for(lambda: any(moment.parent.glob(name)), job) and job.kill()
            what = f"when {name} appeared"
        else:
            killed = wait_for(started, job) and _kill_after(job, max(0.0, moment - start_at) * work)
            what = f"at {moment:.0%} of the work (resumed at {start_at:.0%})"
        if killed:
            state, complete = after_kill()
            kills.append(f"{what}: {state}")
            last = moment if isinstance(moment, float) else last
            plan.pop(0)
            if complete:
                finish()
                last = 0.0
            continue
        job.check()
        finish()
        last, retries = 0.0, retries + 1
        assert retries <= 8, f"runs finished before their kill too often; kills: {kills}"
        if isinstance(moment, Path):
            plan.pop(0)
    return kills


def _timeline(start: Path, marks: list[Path], work: float) -> dict[str, float]:
    """When each of ``marks`` was written in the uninterrupted run, as a share of its working time."""
    t0 = start.stat().st_mtime
    return {p.name: (p.stat().st_mtime - t0) / work for p in marks}


def _kb_state(run: Path) -> str:
    """What a killed build left: its work folder's stage files, and which outputs are in place."""
    work = run / "kb.sqlite.build"
    staged = sorted(p.name for p in work.iterdir() if p.suffix in (".sqlite", ".json")) if work.is_dir() else []
    outputs = sorted(p.name for p in run.iterdir() if p.name in ("kb.sqlite", "kb.corpus"))
    return f"work folder {staged}, outputs {outputs}"


def test_kb_build_killed_anywhere_resumes_to_the_same_database(tmp_path, dumps):
    ref, run = tmp_path / "ref", tmp_path / "run"
    ref.mkdir()
    run.mkdir()
    logs = iter(tmp_path / f"run-{n}.log" for n in range(100))

    def launch(folder: Path = run) -> tuple[Job, Callable[[], bool]]:
        started = _changed(folder / "kb.sqlite.build" / "params.json")  # written by every run as it starts
        return start(kb_build_args(folder, dumps), log=next(logs), prelude=KB_PRELUDE), started

    work = _reference(*launch(ref), ref / "kb.sqlite")
    assert not (ref / "kb.sqlite.build").exists() and (ref / "kb.corpus" / "manifest.json").is_file()

    def after_kill() -> tuple[str, bool]:
        state = _kb_state(run)
        if not (run / "kb.sqlite").exists():  # else it was killed while removing its work folder
            assert (run / "kb.sqlite.build" / "params.json").exists(), state
        _check_kb_outputs(run, ref)
        return state, (run / "kb.sqlite").exists()

    def finish() -> None:
        assert db_rows(run / "kb.sqlite") == db_rows(ref / "kb.sqlite")
        assert tree_bytes(run / "kb.corpus") == tree_bytes(ref / "kb.corpus")
        for p in run.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()

    # Four kills at seeded moments of the work, then two at the narrowest windows: as the corpus is moved
    # into place (the database follows), and as the database is (only the removal of the work folder follows).
    rng = random.Random(SEED)
    plan: list[float | Path] = [*sorted(rng.uniform(0.05, 0.9) for _ in range(4)), run / "kb.corpus", run / "kb.sqlite"]
    kills = kill_chain(plan, launch, work, after_kill, finish)
    print("\n".join(kills))
    assert len(kills) == 6
    if not (run / "kb.sqlite").exists():
        launch()[0].check()
    assert db_rows(run / "kb.sqlite") == db_rows(ref / "kb.sqlite")
    assert tree_bytes(run / "kb.corpus") == tree_bytes(ref / "kb.corpus")
    assert not list(run.glob("*.partial-*"))
    again = launch()[0]
    assert again.wait() == 1 and "kb.sqlite already exists" in again.output()


# -- mluke pretrain ------------------------------------------------------------------------------------------------
PRETRAIN_STEPS = (8, 12)  # two stages; a checkpoint every 3 steps, so kills land between checkpoints as well
TIMING = ("tokens_per_s", "data_wait_share")  # the only log fields that depend on the clock
#: Observation only: keep every checkpoint the uninterrupted run writes (it keeps the newest two), as hard
#: links (no time taken from the run; a checkpoint's files are never changed once it has its name).
KEEP_CHECKPOINTS = """
import os as _os, shutil as _shutil
from mluke.pretraining.trainer import Trainer as _Trainer
_save = _Trainer.save_checkpoint
def _keep(self):
    path = _save(self)
    _shutil.copytree(path, self.out.parent / "all-checkpoints" / path.name, copy_function=_os.link)
    return path
_Trainer.save_checkpoint = _keep
"""


def _state_equal(a, b) -> bool:
    """Deep equality of loaded checkpoint states: tensors bit for bit."""
    import torch

    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_state_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_state_equal(x, y) for x, y in zip(a, b))
    return a == b


def _same_checkpoint(a: Path, b: Path) -> bool:
    import torch

    return (
        (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
        and (a / "trainer_state.json").read_text() == (b / "trainer_state.json").read_text()
        and _state_equal(
            torch.load(a / "optimizer.pt", weights_only=True), torch.load(b / "optimizer.pt", weights_only=True)
        )
    )


def _log(run: Path) -> list[dict]:
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def test_pretrain_killed_anywhere_resumes_to_the_same_parameters(tmp_path, corpus_dir, xlmr_dir):
    from tests.jobs import start_forked

    # the output folder "run" is relative: one config file for both runs, each in its own working folder
    config = _pretraining._config(corpus_dir, xlmr_dir, Path("run"), steps=PRETRAIN_STEPS)
    config.optim.dropout = 0.1  # so that the random-number state matters too
    config.run.save_every = 3
    (tmp_path / "run.toml").write_text(config.to_toml())
    ref, chain = tmp_path / "ref", tmp_path / "chain"
    ref.mkdir()
    chain.mkdir()
    logs = iter(tmp_path / f"run-{n}.log" for n in range(100))

    def launch(folder: Path = chain, prelude: str = "") -> tuple[Job, Callable[[], bool]]:
        started = _changed(folder / "run" / "config.toml")  # written by every run as it starts training
        return start_forked(
            ["pretrain", "--config", str(tmp_path / "run.toml"), "--no-progress"],
            log=next(logs),
            cwd=folder,
            prelude=prelude,
        ), started

    work = _reference(*launch(ref, KEEP_CHECKPOINTS), ref / "run" / "model")
    steps = sum(PRETRAIN_STEPS)
    saved = [*range(3, steps, 3), steps]
    assert sorted(p.name for p in (ref / "all-checkpoints").iterdir()) == [f"step-{n:08d}" for n in saved]
    run = chain / "run"

    def after_kill() -> tuple[str, bool]:
        done = [p.name for p in (run / "checkpoints").iterdir()] if (run / "checkpoints").is_dir() else []
        logged = len((run / "log.jsonl").read_text().splitlines()) if (run / "log.jsonl").exists() else 0
        for ckpt in _checkpoints(run):  # every finished checkpoint is the uninterrupted run's
            assert _same_checkpoint(ckpt, ref / "all-checkpoints" / ckpt.name), ckpt
        complete = (run / "model").exists()
        if complete:
            assert tree_bytes(run / "model") == tree_bytes(ref / "run" / "model")
        model = "in place" if complete else "absent"
        return f"{logged} steps logged, checkpoints folder {sorted(done)}, model {model}", complete

    def finish() -> None:
        _compare_pretraining(run, ref / "run")
        shutil.rmtree(run)

    when = _timeline(ref / "run" / "config.toml", sorted((ref / "all-checkpoints").iterdir()), work)

    def resumes_at() -> float:  # at the newest checkpoint
        done = _checkpoints(run)
        return when[done[-1].name] if done else 0.0

    _five_kills(SEED + 1, run / "checkpoints" / "*.partial-{pid}", launch, work, after_kill, finish, resumes_at)
    if not (run / "model").exists():
        launch()[0].check()
    _compare_pretraining(run, ref / "run")
    assert len(_log(run)) == steps


def _five_kills(seed: int, partial: Path, launch, work, after_kill, finish, resumes_at) -> None:
    """Four kills at seeded points of the run's timeline and one while ``partial`` (a temporary file of a
    checkpoint or state being written) exists; the run is started again after each."""
    rng = random.Random(seed)
    plan: list = sorted(rng.uniform(0.05, 0.9) for _ in range(4))
    plan.insert(2, partial)
    kills = kill_chain(plan, launch, work, after_kill, finish, resumes_at)
    print("\n".join(kills))
    assert len(kills) == 5


def _checkpoints(run: Path) -> list[Path]:
    """The finished checkpoints of a run folder (not those under temporary names)."""
    return sorted(p for p in (run / "checkpoints").glob("step-*") if p.name[5:].isdigit())


def _compare_pretraining(run: Path, ref: Path) -> None:
    assert tree_bytes(run / "model") == tree_bytes(ref / "model")
    assert [p.name for p in _checkpoints(run)] == [p.name for p in _checkpoints(ref)]
    for a, b in zip(_checkpoints(run), _checkpoints(ref)):
        assert _same_checkpoint(a, b), a
    assert _log(run) == _log(ref)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [p.name for p in _checkpoints(ref)]


# -- mluke finetune ------------------------------------------------------------------------------------------------
NER_DATA = ROOT / "tests" / "probes" / "transfer" / "data" / "conll2003_en.txt"
#: Observation only: note when training starts (a resumed run writes nothing then), keep every state the
#: uninterrupted run saves (hard links: a new state is a new file renamed over the old one), and a copy of
#: the work folder before the finished command deletes it.
FINETUNE_PRELUDE = """
import os as _os, shutil as _shutil
from pathlib import Path as _Path
import mluke.finetuning.training as _training
_Tuner = _training.FineTuner
_train, _save = _Tuner.train, _Tuner._save
def _started(self, **kw):
    _Path("training-started").write_text(str(self.epoch))
    history = _train(self, **kw)
    _shutil.rmtree("work-at-end", ignore_errors=True)
    _shutil.copytree(self.work, "work-at-end")
    return history
def _keep(self):
    _save(self)
    if _Path("all-states").exists():
        _os.link(self.work / "state.pt", f"all-states/{self.epoch}-{self.step_in_epoch}.pt")
_Tuner.train, _Tuner._save = _started, _keep
"""


def _finetune_state(work: Path) -> tuple[int, int] | None:
    import torch

    if not (work / "state.pt").exists():
        return None
    state = torch.load(work / "state.pt", weights_only=True)
    return state["epoch"], state["step_in_epoch"]


def test_finetune_killed_anywhere_resumes_to_the_same_model(tmp_path, tiny_demo):
    import torch

    from tests.jobs import start_forked

    ref, chain = tmp_path / "ref", tmp_path / "chain"
    ref.mkdir()
    chain.mkdir()
    (ref / "all-states").mkdir()
    logs = iter(tmp_path / f"run-{n}.log" for n in range(100))
    train = tmp_path / "train.txt"  # the fixture's 4 sentences ten times: 20 steps an epoch
    train.write_text("\n".join([NER_DATA.read_text()] * 10))
    args = [
        "finetune",
        "ner",
        "--train",
        str(train),
        "--dev",
        str(NER_DATA),
        "--model",
        str(tiny_demo),
        "-o",
        "ner",
        "--epochs",
        "4",
        "--batch-size",
        "2",
        "--learning-rate",
        "1e-3",
        "--no-progress",
    ]

    def launch(folder: Path = chain) -> tuple[Job, Callable[[], bool]]:
        started = _changed(folder / "training-started")
        return start_forked(args, log=next(logs), cwd=folder, prelude=FINETUNE_PRELUDE), started

    work = _reference(*launch(ref), ref / "ner")
    assert not (ref / "ner.work").exists()
    saved = sorted(p.name for p in (ref / "all-states").iterdir())
    assert saved == [f"{e}-0.pt" for e in range(1, 5)], saved  # one state per epoch

    def after_kill() -> tuple[str, bool]:
        at = _finetune_state(chain / "ner.work")
        if at is not None:  # the saved state is the uninterrupted run's at the same point
            assert _state_equal(
                torch.load(chain / "ner.work" / "state.pt", weights_only=True),
                torch.load(ref / "all-states" / f"{at[0]}-{at[1]}.pt", weights_only=True),
            )
        complete = (chain / "ner").exists()
        if complete:
            assert tree_bytes(chain / "ner") == tree_bytes(ref / "ner")
        files = sorted(p.name for p in (chain / "ner.work").iterdir()) if (chain / "ner.work").is_dir() else []
        model = "in place" if complete else "absent"
        return f"saved state (epoch, step) {at}, work folder {files}, model {model}", complete

    def finish() -> None:
        _compare_finetuning(chain, ref)
        for p in chain.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()

    when = _timeline(ref / "training-started", sorted((ref / "all-states").iterdir()), work)

    def resumes_at() -> float:  # at the saved state
        at = _finetune_state(chain / "ner.work")
        return when[f"{at[0]}-{at[1]}.pt"] if at else 0.0

    _five_kills(SEED + 2, chain / "ner.work" / "state.pt.partial-{pid}", launch, work, after_kill, finish, resumes_at)
    if not (chain / "ner").exists():
        launch()[0].check()
    _compare_finetuning(chain, ref)


def _compare_finetuning(run: Path, ref: Path) -> None:
    import torch

    assert tree_bytes(run / "ner") == tree_bytes(ref / "ner")  # weights, config with the per-epoch history
    assert not (run / "ner.work").exists()
    a, b = run / "work-at-end", ref / "work-at-end"
    assert (a / "run.json").read_bytes() == (b / "run.json").read_bytes()
    for name in ("state.pt", "best.pt"):  # model, optimizer, scheduler, random state, history; best weights
        assert _state_equal(torch.load(a / name, weights_only=True), torch.load(b / name, weights_only=True)), name


def test_killed_as_it_created_its_work_folder(tmp_path, tiny_demo):
    """The narrowest windows, which timed kills all but never hit: killed just after creating its work
    folder, before its first file there was complete (written under a temporary name). What such a kill
    leaves, the folder with at most a temporary file in it, is started afresh, not refused as a run of
    other inputs (dump build) or settings (fine-tuning)."""
    from mluke.finetuning import FineTuneConfig
    from probes.transfer import finetune
    from tests.kb.sources.dump_fixtures import write_wikidata

    work = tmp_path / "kb.sqlite.build"
    work.mkdir()
    (work / f"params.json.partial-{2**22 + 1}").write_text('{"builder_version"')
    kb.build_from_dumps(
        tmp_path / "kb.sqlite",
        wikidata=write_wikidata(tmp_path / "latest-all.json"),
        languages=("en", "ja"),
        workers=1,
        progress=False,
    )
    assert len(kb.EntityDB(tmp_path / "kb.sqlite")) > 0 and not work.exists()

    work = tmp_path / "ner.work"
    work.mkdir()
    (work / f"run.json.partial-{2**22 + 1}").write_text('{"identity"')
    finetune(
        "ner",
        NER_DATA,
        NER_DATA,
        output=tmp_path / "ner",
        model=tiny_demo,
        progress=False,
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=1),
    )
    assert (tmp_path / "ner" / "model.safetensors").is_file() and not work.exists()
