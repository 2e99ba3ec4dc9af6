"""mpstat: ``mpstat -P ALL -u <interval>`` for the whole iteration (sysstat), MMTests' ``mpstat``
monitor.

Columns are taken by name from mpstat's header line (``CPU %usr %nice %sys %iowait %irq %soft
%steal %guest %gnice %idle``).  A data line's last fields are those values and the field before
them is the CPU (``all`` or a number); ``Average:`` lines, banners and MMTests' ``time:`` lines are
skipped.  Summary: each column of the ``all`` rows (``all %usr`` ...) and the busiest CPU per
interval (``max-cpu %busy`` = 100 − the smallest %idle), whose Amean and Max compare shows.  Files
imported from MMTests (``mpstat-<test>``) read the same way.  Cost: one mpstat process waking
each interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmbench.monitors._tooltext import ToolTextMonitor, read_log, strip_prefix
from mmbench.monitors.base import MonitorSummary
from mmbench.model.results import MetricDef


def parse(lines: list[str]) -> tuple[list[str], list[tuple[str, list[float]]]]:
    """mpstat's value columns and its (cpu, values) rows in order; ValueError("line N: ...") on a
    data row that does not match the header."""
    cols: list[str] | None = None
    rows: list[tuple[str, list[float]]] = []
    for n, raw in enumerate(lines, start=1):
        line = strip_prefix(raw).strip()
        if not line or line.startswith(("time:", "Average:", "Linux")):
            continue
        f = line.split()
        if "CPU" in f and any(x.startswith("%") for x in f):
            cols = f[f.index("CPU") + 1 :]
            continue
        if cols is None:
            raise ValueError(f"line {n}: data before mpstat's header line '... CPU %usr ...'")
        if len(f) < len(cols) + 1:
            raise ValueError(f"line {n}: {len(f)} fields, expected a time, the CPU and {len(cols)} values")
        cpu = f[-len(cols) - 1]
        try:
            vals = [float(x) for x in f[-len(cols) :]]
        except ValueError:
            raise ValueError(f"line {n}: expected {len(cols)} numbers after the CPU") from None
        if cpu != "all" and not cpu.isdigit():
            raise ValueError(f"line {n}: CPU is {cpu!r}, expected 'all' or a number")
        rows.append((cpu, vals))
    return cols or [], rows


class Mpstat(ToolTextMonitor):
    name = "mpstat"
    tool = "mpstat"
    package = "sysstat"
    summary = "mpstat -P ALL: CPU time split (usr, sys, iowait, irq, soft, steal, idle), all CPUs and busiest"
    default_interval = 1.0

    def argv(self, interval: int) -> list[str]:
        return ["mpstat", "-P", "ALL", "-u", str(interval)]

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        try:
            cols, rows = parse(read_log(outdir, meta, cls.name))
        except ValueError as e:
            return MonitorSummary(notes=[f"mpstat output unreadable: {e}"])
        alls = [v for cpu, v in rows if cpu == "all"]
        if not alls:
            return MonitorSummary(notes=["no mpstat samples"])
        out = MonitorSummary()
        for i, c in enumerate(cols):
            better = "higher" if c == "%idle" else "lower"
            out.metrics.append(
                (MetricDef(f"all {c}", "%", better, "percent", "amean", f"{c} of all CPUs"), [v[i] for v in alls])
            )
        if "%idle" in cols:
            # the interval's rows: from one "all" row to the next
            idle = cols.index("%idle")
            busiest: list[float] = []
            cur: list[float] = []
            for cpu, v in rows + [("all", [])]:
                if cpu == "all":
                    if cur:
                        busiest.append(100.0 - min(cur))
                    cur = []
                else:
                    cur.append(v[idle])
            if busiest:
                out.metrics.append(
                    (
                        MetricDef(
                            "max-cpu %busy",
                            "%",
                            "lower",
                            "percent",
                            "amean",
                            "100 - %idle of the busiest CPU in each interval",
                        ),
                        busiest,
                    )
                )
        return out
