"""Where mluke keeps files it builds on first use (embedded kb, demo model)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$MLUKE_HOME`` if set, else ``$XDG_CACHE_HOME/mluke``, else ``~/.cache/mluke`` (created)."""
    env = os.environ.get("MLUKE_HOME")
    if env:
        path = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "mluke"
    path.mkdir(parents=True, exist_ok=True)
    return path
