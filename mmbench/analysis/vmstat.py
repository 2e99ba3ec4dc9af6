"""The "vmstat" section: rows derived from /proc/vmstat counter deltas (formulas in
docs/statistics.md, "vmstat rows").

Counter names change between kernels; the names each row reads are DATA (:data:`COUNTERS`),
with the kernel version of every rename.  A row whose counters are all missing on the running
kernel is omitted (not shown as 0).  A ratio row whose denominator is 0 is undefined and
omitted (not a fake 100 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Mapping

from mmbench.analysis.counters import better

Better = Literal["higher", "lower"]

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
    "compact_isolated": ["compact_isolated"],                 # 3.8
    "compact_migrate_scanned": ["compact_migrate_scanned"],   # 3.8
    "compact_free_scanned": ["compact_free_scanned"],         # 3.8
    "compact_daemon_wake": ["compact_daemon_wake"],           # 4.6 (kcompactd)
    # pgscan_{anon,file} / pgsteal_{anon,file}: 5.8.  They count every reclaim (kswapd, direct,
    # memcg limit, khugepaged, proactive); memcg limit reclaim moves only these.
    "pgscan_anon": ["pgscan_anon"],
    "pgscan_file": ["pgscan_file"],
    "pgsteal_anon": ["pgsteal_anon"],
    "pgsteal_file": ["pgsteal_file"],
    "pgscan_khugepaged": ["pgscan_khugepaged"],               # 5.19
    "pgsteal_khugepaged": ["pgsteal_khugepaged"],             # 5.19
    "pgscan_proactive": ["pgscan_proactive"],                 # 6.15 (memory.reclaim et al.)
    "pgsteal_proactive": ["pgsteal_proactive"],               # 6.15
    # workingset_refault (4.x, file pages only) split into _anon and _file in 5.9.
    "workingset_refault_anon": ["workingset_refault_anon"],
    "workingset_refault_file": ["workingset_refault_file", "workingset_refault"],
    "zswpin": ["zswpin"],                                     # 5.19 (zswap counters)
    "zswpout": ["zswpout"],
    "numa_hit": ["numa_hit"],
    "numa_miss": ["numa_miss"],
    "numa_interleave": ["numa_interleave"],
    "numa_local": ["numa_local"],
    "numa_other": ["numa_other"],
    "numa_pte_updates": ["numa_pte_updates"],                 # 3.8 (automatic NUMA balancing)
    "numa_huge_pte_updates": ["numa_huge_pte_updates"],       # 3.13
    "numa_hint_faults": ["numa_hint_faults"],
    "numa_hint_faults_local": ["numa_hint_faults_local"],
    "numa_pages_migrated": ["numa_pages_migrated"],
}

# ≤ 3.3 kernels: pgsteal_<zone> counted kswapd and direct reclaim together; direct = Σ − kswapd.
PGSTEAL_OLD = [f"pgsteal_{z}" for z in ZONES]


def counter(delta: Mapping[str, float], name: str) -> float | None:
    """Σ of the raw counters of :data:`COUNTERS` ``name`` present in ``delta``; None if none is."""
    found = [delta[c] for c in COUNTERS[name] if c in delta]
    if name == "pgsteal_direct" and not found:
        old = [delta[c] for c in PGSTEAL_OLD if c in delta]
        if old and "kswapd_steal" in delta:
            return float(sum(old) - delta["kswapd_steal"])
    return float(sum(found)) if found else None


@dataclass(frozen=True)
class RowDef:
    name: str
    unit: str
    better: Better
    formula: Callable[["_Ctx"], float | None]
    numa: bool = False       # shown only when non-zero
    counter: str | None = None   # the one counter a plain row reads (its direction: counters.py)


def _plain(name: str, unit: str, counter: str, numa: bool = False) -> RowDef:
    """A row that is one counter's delta; its direction comes from analysis/counters.py."""
    return RowDef(name, unit, better(counter), lambda x: x(counter), numa=numa, counter=counter)


