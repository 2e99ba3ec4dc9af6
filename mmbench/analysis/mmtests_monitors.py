"""MMTests' monitor statistics, for ``compare --convention mmtests``: its vmstat and schedstat
rows, the ``--print-monitor`` views of vmstat and proc-vmstat, and the iostat table.

Each follows the MMTests Perl module that prints it (MonitorMmtestsvmstat.pm,
MonitorMmtestsschedstat.pm, MonitorVmstat.pm, MonitorProcvmstat.pm, MonitorIostat.pm,
SummariseMonitor.pm) in the release that wrote the tree; the summary statistics they use are
``analysis/mmtests.py``'s.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Sequence

from mmbench.analysis.mmtests import NAN, Preferred, Rules, _amean, _hmean, _sum
from mmbench.model.perl import perl_num


# ---- "MMTests Statistics: vmstat" (MonitorMmtestsvmstat.pm; the same rows from v0.25 to HEAD) ----

VMSTAT_ROWS: tuple[tuple[str, str], ...] = (
    ("mmtests_minor_faults", "Minor Faults"),
    ("pgmajfault", "Major Faults"),
    ("pswpin", "Swap Ins"),
    ("pswpout", "Swap Outs"),
    ("allocstall", "Allocation stalls"),
    ("fragment_stall", "Fragmentation stalls"),
    ("pgalloc_dma", "DMA allocs"),
    ("pgalloc_dma32", "DMA32 allocs"),
    ("pgalloc_normal", "Normal allocs"),
    ("pgalloc_movable", "Movable allocs"),
    ("mmtests_direct_scan", "Direct pages scanned"),
    ("mmtests_kswapd_scan", "Kswapd pages scanned"),
    ("mmtests_kswapd_steal", "Kswapd pages reclaimed"),
    ("mmtests_direct_steal", "Direct pages reclaimed"),
    ("mmtests_kswapd_efficiency", "Kswapd efficiency %"),
    ("mmtests_kswapd_velocity", "Kswapd velocity"),
    ("mmtests_direct_efficiency", "Direct efficiency %"),
    ("mmtests_direct_velocity", "Direct velocity"),
    ("mmtests_direct_percentage", "Percentage direct scans"),
    ("nr_vmscan_write", "Page writes by reclaim"),
    ("mmtests_vmscan_write_file", "Page writes file"),
    ("mmtests_vmscan_write_anon", "Page writes anon"),
    ("nr_vmscan_immediate_reclaim", "Page reclaim immediate"),
    ("pgpgin", "Sector Reads"),
    ("pgpgout", "Sector Writes"),
    ("pgrescued", "Page rescued immediate"),
    ("slabs_scanned", "Slabs scanned"),
    ("pginodesteal", "Direct inode steals"),
    ("kswapd_inodesteal", "Kswapd inode steals"),
    ("kswapd_skip_congestion_wait", "Kswapd skipped wait"),
    ("thp_fault_alloc", "THP fault alloc"),
    ("thp_fault_fallback", "THP fault fallback"),
    ("thp_collapse_alloc", "THP collapse alloc"),
    ("thp_collapse_alloc_failed", "THP collapse fail"),
    ("thp_split_page", "THP split"),
    ("thp_split_page_failed", "THP split failed"),
    ("compact_stall", "Compaction stalls"),
    ("compact_success", "Compaction success"),
    ("compact_fail", "Compaction failures"),
    ("mmtests_compact_efficiency", "Compaction efficiency"),
    ("pgmigrate_success", "Page migrate success"),
    ("pgmigrate_fail", "Page migrate failure"),
    ("compact_isolated", "Compaction pages isolated"),
    ("compact_migrate_scanned", "Compaction migrate scanned"),
    ("compact_free_scanned", "Compaction free scanned"),
    ("mmtests_cscan_efficiency", "Compact scan efficiency"),
    ("mmtests_compaction_cost", "Compaction cost"),
    ("compact_daemon_wake", "Kcompactd wake"),
    ("compact_daemon_migrate_scanned", "Kcompactd migrate scanned"),
    ("compact_daemon_free_scanned", "Kcompactd free scanned"),
    ("numa_hit", "NUMA alloc hit"),
    ("numa_miss", "NUMA alloc miss"),
    ("numa_interleave", "NUMA interleave hit"),
    ("numa_local", "NUMA alloc local"),
    ("numa_pte_updates", "NUMA base-page range updates"),
    ("mmtests_numa_pte_updates", "NUMA PTE updates"),
    ("mmtests_numa_pmd_updates", "NUMA PMD updates"),
    ("numa_hint_faults", "NUMA hint faults"),
    ("numa_hint_faults_local", "NUMA hint local faults %"),
    ("mmtests_hint_local", "NUMA hint local percent"),
    ("numa_pages_migrated", "NUMA pages migrated"),
    ("mmtests_autonuma_cost", "AutoNUMA cost"),
)
# renamed onto one key, each overwriting the last (MonitorMmtestsvmstat.pm %_renamed_fields)
_RENAMED = {
    "compact_pages_moved": "pgmigrate_success",
    "compact_pagemigrate_failed": "pgmigrate_failed",
    "thp_split": "thp_split_page",
    "thp_failed": "thp_split_page_failed",
    "allocstall_dma": "allocstall",
    "allocstall_dma32": "allocstall",
    "allocstall_normal": "allocstall",
    "allocstall_movable": "allocstall",
    "allocstall_highmem": "allocstall",
}
_FLAT = (
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgfault",
    "pgmajfault",
    "allocstall",
    "fragment_stall",
    "pgalloc_dma",
    "pgalloc_dma32",
    "pgalloc_normal",
    "pgalloc_movable",
    "kswapd_inodesteal",
    "pginodesteal",
    "slabs_scanned",
    "compact_pages_moved",
    "compact_pagemigrate_failed",
    "compact_fail",
    "compact_success",
    "compact_stall",
    "compact_daemon_wake",
    "compact_daemon_migrate_scanned",
    "compact_daemon_free_scanned",
    "nr_vmscan_write",
    "kswapd_skip_congestion_wait",
    "nr_vmscan_immediate_reclaim",
    "pgrescued",
    "pgmigrate_success",
    "pgmigrate_fail",
    "compact_blocks_moved",
    "compact_isolated",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "numa_hit",
    "numa_miss",
    "numa_interleave",
    "numa_local",
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "thp_fault_alloc",
    "thp_collapse_alloc",
    "thp_split_page",
    "thp_split_page_failed",
    "thp_fault_fallback",
    "thp_collapse_alloc_failed",
)


def vmstat_values(delta: dict[str, int], elapsed: float | None) -> dict[str, float | None]:
    """MonitorMmtestsvmstat.pm's values for one test of one iteration, from the /proc/vmstat delta
    around it (in /proc/vmstat's order: the snapshots have the same counters, so after − before of
    MMTests equals delta − 0 here), with its defects kept (notes §3.9): ``allocstall_*`` overwrite
    each other in file order, ``compact_migrate_free`` is no counter, the AutoNUMA cost's stray
    statement.  None where MMTests leaves a value undefined (it is then not added)."""
    b: dict[str, float] = {}
    a: dict[str, float] = {}
    for k, x in delta.items():
        a[_RENAMED.get(k, k)] = x
        b[_RENAMED.get(k, k)] = 0
    elapsed_time = elapsed if elapsed else 1.0  # MMTests' default when no time line

    def d(k: str) -> float:
        return a.get(k, 0) - b.get(k, 0)

    v: dict[str, float | None] = {}
    v["mmtests_kswapd_steal"] = sum(
        d(k)
        for k in (
            "kswapd_steal",
            "pgsteal_kswapd_dma",
            "pgsteal_kswapd_dma32",
            "pgsteal_kswapd_normal",
            "pgsteal_kswapd_high",
            "pgsteal_kswapd_movable",
            "pgsteal_kswapd",
        )
    )
    direct = sum(
        d(k)
        for k in (
            "pgsteal_dma",
            "pgsteal_dma32",
            "pgsteal_normal",
            "pgsteal_movable",
            "pgsteal_high",
            "pgsteal_direct_dma",
            "pgsteal_direct_dma32",
            "pgsteal_direct_normal",
            "pgsteal_direct_movable",
            "pgsteal_direct_high",
            "pgsteal_direct",
        )
    )
    if "kswapd_steal" in b:
        direct -= v["mmtests_kswapd_steal"]  # type: ignore[operator]
    v["mmtests_direct_steal"] = direct
    kscan = sum(
        d(k)
        for k in (
            "pgscan_kswapd_dma",
            "pgscan_kswapd_dma32",
            "pgscan_kswapd_normal",
            "pgscan_kswapd_movable",
            "pgscan_kswapd_high",
            "pgscan_kswapd",
        )
    )
    dscan = sum(
        d(k)
        for k in (
            "pgscan_direct_dma",
            "pgscan_direct_dma32",
            "pgscan_direct_normal",
            "pgscan_direct_movable",
            "pgscan_direct_high",
            "pgscan_direct",
        )
    )
    v["mmtests_kswapd_scan"], v["mmtests_direct_scan"] = kscan, dscan
    v["mmtests_kswapd_velocity"] = kscan / elapsed_time
    v["mmtests_direct_velocity"] = dscan / elapsed_time
    v["mmtests_direct_efficiency"] = direct * 100 / dscan if dscan else 100.0
    v["mmtests_kswapd_efficiency"] = v["mmtests_kswapd_steal"] * 100 / kscan if kscan else 100.0  # type: ignore[operator]
    total = kscan + dscan
    v["mmtests_direct_percentage"] = dscan * 100 / total if total else 0.0
    for k in _FLAT:
        v[k] = d(k) if k in a else 0.0
    v["mmtests_vmscan_write_file"] = v["nr_vmscan_write"] - v["pswpout"]  # type: ignore[operator]
    v["mmtests_vmscan_write_anon"] = v["pswpout"]
    v["mmtests_minor_faults"] = v["pgfault"] - v["pgmajfault"]  # type: ignore[operator]
    hint = v["numa_hint_faults"]
    v["mmtests_hint_local"] = v["numa_hint_faults_local"] * 100 / hint if hint else 100.0  # type: ignore[operator]
    v["mmtests_numa_pmd_updates"] = v["numa_huge_pte_updates"]
    v["mmtests_numa_pte_updates"] = v["numa_pte_updates"] - v["numa_huge_pte_updates"] * 512  # type: ignore[operator]
    ca = 56 / 8
    cpagerw = ca + 4096 / 8
    cmc, cmf, ci = cpagerw * 2, ca * 2, ca + 12
    cost = -1.0
    if "compact_migrate_scanned" in b:
        # "compact_migrate_free" is no kernel counter: that term is always 0 in MMTests
        cost = (
            ca * v["compact_migrate_scanned"]
            + ci * v["compact_isolated"]  # type: ignore[operator]
            + cmc * v["pgmigrate_success"]
            + cmf * v["pgmigrate_fail"]
        )  # type: ignore[operator]
    if "compact_blocks_moved" in b:
        cost = (
            ca * v["compact_blocks_moved"] * 16384
            + cmc * v["compact_pages_moved"]  # type: ignore[operator]
            + cmf * v["compact_pagemigrate_failed"]
        )  # type: ignore[operator]
    v["mmtests_compaction_cost"] = cost / 1000000
    v["mmtests_autonuma_cost"] = (
        ca * v["numa_pte_updates"]
        + 5000 * v["numa_hint_faults"]  # type: ignore[operator]
        + ci * v["numa_pages_migrated"]
    ) / 1000000  # type: ignore[operator]
    v["mmtests_compact_efficiency"] = (
        v["compact_success"] * 100 / v["compact_stall"]  # type: ignore[operator]
        if v["compact_stall"]
        else None
    )
    ms = v["compact_migrate_scanned"]
    v["mmtests_cscan_efficiency"] = (
        None if not ms else (ms * 100 / v["compact_free_scanned"] if v["compact_free_scanned"] > 0 else 1.0)
    )  # type: ignore[operator]
    return {name: v.get(key) for key, name in VMSTAT_ROWS}


# Why a vmstat row of MonitorMmtestsvmstat.pm is undefined (MMTests leaves it unset: Compare.pm prints 0)
UNDEFINED_WHY = {
    "Compaction efficiency": "no compaction stall: compact_success * 100 / compact_stall is 0/0",
    "Compact scan efficiency": "no page scanned for migration (compact_migrate_scanned is 0)",
}


# ---- "MMTests Statistics: schedstat" (MonitorMmtestsschedstat.pm) ----------------------------

SCHEDSTAT_ROWS: tuple[tuple[str, str], ...] = (
    ("ttwu_count", "TTWU Count"),
    ("ttwu_local", "TTWU Local"),
    ("sis_search", "SIS Search"),
    ("sis_domain_search", "SIS Domain Search"),
    ("sis_scanned", "SIS Scanned"),
    ("mmtests_sis_domain_scanned", "SIS Domain Scanned"),
    ("sis_failed", "SIS Failures"),
    ("sis_core_search", "SIS Core Search"),
    ("mmtests_sis_core_hit", "SIS Core Hit"),
    ("sis_core_miss", "SIS Core Miss"),
    ("sis_recent_hit", "SIS Recent Used Hit"),
    ("sis_recent_miss", "SIS Recent Used Miss"),
    ("mmtests_sis_recent_attempts", "SIS Recent Attempts"),
    ("mmtests_sis_efficiency", "SIS Search Efficiency"),
    ("mmtests_sis_domain_efficiency", "SIS Domain Search Eff"),
    ("mmtests_sis_fast_success", "SIS Fast Success Rate"),
    ("mmtests_sis_success", "SIS Success Rate"),
    ("mmtests_sis_recent_success", "SIS Recent Success Rate"),
)


def schedstat_values(delta: dict[str, int]) -> dict[str, float]:
    """MonitorMmtestsschedstat.pm's values from the summed per-CPU /proc/schedstat deltas."""
    s: dict[str, float] = {
        k: float(delta.get(k, 0))
        for k in (
            "ttwu_count",
            "ttwu_local",
            "sis_search",
            "sis_domain_search",
            "sis_scanned",
            "sis_failed",
            "sis_recent_hit",
            "sis_recent_miss",
            "sis_core_search",
            "sis_core_miss",
        )
    }
    s["mmtests_sis_core_hit"] = s["sis_core_search"] - s["sis_core_miss"]
    fast_search = s["sis_search"] - s["sis_domain_search"]
    domain_scanned = s["sis_scanned"] - fast_search
    recent_total = s["sis_recent_hit"] + s["sis_recent_miss"]
    s["mmtests_sis_recent_success"] = s["sis_recent_hit"] * 100 / recent_total if recent_total else 0.0
    s["mmtests_sis_recent_attempts"] = recent_total
    s["mmtests_sis_efficiency"] = s["sis_search"] * 100 / s["sis_scanned"] if s["sis_scanned"] else 100.0
    s["mmtests_sis_domain_efficiency"] = (
        s["sis_domain_search"] * 100 / domain_scanned
        if s["sis_scanned"] and domain_scanned
        else 100.0
        if not s["sis_scanned"]
        else NAN
    )
    s["mmtests_sis_fast_success"] = fast_search * 100 / s["sis_search"] if s["sis_search"] else 100.0
    s["mmtests_sis_success"] = (s["sis_search"] - s["sis_failed"]) * 100 / s["sis_search"] if s["sis_search"] else 100.0
    s["mmtests_sis_domain_scanned"] = domain_scanned
    return {name: s[key] for key, name in SCHEDSTAT_ROWS}


