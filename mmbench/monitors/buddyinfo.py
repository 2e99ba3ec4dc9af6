"""buddyinfo: free blocks per order from /proc/buddyinfo, per zone and summed over zones.

Cost: 4-8 us per read.  Columns ``<node>.<zone>.o<order>`` (free blocks of that order) and
``all.o<order>``.  Summary: free blocks per order summed over zones, free MiB per zone, and free
MiB in blocks of pageblock order or above (what THP allocation can use without compaction).
Note: with lazy memory init (this VM) zone Normal only shows its initialised part.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.monitors._common import clean, gauge_metric, read_text, zone_counts
from mmbench.monitors.base import MonitorSummary, SamplingMonitor

PAGE_KB = 4


def parse_buddyinfo(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    total: dict[int, int] = {}
    for line in text.splitlines():
        found = zone_counts(line)
        if found is None:
            continue
        node, zone, _, counts, _ = found
        for order, n in enumerate(counts):
            out[f"{node}.{zone}.o{order}"] = n
            total[order] = total.get(order, 0) + n
    for order, n in sorted(total.items()):
        out[f"all.o{order}"] = n
    return out


class Buddyinfo(SamplingMonitor):
    name = "buddyinfo"
    summary = "/proc/buddyinfo: free blocks per order, per zone and in total"
    default_interval = 1.0

    def sample(self) -> dict[str, float]:
        return parse_buddyinfo(read_text("/proc/buddyinfo"))

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        pb_order = 9
        high = np.zeros(len(arr))
        zones: dict[str, np.ndarray] = {}
        for i, c in enumerate(cols, start=1):
            scope, _, o = c.rpartition(".o")
            order = int(o)
            if scope == "all":
                out.metrics.append(
                    (gauge_metric(f"Free blocks order {order}", "blocks", "higher", kind="count"), clean(arr[:, i]))
                )
                if order >= pb_order:
                    high += arr[:, i] * (PAGE_KB << order) / 1024.0
            else:
                zones[scope] = zones.get(scope, 0) + arr[:, i] * (PAGE_KB << order) / 1024.0
        for z, v in zones.items():
            out.metrics.append((gauge_metric(f"Free {z} (MiB)", "MiB", "higher"), clean(v)))
        out.metrics.append((gauge_metric(f"Free in order>={pb_order} blocks (MiB)", "MiB", "higher"), clean(high)))
        return out
