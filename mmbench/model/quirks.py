"""Kernel quirks as data, in one place: counter renames across kernel versions (``COUNTERS``),
rows whose meaning changed with a kernel version (``ROW_MEANING_CHANGES``), the settings
namespaces and their files (``SETTING_NAMESPACES``), cgroup v1/v2 file names (``CGROUP_FILES``),
the mm kernel threads (``KTHREADS``), tracepoint renames and changed fields
(``TRACEPOINT_CHANGES``) and the mm functions the irqsoff rows are named after.  Each entry
names the kernel version (or commit) behind it.  Code looks things up here instead of branching
on versions; C programs keep their ABI constants (MADV_COLLAPSE, KPF_THP) in
``cbuild/mmbench_util.h`` with the same kind of comment."""

from __future__ import annotations

import re
from dataclasses import dataclass

# -- /proc/vmstat counters -------------------------------------------------------------------

ZONES = ("dma", "dma32", "normal", "movable", "high", "device")

# Row → raw counter names summed to build it (all present names are summed).  Old and new names
# are listed together: a kernel has one or the other.
COUNTERS: dict[str, list[str]] = {
    "pgfault": ["pgfault"],
    "pgmajfault": ["pgmajfault"],
    "pswpin": ["pswpin"],
    "pswpout": ["pswpout"],
    # One global "allocstall" until 4.8; split per zone (allocstall_<zone>) in 4.8 (node-based
    # reclaim series).  Every zone is summed: MMTests overwrote, keeping only the last zone.
    "allocstall": ["allocstall"] + [f"allocstall_{z}" for z in ZONES],
    # pgscan_direct_<zone> per zone until 4.8, then node-based pgscan_direct.
    # pgscan_direct_throttle (3.x+) counts throttling events, not pages: never summed here.
    "pgscan_direct": ["pgscan_direct"] + [f"pgscan_direct_{z}" for z in ZONES],
    "pgscan_kswapd": ["pgscan_kswapd"] + [f"pgscan_kswapd_{z}" for z in ZONES],
    # kswapd_steal (≤ 3.3) → pgsteal_kswapd_<zone> (3.4) → pgsteal_kswapd (4.8, node-based).
    "pgsteal_kswapd": ["kswapd_steal", "pgsteal_kswapd"] + [f"pgsteal_kswapd_{z}" for z in ZONES],
    # pgsteal_direct_<zone> from 3.4, pgsteal_direct from 4.8.  (≤ 3.3 only had pgsteal_<zone>
    # counting kswapd + direct together: see PGSTEAL_OLD.)
    "pgsteal_direct": ["pgsteal_direct"] + [f"pgsteal_direct_{z}" for z in ZONES],
    # kswapd_try_to_sleep(): after balancing, kswapd naps HZ/10 before sleeping for good.  Woken
    # during the nap → low_wmark_hit_quickly (it went to sleep prematurely, seed 002's subject);
    # memory below the high watermark again at the end of the nap → high_wmark_hit_quickly.
    "kswapd_low_wmark_hit_quickly": ["kswapd_low_wmark_hit_quickly"],
    "kswapd_high_wmark_hit_quickly": ["kswapd_high_wmark_hit_quickly"],
    "nr_vmscan_write": ["nr_vmscan_write"],
    "nr_vmscan_immediate_reclaim": ["nr_vmscan_immediate_reclaim"],
    "slabs_scanned": ["slabs_scanned"],
    "pgpgin": ["pgpgin"],
    "pgpgout": ["pgpgout"],
    "thp_fault_alloc": ["thp_fault_alloc"],
    "thp_fault_fallback": ["thp_fault_fallback"],
    "thp_collapse_alloc": ["thp_collapse_alloc"],
    "thp_collapse_alloc_failed": ["thp_collapse_alloc_failed"],
    # thp_split (≤ 4.4) → thp_split_page (4.5, THP refcounting rework; thp_split_pmd added).
    "thp_split": ["thp_split", "thp_split_page"],
    "compact_stall": ["compact_stall"],
    "compact_success": ["compact_success"],
    "compact_fail": ["compact_fail"],
    # compact_pages_moved / compact_pagemigrate_failed (≤ 3.7) → pgmigrate_success /
    # pgmigrate_fail (3.8, counted for every migration, not only compaction's).
    "pgmigrate_success": ["pgmigrate_success", "compact_pages_moved"],
    "pgmigrate_fail": ["pgmigrate_fail", "compact_pagemigrate_failed"],
    "compact_isolated": ["compact_isolated"],  # 3.8
    "compact_migrate_scanned": ["compact_migrate_scanned"],  # 3.8
    "compact_free_scanned": ["compact_free_scanned"],  # 3.8
    "compact_daemon_wake": ["compact_daemon_wake"],  # 4.6 (kcompactd)
    # pgscan_{anon,file} / pgsteal_{anon,file}: 5.8.  They count every reclaim (kswapd, direct,
    # memcg limit, khugepaged, proactive); memcg limit reclaim moves only these.
    "pgscan_anon": ["pgscan_anon"],
    "pgscan_file": ["pgscan_file"],
    "pgsteal_anon": ["pgsteal_anon"],
    "pgsteal_file": ["pgsteal_file"],
    # 6.2 ("mm: vmscan: split khugepaged stats from direct reclaim stats"): before it khugepaged's
    # reclaim counted as direct reclaim (Debian's 6.1.192 has neither counter)
    "pgscan_khugepaged": ["pgscan_khugepaged"],
    "pgsteal_khugepaged": ["pgsteal_khugepaged"],
    "pgscan_proactive": ["pgscan_proactive"],  # 6.15 (memory.reclaim et al.)
    "pgsteal_proactive": ["pgsteal_proactive"],  # 6.15
    # workingset_refault (4.x, file pages only) split into _anon and _file in 5.9.
    "workingset_refault_anon": ["workingset_refault_anon"],
    "workingset_refault_file": ["workingset_refault_file", "workingset_refault"],
    "zswpin": ["zswpin"],  # 5.19 (zswap counters)
    "zswpout": ["zswpout"],
    "zswpwb": ["zswpwb"],  # 6.8 (zswap writeback to swap)
    # 6.12 ("mm: store zero pages to be swapped out in a bitmap"): a zero-filled anonymous page is
    # swapped out without I/O, counted here and not in pswpout (swapped in: swpin_zero, not pswpin)
    "swpout_zero": ["swpout_zero"],
    "swpin_zero": ["swpin_zero"],
    "numa_hit": ["numa_hit"],
    "numa_miss": ["numa_miss"],
    "numa_interleave": ["numa_interleave"],
    "numa_local": ["numa_local"],
    "numa_other": ["numa_other"],
    "numa_pte_updates": ["numa_pte_updates"],  # 3.8 (automatic NUMA balancing)
    "numa_huge_pte_updates": ["numa_huge_pte_updates"],  # 3.13
    "numa_hint_faults": ["numa_hint_faults"],
    "numa_hint_faults_local": ["numa_hint_faults_local"],
    "numa_pages_migrated": ["numa_pages_migrated"],
}

