"""Progress of ``mmbench run``: what runs now, iteration i/N, elapsed and estimated time left.

``PlainProgress`` prints one line per event (not a TTY, or ``--quiet`` for errors only);
``JsonProgress`` prints one JSON object per event for machines (``--json-log``);
``LiveProgress`` redraws a status line on a terminal (rich; ``NO_COLOR`` respected).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.t0 = time.monotonic()
        self.total = 0
        self.done = 0
        self.durations: list[float] = []
        self.monitors: list[str] = []

    def eta(self) -> float | None:
        if not self.durations or self.total <= self.done:
            return None
        return (sum(self.durations) / len(self.durations)) * (self.total - self.done)

    def event(self, kind: str, message: str, **data: Any) -> None:
        raise NotImplementedError

    def start_iteration(self, suite: str, workload: str, index: int, count: int, warmup: bool) -> None:
        self._it_t0 = time.monotonic()
        tag = " (warm-up)" if warmup else ""
        self.event("iteration-start", f"{suite}: {workload} iteration {index + 1}/{count}{tag}",
                   suite=suite, workload=workload, iteration=index, of=count, warmup=warmup)

    def end_iteration(self, workload: str, index: int, status: str, reason: str | None,
                      elapsed: float) -> None:
        self.done += 1
        self.durations.append(time.monotonic() - self._it_t0)
        eta = self.eta()
        msg = f"  {workload} iteration {index + 1}: {status} in {elapsed:.2f} s"
        if reason:
            msg += f" ({reason})"
        if eta is not None:
            msg += f"; about {eta:.0f} s left"
        self.event("iteration-end", msg, workload=workload, iteration=index, status=status,
                   reason=reason, elapsed=elapsed, eta=eta)

    def info(self, message: str) -> None:
        self.event("info", message)

    def warn(self, message: str) -> None:
        self.event("warning", message)

    def close(self) -> None:
        pass


class PlainProgress(Progress):
    def event(self, kind: str, message: str, **data: Any) -> None:
        if self.quiet and kind not in ("warning", "error"):
            return
        t = time.monotonic() - self.t0
        print(f"[{t:7.1f}s] {message}", file=self.stream, flush=True)


class JsonProgress(Progress):
    def event(self, kind: str, message: str, **data: Any) -> None:
        print(json.dumps({"time": round(time.time(), 3), "event": kind, "message": message, **data}),
              file=self.stream, flush=True)


class LiveProgress(PlainProgress):
    """A status line redrawn in place on a terminal; events still scroll above it."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        from rich.console import Console
        self.console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")),
                               highlight=False)
        self._status = None

    def event(self, kind: str, message: str, **data: Any) -> None:
        if kind == "iteration-start":
            active = f"  monitors: {', '.join(self.monitors)}" if self.monitors else ""
            eta = self.eta()
            left = f"  ~{eta:.0f}s left" if eta is not None else ""
            text = f"{message}  [{self.done}/{self.total} done, {time.monotonic() - self.t0:.0f}s]{left}{active}"
            if self._status is None:
                self._status = self.console.status(text)
                self._status.start()
            else:
                self._status.update(text)
            return
        style = {"warning": "yellow", "error": "red"}.get(kind, "")
        self.console.print(message, style=style or None, markup=False)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()


def make_progress(quiet: bool = False, json_log: bool = False) -> Progress:
    if json_log:
        return JsonProgress()
    if not quiet and sys.stderr.isatty() and os.environ.get("TERM") != "dumb":
        return LiveProgress()
    return PlainProgress(quiet=quiet)