class _Ctx:
    """Counter lookup for the formulas: ``c("pgfault")`` → Σ or None; arithmetic on None → None."""

    def __init__(self, delta: Mapping[str, float], elapsed: float | None):
        self.delta = delta
        self.elapsed = elapsed
        self._cache: dict[str, float | None] = {}

    def __call__(self, name: str) -> float | None:
        if name not in self._cache:
            self._cache[name] = counter(self.delta, name)
        return self._cache[name]


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _ratio(num: float | None, den: float | None, scale: float = 100.0) -> float | None:
    """num·scale/den; None (undefined, row omitted) when either is missing or den is 0."""
    if num is None or den is None or den == 0:
        return None
    return scale * num / den


def _velocity(x: _Ctx, name: str) -> float | None:
    if x.elapsed is None or not x.elapsed > 0:
        return None
    v = x(name)
    return None if v is None else v / x.elapsed


def _limit(x: _Ctx, kind: str) -> float | None:
    """Pages scanned/reclaimed by memcg limit reclaim = all − kswapd − direct − khugepaged −
    proactive (the last two when the kernel has them)."""
    total = [x(f"{kind}_anon"), x(f"{kind}_file"), x(f"{kind}_kswapd"), x(f"{kind}_direct")]
    if any(v is None for v in total):
        return None
    other = sum(v for v in (x(f"{kind}_khugepaged"), x(f"{kind}_proactive")) if v is not None)
    return total[0] + total[1] - total[2] - total[3] - other


def _sum(*vals: float | None) -> float | None:
    return None if any(v is None for v in vals) else float(sum(vals))  # type: ignore[arg-type]


