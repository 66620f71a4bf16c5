"""Ctrl-C is never lost by the CLI (mluke.cli.interrupts)."""

import os
import signal
import sys
import time

import pytest

from mluke.cli.interrupts import checked, remembered_interrupts


def _press_ctrl_c_and_drop_it() -> None:
    """SIGINT to this process, its KeyboardInterrupt swallowed as a finaliser would swallow it."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs at the next bytecode
    except KeyboardInterrupt:
        pass


def test_a_dropped_keyboard_interrupt_still_stops_the_stream():
    before = signal.getsignal(signal.SIGINT)
    with remembered_interrupts() as check:
        items = checked(range(5), check)
        assert next(items) == 0
        assert next(items) == 1
        _press_ctrl_c_and_drop_it()
        with pytest.raises(KeyboardInterrupt):
            next(items)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_stream_without_ctrl_c_passes_whole():
    with remembered_interrupts() as check:
        assert list(checked(iter("abc"), check)) == ["a", "b", "c"]


def test_ctrl_c_at_the_last_item_stops_before_the_end():
    with remembered_interrupts() as check:
        items = checked(["only"], check)
        assert next(items) == "only"
        _press_ctrl_c_and_drop_it()
        with pytest.raises(KeyboardInterrupt):
            next(items)  # the stream is done, but the output must not be written as complete


def test_an_ignored_sigint_stays_ignored():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with remembered_interrupts() as check:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            assert list(checked([1, 2], check)) == [1, 2]
    finally:
        signal.signal(signal.SIGINT, before)


class _PressesCtrlCWhenCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the KeyboardInterrupt is raised here, inside the finaliser, and Python drops it


class _FailsWhenCollected:
    def __del__(self):
        raise ValueError("a finaliser's own error")


def test_ctrl_c_inside_a_finaliser_is_kept_quiet_and_raised_at_the_next_check():
    seen = []
    hook, sys.unraisablehook = sys.unraisablehook, seen.append  # what Python (or pytest) would print
    try:
        with remembered_interrupts() as check:
            items = checked([1, 2, 3], check)
            assert next(items) == 1
            _FailsWhenCollected()  # other errors of finalisers still reach the hook
            _PressesCtrlCWhenCollected()  # collected at once: its __del__ runs here
            with pytest.raises(KeyboardInterrupt):
                next(items)
        assert sys.unraisablehook == seen.append
    finally:
        sys.unraisablehook = hook
    assert [type(u.exc_value) for u in seen] == [ValueError]
