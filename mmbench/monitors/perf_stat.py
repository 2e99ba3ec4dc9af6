"""perf-stat: software events and mm tracepoints counted by ``perf stat -I``, for the sandbox.

Runs ``perf stat -x, -I <interval ms> -e <events> -a -G <cgroup>`` for the whole iteration.  The
cgroup filter needs a perf_event cgroup: on cgroup v2 every cgroup is one (perf_event is implicit
there), so when the sandbox has a cgroup v2 directory (``sandbox_paths["unified"]``) the counts
are the sandbox's tasks only.  A cgroup v1 memory cgroup alone cannot be used (this machine has
no v1 perf_event hierarchy mounted): then the counts are system-wide and the meta notes say so.
Hardware counters (instructions, cycles) are added only when ``perf stat -e instructions true``
says they are supported (not in this VM).  Tracepoints need tracefs mounted (journaled).
Cost: counting in the kernel, one perf process waking each interval.
Summary: per-second rate of each event per interval, and its total.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.model.params import Param
from mmbench.monitors._common import clean, stop_process
from mmbench.monitors.base import Monitor, MonitorContext, MonitorSummary
from mmbench.monitors.trace.formats import expand_events
from mmbench.monitors.trace.tracefs import ensure_mounted, unmount
from mmbench.model.results import MetricDef

SOFTWARE = ["task-clock", "page-faults", "major-faults", "context-switches", "cpu-migrations"]
TRACEPOINTS = [
    "vmscan:mm_vmscan_direct_reclaim_begin",
    "vmscan:mm_vmscan_memcg_reclaim_begin",
    "vmscan:mm_vmscan_kswapd_wake",
    "vmscan:mm_vmscan_write_folio",
    "compaction:mm_compaction_begin",
    "kmem:mm_page_alloc_extfrag",
    "huge_memory:mm_collapse_huge_page",
    "oom:mark_victim",
]


@cache
def hardware_supported() -> bool:
    try:
        p = subprocess.run(
            ["perf", "stat", "-x,", "-e", "instructions", "true"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and "<not supported>" not in p.stderr and "instructions" in p.stderr


def _cgroup2_mount() -> Path | None:
    with open("/proc/mounts") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return Path(parts[1])
    return None


class PerfStat(Monitor):
    name = "perf-stat"
    summary = "perf stat counts (software events, mm tracepoints) for the sandbox cgroup"
    default_interval = 1.0
    params = {
        "events": Param("str_list", SOFTWARE + TRACEPOINTS, "events to count (perf list names)"),
    }

    def unavailable_reason(self) -> str | None:
        if not shutil.which("perf"):
            return "perf is not installed (apt-get install linux-perf); perf counts are not recorded"
        return None

    def start(self, ctx: MonitorContext) -> None:
        self._ctx = ctx
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self.notes: list[str] = []
        events = list((ctx.params or {}).get("events") or SOFTWARE + TRACEPOINTS)
        if any(":" in e for e in events):
            self._mounted = ensure_mounted(ctx.journal)
            have, missing = expand_events([e for e in events if ":" in e])
            if missing:
                self.notes.append("not on this kernel: " + ", ".join(missing))
            events = [e for e in events if ":" not in e] + [f"{s}:{n}" for s, n in have]
        else:
            self._mounted = False
        if hardware_supported():
            events += ["instructions", "cycles"]
        else:
            self.notes.append("no hardware counters here (perf says instructions are not supported)")
        argv = [
            "perf",
            "stat",
            "-x,",
            "-I",
            str(max(100, int((ctx.interval or 1.0) * 1000))),
            "-o",
            str(ctx.outdir / "perf-stat.csv"),
            "-a",
            "-e",
            ",".join(events),
        ]
        uni = (ctx.sandbox_paths or {}).get("unified")
        mnt = _cgroup2_mount()
        self.cgroup = None
        if uni and mnt and Path(uni).exists():
            rel = os.path.relpath(uni, mnt)
            argv += ["-G", ",".join([rel] * len(events))]
            self.cgroup = rel
        else:
            self.notes.append(
                "counted system-wide: the sandbox has no cgroup v2 directory and no v1 "
                "perf_event hierarchy is mounted, so perf cannot filter by cgroup"
            )
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=open(ctx.outdir / "perf-stat.stderr", "w")
        )
        ctx.journal.record("process", pid=self._proc.pid)
        self.events = events

    def stop(self) -> dict[str, Any]:
        errors = []
        stop_process(self._proc, signal.SIGINT)
        if self._proc.returncode not in (0, -signal.SIGINT, 130):
            errors.append(
                f"perf stat exited with {self._proc.returncode}: "
                + (self._ctx.outdir / "perf-stat.stderr").read_text()[-300:]
            )
        unmount(self._mounted)
        return {
            "files": ["perf-stat.csv"],
            "events": self.events,
            "cgroup": self.cgroup,
            "notes": self.notes,
            "errors": errors,
        }

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary(notes=list(meta.get("notes", [])))
        path = Path(outdir) / "perf-stat.csv"
        if not path.exists():
            return out
        series: dict[str, list[tuple[float, float]]] = {}
        for line in path.read_text().splitlines():
            if not line or line.startswith("#"):
                continue
            p = line.split(",")
            if len(p) < 4:
                continue
            try:
                t = float(p[0])
                v = float(p[1])
            except ValueError:
                continue  # <not counted> / <not supported>
            series.setdefault(p[3], []).append((t, v))
        for ev, pts in series.items():
            t = np.array([x[0] for x in pts])
            v = np.array([x[1] for x in pts])
            dt = np.diff(np.concatenate([[0.0], t]))
            unit = "ms/s" if ev == "task-clock" else "/s"
            out.metrics.append(
                (
                    MetricDef(f"{ev} rate", unit, "lower", kind="rate", mean="amean"),
                    clean(v / np.where(dt > 0, dt, np.nan)),
                )
            )
            out.metrics.append(
                (
                    MetricDef(
                        f"{ev} total", "msec" if ev == "task-clock" else "events", "lower", kind="count", mean="amean"
                    ),
                    [float(v.sum())],
                )
            )
        return out
