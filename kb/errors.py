"""Exceptions raised by mluke.

``MlukeError`` is the one base class of every error the library raises on
purpose; the CLI prints its message without a traceback. It lives in ``kb``
because ``kb`` is the bottom layer that both ``mluke`` and ``probes`` import.

A message may tell the user which option would fix the problem. Python users
and command-line users spell options differently (``overwrite=True`` and
``--overwrite``), so such a message names the option as ``{name}`` and gives
both spellings in ``options`` (see :func:`flag` and :func:`option`):
``str(error)`` reads as Python, :meth:`MlukeError.for_cli` as the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: The error classes, the one list: ``kb`` (lazily) and :mod:`mluke.errors` re-export these names. The helpers
#: for raising (:class:`Option`, :func:`flag`, :func:`option`) stay out of it.
__all__ = [
    "InputFormatError",
    "KbFormatError",
    "MlukeError",
    "NotFoundError",
    "OptionError",
    "OutputError",
    "OutputExistsError",
    "SchemaVersionError",
    "TemplateError",
    "TextInputError",
    "UnknownLanguageError",
]


@dataclass(frozen=True)
class Option:
    """One option in its two spellings: as a Python keyword argument and as a CLI flag."""

    python: str
    cli: str


def _cli_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def flag(name: str, cli: str | None = None) -> Option:
    """A boolean option: ``flag("overwrite")`` reads ``overwrite=True`` / ``--overwrite``."""
    return Option(f"{name}=True", cli or _cli_name(name))


def option(name: str, value: object, cli: str | None = None) -> Option:
    """An option with a value: ``option("relation", "P..")`` reads ``relation='P..'`` / ``--relation P..``."""
    return Option(f"{name}={value!r}", f"{cli or _cli_name(name)} {value}")


class MlukeError(Exception):
    """Base class of all errors raised by mluke on purpose.

    ``message`` may hold ``{name}`` for each option in ``options`` (see the module docs).
    """

    def __init__(self, message: str = "", *, options: Mapping[str, Option] | None = None) -> None:
        self.message = message
        self.options = dict(options or {})
        super().__init__(self._render(cli=False))

    def _render(self, *, cli: bool) -> str:
        text = self.message
        for name, opt in self.options.items():
            text = text.replace("{" + name + "}", opt.cli if cli else opt.python)
        return text

    def for_cli(self) -> str:
        """The message with options spelled as command-line flags."""
        return self._render(cli=True)


class InputFormatError(MlukeError):
    """An input file is missing, unreadable, of the wrong type, or not in the expected layout."""


#: The earlier name of :class:`InputFormatError`, kept for code written against it.
KbFormatError = InputFormatError


class SchemaVersionError(InputFormatError):
    """A database was written by a different, incompatible schema version."""


class TemplateError(MlukeError, ValueError):
    """A relation template does not have exactly one [X] and one [Y]."""


class UnknownLanguageError(MlukeError, ValueError):
    """A language code is malformed or not available where it was asked for."""


class NotFoundError(MlukeError, LookupError):
    """An entity, title, property or vocabulary entry does not exist."""


class OutputExistsError(MlukeError, FileExistsError):
    """Refusing to overwrite a file the user already has."""


class OutputError(MlukeError, OSError):
    """An output cannot be written where it was asked for (a read-only folder, no permission, a full disk, a
    path under a regular file); the message names the path."""


class OptionError(MlukeError, ValueError):
    """An option is out of range or inconsistent with the data (e.g. a threshold outside [0, 1])."""


class TextInputError(MlukeError, TypeError):
    """Text given to a detector or linker is not a string (or a batch of texts is a single string)."""
