"""vmstat: ``vmstat -n <interval>`` for the whole iteration (procps), MMTests' ``vmstat`` monitor.

Columns are taken by name from vmstat's header line (``r b swpd free buff cache si so bi bo in cs
us sy id wa st`` and, procps ≥ 4, ``gu``), so any procps version reads.  The first data row is
vmstat's averages since boot and is skipped.  Summary, per column, its per-interval values, plus
``totalcpu`` = us + sy (MonitorVmstat.pm:15-145); compare shows their Amean and Max, as MMTests'
monitor summaries do.  Files imported from MMTests (``vmstat-<test>``, usually written through
latency-output) read the same way.  Cost: one vmstat process waking each interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmbench.monitors._tooltext import ToolTextMonitor, read_log, strip_prefix
from mmbench.monitors.base import MonitorSummary
from mmbench.model.results import MetricDef

# column → (unit, better, description)
COLUMNS: dict[str, tuple[str, str, str]] = {
    "r": ("tasks", "lower", "runnable tasks"),
    "b": ("tasks", "lower", "tasks in uninterruptible sleep"),
    "swpd": ("KiB", "lower", "swap used"),
    "free": ("KiB", "higher", "free memory"),
    "buff": ("KiB", "higher", "buffers"),
    "cache": ("KiB", "higher", "page cache"),
    "si": ("KiB/s", "lower", "swapped in"),
    "so": ("KiB/s", "lower", "swapped out"),
    "bi": ("blocks/s", "lower", "blocks read"),
    "bo": ("blocks/s", "lower", "blocks written"),
    "in": ("/s", "lower", "interrupts"),
    "cs": ("/s", "lower", "context switches"),
    "us": ("%", "lower", "user CPU"),
    "sy": ("%", "lower", "system CPU"),
    "id": ("%", "higher", "idle CPU"),
    "wa": ("%", "lower", "IO wait"),
    "st": ("%", "lower", "stolen CPU"),
    "gu": ("%", "lower", "guest CPU"),
}


def parse(lines: list[str]) -> tuple[list[str], list[list[float]]]:
    """vmstat's columns and its data rows after the first; ValueError("line N: ...") on a row that
    is not numbers matching the header."""
    cols: list[str] | None = None
    rows: list[list[float]] = []
    first = True
    for n, raw in enumerate(lines, start=1):
        line = strip_prefix(raw).strip()
        if not line or line.startswith(("procs", "time:")):
            continue
        f = line.split()
        if f[0] == "r":
            cols = f
            continue
        if cols is None:
            raise ValueError(f"line {n}: data before vmstat's header line ' r  b   swpd ...'")
        if len(f) != len(cols):
            raise ValueError(f"line {n}: {len(f)} fields, the header has {len(cols)}")
        try:
            vals = [float(x) for x in f]
        except ValueError:
            raise ValueError(f"line {n}: expected {len(cols)} numbers") from None
        if first:  # averages since boot
            first = False
            continue
        rows.append(vals)
    return cols or [], rows


class Vmstat(ToolTextMonitor):
    name = "vmstat"
    tool = "vmstat"
    package = "procps"
    summary = "vmstat -n: run queue, memory, swap and block IO, interrupts, context switches, CPU %"
    default_interval = 1.0

    def argv(self, interval: int) -> list[str]:
        return ["vmstat", "-n", str(interval)]

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        try:
            cols, rows = parse(read_log(outdir, meta, cls.name))
        except ValueError as e:
            return MonitorSummary(notes=[f"vmstat output unreadable: {e}"])
        if not rows:
            return MonitorSummary(notes=["no vmstat samples after the first (since-boot) line"])
        out = MonitorSummary()
        for i, c in enumerate(cols):
            unit, better, desc = COLUMNS.get(c, ("", "lower", c))
            kind = "percent" if unit == "%" else "size" if unit == "KiB" else "count"
            out.metrics.append((MetricDef(c, unit, better, kind, "amean", desc), [r[i] for r in rows]))
        if "us" in cols and "sy" in cols:
            us, sy = cols.index("us"), cols.index("sy")
            out.metrics.append(
                (MetricDef("totalcpu", "%", "lower", "percent", "amean", "us + sy"), [r[us] + r[sy] for r in rows])
            )
        return out