# ≤ 3.3 kernels: pgsteal_<zone> counted kswapd and direct reclaim together; direct = Σ − kswapd.
PGSTEAL_OLD = [f"pgsteal_{z}" for z in ZONES]


# -- rows whose meaning changed --------------------------------------------------------------


@dataclass(frozen=True)
class MeaningChange:
    """From kernel ``since`` (major, minor) on, ``rows`` (vmstat rows, by name) count something
    else than before: a comparison of runs on both sides of ``since`` says so on each row."""

    since: tuple[int, int]
    rows: tuple[str, ...]
    what: str


ROW_MEANING_CHANGES: list[MeaningChange] = [
    MeaningChange(
        (6, 2),
        (
            "Direct pages scanned",
            "Direct pages reclaimed",
            "Direct efficiency %",
            "Direct velocity",
            "Percentage direct scans",
        ),
        "from 6.2 khugepaged's reclaim is counted in pgscan/pgsteal_khugepaged, before it in the "
        'direct counters ("mm: vmscan: split khugepaged stats from direct reclaim stats")',
    ),
    MeaningChange(
        (6, 7),
        ("Zswap ins", "Zswap outs"),
        "zswap's default pool is zsmalloc from 6.7, zbud before (\"zswap: change zswap's default "
        "allocator to zsmalloc\"); the pool each run used is its fingerprint's zswap.zpool",
    ),
    MeaningChange(
        (6, 8),
        ("THP fault alloc", "THP fault fallback"),
        "from 6.8 (multi-size THP) these count PMD-size THPs only; a smaller size enabled in "
        "/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled is counted in that size's "
        "stats/anon_fault_alloc and anon_fault_fallback",
    ),
    MeaningChange(
        (6, 11),
        ("THP split",),
        "from 6.11 thp_split_page counts splits of PMD-size folios only, before it every large "
        'folio\'s ("mm: add per-order mTHP split counters")',
    ),
    MeaningChange(
        (6, 12),
        ("Swap Outs", "Swap Ins", "Page writes anon", "Page writes file"),
        "from 6.12 a zero-filled page is swapped without I/O and counted in swpout_zero/swpin_zero "
        '(rows "Swap outs zero-filled", "Swap ins zero-filled"), not in pswpout/pswpin, while '
        "nr_vmscan_write still counts it, so Page writes file (nr_vmscan_write - pswpout) includes "
        'such pages ("mm: store zero pages to be swapped out in a bitmap")',
    ),
    MeaningChange(
        (6, 15),
        ("Memcg limit pages scanned", "Memcg limit pages reclaimed"),
        "from 6.15 proactive reclaim (memory.reclaim) is counted in pgscan/pgsteal_proactive and "
        "left out of these rows (all - kswapd - direct - khugepaged - proactive); before it, it is "
        "part of them",
    ),
]


