"""Progress of ``mmbench run``: what runs now, iteration i (the number of its ``iter-i`` folder
and of ``mmbench show``, from 0) and how far along, elapsed and estimated time left.

``make_progress`` picks one of:

* ``LiveProgress`` on a terminal: a status block redrawn in place (rich) with the suite, the
  workload and iteration i/N, the iterations done of the run, elapsed time, the estimate of the
  time left and the monitors active; messages scroll above it.  ``NO_COLOR`` turns colour off.
* ``PlainProgress`` when stderr is not a terminal (or ``TERM=dumb``): one line per event,
  ``[elapsed] message``; with ``--quiet`` only warnings and errors.
* ``JsonProgress`` with ``--json-log``: one JSON object per line and event, for machines:
  ``{"time", "event", "message", "elapsed", ...}`` with ``suite``, ``workload``, ``iteration``,
  ``of``, ``warmup``, ``done``, ``total``, ``monitors`` and ``eta`` (seconds or null) on the
  iteration events.

The estimate: the mean duration of this workload's finished iterations for what is left of it,
and the mean of all finished iterations for the rest of the run (``None`` before the first
iteration ends).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, TextIO


def fmt_duration(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``1h02m``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Base: keeps the counts and the estimate; subclasses decide how events are shown."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.t0 = time.monotonic()
        self._total = 0
        self.done = 0
        self.durations: list[float] = []
        self.by_workload: dict[str, list[float]] = {}
        self.monitors: list[str] = []  # set by the runner
        self.suite = ""
        self.workload = ""
        self.index = 0
        self.count = 0
        self.warmup = False
        self._it_t0: float | None = None
        self._monitors_announced = False

    @property
    def total(self) -> int:
        """Iterations of the whole run.  The runner sets it once the machine is its own (after
        waiting for another mmbench's lock): elapsed time counts from there."""
        return self._total

    @total.setter
    def total(self, n: int) -> None:
        if not self.done and self._it_t0 is None:
            self.t0 = time.monotonic()
        self._total = n

    # ---- the estimate ------------------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def eta(self) -> float | None:
        """Seconds left for the run, or None before anything finished (or when all is done)."""
        if not self.durations or self.total <= self.done:
            return None
        left = self.total - self.done
        overall = sum(self.durations) / len(self.durations)
        mine = self.by_workload.get(self.workload)
        if mine and self.count:
            # iterations of the current workload not finished yet (the running one included)
            finished_here = len(mine)
            in_workload = min(left, max(0, self.count - finished_here))
            est = in_workload * (sum(mine) / len(mine)) + (left - in_workload) * overall
        else:
            est = left * overall
        if self._it_t0 is not None and self.done < self.total:
            est -= min(time.monotonic() - self._it_t0, est)  # the running iteration is partly done
        return max(0.0, est)

    # ---- events --------------------------------------------------------------------------------

    def event(self, kind: str, message: str, **data: Any) -> None:
        raise NotImplementedError

    def start_iteration(self, suite: str, workload: str, index: int, count: int, warmup: bool) -> None:
        if workload != self.workload:
            self.by_workload.setdefault(workload, [])
        self.suite, self.workload, self.index, self.count, self.warmup = suite, workload, index, count, warmup
        self._it_t0 = time.monotonic()
        if self.monitors and not self._monitors_announced:
            self._monitors_announced = True
            self.event("monitors", f"monitors active: {', '.join(self.monitors)}", monitors=list(self.monitors))
        tag = " (warm-up)" if warmup else ""
        self.event(
            "iteration-start",
            f"{suite}: {workload} iteration {index} ({index + 1} of {count}){tag}",
            suite=suite,
            workload=workload,
            iteration=index,
            of=count,
            warmup=warmup,
            done=self.done,
            total=self.total,
            monitors=list(self.monitors),
            eta=_round(self.eta()),
        )

    def end_iteration(self, workload: str, index: int, status: str, reason: str | None, elapsed: float) -> None:
        took = time.monotonic() - (self._it_t0 if self._it_t0 is not None else self.t0)
        self._it_t0 = None
        self.done += 1
        self.durations.append(took)
        self.by_workload.setdefault(workload, []).append(took)
        eta = self.eta()
        msg = f"  {workload} iteration {index}: {status} in {elapsed:.2f} s"
        if reason:
            msg += f" ({reason})"
        if eta is not None:
            msg += f"; {self.done}/{self.total} done, about {fmt_duration(eta)} left"
        self.event(
            "iteration-end",
            msg,
            workload=workload,
            iteration=index,
            status=status,
            reason=reason,
            elapsed_s=elapsed,
            done=self.done,
            total=self.total,
            eta=_round(eta),
        )

    def info(self, message: str) -> None:
        self.event("info", message)

    def warn(self, message: str) -> None:
        self.event("warning", message)

    def error(self, message: str) -> None:
        self.event("error", message)

    def close(self) -> None:
        pass


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


class PlainProgress(Progress):
    """One line per event: ``[  12.3s] message``.  Quiet: warnings and errors only."""

    def event(self, kind: str, message: str, **data: Any) -> None:
        if self.quiet and kind not in ("warning", "error"):
            return
        prefix = {"warning": "warning: ", "error": "error: "}.get(kind, "")
        print(f"[{self.elapsed():7.1f}s] {prefix}{message}", file=self.stream, flush=True)


class JsonProgress(Progress):
    """One JSON object per event and line."""

    def event(self, kind: str, message: str, **data: Any) -> None:
        obj = {
            "time": round(time.time(), 3),
            "event": kind,
            "message": message,
            "elapsed": round(self.elapsed(), 3),
            **data,
        }
        print(json.dumps(obj, default=str), file=self.stream, flush=True)


class LiveProgress(PlainProgress):
    """A status block redrawn in place on a terminal; messages scroll above it."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        from rich.console import Console

        no_color = bool(os.environ.get("NO_COLOR"))
        self.console = Console(
            file=self.stream, no_color=no_color, highlight=False, color_system=None if no_color else "auto"
        )
        self._live = None

    def status_text(self):
        """The status block (a rich Text): also what tests look at."""
        from rich.text import Text

        t = Text()
        if not self.workload:
            t.append("starting…")
            return t
        t.append(f"{self.suite}", style="bold")
        t.append(f"  {self.workload}", style="bold cyan")
        t.append(f"  iteration {self.index} ({self.index + 1} of {self.count})")
        if self.warmup:
            t.append(" (warm-up)", style="dim")
        if self._it_t0 is not None:
            t.append(f"  running {fmt_duration(time.monotonic() - self._it_t0)}", style="dim")
        t.append("\n")
        width = 24
        frac = self.done / self.total if self.total else 0.0
        filled = int(round(frac * width))
        t.append("━" * filled, style="green")
        t.append("━" * (width - filled), style="grey35")
        t.append(f"  {self.done}/{self.total} iterations  elapsed {fmt_duration(self.elapsed())}")
        eta = self.eta()
        if eta is not None:
            t.append(f"  left ~{fmt_duration(eta)}", style="yellow")
        elif self.total and self.done >= self.total:
            t.append("  finishing", style="yellow")
        else:
            t.append("  left: estimating", style="yellow")
        t.append("\n")
        t.append("monitors: ", style="dim")
        t.append(", ".join(self.monitors) if self.monitors else "none")
        return t

    def _ensure_live(self) -> None:
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                get_renderable=self.status_text,
                console=self.console,
                refresh_per_second=4,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def event(self, kind: str, message: str, **data: Any) -> None:
        if kind == "iteration-start":
            self._ensure_live()
            return
        if kind == "monitors":
            return  # shown in the status block
        if self.quiet and kind not in ("warning", "error"):
            return
        style = {"warning": "yellow", "error": "bold red"}.get(kind)
        prefix = {"warning": "warning: ", "error": "error: "}.get(kind, "")
        self.console.print(f"[{self.elapsed():7.1f}s] {prefix}{message}", style=style, markup=False, highlight=False)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def make_progress(quiet: bool = False, json_log: bool = False, stream: TextIO | None = None) -> Progress:
    """``--json-log`` → JSON lines; a terminal → live status; otherwise (or ``--quiet``) plain lines."""
    stream = stream or sys.stderr
    if json_log:
        return JsonProgress(stream)
    if not quiet and stream.isatty() and os.environ.get("TERM") != "dumb":
        return LiveProgress(stream)
    return PlainProgress(stream, quiet=quiet)
