"""The errors mluke raises: those of :mod:`kb.errors` (one hierarchy for the whole library, rooted at
:class:`MlukeError`) and :class:`CheckpointError` for model weights."""

from __future__ import annotations

from kb import errors
from kb.errors import *  # noqa: F403 (the error classes: kb.errors.__all__, re-exported here)
from mluke.models.errors import CheckpointError

__all__ = ["CheckpointError", *errors.__all__]
