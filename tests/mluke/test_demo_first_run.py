"""The first run of the library trains the demo model: two such runs at once, and Ctrl-C in the middle.

Both use the ``tiny`` preset (22 steps) on a fresh ``MLUKE_HOME``, through the real command line in
separate processes where processes matter.
"""

import json
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kb.sources.embedded import embedded_path
from mluke.demo.model import DEMO_VERSION
from tests import jobs
from tests.conftest import arithmetic_seed

#: observes nothing and changes nothing the run computes: each step takes 0.3 s longer, so that a
#: second process (or a signal) surely arrives while the first is still training
SLOW_STEPS = """
import time
from mluke.pretraining.trainer import Trainer
_step = Trainer.train_step
def _slow(self, *a, **k):
    time.sleep(0.3)
    return _step(self, *a, **k)
Trainer.train_step = _slow
"""


def _fresh_home(tmp_path: Path, embedded_db_path: Path) -> Path:
    """An empty cache folder but for the embedded kb (a copy of the session's, to save its build)."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(embedded_db_path, home / embedded_path().name)
    return home


def _same_weights(a: Path, b: Path) -> None:
    if arithmetic_seed() is not None:  # the session's tiny demo was trained from another start than the preset's
        pytest.skip("MLUKE_TEST_SEED is set: the session's tiny demo is not the preset's own run to compare with")
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for key in wa:
        assert torch.equal(wa[key], wb[key]), key


def test_two_first_runs_at_once_one_trains_the_other_waits(tmp_path, embedded_db_path, tiny_demo):
    home = _fresh_home(tmp_path, embedded_db_path)
    env = {"MLUKE_HOME": str(home)}
    first = jobs.start(["pretrain", "--preset", "tiny"], log=tmp_path / "first.log", env=env, prelude=SLOW_STEPS)
    work = home / f"tiny-model-v{DEMO_VERSION}.work"
    assert jobs.wait_for(lambda: (work / "plan.json").exists(), first, timeout=300), first.output()
    second = jobs.start(["pretrain", "--preset", "tiny"], log=tmp_path / "second.log", env=env)
    first.check()
    second.check()
    one, two = first.output(), second.output()
    assert "Training the demo model once" in one and "waiting for it to finish" not in one
    assert "Another process is training the demo model into" in two and "waiting for it to finish" in two
    assert "Training the demo model once" not in two and "pretrain:" not in two  # it trained nothing itself
    model = home / f"tiny-model-v{DEMO_VERSION}"
    assert f"demo model ready: {model}" in one and f"demo model ready: {model}" in two
    assert "Error" not in one + two and "Traceback" not in one + two
    assert not work.exists() and (model / "demo.json").is_file()
    _same_weights(model, tiny_demo)  # the waiting did not disturb the training


def test_interrupted_training_resumes_from_its_checkpoint_and_says_so(
    tmp_path, embedded_db, tiny_demo, monkeypatch, capsys
):
    """Ctrl-C at step 7 of 22 keeps the checkpoint; the next call continues from step 7 and ends with the
    same model as a run never interrupted."""
    import mluke.demo.model
    from mluke.pretraining.trainer import Trainer

    step = Trainer.train_step
    interrupted = []

    def ctrl_c_at_7(self, *args, **kwargs):
        if self.step == 7 and not interrupted:
            interrupted.append(self.step)
            raise KeyboardInterrupt
        return step(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "train_step", ctrl_c_at_7)
    out = tmp_path / "tiny"
    with pytest.raises(KeyboardInterrupt):
        mluke.demo.model.train_demo(out, preset="tiny", db=embedded_db, progress=False)
    err = capsys.readouterr().err
    assert "Interrupted at step 7 of 22; the checkpoint is kept in" in err and "the next run resumes from it" in err
    work = tmp_path / "tiny.work"
    assert (work / "run" / "checkpoints" / "step-00000007").is_dir() and not out.exists()

    assert mluke.demo.model.train_demo(out, preset="tiny", db=embedded_db, progress=False) == out
    err = capsys.readouterr().err
    assert "Resuming the demo model's training at step 7 of 22" in err
    assert not work.exists() and (out / "demo.json").is_file()
    _same_weights(out, tiny_demo)
    steps = [r["step"] for r in map(json.loads, (out / "train_log.jsonl").read_text().splitlines())]
    assert steps == sorted(set(steps))  # no step logged twice


def test_ctrl_c_in_the_command_line_then_the_rerun_resumes(tmp_path, embedded_db_path):
    home = _fresh_home(tmp_path, embedded_db_path)
    env = {"MLUKE_HOME": str(home)}
    run = jobs.start(["pretrain", "--preset", "tiny"], log=tmp_path / "run.log", env=env, prelude=SLOW_STEPS)
    assert jobs.wait_for(
        lambda: re.search(r"\| ([3-9]|1[0-5])/22 ", run.output()) is not None, run, timeout=300, interval=0.05
    ), run.output()
    run._handle.send_signal(signal.SIGINT)
    assert run.wait() == 130, run.output()
    text = run.output()
    stopped = re.search(
        r"Interrupted at step (\d+) of 22; the checkpoint is kept in (\S+) and the next run resumes", text
    )
    assert stopped, text[-2000:]  # exit code 130 (typer's for Ctrl-C), and what was kept
    assert "Traceback" not in text
    at = int(stopped.group(1))
    assert (
        3 <= at < 22 and (home / f"tiny-model-v{DEMO_VERSION}.work" / "run" / "checkpoints" / f"step-{at:08d}").is_dir()
    )

    started = time.monotonic()
    rerun = jobs.start(["pretrain", "--preset", "tiny"], log=tmp_path / "rerun.log", env=env)
    rerun.check()
    assert f"Resuming the demo model's training at step {at} of 22" in rerun.output()
    assert (home / f"tiny-model-v{DEMO_VERSION}" / "demo.json").is_file() and not (
        home / f"tiny-model-v{DEMO_VERSION}.work"
    ).exists()
    assert time.monotonic() - started < 300
