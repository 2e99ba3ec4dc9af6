"""proc-vmstat: every /proc/vmstat counter, each interval.

Cost: one read of /proc/vmstat (22-33 us in the kernel) and a split: ~60-90 us per sample.
Summary: per-second rates of the main event counters (per interval, not MMTests' raw per-interval
deltas whose first sample is always 0), the main gauges in MiB (free, file, anon, dirty,
writeback, slab), and derived
rates: direct/kswapd scan and steal, memcg-limit scan and steal (pgscan_{anon,file} minus the
kswapd/direct/khugepaged/proactive ones: limit reclaim only moves the anon/file totals), and
reclaim efficiency (steal·100/scan over intervals that scanned).
"""

from __future__ import annotations

import os
from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.model.counters import better as direction
from mmbench.monitors._common import clean, gauge_metric, rate_metric, rates, read_text
from mmbench.monitors.base import SeriesSpec, MonitorSummary, SamplingMonitor
from mmbench.model.kernel import parse_vmstat
from mmbench.model.results import MetricDef

# nr_* entries that are event counters, not gauges
NR_COUNTERS = {
    "nr_vmscan_write",
    "nr_vmscan_immediate_reclaim",
    "nr_dirtied",
    "nr_written",
    "nr_throttled_written",
    "nr_foll_pin_acquired",
    "nr_foll_pin_released",
}
OTHER_GAUGES = {"workingset_nodes"}


# What comparisons show (the .tsv keeps every counter for graphs and digging): the gauges and
# rates mm developers read first.  A name list sums several counters; a missing counter is omitted.
GAUGES: list[tuple[str, list[str]]] = [
    ("Free memory", ["nr_free_pages"]),
    ("File pages", ["nr_file_pages"]),
    ("Anon pages", ["nr_anon_pages"]),
    ("Dirty", ["nr_dirty"]),
    ("Writeback", ["nr_writeback"]),
    ("Slab reclaimable", ["nr_slab_reclaimable"]),
    ("Slab unreclaimable", ["nr_slab_unreclaimable"]),
]
RATES: list[tuple[str, list[str]]] = [
    ("Page faults", ["pgfault"]),
    ("Major faults", ["pgmajfault"]),
    ("Swap ins", ["pswpin"]),
    ("Swap outs", ["pswpout"]),
    # allocstall became per zone (allocstall_dma32, _normal, _movable) in 4.8: summed
    (
        "Allocation stalls",
        [
            "allocstall",
            "allocstall_dma",
            "allocstall_dma32",
            "allocstall_normal",
            "allocstall_movable",
            "allocstall_device",
        ],
    ),
    ("Workingset refaults", ["workingset_refault", "workingset_refault_anon", "workingset_refault_file"]),
    ("THP fault alloc", ["thp_fault_alloc"]),
    ("THP fault fallback", ["thp_fault_fallback"]),
    ("Compaction stalls", ["compact_stall"]),
    ("Kcompactd wake", ["compact_daemon_wake"]),
]


def is_gauge(name: str) -> bool:
    return (name.startswith("nr_") and name not in NR_COUNTERS) or name in OTHER_GAUGES


def _sum(cols: list[str], arr: np.ndarray, names: list[str]) -> np.ndarray | None:
    idx = [cols.index(n) + 1 for n in names if n in cols]
    if not idx:
        return None
    return arr[:, idx].sum(axis=1)


