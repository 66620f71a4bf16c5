"""The error of model weights: :class:`CheckpointError` (re-exported by :mod:`mluke.errors` with the rest of
the library's errors), defined here so that the model code needs nothing above it."""

from __future__ import annotations

from kb.errors import MlukeError


class CheckpointError(MlukeError):
    """A checkpoint's weights do not match the model its config describes."""
