"""Hypothesis profiles for the fuzz tests, and the session fixtures they borrow from other test folders.

- ``ci`` (the default): few examples, derandomized so that every CI run tries the same inputs,
  no deadline (a first call may load a model or build an index), and ``print_blob`` so that a
  failure prints the ``@reproduce_failure`` line to replay it;
- ``long``: many more examples from a random seed, for a fuzzing session:
  ``HYPOTHESIS_PROFILE=long pytest tests/fuzz`` (failures are saved in ``.hypothesis/`` and
  replayed first on the next run).

Tests scale their own example counts with :func:`tests.fuzz.strategies.examples`, so the
profile chosen here sets the budget of every test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# the tiny sentencepiece model of tests/mluke (a fixture is found by its name here)
from tests.mluke.conftest import spm_model  # noqa: F401

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
