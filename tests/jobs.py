"""Running ``mluke`` commands as separate processes and killing them (used by test_kill and test_concurrency).

Two ways to start a command, both a new process running the real command line (``mluke.cli.main``):

- :func:`start` runs ``python -c <prelude> ; main() <args>``: a fresh interpreter (what a user
  gets), for commands whose imports are cheap (``mluke kb ...``: about 0.3 s);
- :func:`start_forked` forks the command from a forkserver that has already imported torch,
  transformers and the training code (about 5 s per interpreter on a 2-core machine, which would
  dominate a test that starts a dozen training runs). The forkserver never runs a torch operation
  itself, so its children start with no thread pools; each child sets its own environment,
  working folder and ``sys.argv`` before calling ``main()``, and uses one thread (this machine has two
  cores, and the test polls for files on one of them).

A *prelude* (Python source run in the child before ``main()``) may only change defaults the command
line does not expose (e.g. a dump build's chunk size) or observe (e.g. keep a copy of a work folder);
it must not change what the command computes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the forkserver imports once (everything `mluke pretrain` and `mluke finetune` need).
PRELOAD = [
    "mluke.cli",
    "torch",
    "transformers",
    "safetensors.torch",
    "mluke.pretraining",
    "mluke.finetuning",
    "probes.transfer",
    "seqeval.metrics",
    "tqdm",
    "tests.jobs",
]


def _forked_main(args: list[str], env: dict[str, str], log: str, prelude: str, cwd: str) -> None:  # in the child
    os.chdir(cwd)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["mluke", *args]
    import threading

    import torch
    import tqdm

    torch.set_num_threads(1)  # the test polls on the other core; two spinning threads on one core are erratic
    tqdm.tqdm.set_lock(threading.RLock())  # not a multiprocessing lock, which a killed process would leak
    if prelude:
        exec(compile(prelude, "<prelude>", "exec"), {"__name__": "__prelude__"})
    from mluke.cli import main

    main()


class Job:
    """A running command: :meth:`kill` (SIGKILL), :meth:`wait`, :attr:`returncode` (-9 when killed)."""

    def __init__(self, handle: subprocess.Popen | multiprocessing.process.BaseProcess, log: Path) -> None:
        self._handle = handle
        self.log = log
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self._handle.pid

    def poll(self) -> int | None:
        if isinstance(self._handle, subprocess.Popen):
            return self._handle.poll()
        return self._handle.exitcode

    @property
    def running(self) -> bool:
        return self.poll() is None

    def kill(self) -> bool:
        """SIGKILL the process; True when it was still running (the kill interrupted it)."""
        if not self.running:
            return False
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.wait()
        return self.returncode == -signal.SIGKILL

    def wait(self, timeout: float = 300) -> int:
        if isinstance(self._handle, subprocess.Popen):
            return self._handle.wait(timeout)
        self._handle.join(timeout)
        if self._handle.exitcode is None:
            raise TimeoutError(f"{self.log}: still running after {timeout} s")
        return self._handle.exitcode

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def check(self) -> None:
        """Wait for a clean exit, failing with the command's output otherwise."""
        code = self.wait()
        assert code == 0, f"exit code {code}:\n{self.output()[-4000:]}"


def start(args: list[str], *, log: Path, env: dict[str, str] | None = None, prelude: str = "", cwd: Path = ROOT) -> Job:
    """``mluke <args>`` in a fresh interpreter, in folder ``cwd``."""
    code = f"{prelude}\nfrom mluke.cli import main\nmain()"
    out = log.open("wb")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **(env or {}), "PYTHONPATH": _pythonpath()},
        )
    finally:
        out.close()
    return Job(proc, log)


def torchrun(args: list[str], *, processes: int = 2, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc_per_node <processes> -m mluke <args>`` on a free port (parallel runs do not collide),
    one thread per process; fails the test, with the end of its output, if the command fails."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes)]
    proc = subprocess.run(
        [*command, "--master_port", port, "-m", "mluke", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": _pythonpath()},
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _pythonpath() -> str:
    """This checkout first, so that ``tests`` imports from any working folder."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


_context: multiprocessing.context.BaseContext | None = None


def start_forked(
    args: list[str], *, log: Path, env: dict[str, str] | None = None, prelude: str = "", cwd: Path = ROOT
) -> Job:
    """``mluke <args>`` forked from the preloaded forkserver (see the module docs), in folder ``cwd``."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    proc = _context.Process(
        target=_forked_main, args=(args, {**os.environ, **(env or {})}, str(log), prelude, str(cwd))
    )
    proc.start()
    return Job(proc, log)


def wait_for(condition: Callable[[], bool], job: Job, timeout: float = 120, interval: float = 0.001) -> bool:
    """Poll ``condition`` until it holds (True) or ``job`` exits (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        if not job.running:
            return condition()
        time.sleep(interval)
    raise TimeoutError(f"{job.log}: condition not met in {timeout} s")


def signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``path``, None when it does not exist: to notice that a file was (re)written."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
