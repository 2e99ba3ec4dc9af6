"""The monitor plugin interface.

A monitor is one module in ``mmbench/monitors/`` defining a ``Monitor`` subclass.  The runner
starts every monitor named in the suite before each workload iteration and stops it after; files
go to ``ctx.outdir``.  A monitor that cannot work on this kernel says why in
``unavailable_reason`` (said once, plainly, and the run goes on).  ``summarise`` turns the files
back into metrics for ``mmbench compare`` (its own section per monitor).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal

from mmbench.errors import UsageError
from mmbench.model.params import Param
from mmbench.model.results import MetricDef


@dataclass
class MonitorContext:
    outdir: Path  # this iteration's folder for this monitor
    interval: float  # seconds
    params: dict[str, Any]
    sandbox_paths: dict[str, Path]  # controller name ("memory", "unified", ...) → cgroup dir
    sandbox_pids: Callable[[], list[int]]
    journal: Any  # run.journal.Journal: record every tracefs/sysfs change
    log: Callable[[str], None] = print
    extra: dict[str, Any] = field(default_factory=dict)
    # Compiles a C source beside the monitor's module (built once, cached) → program path.
    binary: Callable[[Path], str] | None = None


@dataclass(frozen=True)
class SeriesSpec:
    """A time series the HTML report and ``mmbench plot`` draw from a sampling monitor's columns:
    ``gauge`` plots the summed columns (times ``scale``), ``rate`` their per-second change
    (``minus`` columns subtracted first), ``psi`` a PSI ``total`` (µs) as % of each interval."""

    key: str
    title: str
    unit: str
    columns: tuple[str, ...]  # summed
    mode: Literal["gauge", "rate", "psi"] = "gauge"
    scale: float = 1.0
    minus: tuple[str, ...] = ()  # subtracted (rate mode)


@dataclass
class MonitorSummary:
    """Metrics derived from one iteration of one monitor: name → (definition, values)."""

    metrics: list[tuple[MetricDef, list[float]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


SUMMARY_CACHE = "summary.json"
SUMMARY_VERSION = 1


def load_summary(cls: type["Monitor"], outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
    """``cls.summarise`` through a cache (``summary.json`` in the monitor's folder).

    The runner computes it once when the monitor stops, so ``compare`` and ``report`` read a small
    JSON file instead of re-parsing traces and time series.  The cache is used only while it is
    newer than every other file in the folder.
    """
    import json
    import os

    cache = Path(outdir) / SUMMARY_CACHE
    try:
        st = cache.stat()
        newest = max((p.stat().st_mtime_ns for p in Path(outdir).iterdir() if p.name != SUMMARY_CACHE), default=0)
        if st.st_mtime_ns >= newest:
            # validated (model/files.py): a damaged or foreign cache is recomputed, never misread
            from mmbench.model.files import read_checked

            data = read_checked(cache, "summary")
            if data["version"] == SUMMARY_VERSION and data["monitor"] == getattr(cls, "name", ""):
                return MonitorSummary(
                    metrics=[(MetricDef.from_dict(m), v) for m, v in data["metrics"]], notes=data["notes"]
                )
    except (OSError, UsageError):
        pass
    summary = cls.summarise(outdir, meta)
    try:
        tmp = cache.with_name(f".{SUMMARY_CACHE}.{os.getpid()}")
        tmp.write_text(
            json.dumps(
                {
                    "version": SUMMARY_VERSION,
                    "monitor": getattr(cls, "name", ""),
                    "notes": summary.notes,
                    "metrics": [(m.to_dict(), [float(x) for x in v]) for m, v in summary.metrics],
                }
            )
        )
        os.replace(tmp, cache)
        from mmbench.model.files import read_checked

        read_checked(cache, "summary")  # its verdict recorded now: the next compare skips pydantic
    except (OSError, ValueError, UsageError):
        pass  # a read-only store still compares, just slower
    return summary


class Monitor:
    """Base class of every monitor plugin."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    default_interval: ClassVar[float] = 1.0
    params: ClassVar[dict[str, Param]] = {}
    series: ClassVar[tuple[SeriesSpec, ...]] = ()  # what the report graphs (sampling monitors)
    # The metric names its summary can produce, as fnmatch patterns (case-insensitive): what a
    # suite's `[suite] primary` may name from this monitor (config/primary.py).  Keep them
    # matching when a row is added or renamed.
    row_patterns: ClassVar[tuple[str, ...]] = ()
    # Started after every other monitor and stopped before them, so that what it measures brackets
    # the workload as closely as it can (insn-count).
    innermost: ClassVar[bool] = False

    def unavailable_reason(self) -> str | None:
        """None when the monitor can run here, else a plain sentence why not."""
        return None

    def start(self, ctx: MonitorContext) -> None:
        raise NotImplementedError

    def stop(self) -> dict[str, Any]:
        """Stop and flush; returns metadata stored with the iteration (files, counts, notes)."""
        raise NotImplementedError

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        return MonitorSummary()

    @classmethod
    def finish_deferred(
        cls, outdir: Path, meta: dict[str, Any], binary: Callable[[Path], str] | None
    ) -> dict[str, Any]:
        """Work ``stop`` left for later (in a VM guest, mm-trace leaves decoding to the host): done
        on the host once the guest has powered off; returns the iteration's new metadata."""
        return meta


class SamplingMonitor(Monitor):
    """A monitor that reads something every interval in a background thread.

    Subclasses implement ``sample() -> dict[str, float]``; rows go to ``<name>.tsv`` in the
    outdir: a header ``time<TAB>col...`` fixed by the first sample, then one row per sample
    (time in seconds since start, monotonic clock).
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ctx: MonitorContext | None = None
        self._columns: list[str] | None = None
        self._fh = None
        self._rows = 0
        self._errors: list[str] = []

    def setup(self, ctx: MonitorContext) -> None:
        """Called once before sampling starts (open files, find paths)."""

    def sample(self) -> dict[str, float]:
        raise NotImplementedError

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        from mmbench.monitors._common import load_tsv, tsv_of

        cols, arr = load_tsv(tsv_of(outdir, meta, cls.name))
        if not len(arr):
            return MonitorSummary(notes=["no samples were recorded"])
        return cls.summarise_table(cols, arr, meta)

    @classmethod
    def load_columns(cls, outdir: Path, meta: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Time and every column of the monitor's tsv as numpy arrays (for graphs)."""
        from mmbench.monitors._common import load_tsv, tsv_of

        cols, arr = load_tsv(tsv_of(outdir, meta, cls.name))
        return arr[:, 0], {c: arr[:, i + 1] for i, c in enumerate(cols)}

    @classmethod
    def summarise_table(cls, cols: list[str], arr: Any, meta: dict[str, Any]) -> MonitorSummary:
        """Metrics from the time series: ``cols`` names the columns after ``arr[:, 0]`` (time)."""
        return MonitorSummary()

    def start(self, ctx: MonitorContext) -> None:
        import time

        self._ctx = ctx
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self.setup(ctx)
        self._fh = open(ctx.outdir / f"{self.name}.tsv", "w")
        self._t0 = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"monitor-{self.name}", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        import time

        t = time.monotonic() - self._t0
        row = self.sample()
        if self._columns is None:
            self._columns = list(row)
            self._fh.write("time\t" + "\t".join(self._columns) + "\n")
        self._fh.write(f"{t:.3f}\t" + "\t".join(_fmt(row.get(c)) for c in self._columns) + "\n")
        self._rows += 1

    def _loop(self) -> None:
        assert self._ctx is not None
        while True:
            try:
                self._write()
            except Exception as e:  # a failing read is recorded, the run goes on
                if len(self._errors) < 5:
                    self._errors.append(f"{type(e).__name__}: {e}")
            if self._stop.wait(self._ctx.interval):
                break

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        try:
            self._write()  # a final sample closes the last interval
        except Exception as e:
            self._errors.append(f"{type(e).__name__}: {e}")
        if self._fh:
            self._fh.close()
        return {"files": [f"{self.name}.tsv"], "samples": self._rows, "errors": self._errors}


def _fmt(v: float | None) -> str:
    if v is None:
        return "nan"
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return f"{v:.6g}"
