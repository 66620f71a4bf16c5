"""The errors mluke raises: those of :mod:`kb.errors` (one hierarchy for the whole library, rooted at
:class:`MlukeError`) and :class:`CheckpointError` for model weights."""

from __future__ import annotations

from kb import errors
from kb.errors import *  # noqa: F403 (the error classes: kb.errors.__all__, re-exported here)
from kb.errors import MlukeError


class CheckpointError(MlukeError):
    """A checkpoint's weights do not match the model its config describes."""


__all__ = ["CheckpointError", *errors.__all__]
