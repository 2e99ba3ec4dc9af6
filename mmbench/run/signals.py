"""SIGINT/SIGTERM/SIGHUP during a run or a restore: stop at a safe point, never mid-teardown.

``catch_signals()`` installs one handler for the three signals.  Outside a held region the first
signal raises at once (``KeyboardInterrupt`` for SIGINT, ``Interrupted`` for the others) so a
running workload is cut short; later signals only print that the machine is being put back.
Inside ``held()`` (journal restore, sandbox and monitor teardown, storing an iteration, finishing
a run) the signal is only remembered: ``checkpoint()`` raises it at the next safe point, and
``pending()`` lets a loop (``mmbench restore``) stop between two undo steps.  Python runs signal
handlers in the main thread only, so a flag is enough; ``pthread_sigmask`` would not be (a helper
thread with the signal unblocked would still take it).
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Iterator

from mmbench.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _State:
    def __init__(self) -> None:
        self.depth = 0  # nesting of held() regions
        self.pending: int | None = None  # a signal that arrived while held, not raised yet
        self.stopping = False  # a signal was raised already: later ones are ignored
        self.raised: int | None = None  # the signal raised (it may have been swallowed)
        self.installed = False


_state = _State()
_ignore_after = False  # set by the CLI: once a run or restore is over, the process only exits
_late: int | None = None  # a signal that came as the run or restore was ending (nothing cut short)


def ignore_after_exit() -> None:
    """After ``catch_signals`` ends, only record SIGINT/SIGTERM/SIGHUP instead of restoring
    Python's handlers: a signal in the last moments before exit (the work done, the machine put
    back) must neither kill the process mid-print nor print a traceback, yet the command still
    exits 130/143 for it (``late_signal``), as docs/cli.md promises."""
    global _ignore_after
    _ignore_after = True


def _record_late(signum: int, frame: object) -> None:
    note_late(signum)


def note_late(signum: int | None) -> None:
    """Remember a signal that arrived when nothing was left to cut short (the first one counts)."""
    global _late
    if signum is not None and _late is None:
        _late = signum


def late_signal() -> int | None:
    """The signal that arrived as the work was ending (the CLI exits 128 + it), if any."""
    return _late


def catching_after_exit() -> bool:
    """Whether this process records signals to the end (a run or restore: ``ignore_after_exit``)."""
    return _ignore_after


_reported = False
late_context = "all done"  # what is true when a late signal comes: set by the command


def report_late() -> None:
    """Note that the late signal was said (the CLI says it otherwise)."""
    global _reported
    _reported = True


def late_reported() -> bool:
    return _reported


def _exception(signum: int) -> BaseException:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Interrupted(signal.Signals(signum).name)


def _handler(signum: int, frame: object) -> None:
    if _state.stopping:
        print("mmbench: still putting the machine back; please wait", file=sys.stderr, flush=True)
        return
    if _state.depth > 0:
        if _state.pending is None:
            _state.pending = signum
        return
    _state.stopping = True
    _state.raised = signum
    raise _exception(signum)


@contextmanager
def catch_signals() -> Iterator[None]:
    """Install the handler for the duration of a run or restore; the old handlers come back after."""
    old = {s: signal.signal(s, _handler) for s in SIGNALS}
    _state.__init__()
    _state.installed = True
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, _record_late if _ignore_after else h)
        # An exception raised where Python swallows it (a __del__, a weakref callback: "Exception
        # ignored in ...") let the work go on to the end; the signal still decides the status.
        note_late(_state.raised)
        _state.__init__()


@contextmanager
def held() -> Iterator[None]:
    """A region no signal may cut short: signals arriving inside are deferred to ``checkpoint``."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1


def pending() -> int | None:
    """The deferred signal, if one arrived inside a held region and was not raised yet."""
    return _state.pending


def take_pending() -> int | None:
    """The deferred signal (forgotten here: the caller deals with it)."""
    s, _state.pending = _state.pending, None
    if s is not None:
        _state.stopping = True
    return s


def checkpoint() -> None:
    """A safe point: raise the signal that arrived while held (outside held regions only)."""
    if _state.depth == 0 and _state.pending is not None and not _state.stopping:
        signum = take_pending()
        assert signum is not None
        raise _exception(signum)


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name
