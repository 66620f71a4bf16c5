"""Exceptions raised by mluke.

``MlukeError`` is the one base class of every error the library raises on
purpose; the CLI prints its message without a traceback. It lives in ``kb``
because ``kb`` is the bottom layer that both ``mluke`` and ``probes`` import.
"""

from __future__ import annotations


class MlukeError(Exception):
    """Base class of all errors raised by mluke on purpose."""


class KbFormatError(MlukeError):
    """A file is missing, of the wrong type, or not in the expected layout."""


class SchemaVersionError(KbFormatError):
    """A database was written by a different, incompatible schema version."""


class TemplateError(MlukeError, ValueError):
    """A relation template does not have exactly one [X] and one [Y]."""


class UnknownLanguageError(MlukeError, ValueError):
    """A language code is malformed or not available where it was asked for."""


class NotFoundError(MlukeError, LookupError):
    """An entity, title, property or vocabulary entry does not exist."""


class OutputExistsError(MlukeError, FileExistsError):
    """Refusing to overwrite a file the user already has."""


class OptionError(MlukeError, ValueError):
    """An option is out of range or inconsistent with the data (e.g. a threshold outside [0, 1])."""


class TextInputError(MlukeError, TypeError):
    """Text given to a detector is not a string (or a batch of texts is a single string)."""