class ProcVmstat(SamplingMonitor):
    name = "proc-vmstat"
    series = (
        SeriesSpec("kswapd-scan", "kswapd scan rate", "pages/s", ("pgscan_kswapd",), "rate"),
        SeriesSpec("kswapd-steal", "kswapd steal rate", "pages/s", ("pgsteal_kswapd",), "rate"),
        SeriesSpec("direct-scan", "Direct reclaim scan rate", "pages/s", ("pgscan_direct",), "rate"),
        SeriesSpec("direct-steal", "Direct reclaim steal rate", "pages/s", ("pgsteal_direct",), "rate"),
        SeriesSpec(
            "memcg-scan",
            "Memcg limit reclaim scan rate",
            "pages/s",
            ("pgscan_anon", "pgscan_file"),
            "rate",
            minus=("pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged", "pgscan_proactive"),
        ),
        SeriesSpec(
            "memcg-steal",
            "Memcg limit reclaim steal rate",
            "pages/s",
            ("pgsteal_anon", "pgsteal_file"),
            "rate",
            minus=("pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged", "pgsteal_proactive"),
        ),
        SeriesSpec("thp-alloc", "THP fault alloc rate", "/s", ("thp_fault_alloc",), "rate"),
        SeriesSpec("thp-fallback", "THP fault fallback rate", "/s", ("thp_fault_fallback",), "rate"),
        SeriesSpec("compact-stall", "Compaction stall rate", "/s", ("compact_stall",), "rate"),
        SeriesSpec("swapout", "Swap-out rate", "pages/s", ("pswpout",), "rate"),
    )
    summary = "/proc/vmstat counters every interval: rates, gauges, reclaim scan/steal/efficiency"
    default_interval = 1.0

    def sample(self) -> dict[str, float]:
        return parse_vmstat(read_text("/proc/vmstat"))

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        if len(arr) < 2:
            out.notes.append("fewer than two samples: no rates")
            return out
        t = arr[:, 0]

        def r(names: list[str]) -> np.ndarray | None:
            s = _sum(cols, arr, names)
            return None if s is None else rates(t, s)

        direct_scan = r(["pgscan_direct"])
        kswapd_scan = r(["pgscan_kswapd"])
        direct_steal = r(["pgsteal_direct"])
        kswapd_steal = r(["pgsteal_kswapd"])
        other = ["khugepaged", "proactive"]
        all_scan = r(["pgscan_anon", "pgscan_file"])
        all_steal = r(["pgsteal_anon", "pgsteal_file"])
        known_scan = r(["pgscan_direct", "pgscan_kswapd"] + [f"pgscan_{o}" for o in other])
        known_steal = r(["pgsteal_direct", "pgsteal_kswapd"] + [f"pgsteal_{o}" for o in other])
        derived: list[tuple[str, np.ndarray | None, str]] = [
            ("Direct scan", direct_scan, "pages scanned by direct reclaim per second"),
            ("Kswapd scan", kswapd_scan, "pages scanned by kswapd per second"),
            ("Direct steal", direct_steal, "pages reclaimed by direct reclaim per second"),
            ("Kswapd steal", kswapd_steal, "pages reclaimed by kswapd per second"),
        ]
        if all_scan is not None and known_scan is not None:
            derived.append(
                (
                    "Memcg limit scan",
                    np.maximum(all_scan - known_scan, 0),
                    "pages scanned by memcg limit reclaim per second",
                )
            )
        if all_steal is not None and known_steal is not None:
            derived.append(
                (
                    "Memcg limit steal",
                    np.maximum(all_steal - known_steal, 0),
                    "pages reclaimed by memcg limit reclaim per second",
                )
            )
        for name, series, desc in derived:
            if series is not None:
                out.metrics.append((rate_metric(f"{name} (pages/s)", "pages/s", description=desc), clean(series)))
        if all_scan is not None and all_steal is not None:
            mask = all_scan > 0
            eff = np.where(mask, 100.0 * all_steal / np.where(mask, all_scan, 1), np.nan)[mask]
            out.metrics.append(
                (
                    MetricDef(
                        "Reclaim efficiency",
                        "%",
                        "higher",
                        kind="percent",
                        mean="amean",
                        description="pages reclaimed per 100 scanned, intervals that scanned",
                    ),
                    clean(eff),
                )
            )
            if not mask.any():
                out.notes.append("no reclaim scanning during the iteration")
        page_mib = os.sysconf("SC_PAGE_SIZE") / (1 << 20)
        for title, names in GAUGES:
            g = _sum(cols, arr, names)
            if g is not None:
                out.metrics.append(
                    (gauge_metric(f"{title} (MiB)", "MiB", direction(names[0]), kind="size"), clean(g * page_mib))
                )
        for title, names in RATES:
            series = r([n for n in names if n in cols] or names)
            if series is not None:  # one direction per counter everywhere (analysis/counters.py)
                out.metrics.append((rate_metric(f"{title} (/s)", "/s", direction(names[0])), clean(series)))
        return out
