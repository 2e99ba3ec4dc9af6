"""pagetypeinfo: free pages per migrate type and pageblocks per migrate type (/proc/pagetypeinfo).

Cost: 1-2.4 ms per read (the kernel walks every pageblock with the zone lock held), so the default
interval is 10 s.  Columns: ``free.<node>-<zone>.<type>`` (free pages, all orders; ``<node>`` is
``node0``, ``node1``, ...), ``free_hi.<node>-<zone>.<type>`` (free pages in blocks of pageblock
order or above) and ``blocks.<node>-<zone>.<type>``; ``capped.<node>-<zone>.<type>`` is 1 where a
free list was too long for the kernel to count (its free figures are then lower bounds).  Summary:
pageblocks per migrate type and free MiB per migrate type, summed over zones (mixing of
Unmovable/Reclaimable into Movable blocks is what fragmentation is).
"""

from __future__ import annotations

from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.monitors._common import clean, gauge_metric, read_text, zone_counts
from mmbench.monitors.base import MonitorSummary, SamplingMonitor


def parse_pagetypeinfo(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    pb_order = 9
    block_types: list[str] = []
    for line in text.splitlines():
        if line.startswith("Page block order:"):
            pb_order = int(line.split(":")[1])
            continue
        if line.startswith("Number of blocks type"):
            block_types = line.split()[4:]
            continue
        found = zone_counts(line)
        if found is None:
            continue
        node, zone_name, mtype, counts, capped = found
        zone = f"node{node}-{zone_name}"
        if mtype is not None:
            pages = [n << order for order, n in enumerate(counts)]
            out[f"free.{zone}.{mtype}"] = sum(pages)
            out[f"free_hi.{zone}.{mtype}"] = sum(pages[pb_order:])
            out[f"capped.{zone}.{mtype}"] = int(capped)
        elif block_types:
            for block_type, n in zip(block_types, counts):
                out[f"blocks.{zone}.{block_type}"] = n
    return out


class Pagetypeinfo(SamplingMonitor):
    name = "pagetypeinfo"
    summary = "/proc/pagetypeinfo: free pages and pageblocks per migrate type (expensive: every 10 s)"
    default_interval = 10.0

    def sample(self) -> dict[str, float]:
        return parse_pagetypeinfo(read_text("/proc/pagetypeinfo"))

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        sums: dict[tuple[str, str], np.ndarray] = {}
        for i, c in enumerate(cols, start=1):
            kind, _zone, mtype = c.split(".", 2)
            sums[(kind, mtype)] = sums.get((kind, mtype), 0) + arr[:, i]
        for (kind, mtype), v in sorted(sums.items()):
            if kind == "blocks":
                out.metrics.append((gauge_metric(f"Pageblocks {mtype}", "blocks", kind="count"), clean(v)))
        capped = sorted(m for (kind, m), v in sums.items() if kind == "capped" and np.nanmax(v) > 0)
        if capped:
            out.notes.append(
                f"Free {', '.join(capped)} (MiB) are lower bounds: a free list longer than 100,000 "
                "pages is printed as '>100000' by the kernel (5.5+) and counted as 100,000"
            )
        for (kind, mtype), v in sorted(sums.items()):
            if kind == "free":
                out.metrics.append((gauge_metric(f"Free {mtype} (MiB)", "MiB", "higher"), clean(v * 4 / 1024.0)))
        return out
