"""kthreads: CPU time of the kernel's memory-management threads.

Finds kswapd*, kcompactd*, khugepaged and kdamond* in /proc at start and reads each one's CPU time
every interval (a few us per thread): the scheduler's own account in nanoseconds, through the
thread's CPU-time clock (``clock_gettime`` of ``CPUCLOCK_SCHED`` for its pid), or where the kernel
refuses that, utime+stime from /proc/<pid>/stat in clock ticks (4 ms at HZ=250: a thread that ran
less than a tick shows 0).  Columns: thread name, CPU seconds so far.  Summary per thread: CPU %
of each interval and the total CPU seconds over the iteration (kdamond is DAMON's, owned by the
platform on this VM: it reclaims on its own).  In a TCG guest on the instruction clock a
thread's run time is the instructions it executed (times the clock's ns per instruction), so
there the summary also gives "kswapd0 instructions" and the like.
"""

from __future__ import annotations

import os
import time
from typing import Any

from mmbench.model.guest import GUEST_CLOCK_ENV

from mmbench.model.lazy import numpy as np

from mmbench.monitors._common import interval_share
from mmbench.monitors.base import MonitorContext, MonitorSummary, SamplingMonitor
from mmbench.model.quirks import KTHREADS
from mmbench.model.results import MetricDef

TICKS = os.sysconf("SC_CLK_TCK")


def find_kthreads() -> dict[str, int]:
    found: dict[str, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as fh:
                comm = fh.read().strip()
        except OSError:
            continue
        if comm.startswith(KTHREADS):
            name = comm if comm not in found else f"{comm}-{d}"
            found[name] = int(d)
    return dict(sorted(found.items()))


def sched_cpu_clock(pid: int) -> int:
    """The clock id of a process's CPU time as the scheduler accounts it (include/linux/posix-timers.h:
    ``CPUCLOCK_SCHED`` = 2, process-wide; a kernel thread is a process of one thread)."""
    return ((~pid) << 3) | 2


def cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` has run: the scheduler's run time (ns), else ticks from /proc."""
    try:
        return time.clock_gettime(sched_cpu_clock(pid))
    except OSError:
        return tick_cpu_seconds(pid)


def tick_cpu_seconds(pid: int) -> float:
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    try:
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    return stat_cpu_seconds(data)


def stat_cpu_seconds(stat: bytes) -> float:
    """utime + stime of a /proc/PID/stat line, in seconds.  The fields are counted after the last
    ")" because comm may itself hold spaces and parentheses."""
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Kthreads(SamplingMonitor):
    name = "kthreads"
    row_patterns = ("* CPU (s)", "* CPU %", "* instructions")
    summary = "CPU time of kswapd, kcompactd, khugepaged and kdamond threads"
    default_interval = 1.0

    def setup(self, ctx: MonitorContext) -> None:
        self._threads = find_kthreads()

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, pid in self._threads.items():
            try:
                out[name] = cpu_seconds(pid)
            except (OSError, ValueError):
                out[name] = float("nan")
        return out

    def stop(self) -> dict[str, Any]:
        meta = super().stop()
        meta["threads"] = getattr(self, "_threads", {})
        clock = os.environ.get(GUEST_CLOCK_ENV, "")
        if clock.startswith("instructions:"):  # "instructions:NS" (ns of guest time per instruction)
            meta["ns_per_instruction"] = int(clock.split(":", 1)[1])
        return meta

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        if len(arr) < 2:
            return out
        t = arr[:, 0]
        for i, c in enumerate(cols, start=1):
            d = np.diff(arr[:, i])
            out.metrics.append(
                (
                    MetricDef(
                        f"{c} CPU %",
                        "%",
                        "lower",
                        kind="percent",
                        mean="amean",
                        description=f"CPU used by {c} per interval",
                    ),
                    interval_share(t, arr[:, i]),
                )
            )
            total = np.nansum(d[d >= 0])
            out.metrics.append(
                (
                    MetricDef(
                        f"{c} CPU (s)",
                        "s",
                        "lower",
                        kind="time",
                        mean="amean",
                        description=f"CPU seconds used by {c} during the iteration",
                    ),
                    [float(total)],
                )
            )
            ns = meta.get("ns_per_instruction")
            if ns:
                out.metrics.append(
                    (
                        MetricDef(
                            f"{c} instructions",
                            "instructions",
                            "lower",
                            kind="count",
                            mean="amean",
                            description=f"instructions {c} executed: its run time on the guest's "
                            f"instruction clock ({ns} ns each)",
                        ),
                        [float(round(total * 1e9 / ns))],
                    )
                )
        return out
