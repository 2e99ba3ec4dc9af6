"""meminfo: every /proc/meminfo field (kB), each interval.

Cost: ~10 us per read.  Summary: the main fields in MiB (free, available, page cache, anon, THP,
slab, dirty/writeback, page tables) as absolute values per sample.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.model.counters import better as direction
from mmbench.model.kernel import parse_meminfo
from mmbench.monitors._common import clean, gauge_metric, read_text
from mmbench.monitors.base import SeriesSpec, MonitorSummary, SamplingMonitor

SUMMARY_FIELDS = [
    "MemFree",
    "MemAvailable",
    "Cached",
    "Buffers",
    "Active(file)",
    "Inactive(file)",
    "Active(anon)",
    "Inactive(anon)",
    "AnonPages",
    "AnonHugePages",
    "Shmem",
    "Mapped",
    "Dirty",
    "Writeback",
    "Slab",
    "SReclaimable",
    "SUnreclaim",
    "PageTables",
    "SwapCached",
    "Zswap",
    "HugePages_Free",
]


class Meminfo(SamplingMonitor):
    name = "meminfo"
    series = (
        SeriesSpec("free", "Free memory (MemFree)", "MiB", ("MemFree",), scale=1 / 1024),
        SeriesSpec("available", "Available memory (MemAvailable)", "MiB", ("MemAvailable",), scale=1 / 1024),
        SeriesSpec(
            "file", "File pages (Active+Inactive file)", "MiB", ("Active(file)", "Inactive(file)"), scale=1 / 1024
        ),
        SeriesSpec("anon", "Anon pages (AnonPages)", "MiB", ("AnonPages",), scale=1 / 1024),
        SeriesSpec("thp", "Anon THP (AnonHugePages)", "MiB", ("AnonHugePages",), scale=1 / 1024),
    )
    summary = "/proc/meminfo every interval (kB)"
    default_interval = 1.0

    def sample(self) -> dict[str, float]:
        return parse_meminfo(read_text("/proc/meminfo"))

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        for f in SUMMARY_FIELDS:
            if f in cols:
                col = arr[:, cols.index(f) + 1]
                if f.startswith("HugePages_"):
                    out.metrics.append((gauge_metric(f, "pages", direction(f), kind="count"), clean(col)))
                else:
                    # the same direction as the vmstat counter it reports (analysis/counters.py)
                    out.metrics.append((gauge_metric(f"{f} (MiB)", "MiB", direction(f)), clean(col / 1024.0)))
        return out
