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

from mmbench.model.counters import better
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
    numa: bool = False  # shown only when non-zero
    counter: str | None = None  # the one counter a plain row reads (its direction: counters.py)

    @property
    def count(self) -> bool:
        """A count of events or pages (tested with the count test), not a share or a velocity."""
        return self.unit not in ("%", "pages/s")

    @property
    def resolution(self) -> float:
        """One event or page for a count, 0.01 of a share (its printed precision), none (float
        noise only) for a velocity (docs/statistics.md §4, deterministic rows)."""
        return 1.0 if self.count else 0.01 if self.unit == "%" else 0.0


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
    terms = [total[0], total[1], -total[2], -total[3], -other]
    diff = math.fsum(terms)
    # The rows are derived from mean deltas (mean_deltas): means of integer counters are not exact
    # in binary, so "all − kswapd − direct" of 895707.4 − 894953.2 − 754.2 came out 2.3e-11, not 0
    # (seed004's A/A pair).  A remainder below the terms' own rounding is 0.
    return 0.0 if abs(diff) <= 1e-9 * math.fsum(abs(t) for t in terms) else diff


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
    RowDef("Kswapd efficiency %", "%", "higher", lambda x: _ratio(x("pgsteal_kswapd"), x("pgscan_kswapd"))),
    RowDef("Kswapd velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_kswapd")),
    _plain("Kswapd low wmark quickly", "events", "kswapd_low_wmark_hit_quickly"),
    _plain("Kswapd high wmark quickly", "events", "kswapd_high_wmark_hit_quickly"),
    RowDef("Direct efficiency %", "%", "higher", lambda x: _ratio(x("pgsteal_direct"), x("pgscan_direct"))),
    RowDef("Direct velocity", "pages/s", "lower", lambda x: _velocity(x, "pgscan_direct")),
    RowDef(
        "Percentage direct scans",
        "%",
        "lower",
        lambda x: _ratio(x("pgscan_direct"), _sum(x("pgscan_direct"), x("pgscan_kswapd"))),
    ),
    _plain("Pages scanned anon", "pages", "pgscan_anon"),
    _plain("Pages scanned file", "pages", "pgscan_file"),
    _plain("Pages reclaimed anon", "pages", "pgsteal_anon"),
    _plain("Pages reclaimed file", "pages", "pgsteal_file"),
    RowDef("Memcg limit pages scanned", "pages", "lower", lambda x: _limit(x, "pgscan")),
    RowDef("Memcg limit pages reclaimed", "pages", "lower", lambda x: _limit(x, "pgsteal")),
    RowDef(
        "Memcg efficiency %",
        "%",
        "higher",
        lambda x: _ratio(_sum(x("pgsteal_anon"), x("pgsteal_file")), _sum(x("pgscan_anon"), x("pgscan_file"))),
    ),
    _plain("Page writes by reclaim", "pages", "nr_vmscan_write"),
    RowDef("Page writes file", "pages", "lower", lambda x: _sub(x("nr_vmscan_write"), x("pswpout"))),
    _plain("Page writes anon", "pages", "pswpout"),
    _plain("Page reclaim immediate", "pages", "nr_vmscan_immediate_reclaim"),
    _plain("Slabs scanned", "objects", "slabs_scanned"),
    _plain("Workingset refaults anon", "pages", "workingset_refault_anon"),
    _plain("Workingset refaults file", "pages", "workingset_refault_file"),
    _plain("Zswap ins", "pages", "zswpin"),
    _plain("Zswap outs", "pages", "zswpout"),
    _plain("Zswap writebacks", "pages", "zswpwb"),
    _plain("Swap outs zero-filled", "pages", "swpout_zero"),
    _plain("Swap ins zero-filled", "pages", "swpin_zero"),
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
    RowDef("Compaction efficiency", "%", "higher", lambda x: _ratio(x("compact_success"), x("compact_stall"))),
    _plain("Page migrate success", "pages", "pgmigrate_success"),
    _plain("Page migrate failure", "pages", "pgmigrate_fail"),
    _plain("Compaction pages isolated", "pages", "compact_isolated"),
    _plain("Compaction migrate scanned", "pages", "compact_migrate_scanned"),
    _plain("Compaction free scanned", "pages", "compact_free_scanned"),
    _plain("Kcompactd wake", "wakeups", "compact_daemon_wake"),
    # numa_hit and numa_local count every allocation (volume, no direction): shown as shares
    RowDef(
        "NUMA alloc hit %",
        "%",
        "higher",
        lambda x: _ratio(x("numa_hit"), _sum(x("numa_hit"), x("numa_miss"))),
        numa=True,
    ),
    _plain("NUMA alloc miss", "pages", "numa_miss", numa=True),
    RowDef(
        "NUMA alloc local %",
        "%",
        "higher",
        lambda x: _ratio(x("numa_local"), _sum(x("numa_local"), x("numa_other"))),
        numa=True,
    ),
    # As MMTests: numa_pte_updates counts a huge PMD as 512 base pages (change_prot_numa), so the
    # raw counter is the "base-page range" and PTEs alone are raw - 512 * numa_huge_pte_updates
    # (MMTests reports: 2517600 range = 1754720 PTE + 512 * 1490 PMD).
    _plain("NUMA base-page range updates", "pages", "numa_pte_updates", numa=True),
    RowDef(
        "NUMA PTE updates",
        "PTEs",
        "lower",
        lambda x: _sub(
            x("numa_pte_updates"), None if x("numa_huge_pte_updates") is None else 512 * x("numa_huge_pte_updates")
        ),
        numa=True,
    ),  # type: ignore
    _plain("NUMA PMD updates", "PMDs", "numa_huge_pte_updates", numa=True),
    _plain("NUMA hint faults", "faults", "numa_hint_faults", numa=True),
    RowDef(
        "NUMA hint local percent",
        "%",
        "higher",
        lambda x: _ratio(x("numa_hint_faults_local"), x("numa_hint_faults")),
        numa=True,
    ),
    _plain("NUMA pages migrated", "pages", "numa_pages_migrated", numa=True),
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