# ---- monitor views: what compare-mmtests.pl --print-monitor M --sub-heading X summarises -----
# (SummariseMonitor.pm: Amean and Max of every value of every iteration pooled; the HTML report
# graphs the same series)

VMSTAT_COLUMNS = {
    "r": 0,
    "b": 1,
    "swpd": 2,
    "free": 3,
    "buff": 4,
    "cache": 5,
    "si": 6,
    "so": 7,
    "bi": 8,
    "bo": 9,
    "in": 10,
    "cs": 11,
    "us": 12,
    "sy": 13,
    "id": 14,
    "wa": 15,
    "st": 16,
}
# the vmstat sub-headings compare-kernels.sh graphs
VMSTAT_VIEWS = ("us", "sy", "wa", "r", "b", "totalcpu", "ussy", "free", "cs", "in", "si", "so", "swpd")
# the proc-vmstat sub-headings it graphs that need no other file
PROC_VMSTAT_VIEWS = (
    "mmtests_minor_faults",
    "pgmajfault",
    "pgpgin",
    "pgpgout",
    "pgpgtotal",
    "nr_dirty",
    "nr_writeback",
    "nr_anon_transparent_hugepages",
    "nr_file_pages",
    "nr_slab_reclaimable",
    "nr_slab_unreclaimable",
    "mmtests_total_slab",
    "mmtests_total_anon",
)
# gauges MonitorProcvmstat.pm reports as they are (every other counter as a per-interval delta)
PROC_VMSTAT_GAUGES = frozenset(
    (
        "nr_active_anon",
        "nr_active_file",
        "nr_anon_pages",
        "nr_anon_transparent_hugepages",
        "nr_dirty",
        "nr_file_pages",
        "nr_free_cma",
        "nr_free_pages",
        "nr_inactive_anon",
        "nr_inactive_file",
        "nr_isolated_anon",
        "nr_isolated_file",
        "nr_kernel_stack",
        "nr_mapped",
        "nr_mlock",
        "nr_page_table_pages",
        "nr_shmem",
        "nr_slab_reclaimable",
        "nr_slab_unreclaimable",
        "nr_unevictable",
        "nr_unstable",
        "nr_writeback",
        "nr_writeback_temp",
        "nr_dirty_background_threshold",
    )
)


