"""Run every benchmark script with ``--smoke``: the smallest sizes that still take each of its code paths, a
check that the scripts still run (CI runs this after the tests), not a measurement.

A benchmark script is a ``benchmarks/*.py`` file with an ``if __name__ == "__main__":`` block (helpers such as
``common.py`` have none), this runner aside. Each runs in its own process, from the repository root, with a
per-script time limit, ``$TMPDIR`` set to a folder of its own, ``$MLUKE_HOME`` to one temporary cache shared by
the run (the embedded kb and the tiny demo model are built once; both folders are removed at the end), and one
thread (``$BENCH_THREADS``, ``$OMP_NUM_THREADS``: tiny models, where a second thread only waits, the more so on a
shared machine). A script fails when it exits with an error, runs past the limit, or changes a file under
``benchmarks/`` (a smoke run writes only into temporary folders). Prints a table of script, wall and CPU seconds
(of the script and its child processes) and status, then the end of each failing script's output; exits with 1
if any failed.

    python benchmarks/smoke.py [--only model_scoring probe_speed ...] [--timeout 300]
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def is_script(path: Path) -> bool:
    """Whether ``path`` has an ``if __name__ == "__main__":`` block at its top level."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names):
                return True
    return False


def scripts() -> list[Path]:
    """The benchmark scripts, by name (this runner left out)."""
    return [p for p in sorted(HERE.glob("*.py")) if p.name != Path(__file__).name and is_script(p)]


def snapshot() -> dict[str, tuple[int, int]]:
    """(modification time, size) of every file under ``benchmarks/`` but caches."""
    return {
        str(p.relative_to(HERE)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in HERE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _cpu() -> float:
    """CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(script: Path, home: Path, timeout: float) -> tuple[float, float, str, str]:
    """Run ``script --smoke``: (wall seconds, CPU seconds, status, its output)."""
    before = snapshot()
    with tempfile.TemporaryDirectory(prefix=f"smoke-{script.stem}-") as tmp:
        env = {**os.environ, "MLUKE_HOME": str(home), "TMPDIR": tmp, "PYTHONUNBUFFERED": "1"}
        env |= {"BENCH_THREADS": "1", "OMP_NUM_THREADS": "1"}
        started, cpu = time.perf_counter(), _cpu()
        try:
            proc = subprocess.run(
                [sys.executable, str(script), "--smoke"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as stopped:
            status, output = f"timeout ({timeout:.0f} s)", _text(stopped.stdout) + _text(stopped.stderr)
        seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    after = snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed and status == "ok":
        status = "wrote into benchmarks/"
        output += "\nchanged under benchmarks/: " + ", ".join(changed[:10])
    return seconds, cpu, status, output


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts (e.g. model_scoring)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds each script may run (default 300)")
    ap.add_argument("--tail", type=int, default=40, help="lines of a failing script's output to show")
    args = ap.parse_args()
    chosen = scripts()
    if args.only:
        known = {p.stem: p for p in chosen}
        wanted = [n.removesuffix(".py") for n in args.only]
        unknown = [n for n in wanted if n not in known]
        if unknown:
            ap.error(f"--only: no benchmark script {', '.join(unknown)}; scripts: {', '.join(known)}")
        chosen = [known[n] for n in wanted]
    rows, failed = [], []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="smoke-home-") as home:
        for script in chosen:
            seconds, cpu, status, output = run(script, Path(home), args.timeout)
            rows.append((script.name, seconds, cpu, status))
            print(f"{script.name:34s} {seconds:7.1f} s  {cpu:7.1f} CPU s  {status}", flush=True)
            if status != "ok":
                failed.append((script.name, output))
    print("\n| script | seconds | CPU seconds | status |\n|---|---:|---:|---|")
    for name, seconds, cpu, status in rows:
        print(f"| {name} | {seconds:.1f} | {cpu:.1f} | {status} |")
    total, total_cpu = time.perf_counter() - started, sum(r[2] for r in rows)
    print(f"| total: {len(rows)} scripts, {len(failed)} failed | {total:.1f} | {total_cpu:.1f} | |")
    for name, output in failed:
        tail = "\n".join(output.rstrip().splitlines()[-args.tail :])
        print(f"\n--- {name}: the last {args.tail} lines of its output ---\n{tail}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