def release_version(release: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release string ('6.12.117', '6.1.0-47-cloud-amd64')."""
    m = re.match(r"^([0-9]+)\.([0-9]+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def meaning_changes(versions: list[tuple[int, int] | None]) -> dict[str, list[MeaningChange]]:
    """Row name → the changes that fall between the given kernels (some before ``since``, some
    at or after it); unknown versions (None) are left out."""
    known = [v for v in versions if v is not None]
    out: dict[str, list[MeaningChange]] = {}
    for ch in ROW_MEANING_CHANGES:
        if any(v < ch.since for v in known) and any(v >= ch.since for v in known):
            for row in ch.rows:
                out.setdefault(row, []).append(ch)
    return out


# -- settings -----------------------------------------------------------------------------------

# namespace → directory; a dotted name below it maps to sub-directories ("khugepaged.defrag").
SETTING_NAMESPACES: dict[str, list[str]] = {
    "vm": ["/proc/sys/vm"],
    # RHEL 6 (2.6.32-based) exposed THP as redhat_transparent_hugepage; mainline since 2.6.38 as below.
    "thp": ["/sys/kernel/mm/transparent_hugepage", "/sys/kernel/mm/redhat_transparent_hugepage"],
    "zswap": ["/sys/module/zswap/parameters"],
    "kernel": ["/proc/sys/kernel"],
}

# Write-only triggers: per-iteration actions, never settings (nothing to restore).
SETTING_ACTIONS = {"vm.drop_caches": "actions.drop_caches", "vm.compact_memory": "actions.compact_memory"}

# Knobs mmbench itself owns during a run: setting them from a suite would fight the runner.
SETTING_RESERVED = {"thp.khugepaged.pages_collapsed", "thp.khugepaged.full_scans"}


# -- memory cgroup files, v1 and v2 -------------------------------------------------------------

# What → file name per cgroup version.  memory.peak arrived in v2 with 5.19; memory.events'
# "max" counts limit hits (v1's failcnt); io.max replaced blkio.throttle.*_bps_device in v2.
CGROUP_FILES: dict[str, dict[int, str]] = {
    "limit": {1: "memory.limit_in_bytes", 2: "memory.max"},
    "usage": {1: "memory.usage_in_bytes", 2: "memory.current"},
    "peak": {1: "memory.max_usage_in_bytes", 2: "memory.peak"},
    "swap_usage": {1: "memory.memsw.usage_in_bytes", 2: "memory.swap.current"},
    "events": {1: "memory.oom_control", 2: "memory.events"},
    "limit_hits": {1: "memory.failcnt", 2: "memory.events"},
    "stat": {1: "memory.stat", 2: "memory.stat"},
    "write_bps": {1: "blkio.throttle.write_bps_device", 2: "io.max"},
}
# memory.stat keys for dirty and writeback page cache: v1 "dirty"/"writeback", v2 (4.5+)
# "file_dirty"/"file_writeback".
MEMCG_DIRTY_KEYS = ("dirty", "file_dirty")
MEMCG_WRITEBACK_KEYS = ("writeback", "file_writeback")


def cgroup_file(what: str, version: int) -> str:
    return CGROUP_FILES[what][version]


# -- kernel threads and tracepoints ------------------------------------------------------------

# The mm kernel threads, by comm prefix: kswapd (per node), kcompactd (4.6), khugepaged (2.6.38),
# kdamond (DAMON, 5.15).  Stalls and CPU time are attributed to them by this list.
KTHREADS = ("kswapd", "kcompactd", "khugepaged", "kdamond")

# Per-page reclaim writeback tracepoint: mm_vmscan_writepage became mm_vmscan_write_folio when
# vmscan's pageout() was converted to folios (Matthew Wilcox's 2022 series).  Both are left out of
# mm-trace by default: one event per page written, the same count as /proc/vmstat nr_vmscan_write.
PER_PAGE_TRACEPOINTS = ("vmscan:mm_vmscan_write_folio", "vmscan:mm_vmscan_writepage")

# mm-trace's events and fields that differ between the kernels measured here, as their real
# formats show (tests/data/trace: guest-6.1-*, guest-6.12-*, host-6.18-*; the test checks each
# entry against them).  No field a stall row reads (order, gfp_flags, nr_scanned, nr_reclaimed,
# usec_delayed, fallback_order, change_ownership, parent_pid, child_pid) changed between 6.1, 6.12
# and 6.18; an event a row counts and a kernel lacks is named in that run's notes.


@dataclass(frozen=True)
class TracepointChange:
    """``event`` (or its ``field``) is in the kernels ``present`` and not in ``absent``
    (releases measured: 6.1.192, 6.12.117, 6.18)."""

    event: str
    field: str | None
    present: tuple[str, ...]
    absent: tuple[str, ...]
    note: str = ""

    def text(self) -> str:
        what = f"{self.field} field " if self.field else ""
        out = f"{what}present in {', '.join(self.present)}; absent in {', '.join(self.absent)}"
        return f"{out} ({self.note})" if self.note else out


TRACEPOINT_CHANGES: list[TracepointChange] = [
    TracepointChange("vmscan:mm_vmscan_reclaim_pages", None, ("6.18",), ("6.1.192", "6.12.117")),
    TracepointChange("compaction:mm_compaction_fast_isolate_freepages", None, ("6.12.117", "6.18"), ("6.1.192",)),
    TracepointChange("huge_memory:mm_khugepaged_collapse_file", None, ("6.12.117", "6.18"), ("6.1.192",)),
    TracepointChange("vmscan:mm_vmscan_lru_isolate", "isolate_mode", ("6.1.192",), ("6.12.117", "6.18")),
    TracepointChange("huge_memory:mm_khugepaged_scan_pmd", "writable", ("6.1.192", "6.12.117"), ("6.18",)),
    TracepointChange("huge_memory:mm_collapse_huge_page_isolate", "writable", ("6.1.192", "6.12.117"), ("6.18",)),
    TracepointChange(
        "sched:sched_process_fork",
        "char parent_comm[16]",
        ("6.1.192", "6.12.117"),
        ("6.18",),
        "6.18 has __data_loc char[] parent_comm and child_comm; the decoders read both",
    ),
]


def tracepoint_change(event: str) -> TracepointChange | None:
    """The entry for an event that some measured kernels lack (``group:name``, or ``name``)."""
    return next(
        (c for c in TRACEPOINT_CHANGES if c.field is None and (c.event == event or c.event.endswith(":" + event))), None
    )


# Classes of mm code for the irqsoff-sections monitor's rows: function names (fnmatch patterns) of
# Debian's 6.1.192 source, by the file that defines them (mm/compaction.c; mm/page_alloc.c;
# mm/vmscan.c and mm/swap.c's LRU batching; mm/filemap.c and mm/page-writeback.c; mm/memcontrol.c).
# A function inlined into another is named after the one the compiler kept (6.1 inlines
# isolate_freepages() into compaction_alloc(), as 2.6.38 did: the seed's "compaction_alloc").
# Names of later kernels are listed beside 6.1's: 6.10's memory allocation profiling made the
# allocating functions *_noprof, called through alloc_hooks() (compaction_alloc() wraps
# compaction_alloc_noprof() in 6.12.117; __alloc_pages_noprof()), 6.10 made release_freepages()
# release_free_list() and added free_unref_folios().
IRQSOFF_MM_CLASSES: dict[str, tuple[str, ...]] = {
    "compaction": (
        "compaction_alloc",
        "compaction_alloc_noprof",
        "compaction_free",
        "isolate_freepages*",
        "fast_isolate_*",
        "isolate_migratepages*",
        "compact_*",
        "__compact_*",
        "kcompactd*",
        "split_map_pages",
        "release_freepages",
        "release_free_list",
        "suitable_migration_*",
    ),
    "page-alloc": (
        "rmqueue*",
        "__rmqueue*",
        "free_pcppages_bulk",
        "free_one_page",
        "free_unref_page*",
        "free_unref_folios",
        "__free_pages_ok",
        "__free_one_page",
        "get_page_from_freelist",
        "__alloc_pages*",
        "drain_pages*",
        "drain_local_pages*",
        "steal_suitable_fallback",
        "move_freepages*",
        "reserve_highatomic_pageblock",
        "unreserve_highatomic_pageblock",
        "__isolate_free_page",
        "__putback_isolated_page",
        "zone_pcp_*",
        "free_pcp_prepare",
    ),
    "reclaim-lru": (
        "shrink_*",
        "__remove_mapping",
        "isolate_lru_*",
        "move_folios_to_lru",
        "folio_isolate_lru",
        "folio_batch_move_lru",
        "lru_add_*",
        "lru_note_cost*",
        "folio_putback_lru",
        "__folio_putback_lru",
        "putback_lru_page",
        "check_move_unevictable_*",
        "lru_deactivate*",
        "lru_lazyfree*",
        "folio_activate*",
        "release_pages",
        "__page_cache_release",
    ),
    "pagecache-wb": (
        "__filemap_add_folio",
        "filemap_*",
        "__filemap_*",
        "folio_end_writeback",
        "__folio_end_writeback",
        "__folio_start_writeback",
        "__folio_mark_dirty",
        "folio_mark_dirty",
        "__set_page_dirty*",
        "delete_from_page_cache*",
        "replace_page_cache*",
        "folio_wait_writeback",
        "test_clear_page_writeback",
        "__delete_from_page_cache",
        "page_cache_delete*",
        "remove_mapping",
    ),
    "memcg": (
        "mem_cgroup_*",
        "__mem_cgroup_*",
        "charge_memcg",
        "uncharge_*",
        "__mod_memcg_*",
        "memcg_*",
        "__count_memcg_events",
        "obj_cgroup_*",
    ),
}

# Paths inside a class whose IRQs-off sections get rows of their own, as kernel people name them
# ("Compaction free scanned" / "migrate scanned").  Debian 12's gcc 12 inlines isolate_freepages()
# and fast_isolate_freepages() into compaction_alloc() in 6.1.192, so most free scanner zone->lock
# sections are compaction_alloc's (seed 003's 2.6.38 offender too); isolate_freepages_block() stays
# out of line (CMA calls it too) and its compact_lock_irqsave() sections are its own.  The migrate
# scanner's lru_lock sections are isolate_migratepages_block()'s.
IRQSOFF_MM_PATHS: dict[str, tuple[str, ...]] = {
    "free scanner": ("compaction_alloc", "compaction_alloc_noprof", "isolate_freepages*", "fast_isolate_*"),
    "migrate scanner": ("isolate_migratepages*",),
}
