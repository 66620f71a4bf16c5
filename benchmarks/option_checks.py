"""Time to refuse a bad option on a fresh cache: this checkout against another (e.g. the commit before issue 25).

Each command runs in a new interpreter with an empty ``MLUKE_HOME``, as a new user's first command would;
the two checkouts alternate (A, B, A, B, ...) and the median wall time of each is reported, with the
first line of what the command printed and whether it left anything in the cache (a built kb, a
trained model). A run still going after ``--timeout`` seconds is stopped and reported as such.

    python benchmarks/option_checks.py --baseline /tmp/mluke-before --repeat 3

``--smoke``: this checkout against itself, once, in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_smoke, smoke_folder

ROOT = Path(__file__).resolve().parents[1]
SPANS = '{"id": "s1", "lang": "en", "text": "Paris is in France.", "span": [0, 5], "surface": "Paris"}\n'
COMMANDS = [
    ["link", "{text}", "--lang", "xx"],
    ["link", "{text}", "--dtype", "fp8"],
    ["index", "build", "{spans}", "-o", "{out}", "--kind", "foo"],
    ["modularity", "{spans}", "--langs", "de,xx"],
    ["pretrain", "--preset", "foo"],
]


def run(checkout: Path, args: list[str], timeout: float, work: Path) -> tuple[float | None, str, int]:
    """(seconds, or None when stopped at the timeout; first line of output; files left in the cache)."""
    home = Path(tempfile.mkdtemp(dir=work))
    filled = [a.format(text=work / "text.txt", spans=work / "spans.jsonl", out=home / "index") for a in args]
    env = {**os.environ, "MLUKE_HOME": str(home / "cache"), "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mluke", *filled],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            cwd=checkout,
        )
        took: float | None = time.perf_counter() - started
        out = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        first = out[-1] if out else ""
    except subprocess.TimeoutExpired:
        took, first = None, f"still running after {timeout:.0f} s"
    cache = home / "cache"
    left = len(list(cache.iterdir())) if cache.is_dir() else 0
    return took, first[:110], left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout of mluke (required)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60)
    add_smoke(parser)
    args = parser.parse_args()
    if args.smoke:
        args.baseline, args.repeat = ROOT, 1
    elif args.baseline is None:
        parser.error("the following arguments are required: --baseline")
    work = smoke_folder() if args.smoke else Path(tempfile.mkdtemp())
    (work / "text.txt").write_text("Tokyo is the capital of Japan.\n", encoding="utf-8")
    (work / "spans.jsonl").write_text(SPANS, encoding="utf-8")
    print(
        "| command | this checkout: median s | its last line | cache entries left "
        "| baseline: median s | its last line | cache entries left |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for cmd in COMMANDS:
        times: dict[str, list[float | None]] = {"ours": [], "base": []}
        seen: dict[str, tuple[str, int]] = {}
        for _ in range(args.repeat):
            for name, checkout in (("ours", ROOT), ("base", args.baseline)):
                took, first, left = run(checkout, cmd, args.timeout, work)
                times[name].append(took)
                seen[name] = (first, left)

        def med(values: list[float | None]) -> str:
            done = [v for v in values if v is not None]
            if len(done) < len(values):
                return f"> {args.timeout:.0f} ({len(values) - len(done)} of {len(values)} stopped)"
            return f"{statistics.median(done):.1f}"

        print(
            f"| `mluke {' '.join(cmd)}` | {med(times['ours'])} | {seen['ours'][0]} | {seen['ours'][1]} | "
            f"{med(times['base'])} | {seen['base'][0]} | {seen['base'][1]} |"
        )


if __name__ == "__main__":
    main()
