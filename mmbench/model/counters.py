"""Which direction is better, per kernel counter: the one table every section reads.

A /proc/vmstat counter or /proc/meminfo field appears in several places — the vmstat section
(deltas around each iteration), the proc-vmstat monitor (rates and gauges), the meminfo monitor —
and must read the same way in each: ``thp_fault_alloc`` up is better everywhere, free memory
(``nr_free_pages`` = ``MemFree``) up is better everywhere.  A counter that only measures volume
(``numa_hit`` rises with every allocation, so more is neither better nor worse) is ``None`` here;
comparisons show it only as a share (NUMA alloc hit % = hit / (hit + miss)), never as a raw
"improvement".  ``ALIASES`` maps a /proc/meminfo field to the vmstat counter it is.
"""

from __future__ import annotations

from typing import Literal

Better = Literal["higher", "lower"]

DIRECTION: dict[str, Better | None] = {
    # faults, swap, stalls: each one costs time
    "pgfault": "lower",
    "pgmajfault": "lower",
    "pswpin": "lower",
    "pswpout": "lower",
    "allocstall": "lower",
    "zswpin": "lower",
    "zswpout": "lower",
    "zswpwb": "lower",
    "swpout_zero": "lower",
    "swpin_zero": "lower",
    "workingset_refault": "lower",
    "workingset_refault_anon": "lower",
    "workingset_refault_file": "lower",
    # reclaim work (scanned, reclaimed, written): less work for the same job
    "pgscan_direct": "lower",
    "pgscan_kswapd": "lower",
    "pgsteal_direct": "lower",
    "pgsteal_kswapd": "lower",
    "pgscan": "lower",
    "pgsteal": "lower",  # memory.stat's totals (cgroup v2)
    "pgscan_anon": "lower",
    "pgscan_file": "lower",
    "pgsteal_anon": "lower",
    "pgsteal_file": "lower",
    "kswapd_low_wmark_hit_quickly": "lower",
    "kswapd_high_wmark_hit_quickly": "lower",
    "nr_vmscan_write": "lower",
    "nr_vmscan_immediate_reclaim": "lower",
    "slabs_scanned": "lower",
    "pgpgin": "lower",
    "pgpgout": "lower",
    # THP: a fault or collapse that got a huge page is the goal; fallbacks, failures, splits not
    "thp_fault_alloc": "higher",
    "thp_fault_fallback": "lower",
    "thp_collapse_alloc": "higher",
    "thp_collapse_alloc_failed": "lower",
    "thp_split": "lower",
    "thp_split_page": "lower",
    # compaction and migration
    "compact_stall": "lower",
    "compact_success": "higher",
    "compact_fail": "lower",
    "compact_daemon_wake": "lower",
    "compact_isolated": "lower",
    "compact_migrate_scanned": "lower",
    "compact_free_scanned": "lower",
    "pgmigrate_success": "higher",
    "pgmigrate_fail": "lower",
    # NUMA: hits and local allocations are volume (shown as shares); misses are bad
    "numa_hit": None,
    "numa_local": None,
    "numa_interleave": None,
    "numa_other": None,
    "numa_miss": "lower",
    "numa_foreign": "lower",
    "numa_pte_updates": "lower",
    "numa_huge_pte_updates": "lower",
    "numa_hint_faults": "lower",
    "numa_hint_faults_local": None,
    "numa_pages_migrated": "lower",
    # gauges: free memory left is headroom; what the workload's memory is made of is cost
    "nr_free_pages": "higher",
    "nr_file_pages": "lower",
    "nr_anon_pages": "lower",
    "nr_dirty": "lower",
    "nr_writeback": "lower",
    "nr_slab_reclaimable": "lower",
    "nr_slab_unreclaimable": "lower",
    # /proc/meminfo fields that are no vmstat counter
    "MemAvailable": "higher",
    "Cached": "lower",
    "Buffers": "lower",
    "Active(file)": "lower",
    "Inactive(file)": "lower",
    "Active(anon)": "lower",
    "Inactive(anon)": "lower",
    "AnonHugePages": "lower",
    "Shmem": "lower",
    "Mapped": "lower",
    "Slab": "lower",
    "PageTables": "lower",
    "SwapCached": "lower",
    "Zswap": "lower",
    "HugePages_Free": "lower",
}

# /proc/meminfo field → the /proc/vmstat counter it reports (same quantity, same direction)
ALIASES: dict[str, str] = {
    "MemFree": "nr_free_pages",
    "AnonPages": "nr_anon_pages",
    "Dirty": "nr_dirty",
    "Writeback": "nr_writeback",
    "SReclaimable": "nr_slab_reclaimable",
    "SUnreclaim": "nr_slab_unreclaimable",
}


def direction(counter: str) -> Better | None:
    """Better direction of a counter (None: volume only); KeyError for a counter not in the table,
    so a new row cannot silently pick a direction of its own."""
    return DIRECTION[ALIASES.get(counter, counter)]


def better(counter: str) -> Better:
    """Direction of a counter that has one (a volume counter here is a programming error)."""
    d = direction(counter)
    if d is None:
        raise ValueError(f"{counter} measures volume: show it as a share, not with a direction")
    return d
