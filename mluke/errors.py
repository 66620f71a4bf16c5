"""The errors mluke raises: those of :mod:`kb.errors` (one hierarchy for the whole library, rooted at
:class:`MlukeError`) and :class:`CheckpointError` for model weights."""

from __future__ import annotations

from kb.errors import (
    InputFormatError,
    KbFormatError,
    MlukeError,
    NotFoundError,
    OptionError,
    OutputExistsError,
    SchemaVersionError,
    TemplateError,
    TextInputError,
    UnknownLanguageError,
)


class CheckpointError(MlukeError):
    """A checkpoint's weights do not match the model its config describes."""


__all__ = [
    "CheckpointError",
    "InputFormatError",
    "KbFormatError",
    "MlukeError",
    "NotFoundError",
    "OptionError",
    "OutputExistsError",
    "SchemaVersionError",
    "TemplateError",
    "TextInputError",
    "UnknownLanguageError",
]