ROWS: list[RowDef] = [
    RowDef("Minor Faults", "faults", "lower", lambda x: _sub(x("pgfault"), x("pgmajfault"))),
    _plain("Major Faults", "faults", "pgmajfault"),
    _plain("Swap Ins", "pages", "pswpin"),
    _plain("Swap Outs", "pages", "pswpout"),
    _plain("Allocation stalls", "stalls", "allocstall"),
    _plain("Direct pages scanned", "pages", "pgscan_direct"),
    _plain("Kswapd pages scanned", "pages", "pgscan_kswapd"),
    _plain("Kswapd pages reclaimed", "pages", "pgsteal_kswapd"),
    _plain("Direct pages reclaimed", "pages", "pgsteal_direct"),
    RowDef("Kswapd efficiency %", "%", "higher",
           lambda x: _ratio(x("pgsteal_kswapd"), x("pgscan_kswapd"))),
    RowDef("Kswapd velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_kswapd")),
    _plain("Kswapd low wmark quickly", "events", "kswapd_low_wmark_hit_quickly"),
    _plain("Kswapd high wmark quickly", "events", "kswapd_high_wmark_hit_quickly"),
    RowDef("Direct efficiency %", "%", "higher",
           lambda x: _ratio(x("pgsteal_direct"), x("pgscan_direct"))),
    RowDef("Direct velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_direct")),
    RowDef("Percentage direct scans", "%", "lower",
           lambda x: _ratio(x("pgscan_direct"), _sum(x("pgscan_direct"), x("pgscan_kswapd")))),
    _plain("Pages scanned anon", "pages", "pgscan_anon"),
    _plain("Pages scanned file", "pages", "pgscan_file"),
    _plain("Pages reclaimed anon", "pages", "pgsteal_anon"),
    _plain("Pages reclaimed file", "pages", "pgsteal_file"),
    RowDef("Memcg limit pages scanned", "pages", "lower", lambda x: _limit(x, "pgscan")),
    RowDef("Memcg limit pages reclaimed", "pages", "lower", lambda x: _limit(x, "pgsteal")),
    RowDef("Memcg efficiency %", "%", "higher",
           lambda x: _ratio(_sum(x("pgsteal_anon"), x("pgsteal_file")),
                            _sum(x("pgscan_anon"), x("pgscan_file")))),
    _plain("Page writes by reclaim", "pages", "nr_vmscan_write"),
    RowDef("Page writes file", "pages", "lower", lambda x: _sub(x("nr_vmscan_write"), x("pswpout"))),
    _plain("Page writes anon", "pages", "pswpout"),
    _plain("Page reclaim immediate", "pages", "nr_vmscan_immediate_reclaim"),
    _plain("Slabs scanned", "objects", "slabs_scanned"),
    _plain("Workingset refaults anon", "pages", "workingset_refault_anon"),
    _plain("Workingset refaults file", "pages", "workingset_refault_file"),
    _plain("Zswap ins", "pages", "zswpin"),
    _plain("Zswap outs", "pages", "zswpout"),
    _plain("Sector Reads", "KiB", "pgpgin"),
    _plain("Sector Writes", "KiB", "pgpgout"),
    _plain("THP fault alloc", "THPs", "thp_fault_alloc"),
    _plain("THP fault fallback", "faults", "thp_fault_fallback"),
    _plain("THP collapse alloc", "THPs", "thp_collapse_alloc"),
    _plain("THP collapse fail", "events", "thp_collapse_alloc_failed"),
    _plain("THP split", "THPs", "thp_split"),
    _plain("Compaction stalls", "stalls", "compact_stall"),
    _plain("Compaction success", "events", "compact_success"),
    _plain("Compaction failures", "events", "compact_fail"),
    RowDef("Compaction efficiency", "%", "higher",
           lambda x: _ratio(x("compact_success"), x("compact_stall"))),
    _plain("Page migrate success", "pages", "pgmigrate_success"),
    _plain("Page migrate failure", "pages", "pgmigrate_fail"),
    _plain("Compaction pages isolated", "pages", "compact_isolated"),
    _plain("Compaction migrate scanned", "pages", "compact_migrate_scanned"),
    _plain("Compaction free scanned", "pages", "compact_free_scanned"),
    _plain("Kcompactd wake", "wakeups", "compact_daemon_wake"),
    # numa_hit and numa_local count every allocation (volume, no direction): shown as shares
    RowDef("NUMA alloc hit %", "%", "higher",
           lambda x: _ratio(x("numa_hit"), _sum(x("numa_hit"), x("numa_miss"))), numa=True),
    _plain("NUMA alloc miss", "pages", "numa_miss", numa=True),
    RowDef("NUMA alloc local %", "%", "higher",
           lambda x: _ratio(x("numa_local"), _sum(x("numa_local"), x("numa_other"))), numa=True),
    # As MMTests: numa_pte_updates counts a huge PMD as 512 base pages (change_prot_numa), so the
    # raw counter is the "base-page range" and PTEs alone are raw - 512 * numa_huge_pte_updates
    # (MMTests reports: 2517600 range = 1754720 PTE + 512 * 1490 PMD).  Was swapped (issue 13).
    _plain("NUMA base-page range updates", "pages", "numa_pte_updates", numa=True),
    RowDef("NUMA PTE updates", "PTEs", "lower",
           lambda x: _sub(x("numa_pte_updates"),
                          None if x("numa_huge_pte_updates") is None
                          else 512 * x("numa_huge_pte_updates")), numa=True),  # type: ignore
    _plain("NUMA PMD updates", "PMDs", "numa_huge_pte_updates", numa=True),
    _plain("NUMA hint faults", "faults", "numa_hint_faults", numa=True),
    RowDef("NUMA hint local percent", "%", "higher",
           lambda x: _ratio(x("numa_hint_faults_local"), x("numa_hint_faults")), numa=True),
    _plain("NUMA pages migrated", "pages", "numa_pages_migrated", numa=True),
]

ROW_BY_NAME = {r.name: r for r in ROWS}


def derive(delta: Mapping[str, float], elapsed: float | None = None) -> dict[str, float]:
    """Derived rows (name → value, in :data:`ROWS` order) from raw counter deltas.

    Rows whose counters are missing, ratio rows with a zero denominator, velocity rows without a
    positive elapsed time and NUMA rows equal to 0 are left out."""
    x = _Ctx(delta, elapsed)
    out: dict[str, float] = {}
    for r in ROWS:
        v = r.formula(x)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if r.numa and v == 0:
            continue
        out[r.name] = float(v)
    return out


def parse(text: str) -> dict[str, int]:
    """/proc/vmstat text → counter name → value."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """after − before for every counter present in both."""
    return {k: after[k] - before[k] for k in after if k in before}


def mean_deltas(deltas: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per-counter mean over the iterations that have the counter."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for d in deltas:
        for k, v in d.items():
            sums[k] = sums.get(k, 0.0) + float(v)
            counts[k] = counts.get(k, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}
