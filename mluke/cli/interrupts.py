"""Ctrl-C that is never lost: Python turns SIGINT into a ``KeyboardInterrupt`` in whatever code runs at that
moment, and when that is a finaliser (a generator closed by the garbage collector, a ``__del__``) the exception
is printed as "Exception ignored" and dropped, so a command would go on to the end and write its output as if
nobody had pressed Ctrl-C. :func:`remembered_interrupts` keeps a note of the signal (and keeps the dropped
exception's "Exception ignored" trace off the terminal), and :func:`checked` raises ``KeyboardInterrupt`` again
between the items of a stream once it has come."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def remembered_interrupts() -> Iterator[Callable[[], None]]:
    """While the block runs, Ctrl-C raises ``KeyboardInterrupt`` as usual and is also remembered; yields a
    check that raises ``KeyboardInterrupt`` once Ctrl-C has come. A ``KeyboardInterrupt`` that a finaliser
    drops is not printed (``sys.unraisablehook``): the check raises it. Where SIGINT is ignored (a background
    job) or cannot be handled (not the main thread) nothing changes and the check never raises."""
    pressed = threading.Event()

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        pressed.set()
        signal.default_int_handler(signum, frame)

    def check() -> None:
        if pressed.is_set():
            raise KeyboardInterrupt

    def unraisable(what: sys.UnraisableHookArgs) -> None:
        if not (pressed.is_set() and isinstance(what.exc_value, KeyboardInterrupt)):
            hook(what)

    try:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            yield check
            return
        previous = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # signal handlers are set in the main thread only
        yield check
        return
    hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook


def checked(stream: Iterable[T], check: Callable[[], None]) -> Iterator[T]:
    """The items of ``stream``, calling ``check`` (:func:`remembered_interrupts`) after each one and at the end,
    so a Ctrl-C whose ``KeyboardInterrupt`` was dropped still stops the command before it writes its output."""
    for item in stream:
        yield item
        check()
    check()
