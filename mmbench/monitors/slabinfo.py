"""slabinfo: size of every slab cache (num_objs × objsize, bytes) from /proc/slabinfo.

Cost: ~250 us per read (the kernel walks every cache).  Columns are the cache names; a cache
created after the first sample is not recorded.  Summary: the 15 largest caches (by their
largest size during the iteration) in MiB, plus the total of all caches.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.monitors._common import clean, gauge_metric, read_text
from mmbench.monitors.base import MonitorSummary, SamplingMonitor

TOP = 15


def parse_slabinfo(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines()[2:]:
        parts = line.split(None, 4)
        if len(parts) == 5:
            out[parts[0]] = out.get(parts[0], 0) + int(parts[2]) * int(parts[3])
    return out


class Slabinfo(SamplingMonitor):
    name = "slabinfo"
    summary = "/proc/slabinfo: bytes per slab cache; summary shows the largest caches"
    default_interval = 1.0

    def unavailable_reason(self) -> str | None:
        try:
            with open("/proc/slabinfo", "rb") as fh:
                fh.read(1)
        except OSError as e:
            return f"/proc/slabinfo cannot be read ({e.strerror}); slab caches are not recorded"
        return None

    def sample(self) -> dict[str, float]:
        return parse_slabinfo(read_text("/proc/slabinfo"))

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        data = arr[:, 1:] / float(1 << 20)
        out.metrics.append((gauge_metric("All slab caches (MiB)", "MiB"), clean(np.nansum(data, axis=1))))
        order = np.argsort(-np.nanmax(data, axis=0))[:TOP]
        for j in order:
            out.metrics.append((gauge_metric(f"{cols[j]} (MiB)", "MiB"), clean(data[:, j])))
        return out
