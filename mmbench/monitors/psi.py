"""psi: pressure stall information, system-wide and for the sandbox cgroup.

Reads /proc/pressure/{memory,io,cpu} (2-7 us each) and, when the sandbox has a cgroup v2
directory (``sandbox_paths["unified"]``), its ``memory.pressure`` and ``io.pressure``.
Columns ``<scope>.<resource>.<some|full>.<avg10|total>`` (scope ``sys`` or ``cg``); ``total``
is cumulative stall time in microseconds.  Summary: stall % per interval computed from the
``total`` deltas (exact, unlike the kernel's decaying avg10), and avg10 as the kernel reports it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.monitors._common import interval_share, read_text
from mmbench.monitors.base import SeriesSpec, MonitorContext, MonitorSummary, SamplingMonitor
from mmbench.model.results import MetricDef


def parse_pressure(text: str, prefix: str, out: dict[str, float]) -> None:
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        kind = parts[0]
        for kv in parts[1:]:
            k, _, v = kv.partition("=")
            if k == "avg10":
                out[f"{prefix}.{kind}.avg10"] = float(v)
            elif k == "total":
                out[f"{prefix}.{kind}.total"] = int(v)


class Psi(SamplingMonitor):
    name = "psi"
    series = (
        SeriesSpec("mem-some", "PSI memory some (system)", "% of time", ("sys.memory.some.total",), "psi"),
        SeriesSpec("mem-full", "PSI memory full (system)", "% of time", ("sys.memory.full.total",), "psi"),
        SeriesSpec("cg-mem-some", "PSI memory some (sandbox)", "% of time", ("cg.memory.some.total",), "psi"),
        SeriesSpec("cg-mem-full", "PSI memory full (sandbox)", "% of time", ("cg.memory.full.total",), "psi"),
        SeriesSpec("io-some", "PSI io some (system)", "% of time", ("sys.io.some.total",), "psi"),
    )
    summary = "pressure stall information (memory, io, cpu) for the system and the sandbox cgroup"
    default_interval = 1.0

    def unavailable_reason(self) -> str | None:
        if not os.path.exists("/proc/pressure/memory"):
            return "this kernel has no /proc/pressure (CONFIG_PSI off or psi=0); pressure is not recorded"
        return None

    def setup(self, ctx: MonitorContext) -> None:
        self._files: list[tuple[str, str]] = [(f"/proc/pressure/{r}", f"sys.{r}") for r in ("memory", "io", "cpu")]
        uni = (ctx.sandbox_paths or {}).get("unified")
        if uni:
            for r in ("memory", "io"):
                p = Path(uni) / f"{r}.pressure"
                if p.exists():
                    self._files.append((str(p), f"cg.{r}"))

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for path, prefix in self._files:
            try:
                parse_pressure(read_text(path), prefix, out)
            except OSError:
                pass  # the cgroup went away at the end of the workload
        return out

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()  # (fewer than two samples: no interval, no row)
        # avg10 stays in psi.tsv (for graphs): in a comparison it only repeats the stall % from
        # totals, less exactly (a decaying 10 s average)
        for i, c in enumerate(cols, start=1):
            scope, res, kind, what = c.split(".")
            pct = interval_share(arr[:, 0], arr[:, i], unit=1e-6) if what == "total" else []
            if pct:
                label = ("sandbox " if scope == "cg" else "") + f"{res} {kind}"
                out.metrics.append(
                    (
                        MetricDef(
                            f"PSI {label} stall %",
                            "%",
                            "lower",
                            kind="percent",
                            mean="amean",
                            description="share of the interval with tasks stalled, from total",
                        ),
                        pct,
                    )
                )
        return out