def _num(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def vmstat_view_v025(lines: Iterable[str], heading: str) -> list[Any]:
    """The same series as v0.25 keeps it: its addData stores every line's value as it is, the
    header lines' text ("us") and missing fields (None) included; :func:`monitor_summary_v025`
    then gives MMTests v0.25's figures."""
    out: list[Any] = []
    for line in lines:
        details = line.split("--")[1] if "--" in line else line
        fields = re.split(r"\s+", details.lstrip())
        g = lambda i: fields[i] if i < len(fields) else None
        if heading in ("ussy", "totalcpu"):
            us, sy = perl_num(g(12)), perl_num(g(13))
            out.append(us + sy if heading == "totalcpu" else (0.0 if us == 0 and sy == 0 else us / (us + sy)))
            continue
        i = VMSTAT_COLUMNS[heading]
        if i == 3:
            out.append(perl_num(g(i)) / 1024)
            continue
        v = g(i)
        if 12 <= i <= 16 and perl_num(v) > 100:
            v = 100.0
        out.append(v)
    return out


_V025_NUMERIC = re.compile(r"^[-0-9]+")


def monitor_summary_v025(items: Sequence[Any], preferred: Preferred) -> tuple[str, float, float]:
    """v0.25's (mean title, mean, Max) of values kept as text, numbers or None (Stat.pm of v0.25):
    the values are sorted as numbers (text and None count as 0; Perl's sort keeps ties in order);
    calc_amean/calc_hmean are NaN when a value does not start like a number ("us"), calc_hmean -1
    at a value <= 0 (Compare.pm shows it as 0, and a baseline's -1 as 0 in every run:
    :func:`compare_cells`), calc_max NaN when the first sorted value is undefined."""
    key = [perl_num(x) if isinstance(x, str) else (0.0 if x is None else float(x)) for x in items]
    order = sorted(range(len(items)), key=lambda i: key[i], reverse=False)
    if preferred == "Higher":  # sort { $b <=> $a }: descending, ties still in input order
        order = sorted(range(len(items)), key=lambda i: -key[i])
    data = [items[i] for i in order]
    title = "Hmean" if preferred == "Higher" else "Amean"
    defined = [x for x in data if x is not None]
    if not data:
        return title, NAN, NAN
    if any(isinstance(x, str) and not _V025_NUMERIC.match(x) for x in defined):
        mean = NAN
    else:
        nums = [perl_num(x) if isinstance(x, str) else float(x) for x in defined]
        if preferred == "Higher":
            mean = NAN if not nums else -1.0 if any(v <= 0 for v in nums) else len(nums) / _sum([1 / v for v in nums])
        else:
            mean = _sum(nums) / len(nums) if nums else NAN
    top = NAN if data[0] is None else max(key[i] for i in order)
    return title, mean, top


def vmstat_view(lines: Iterable[str], heading: str) -> list[float]:
    """MonitorVmstat.pm's series of one sub-heading from a vmstat monitor file: every line after
    the latency-output prefix (``... -- ``) whose field is a number, the first row (averages since
    boot) included; free in MiB; the CPU columns capped at 100; ``totalcpu`` = us + sy, ``ussy`` =
    us / (us + sy) (0 when both are 0), both also 0 for each of vmstat's two header lines."""
    out: list[float] = []
    for line in lines:
        details = line.split("--")[1] if "--" in line else line
        fields = re.split(r"\s+", details.lstrip())
        if heading in ("ussy", "totalcpu"):
            # computed values are numbers even on header lines (Perl: "us" + "sy" = 0), so every
            # line of the file gives a sample, the headers a 0
            us = perl_num(fields[12] if len(fields) > 12 else None)
            sy = perl_num(fields[13] if len(fields) > 13 else None)
            out.append(us + sy if heading == "totalcpu" else (0.0 if us == 0 and sy == 0 else us / (us + sy)))
            continue
        i = VMSTAT_COLUMNS[heading]
        if i == 3:  # free / 1024 is a number on header lines too (0), as above
            out.append(perl_num(fields[i] if len(fields) > i else None) / 1024)
            continue
        v = _num(fields[i]) if len(fields) > i else None
        if v is None:
            continue
        if 12 <= i <= 16 and v > 100:
            v = 100.0
        out.append(v)
    return out


class ProcVmstatView:
    """MonitorProcvmstat.pm's series of one sub-heading.  One object reads every iteration in turn
    and, like MMTests' extract module, keeps the last value from one iteration to the next: the
    first delta of an iteration is taken against the previous iteration's last frame.  A delta
    after a 0 reading is 0; the last frame of a file is never read (MMTests parses a frame when
    the next ``time:`` line arrives)."""

    def __init__(self, heading: str) -> None:
        self.heading = heading
        self.last_value = 0.0

    def _current(self, frame: dict[str, float]) -> float:
        h = self.heading
        g = frame.get
        if h == "pgpgtotal":
            return g("pgpgin", 0) + g("pgpgout", 0)
        if h == "mmtests_minor_faults":
            return g("pgfault", 0) - g("pgmajfault", 0)
        if h == "mmtests_total_slab":
            return g("nr_slab_reclaimable", 0) + g("nr_slab_unreclaimable", 0)
        if h == "mmtests_total_anon":
            # MonitorProcvmstat.pm:288 looks up "nr_active_anon}" (a typo): only inactive_anon counts
            return g("nr_inactive_anon", 0)
        return g(h, 0)

    def series(self, frames: Sequence[dict[str, float]], read: int | None = None) -> list[float]:
        """``read``: how many frames MMTests reads (a frame is read when the next ``time:`` line
        comes, so a file whose last ``time:`` line has no counters after it has all its frames
        read); by default all but the last."""
        out: list[float] = []
        for frame in frames[: len(frames) - 1 if read is None else read]:
            cur = self._current(frame)
            if self.heading in PROC_VMSTAT_GAUGES or self.heading in ("mmtests_total_slab", "mmtests_total_anon"):
                out.append(cur)
                continue
            delta = cur - self.last_value if self.last_value else 0.0
            self.last_value = cur
            if delta == -1:  # extractReport: "next if $val == -1" (its marker of no value)
                continue
            out.append(delta)
        return out


def proc_vmstat_known(heading: str, counters: Iterable[str]) -> bool:
    """Does MonitorProcvmstat.pm give ``heading`` a meaning on a kernel with these counters: a
    counter of the file, or one of the series it derives (which read counters every kernel has)?
    MMTests prints 0 for a name that is neither; here that is an error (a typo is not a zero)."""
    return heading in set(counters) or heading in PROC_VMSTAT_DERIVED


# the series MonitorProcvmstat.pm computes from other counters (ProcVmstatView._current)
PROC_VMSTAT_DERIVED = frozenset(("pgpgtotal", "mmtests_minor_faults", "mmtests_total_slab", "mmtests_total_anon"))
# the vmstat sub-headings MonitorVmstat.pm knows: vmstat's columns and the two it computes
VMSTAT_SERIES = (*VMSTAT_COLUMNS, "totalcpu", "ussy")


def parse_monitor_view(text: str) -> tuple[str, str]:
    """``--monitor-view MONITOR:SERIES`` as (monitor, series): a proc-vmstat counter (or one of the
    series MonitorProcvmstat.pm derives) or a vmstat column (or totalcpu, ussy).  Raises ValueError
    with a one-line reason."""
    mon, sep, series = text.partition(":")
    if not sep or not series:
        raise ValueError(f"{text!r}: expected MONITOR:SERIES, e.g. proc-vmstat:thp_fault_alloc or vmstat:cs")
    if mon == "vmstat":
        if series not in VMSTAT_SERIES:
            raise ValueError(f"{text!r}: vmstat has no series {series!r} (one of {', '.join(VMSTAT_SERIES)})")
    elif mon == "proc-vmstat":
        if not re.fullmatch(r"[a-z][a-z0-9_]*", series):
            raise ValueError(f"{text!r}: {series!r} is not a /proc/vmstat counter name")
    else:
        raise ValueError(f"{text!r}: no monitor view {mon!r} (proc-vmstat or vmstat)")
    return mon, series


# MonitorMmtestsvmstat.pm and MonitorMmtestsschedstat.pm set 15, MonitorIostat.pm 12; MonitorDuration
# and the --print-monitor views take Extract.pm's default (HEAD 18, before 12)
_MONITOR_FIELD = {"vmstat": 15, "schedstat": 15, "iostat": 12}


def monitor_field(part: str, rules: Rules) -> int:
    """The field width of a monitor table: duration, vmstat, schedstat, iostat or a monitor view."""
    return _MONITOR_FIELD.get(part, 18 if rules == "head" else 12)


def iostat_printed(second_row_base: float | None) -> bool:
    """compare-kernels.sh prints the iostat table when the integer part of the baseline's cell in
    the table's second row (Amean of the first device's await) is above 5."""
    return second_row_base is not None and math.isfinite(second_row_base) and int(second_row_base) > 5


# v0.25 prefers by data type (Summarise.pm typeToPreferredVal): a monitor series whose type is not a
# time, size or percentage prefers Higher, so its mean row is an Hmean.  v1.00 and HEAD: Lower.
_V025_HIGHER = {
    "vmstat": {"r", "b", "si", "so", "bi", "bo", "in", "cs", "ussy"},  # MonitorVmstat.pm typeMap
    "iostat": {"avgrqsz", "rrqm", "wrqm"},
}


def monitor_preferred(monitor: str, op: str, rules: Rules) -> Preferred:
    """Which way a monitor series prefers in ``rules`` (MonitorVmstat/Procvmstat/Iostat.pm types)."""
    if rules != "v0.25":
        return "Lower"
    if monitor == "proc-vmstat":  # DATA_ACTIONS for every counter
        return "Higher"
    column = op.rsplit("-", 1)[-1] if monitor == "iostat" else op
    return "Higher" if column in _V025_HIGHER.get(monitor, set()) else "Lower"


def monitor_summary(values: Sequence[float], preferred: Preferred = "Lower") -> tuple[str, float, float]:
    """SummariseMonitor.pm: (mean row title, mean, Max) of the pooled series (NaN when empty):
    Amean of the values sorted ascending when Lower is preferred, Hmean of them sorted descending
    (NaN with a value <= 0) when Higher."""
    if preferred == "Higher":
        return "Hmean", (_hmean(sorted(values, reverse=True)) if values else NAN), (max(values) if values else NAN)
    if not values:
        return "Amean", NAN, NAN
    return "Amean", _amean(sorted(values)), max(values)  # summed in sorted order, as Summarise.pm does


# ---- iostat (MonitorIostat.pm), printed by compare-kernels.sh when the second row is > 5 --------

IOSTAT_OPS = ("avgqusz", "await", "r_await", "w_await", "svctm", "avgrqsz", "rrqm", "wrqm")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Perl's looks_like_number, for the decimal numbers iostat prints
_LOOKS_NUMERIC = re.compile(r"^\s*[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)\s*$")


class IostatView:
    """MonitorIostat.pm over the iostat files of a comparison, read in MMTests' order (runs, then
    iter-N).  Kept as MMTests has it: the set of devices that ever had a queue above 1 lives for the
    whole comparison (a file-scoped hash in MonitorIostat.pm); each file's first sample of a device
    is dropped; the columns are found by position, so the colours sysstat >= 12 prints under
    ``unbuffer``'s pty shift them (fields are Perl-numified: ``0.33\\e[0m`` is 0.33, ``\\e[0m`` 0).
    Device names are shown without the colour codes."""

    def __init__(self, rules: Rules = "head") -> None:
        self.devices: set[str] = set()
        # v0.25's addData keeps text values, which its statistics then use as Perl numbers
        self.numify = rules == "v0.25"

    def series(self, lines: Iterable[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        reading = False
        fmt = -1
        seen: dict[str, int] = {}
        for line in lines:
            e = re.split(r"\s+", line)
            g = lambda i: e[i] if i < len(e) else ""
            if "Device" in g(5):
                if fmt == -1:
                    if g(6) == "rrqm/s":
                        fmt = 0 if g(10) == "rsec/s" else 1 if g(10) == "rkB/s" else fmt
                    if g(6) == "r/s" and g(10):
                        fmt = 2
                reading = True
                continue
            if not reading:
                continue
            if g(5) == "":
                reading = False
                continue
            n = [perl_num(g(i)) for i in range(21)]
            if n[13] == 0 and n[14] == 0 and n[15] == 0:
                continue
            dev = g(5)
            if n[13] > 1:
                self.devices.add(dev)
            if dev not in self.devices:
                continue
            # a column copied as it is stays text: MMTests' addData drops it unless it looks like a
            # number (a coloured "0.33\e[0m" does not); computed columns are numbers (Perl-numified)
            t = [g(i) if self.numify or _LOOKS_NUMERIC.match(g(i)) else None for i in range(21)]
            if fmt in (0, 1):
                v = {
                    "rrqm": t[6],
                    "wrqm": t[7],
                    "avgrqsz": t[12],
                    "avgqusz": t[13],
                    "await": t[14],
                    "r_await": -1.0 if fmt == 0 else t[15],
                    "w_await": -1.0 if fmt == 0 else t[16],
                    "svctm": t[15] if fmt == 0 else t[17],
                }
                num = {
                    "avgqusz": n[13],
                    "await": n[14],
                    "r_await": -1.0 if fmt == 0 else n[15],
                    "w_await": -1.0 if fmt == 0 else n[16],
                }
            elif fmt == 2:
                v = {
                    "rrqm": t[10],
                    "wrqm": t[11],
                    "avgqusz": t[16],
                    "r_await": t[14],
                    "w_await": t[15],
                    "svctm": t[19],
                    "await": (n[14] + n[15]) / 2,
                    "avgrqsz": (n[17] + n[18]) / 2,
                }
                num = {"avgqusz": n[16], "await": (n[14] + n[15]) / 2, "r_await": n[14], "w_await": n[15]}
            else:
                v = {op: None for op in IOSTAT_OPS}  # MMTests reads undef from an unknown layout
                num = {"avgqusz": 0.0, "await": 0.0, "r_await": 0.0, "w_await": 0.0}
            if (
                num["avgqusz"] > 1000000
                or num["await"] > 3600000
                or num["r_await"] > 3600000
                or num["w_await"] > 3600000
            ):
                continue
            seen[dev] = seen.get(dev, 0) + 1
            if seen[dev] == 1:
                continue
            name = _ANSI.sub("", dev)
            for op in IOSTAT_OPS:
                vals = out.setdefault(f"{name}-{op}", [])  # the op exists even with no value
                x = v[op]
                if x is not None:
                    vals.append(perl_num(x) if isinstance(x, str) else float(x))
        return out
