"""The "vmstat" section: rows derived from /proc/vmstat counter deltas (formulas in
docs/statistics.md, "vmstat rows").

Counter names change between kernels; the names each row reads are DATA
(:data:`mmbench.model.quirks.COUNTERS`),
with the kernel version of every rename.  A row whose counters are all missing on the running
kernel is omitted (not shown as 0).  A ratio row whose denominator is 0 is undefined and
omitted (not a fake 100 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Mapping

from mmbench.model.quirks import COUNTERS, PGSTEAL_OLD

Better = Literal["higher", "lower"]


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
    RowDef("Major Faults", "faults", "lower", lambda x: x("pgmajfault")),
    RowDef("Swap Ins", "pages", "lower", lambda x: x("pswpin")),
    RowDef("Swap Outs", "pages", "lower", lambda x: x("pswpout")),
    RowDef("Allocation stalls", "stalls", "lower", lambda x: x("allocstall")),
    RowDef("Direct pages scanned", "pages", "lower", lambda x: x("pgscan_direct")),
    RowDef("Kswapd pages scanned", "pages", "lower", lambda x: x("pgscan_kswapd")),
    RowDef("Kswapd pages reclaimed", "pages", "lower", lambda x: x("pgsteal_kswapd")),
    RowDef("Direct pages reclaimed", "pages", "lower", lambda x: x("pgsteal_direct")),
    RowDef("Kswapd efficiency %", "%", "higher",
           lambda x: _ratio(x("pgsteal_kswapd"), x("pgscan_kswapd"))),
    RowDef("Kswapd velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_kswapd")),
    RowDef("Kswapd low wmark quickly", "events", "lower", lambda x: x("kswapd_low_wmark_hit_quickly")),
    RowDef("Kswapd high wmark quickly", "events", "lower", lambda x: x("kswapd_high_wmark_hit_quickly")),
    RowDef("Direct efficiency %", "%", "higher",
           lambda x: _ratio(x("pgsteal_direct"), x("pgscan_direct"))),
    RowDef("Direct velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_direct")),
    RowDef("Percentage direct scans", "%", "lower",
           lambda x: _ratio(x("pgscan_direct"), _sum(x("pgscan_direct"), x("pgscan_kswapd")))),
    RowDef("Pages scanned anon", "pages", "lower", lambda x: x("pgscan_anon")),
    RowDef("Pages scanned file", "pages", "lower", lambda x: x("pgscan_file")),
    RowDef("Pages reclaimed anon", "pages", "lower", lambda x: x("pgsteal_anon")),
    RowDef("Pages reclaimed file", "pages", "lower", lambda x: x("pgsteal_file")),
    RowDef("Memcg limit pages scanned", "pages", "lower", lambda x: _limit(x, "pgscan")),
    RowDef("Memcg limit pages reclaimed", "pages", "lower", lambda x: _limit(x, "pgsteal")),
    RowDef("Memcg efficiency %", "%", "higher",
           lambda x: _ratio(_sum(x("pgsteal_anon"), x("pgsteal_file")),
                            _sum(x("pgscan_anon"), x("pgscan_file")))),
    RowDef("Page writes by reclaim", "pages", "lower", lambda x: x("nr_vmscan_write")),
    RowDef("Page writes file", "pages", "lower", lambda x: _sub(x("nr_vmscan_write"), x("pswpout"))),
    RowDef("Page writes anon", "pages", "lower", lambda x: x("pswpout")),
    RowDef("Page reclaim immediate", "pages", "lower", lambda x: x("nr_vmscan_immediate_reclaim")),
    RowDef("Slabs scanned", "objects", "lower", lambda x: x("slabs_scanned")),
    RowDef("Workingset refaults anon", "pages", "lower", lambda x: x("workingset_refault_anon")),
    RowDef("Workingset refaults file", "pages", "lower", lambda x: x("workingset_refault_file")),
    RowDef("Zswap ins", "pages", "lower", lambda x: x("zswpin")),
    RowDef("Zswap outs", "pages", "lower", lambda x: x("zswpout")),
    RowDef("Sector Reads", "KiB", "lower", lambda x: x("pgpgin")),
    RowDef("Sector Writes", "KiB", "lower", lambda x: x("pgpgout")),
    RowDef("THP fault alloc", "THPs", "higher", lambda x: x("thp_fault_alloc")),
    RowDef("THP fault fallback", "faults", "lower", lambda x: x("thp_fault_fallback")),
    RowDef("THP collapse alloc", "THPs", "higher", lambda x: x("thp_collapse_alloc")),
    RowDef("THP collapse fail", "events", "lower", lambda x: x("thp_collapse_alloc_failed")),
    RowDef("THP split", "THPs", "lower", lambda x: x("thp_split")),
    RowDef("Compaction stalls", "stalls", "lower", lambda x: x("compact_stall")),
    RowDef("Compaction success", "events", "higher", lambda x: x("compact_success")),
    RowDef("Compaction failures", "events", "lower", lambda x: x("compact_fail")),
    RowDef("Compaction efficiency", "%", "higher",
           lambda x: _ratio(x("compact_success"), x("compact_stall"))),
    RowDef("Page migrate success", "pages", "higher", lambda x: x("pgmigrate_success")),
    RowDef("Page migrate failure", "pages", "lower", lambda x: x("pgmigrate_fail")),
    RowDef("Compaction pages isolated", "pages", "lower", lambda x: x("compact_isolated")),
    RowDef("Compaction migrate scanned", "pages", "lower", lambda x: x("compact_migrate_scanned")),
    RowDef("Compaction free scanned", "pages", "lower", lambda x: x("compact_free_scanned")),
    RowDef("Kcompactd wake", "wakeups", "lower", lambda x: x("compact_daemon_wake")),
    RowDef("NUMA alloc hit", "pages", "higher", lambda x: x("numa_hit"), numa=True),
    RowDef("NUMA alloc miss", "pages", "lower", lambda x: x("numa_miss"), numa=True),
    RowDef("NUMA interleave hit", "pages", "higher", lambda x: x("numa_interleave"), numa=True),
    RowDef("NUMA alloc local", "pages", "higher", lambda x: x("numa_local"), numa=True),
    # As MMTests: numa_pte_updates counts a huge PMD as 512 base pages (change_prot_numa), so the
    # raw counter is the "base-page range" and PTEs alone are raw - 512 * numa_huge_pte_updates
    # (MMTests reports: 2517600 range = 1754720 PTE + 512 * 1490 PMD).  Was swapped (issue 13).
    RowDef("NUMA base-page range updates", "pages", "lower", lambda x: x("numa_pte_updates"),
           numa=True),
    RowDef("NUMA PTE updates", "PTEs", "lower",
           lambda x: _sub(x("numa_pte_updates"),
                          None if x("numa_huge_pte_updates") is None
                          else 512 * x("numa_huge_pte_updates")), numa=True),  # type: ignore
    RowDef("NUMA PMD updates", "PMDs", "lower", lambda x: x("numa_huge_pte_updates"), numa=True),
    RowDef("NUMA hint faults", "faults", "lower", lambda x: x("numa_hint_faults"), numa=True),
    RowDef("NUMA hint local faults", "faults", "higher",
           lambda x: x("numa_hint_faults_local"), numa=True),
    RowDef("NUMA hint local percent", "%", "higher",
           lambda x: _ratio(x("numa_hint_faults_local"), x("numa_hint_faults")), numa=True),
    RowDef("NUMA pages migrated", "pages", "lower", lambda x: x("numa_pages_migrated"), numa=True),
]



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


def derive_iteration(delta: Mapping[str, float], elapsed: float | None = None) -> dict[str, float | None]:
    """Every row of :data:`ROWS` for one iteration, None where undefined (counters missing, a
    zero denominator, no elapsed time), NUMA zeros kept: the per-iteration values the vmstat
    rows are tested on (compare; the rows themselves come from :func:`derive` of mean deltas)."""
    x = _Ctx(delta, elapsed)
    out: dict[str, float | None] = {}
    for r in ROWS:
        v = r.formula(x)
        out[r.name] = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
    return out


def mean_deltas(deltas: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per-counter mean over the iterations that have the counter."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for d in deltas:
        for k, v in d.items():
            sums[k] = sums.get(k, 0.0) + float(v)
            counts[k] = counts.get(k, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}
