"""MMTests' own summary statistics, for ``compare --convention mmtests`` of imported MMTests runs:
the summary rows each MMTests summary type prints (Multiops, Variabletime, Singleops), with the
definitions, row names and percentage formulas of the MMTests release that wrote the tree
(``rules``: "v0.25", "v1.00" or "head"), the confidence intervals its significance marks and
ratio summary use, and its ``pdiff``/``pndiff``/``cidiff``/``rdiff``.

Everything here follows MMTests' Perl (bin/lib/MMTests/{Stat,Summarise,Compare}.pm of the release;
docs/mmtests-import.md lists where it differs from mmbench's own definitions and why).  Samples of
every iteration are pooled and sorted best-first (ascending when lower is better) before any
statistic, as Summarise.pm:extractSummary does; B-means and percentiles count k = max(1, ⌊n·p/100⌋)
samples from the best end.  R's ``qnorm``/``qbinom`` are computed here; ``qnorm``'s result is
rounded to the 7 significant digits R prints, because MMTests reads R's printed text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

from mmbench.model.perl import perl_num

Rules = Literal["v0.25", "v1.00", "head"]
RULES: tuple[Rules, ...] = ("v0.25", "v1.00", "head")
SummaryType = Literal["Multiops", "Variabletime", "Singleops"]
Preferred = Literal["Lower", "Higher"]
NAN = float("nan")
ALPHA = 0.05
Z975 = 1.959963984540054        # qnorm(1 - 0.05/2)

# _SummaryStats of each summary type (SummariseMultiops.pm, SummariseVariabletime.pm; HEAD
# Summarise.pm setSummaryMultiops) and the _RatioSummaryStat whose first entry is the stat the
# significance mark and the ratio summary use.
_STATS: dict[tuple[str, str], tuple[list[str], list[str]]] = {
    ("Multiops", "v0.25"): (["min", "_mean", "stddev", "coeffvar", "max", "_mean-50", "_mean-95", "_mean-99"],
                           ["_mean", "stddev"]),
    ("Multiops", "v1.00"): (["min", "_mean", "stddev-_mean", "coeffvar-_mean", "max", "_mean-50", "_mean-95",
                            "_mean-99"], ["_mean", "meanci_low-_mean", "meanci_high-_mean"]),
    ("Multiops", "head"): (["min", "_mean", "stddev-_mean", "coeffvar-_mean", "max", "_mean-95"],
                          ["_mean", "meanci_low-_mean", "meanci_high-_mean"]),
    ("Variabletime", "v0.25"): (["min", "percentile-25", "percentile-50", "percentile-75", "percentile-1",
                                "percentile-5", "percentile-10", "percentile-90", "percentile-95",
                                "percentile-99", "max", "_mean", "stddev", "coeffvar", "_mean-99", "_mean-95",
                                "_mean-90", "_mean-75", "_mean-50", "_mean-25"], ["percentile-95"]),
    ("Variabletime", "v1.00"): (["min", "percentile-25", "percentile-50", "percentile-75", "percentile-1",
                                "percentile-5", "percentile-10", "percentile-90", "percentile-95",
                                "percentile-99", "max", "_mean", "stddev-_mean", "coeffvar-_mean", "_mean-99",
                                "_mean-95", "_mean-90", "_mean-75", "_mean-50", "_mean-25"],
                               ["percentile-95", "percentileci_low-95", "percentileci_high-95"]),
    ("Singleops", "v0.25"): (["_value"], ["_value"]),
}
_STATS[("Variabletime", "head")] = _STATS[("Variabletime", "v1.00")]
_STATS[("Singleops", "v1.00")] = _STATS[("Singleops", "head")] = _STATS[("Singleops", "v0.25")]

# stat_names of Stat.pm per release (the v0.25 names where a later release renamed them)
_NAMES_COMMON = {"min": "Min", "max": "Max", "amean": "Amean", "hmean": "Hmean", "stddev": "Stddev",
                 "coeffvar": "CoeffVar", "stddev-amean": "Stddev", "stddev-hmean": "HStddev",
                 "coeffvar-amean": "CoeffVar", "coeffvar-hmean": "HCoeffVar"}
_QUARTILES = {"percentile-25": "1st-qrtle", "percentile-50": "2nd-qrtle", "percentile-75": "3rd-qrtle"}


def stat_name(func: str, preferred: Preferred, rules: Rules, opname: str = "Ops") -> str:
    """The row title MMTests prints for ``func`` (Summarise.pm getStatName + Stat.pm stat_names)."""
    mean = "hmean" if preferred == "Higher" else "amean"
    f = func.replace("_value", opname, 1) if func.startswith("_value") else func
    f = f.replace("_mean", mean)
    if f in _NAMES_COMMON and not (rules == "v0.25" and f.startswith(("stddev-", "coeffvar-"))):
        return _NAMES_COMMON[f]
    if rules != "head" and f in _QUARTILES:
        return _QUARTILES[f]
    base, _, arg = f.partition("-")
    if base in ("amean", "hmean") and arg:
        sep = "." if rules == "head" else "-"
        return f"B{_NAMES_COMMON[base]}{sep}{arg}"
    if base == "percentile" and arg:
        return f"Pctile.{arg}" if rules == "head" else f"Max-{arg}"
    return f


def stat_compare(func: str, preferred: Preferred) -> str:
    """"pdiff" or "pndiff": Stat.pm stat_compare (stddev, coeffvar → pndiff), else by preference."""
    base = func.split("-", 1)[0]
    if base in ("stddev", "coeffvar", "submeanci"):
        return "pndiff"
    if base == "samples":
        return "pdiff"
    return "pdiff" if preferred == "Higher" else "pndiff"


def pdiff(new: float, base: float) -> float:
    """Stat.pm pdiff: 0 when equal or new is 0; 100 when base is 0 or NaN."""
    if new == base or new == 0:
        return 0.0
    if base == 0 or base != base:
        return 100.0
    return new * 100 / base - 100


def pndiff(new: float, base: float) -> float:
    """Stat.pm pndiff: 0 when equal; 100 when new is 0; −99 when base is 0."""
    if new == base:
        return 0.0
    if new == 0:
        return 100.0
    if base == 0:
        return -99.0
    return 100 - new * 100 / base


def rdiff(a: float, b: float) -> float:
    if b == 0 or b != b:
        return 0.0
    if a == 0 or a != a:
        return 1.0
    return a / b


def cidiff(new: float, new_ci: Sequence[float], base: float, base_ci: Sequence[float]) -> float:
    """Stat.pm cidiff: the difference over the facing half-widths of the two intervals."""
    diff = new - base
    cisum = (new_ci[1] - new + base - base_ci[0]) if new < base else (new - new_ci[0] + base_ci[1] - base)
    return diff if cisum == 0 else diff / cisum


def r_printed(x: float) -> float:
    """A number as R prints it by default (7 significant digits), as MMTests parses R's output."""
    return float(f"{x:.7g}") if math.isfinite(x) else x


def qbinom(p: float, size: int, prob: float) -> int:
    """R's qbinom: the smallest x with P(X ≤ x) ≥ p for X ~ Binomial(size, prob)."""
    if size <= 0:
        return 0
    if prob <= 0:
        return 0
    if prob >= 1:
        return size
    target = p * (1 - 64 * 2.220446049250313e-16)    # R's fuzz against rounding (qbinom.c)
    lp, lq = math.log(prob), math.log1p(-prob)
    cdf = 0.0
    for x in range(size + 1):
        cdf += math.exp(math.lgamma(size + 1) - math.lgamma(x + 1) - math.lgamma(size - x + 1) + x * lp
                        + (size - x) * lq)
        if cdf >= target:
            return x
    return size


@dataclass
class Summary:
    """One op's summary: (row title, value, compare function) per _SummaryStats entry, and the
    value and confidence interval of the _RatioSummaryStat (None when MMTests has none)."""
    rows: list[tuple[str, float, str]]
    ratio_value: float
    ratio_ci: tuple[float, float] | None
    ratio_index: int | None         # which row carries the significance mark (_ComparisonStatIndex)
    # v0.25's t-test inputs (Summarise.pm _SignificanceData): the mean of the row family, the
    # amean-based sample stddev, n
    t_data: tuple[float, float, int] | None = None
    # v0.25's ratio "CI length": the stddev (_RatioSummaryStat [_mean, stddev]), compared by sdiff
    ratio_sd: float | None = None


def _sum(a: Any) -> float:
    """Perl's left-to-right sum (not math.fsum): MMTests' last digit depends on it.  numpy's cumsum
    adds in the same order, one addition at a time, so large arrays are summed exactly as Perl does."""
    import numpy as np
    arr = np.asarray(a, dtype=np.float64)
    return float(np.cumsum(arr)[-1]) if arr.size else 0.0


def _amean(a: Any) -> float:
    return _sum(a) / len(a) if len(a) else NAN


def _hmean(a: Any) -> float:
    import numpy as np
    arr = np.asarray(a, dtype=np.float64)
    if not arr.size or (arr <= 0).any():
        return NAN
    return arr.size / _sum(1.0 / arr)


def _stddev(a: Any, mean_name: str, rules: Rules, amean: float | None = None) -> float:
    """calc_stddev: the amean-based sample stddev (n−1); HEAD/v1.00's hmean-based HStddev
    √(H⁴·Σ(1/x − 1/H)²/n).  v0.25 always uses the amean form.  ``amean``: the data's
    :func:`_amean`, when the caller has it."""
    import numpy as np
    arr = np.asarray(a, dtype=np.float64)
    n = arr.size
    if rules == "v0.25" or mean_name == "amean":
        m = _amean(arr) if amean is None else amean
        if m != m or n <= 1:
            return NAN
        d = arr - m
        return math.sqrt(_sum(d * d) / (n - 1))
    h = _hmean(arr)
    if h != h or n <= 1:
        return NAN
    d = 1 / arr - 1 / h
    return math.sqrt(_sum(d * d) * h ** 4 / n)


def _k(n: int, pct: float) -> int:
    return max(1, int(n * pct / 100))


def summarise(values: Sequence[float], summary: SummaryType, preferred: Preferred, rules: Rules,
              opname: str = "Ops", presorted: bool = False) -> Summary:
    """The rows MMTests prints for one op whose samples (all iterations pooled) are ``values``
    (``presorted``: a float64 array sorted ascending already)."""
    import numpy as np
    data = values if presorted else np.sort(np.asarray(values, dtype=np.float64))   # best first
    if preferred == "Higher":
        data = data[::-1]
    funcs, ratio_funcs = _STATS[(summary, rules)]
    mean_name = "hmean" if preferred == "Higher" else "amean"
    # Every mean here is of ``data`` or of its best k values, summed left to right from the best:
    # one running sum of the data (and of their reciprocals) gives them all, as Perl adds them.
    # The stddevs, asked for by several rows, are computed once.
    cache: dict[Any, Any] = {}

    def prefix_amean(k: int) -> float:
        if "sum" not in cache:
            cache["sum"] = np.cumsum(data)
        return float(cache["sum"][k - 1]) / k

    def prefix_hmean(k: int) -> float:
        """_hmean of the best k: NaN when one of them is <= 0."""
        if "recip" not in cache:
            bad = np.flatnonzero(data <= 0)
            cache["positive"] = int(bad[0]) if bad.size else data.size    # the best values > 0
            cache["recip"] = np.cumsum(1.0 / data[:cache["positive"]])
        return k / float(cache["recip"][k - 1]) if k <= cache["positive"] else NAN

    def amean_all() -> float:
        return prefix_amean(data.size)

    def mean_of() -> float:
        return prefix_hmean(data.size) if mean_name == "hmean" else prefix_amean(data.size)

    def stddev(arg: str) -> float:
        key = ("sd", arg)
        if key not in cache:
            cache[key] = _stddev(data, arg, rules, amean_all() if data.size else NAN)
        return cache[key]

    def value(func: str) -> float:
        if not data.size:
            return NAN
        if func == "_value":
            return float(data[0])
        f = func.replace("_mean", mean_name)
        base, _, arg = f.partition("-")
        if base == "min":
            return float(data.min())
        if base == "max":
            return float(data.max())
        if f in ("amean", "hmean"):
            return mean_of() if rules != "v0.25" or f == mean_name else amean_all()
        if base == "stddev":
            return stddev(arg or "amean")
        if base == "coeffvar":
            m = mean_of() if (arg or "amean") == mean_name else amean_all()
            if rules == "v0.25":
                m = amean_all()
            sd = stddev(arg or "amean")
            sd = 0.0 if sd != sd else sd
            m = 0.0 if m != m else m
            return sd * 100 / m if m else 0.0
        if base == "percentile":
            return float(data[_k(len(data), float(arg)) - 1])
        if base in ("amean", "hmean") and arg:
            k = _k(len(data), float(arg))
            return prefix_hmean(k) if base == "hmean" else prefix_amean(k)
        raise ValueError(f"MMTests statistic {func!r} is not reproduced")

    def ci() -> tuple[float, float] | None:
        if len(ratio_funcs) != 3 or not data.size:
            return None
        first = ratio_funcs[0]
        if first.startswith("percentile-"):
            p = float(first.split("-", 1)[1])
            n = len(data)
            lo, hi = qbinom(ALPHA / 2, n - 1, p / 100), qbinom(1 - ALPHA / 2, n - 1, p / 100)
            return float(data[lo]), float(data[hi])
        m = mean_of()
        sd = stddev(mean_name)
        if m != m or sd != sd:
            return None
        q = r_printed(Z975 * sd)
        return m - q, m + q

    rows = [(stat_name(f, preferred, rules, opname), value(f), stat_compare(f, preferred)) for f in funcs]
    idx = funcs.index(ratio_funcs[0]) if len(ratio_funcs) == 3 and ratio_funcs[0] in funcs else None
    t_data = None
    if rules == "v0.25" and data.size:
        sd = stddev("amean")
        t_data = (mean_of(), 0.0 if sd != sd else sd, int(data.size))
    ratio_sd = None
    if len(ratio_funcs) == 2 and data.size:
        sd = value(ratio_funcs[1])
        ratio_sd = None if sd != sd else sd
    return Summary(rows, value(ratio_funcs[0]), ci(), idx, t_data, ratio_sd)


def sdiff(new: float, new_sd: float, base: float, base_sd: float) -> float:
    """Stat.pm sdiff: the difference over the pooled stddev (the difference itself when that is 0)."""
    pdev = math.sqrt((new_sd ** 2 + base_sd ** 2) / 2)
    return new - base if pdev == 0 else (new - base) / pdev


def significant_ttest(base: Summary, new: Summary, level: float = 0.10) -> bool:
    """v0.25's mark (Compare.pm _significanceTest), on the Amean/Hmean rows: t = |Δmean| /
    √(s_b²/n_b + s_n²/n_n) with df = n_b + n_n − 2 (not Welch's), two-sided p < 0.10; with both
    spreads 0, any difference of the means."""
    if base.t_data is None or new.t_data is None:
        return False
    (mb, sb, nb), (mn, sn, nn) = base.t_data, new.t_data
    se = math.sqrt(sb ** 2 / nb + sn ** 2 / nn) if nb and nn else 0.0
    if not se:
        return mb != mn
    from mmbench.analysis.significance import t_two_sided_p
    t = abs((mb - mn) / se)
    df = nb + nn - 2
    if df <= 0:
        return False
    # R prints pt()'s upper tail to 7 digits; MMTests doubles what it reads
    return r_printed(t_two_sided_p(t, df) / 2) * 2 < level


def percent(compare: str, new: float, base: float) -> float:
    """The percentage MMTests prints next to a value (0 where either side is NaN, Compare.pm)."""
    if new != new or base != base:
        return 0.0
    return pdiff(new, base) if compare == "pdiff" else pndiff(new, base)


def significant(base: Summary, new: Summary) -> bool:
    """Compare.pm's significance mark (v1.00 and HEAD): the intervals of the ratio stat do not
    overlap, |cidiff| > 1."""
    if base.ratio_ci is None or new.ratio_ci is None:
        return False
    return abs(cidiff(base.ratio_value, base.ratio_ci, new.ratio_value, new.ratio_ci)) > 1


def gmean_ratio(ratios: Sequence[float]) -> float:
    """Compare.pm's Gmean of the ratio summary: NaN → 1, 0 → 1e-5, direct product."""
    units = [1.0 if r != r else (r if r != 0 else 0.00001) for r in ratios]
    if not units:
        return NAN
    prod = 1.0
    for u in units:
        prod *= u
    return prod ** (1 / len(units))


# ---- "MMTests Statistics: vmstat" (MonitorMmtestsvmstat.pm; the same rows from v0.25 to HEAD) ----

VMSTAT_ROWS: tuple[tuple[str, str], ...] = (
    ("mmtests_minor_faults", "Minor Faults"), ("pgmajfault", "Major Faults"), ("pswpin", "Swap Ins"),
    ("pswpout", "Swap Outs"), ("allocstall", "Allocation stalls"), ("fragment_stall", "Fragmentation stalls"),
    ("pgalloc_dma", "DMA allocs"), ("pgalloc_dma32", "DMA32 allocs"), ("pgalloc_normal", "Normal allocs"),
    ("pgalloc_movable", "Movable allocs"), ("mmtests_direct_scan", "Direct pages scanned"),
    ("mmtests_kswapd_scan", "Kswapd pages scanned"), ("mmtests_kswapd_steal", "Kswapd pages reclaimed"),
    ("mmtests_direct_steal", "Direct pages reclaimed"), ("mmtests_kswapd_efficiency", "Kswapd efficiency %"),
    ("mmtests_kswapd_velocity", "Kswapd velocity"), ("mmtests_direct_efficiency", "Direct efficiency %"),
    ("mmtests_direct_velocity", "Direct velocity"), ("mmtests_direct_percentage", "Percentage direct scans"),
    ("nr_vmscan_write", "Page writes by reclaim"), ("mmtests_vmscan_write_file", "Page writes file"),
    ("mmtests_vmscan_write_anon", "Page writes anon"), ("nr_vmscan_immediate_reclaim", "Page reclaim immediate"),
    ("pgpgin", "Sector Reads"), ("pgpgout", "Sector Writes"), ("pgrescued", "Page rescued immediate"),
    ("slabs_scanned", "Slabs scanned"), ("pginodesteal", "Direct inode steals"),
    ("kswapd_inodesteal", "Kswapd inode steals"), ("kswapd_skip_congestion_wait", "Kswapd skipped wait"),
    ("thp_fault_alloc", "THP fault alloc"), ("thp_fault_fallback", "THP fault fallback"),
    ("thp_collapse_alloc", "THP collapse alloc"), ("thp_collapse_alloc_failed", "THP collapse fail"),
    ("thp_split_page", "THP split"), ("thp_split_page_failed", "THP split failed"),
    ("compact_stall", "Compaction stalls"), ("compact_success", "Compaction success"),
    ("compact_fail", "Compaction failures"), ("mmtests_compact_efficiency", "Compaction efficiency"),
    ("pgmigrate_success", "Page migrate success"), ("pgmigrate_fail", "Page migrate failure"),
    ("compact_isolated", "Compaction pages isolated"), ("compact_migrate_scanned", "Compaction migrate scanned"),
    ("compact_free_scanned", "Compaction free scanned"), ("mmtests_cscan_efficiency", "Compact scan efficiency"),
    ("mmtests_compaction_cost", "Compaction cost"), ("compact_daemon_wake", "Kcompactd wake"),
    ("compact_daemon_migrate_scanned", "Kcompactd migrate scanned"),
    ("compact_daemon_free_scanned", "Kcompactd free scanned"), ("numa_hit", "NUMA alloc hit"),
    ("numa_miss", "NUMA alloc miss"), ("numa_interleave", "NUMA interleave hit"), ("numa_local", "NUMA alloc local"),
    ("numa_pte_updates", "NUMA base-page range updates"), ("mmtests_numa_pte_updates", "NUMA PTE updates"),
    ("mmtests_numa_pmd_updates", "NUMA PMD updates"), ("numa_hint_faults", "NUMA hint faults"),
    ("numa_hint_faults_local", "NUMA hint local faults %"), ("mmtests_hint_local", "NUMA hint local percent"),
    ("numa_pages_migrated", "NUMA pages migrated"), ("mmtests_autonuma_cost", "AutoNUMA cost"),
)
# renamed onto one key, each overwriting the last (MonitorMmtestsvmstat.pm %_renamed_fields)
_RENAMED = {"compact_pages_moved": "pgmigrate_success", "compact_pagemigrate_failed": "pgmigrate_failed",
            "thp_split": "thp_split_page", "thp_failed": "thp_split_page_failed", "allocstall_dma": "allocstall",
            "allocstall_dma32": "allocstall", "allocstall_normal": "allocstall",
            "allocstall_movable": "allocstall", "allocstall_highmem": "allocstall"}
_FLAT = ("pgpgin", "pgpgout", "pswpin", "pswpout", "pgfault", "pgmajfault", "allocstall", "fragment_stall",
         "pgalloc_dma", "pgalloc_dma32", "pgalloc_normal", "pgalloc_movable", "kswapd_inodesteal", "pginodesteal",
         "slabs_scanned", "compact_pages_moved", "compact_pagemigrate_failed", "compact_fail", "compact_success",
         "compact_stall", "compact_daemon_wake", "compact_daemon_migrate_scanned", "compact_daemon_free_scanned",
         "nr_vmscan_write", "kswapd_skip_congestion_wait", "nr_vmscan_immediate_reclaim", "pgrescued",
         "pgmigrate_success", "pgmigrate_fail", "compact_blocks_moved", "compact_isolated",
         "compact_migrate_scanned", "compact_free_scanned", "numa_hit", "numa_miss", "numa_interleave",
         "numa_local", "numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
         "numa_pages_migrated", "thp_fault_alloc", "thp_collapse_alloc", "thp_split_page",
         "thp_split_page_failed", "thp_fault_fallback", "thp_collapse_alloc_failed")


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
    elapsed_time = elapsed if elapsed else 1.0        # MMTests' default when no time line

    def d(k: str) -> float:
        return a.get(k, 0) - b.get(k, 0)
    v: dict[str, float | None] = {}
    v["mmtests_kswapd_steal"] = sum(d(k) for k in ("kswapd_steal", "pgsteal_kswapd_dma", "pgsteal_kswapd_dma32",
                                                   "pgsteal_kswapd_normal", "pgsteal_kswapd_high",
                                                   "pgsteal_kswapd_movable", "pgsteal_kswapd"))
    direct = sum(d(k) for k in ("pgsteal_dma", "pgsteal_dma32", "pgsteal_normal", "pgsteal_movable", "pgsteal_high",
                                "pgsteal_direct_dma", "pgsteal_direct_dma32", "pgsteal_direct_normal",
                                "pgsteal_direct_movable", "pgsteal_direct_high", "pgsteal_direct"))
    if "kswapd_steal" in b:
        direct -= v["mmtests_kswapd_steal"]  # type: ignore[operator]
    v["mmtests_direct_steal"] = direct
    kscan = sum(d(k) for k in ("pgscan_kswapd_dma", "pgscan_kswapd_dma32", "pgscan_kswapd_normal",
                               "pgscan_kswapd_movable", "pgscan_kswapd_high", "pgscan_kswapd"))
    dscan = sum(d(k) for k in ("pgscan_direct_dma", "pgscan_direct_dma32", "pgscan_direct_normal",
                               "pgscan_direct_movable", "pgscan_direct_high", "pgscan_direct"))
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
        cost = (ca * v["compact_migrate_scanned"] + ci * v["compact_isolated"]  # type: ignore[operator]
                + cmc * v["pgmigrate_success"] + cmf * v["pgmigrate_fail"])  # type: ignore[operator]
    if "compact_blocks_moved" in b:
        cost = (ca * v["compact_blocks_moved"] * 16384 + cmc * v["compact_pages_moved"]  # type: ignore[operator]
                + cmf * v["compact_pagemigrate_failed"])  # type: ignore[operator]
    v["mmtests_compaction_cost"] = cost / 1000000
    v["mmtests_autonuma_cost"] = (ca * v["numa_pte_updates"] + 5000 * v["numa_hint_faults"]  # type: ignore[operator]
                                  + ci * v["numa_pages_migrated"]) / 1000000  # type: ignore[operator]
    v["mmtests_compact_efficiency"] = (v["compact_success"] * 100 / v["compact_stall"]  # type: ignore[operator]
                                       if v["compact_stall"] else None)
    ms = v["compact_migrate_scanned"]
    v["mmtests_cscan_efficiency"] = None if not ms else (
        ms * 100 / v["compact_free_scanned"] if v["compact_free_scanned"] > 0 else 1.0)  # type: ignore[operator]
    return {name: v.get(key) for key, name in VMSTAT_ROWS}


# Why a vmstat row of MonitorMmtestsvmstat.pm is undefined (MMTests leaves it unset: Compare.pm prints 0)
UNDEFINED_WHY = {"Compaction efficiency": "no compaction stall: compact_success * 100 / compact_stall is 0/0",
                 "Compact scan efficiency": "no page scanned for migration (compact_migrate_scanned is 0)"}


# ---- "MMTests Statistics: schedstat" (MonitorMmtestsschedstat.pm) ----------------------------

SCHEDSTAT_ROWS: tuple[tuple[str, str], ...] = (
    ("ttwu_count", "TTWU Count"), ("ttwu_local", "TTWU Local"), ("sis_search", "SIS Search"),
    ("sis_domain_search", "SIS Domain Search"), ("sis_scanned", "SIS Scanned"),
    ("mmtests_sis_domain_scanned", "SIS Domain Scanned"), ("sis_failed", "SIS Failures"),
    ("sis_core_search", "SIS Core Search"), ("mmtests_sis_core_hit", "SIS Core Hit"),
    ("sis_core_miss", "SIS Core Miss"), ("sis_recent_hit", "SIS Recent Used Hit"),
    ("sis_recent_miss", "SIS Recent Used Miss"), ("mmtests_sis_recent_attempts", "SIS Recent Attempts"),
    ("mmtests_sis_efficiency", "SIS Search Efficiency"), ("mmtests_sis_domain_efficiency", "SIS Domain Search Eff"),
    ("mmtests_sis_fast_success", "SIS Fast Success Rate"), ("mmtests_sis_success", "SIS Success Rate"),
    ("mmtests_sis_recent_success", "SIS Recent Success Rate"),
)


def schedstat_values(delta: dict[str, int]) -> dict[str, float]:
    """MonitorMmtestsschedstat.pm's values from the summed per-CPU /proc/schedstat deltas."""
    s: dict[str, float] = {k: float(delta.get(k, 0)) for k in (
        "ttwu_count", "ttwu_local", "sis_search", "sis_domain_search", "sis_scanned", "sis_failed",
        "sis_recent_hit", "sis_recent_miss", "sis_core_search", "sis_core_miss")}
    s["mmtests_sis_core_hit"] = s["sis_core_search"] - s["sis_core_miss"]
    fast_search = s["sis_search"] - s["sis_domain_search"]
    domain_scanned = s["sis_scanned"] - fast_search
    recent_total = s["sis_recent_hit"] + s["sis_recent_miss"]
    s["mmtests_sis_recent_success"] = s["sis_recent_hit"] * 100 / recent_total if recent_total else 0.0
    s["mmtests_sis_recent_attempts"] = recent_total
    s["mmtests_sis_efficiency"] = s["sis_search"] * 100 / s["sis_scanned"] if s["sis_scanned"] else 100.0
    s["mmtests_sis_domain_efficiency"] = (s["sis_domain_search"] * 100 / domain_scanned
                                          if s["sis_scanned"] and domain_scanned else
                                          100.0 if not s["sis_scanned"] else NAN)
    s["mmtests_sis_fast_success"] = fast_search * 100 / s["sis_search"] if s["sis_search"] else 100.0
    s["mmtests_sis_success"] = ((s["sis_search"] - s["sis_failed"]) * 100 / s["sis_search"]
                                if s["sis_search"] else 100.0)
    s["mmtests_sis_domain_scanned"] = domain_scanned
    return {name: s[key] for key, name in SCHEDSTAT_ROWS}


# ---- monitor views: what compare-mmtests.pl --print-monitor M --sub-heading X summarises -----
# (SummariseMonitor.pm: Amean and Max of every value of every iteration pooled; the HTML report
# graphs the same series)

VMSTAT_COLUMNS = {"r": 0, "b": 1, "swpd": 2, "free": 3, "buff": 4, "cache": 5, "si": 6, "so": 7, "bi": 8,
                  "bo": 9, "in": 10, "cs": 11, "us": 12, "sy": 13, "id": 14, "wa": 15, "st": 16}
# the vmstat sub-headings compare-kernels.sh graphs
VMSTAT_VIEWS = ("us", "sy", "wa", "r", "b", "totalcpu", "ussy", "free", "cs", "in", "si", "so", "swpd")
# the proc-vmstat sub-headings it graphs that need no other file
PROC_VMSTAT_VIEWS = ("mmtests_minor_faults", "pgmajfault", "pgpgin", "pgpgout", "pgpgtotal", "nr_dirty",
                     "nr_writeback", "nr_anon_transparent_hugepages", "nr_file_pages", "nr_slab_reclaimable",
                     "nr_slab_unreclaimable", "mmtests_total_slab", "mmtests_total_anon")
# gauges MonitorProcvmstat.pm reports as they are (every other counter as a per-interval delta)
PROC_VMSTAT_GAUGES = frozenset((
    "nr_active_anon", "nr_active_file", "nr_anon_pages", "nr_anon_transparent_hugepages", "nr_dirty",
    "nr_file_pages", "nr_free_cma", "nr_free_pages", "nr_inactive_anon", "nr_inactive_file", "nr_isolated_anon",
    "nr_isolated_file", "nr_kernel_stack", "nr_mapped", "nr_mlock", "nr_page_table_pages", "nr_shmem",
    "nr_slab_reclaimable", "nr_slab_unreclaimable", "nr_unevictable", "nr_unstable", "nr_writeback",
    "nr_writeback_temp", "nr_dirty_background_threshold"))


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
        g = (lambda i: fields[i] if i < len(fields) else None)
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
    if preferred == "Higher":   # sort { $b <=> $a }: descending, ties still in input order
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
        if i == 3:       # free / 1024 is a number on header lines too (0), as above
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
        for frame in frames[:len(frames) - 1 if read is None else read]:
            cur = self._current(frame)
            if self.heading in PROC_VMSTAT_GAUGES or self.heading in ("mmtests_total_slab", "mmtests_total_anon"):
                out.append(cur)
                continue
            delta = cur - self.last_value if self.last_value else 0.0
            self.last_value = cur
            if delta == -1:          # extractReport: "next if $val == -1" (its marker of no value)
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


# ---- how MMTests prints a table (Compare.pm, PrintGeneric.pm) ----------------------------------
# The column width (_FieldLength) and decimals (_Precision) of each table compare-kernels.sh prints,
# per release: Extract.pm's default width is 18 in HEAD (ExtractShellpack: every HEAD benchmark)
# and Summarise.pm's 12 before; the decimals are shellpack.yaml's DecimalPlaces in HEAD (stutterp
# 4) and the extract module's _Precision before (ExtractPft.pm 4, ExtractStutterp.pm 4).  Checked
# on the trees of tests/data/mmtests (HEAD, v1.00, v0.25 compare-kernels.txt).
_TABLE_FIELD: dict[tuple[str, str], int] = {("pft", "v0.25"): 14, ("highalloc", "v0.25"): 25}
_TABLE_DECIMALS: dict[tuple[str, str], int] = {("pft", "v0.25"): 4, ("stutterp", "v0.25"): 4,
                                               ("stutterp", "v1.00"): 4, ("stutterp", "head"): 4}
# MonitorMmtestsvmstat.pm and MonitorMmtestsschedstat.pm set 15, MonitorIostat.pm 12; MonitorDuration
# and the --print-monitor views take Extract.pm's default (HEAD 18, before 12)
_MONITOR_FIELD = {"vmstat": 15, "schedstat": 15, "iostat": 12}


def table_layout(fmt: str | None, rules: Rules) -> tuple[int, int]:
    """(field width, decimals) of a benchmark's table (and of its --print-ratio table)."""
    field = 18 if rules == "head" else _TABLE_FIELD.get((fmt or "", rules), 12)
    return field, _TABLE_DECIMALS.get((fmt or "", rules), 2)


def monitor_field(part: str, rules: Rules) -> int:
    """The field width of a monitor table: duration, vmstat, schedstat, iostat or a monitor view."""
    return _MONITOR_FIELD.get(part, 18 if rules == "head" else 12)


# the title lines compare-kernels.sh echoes before a benchmark's tables where it is not the
# benchmark's name alone ("case $SUBREPORT" of the release's compare-kernels.sh); "{b}" is the name
_TITLES: dict[tuple[str, str], tuple[str, ...]] = {
    ("thpscale", "v0.25"): ("{b} Fault Latencies", "{b} Percentage Faults Huge", "{b} Percentage Locality"),
    ("pft", "v0.25"): ("{b} faults",),
    ("simoop", "v0.25"): ("{b} latencies",), ("simoop", "v1.00"): ("{b} latencies",),
    ("simoop", "head"): ("{b} latencies",),
}


def report_titles(bench: str, rules: Rules) -> tuple[str, ...]:
    """The titles of a benchmark's tables: the main table's, then thpscale's two percentage tables'."""
    key = "thpscale" if bench.startswith("thp") and bench.endswith("scale") else bench
    titles = _TITLES.get((key, rules))
    if titles is None and key == "thpscale":
        titles = _TITLES[("thpscale", "v0.25")]
    return tuple(t.format(b=bench) for t in (titles or ("{b}",)))


def iostat_printed(second_row_base: float | None) -> bool:
    """compare-kernels.sh prints the iostat table when the integer part of the baseline's cell in
    the table's second row (Amean of the first device's await) is above 5."""
    return second_row_base is not None and math.isfinite(second_row_base) and int(second_row_base) > 5


def header_names(name: str) -> tuple[str, str]:
    """Compare.pm _generateHeaderTable: a run name split at its first '-' into the two header lines
    (past a "-rcN" after it); Perl's substr with the index -1 of a name without '-' drops the name's
    last character from the first line."""
    i = name.find("-")
    if re.match(r"-rc[0-9]", name[i:i + i + 3] if i >= 0 else name[-1:]):
        i += 4
    top = name[:i] if i >= 0 else name[:-1]
    return top, name[i + 1:]


# v0.25 prefers by data type (Summarise.pm typeToPreferredVal): a monitor series whose type is not a
# time, size or percentage prefers Higher, so its mean row is an Hmean.  v1.00 and HEAD: Lower.
_V025_HIGHER = {"vmstat": {"r", "b", "si", "so", "bi", "bo", "in", "cs", "ussy"},   # MonitorVmstat.pm typeMap
                "iostat": {"avgrqsz", "rrqm", "wrqm"}}


def monitor_preferred(monitor: str, op: str, rules: Rules) -> Preferred:
    """Which way a monitor series prefers in ``rules`` (MonitorVmstat/Procvmstat/Iostat.pm types)."""
    if rules != "v0.25":
        return "Lower"
    if monitor == "proc-vmstat":          # DATA_ACTIONS for every counter
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
    return "Amean", _amean(sorted(values)), max(values)     # summed in sorted order, as Summarise.pm does


def compare_cells(values: dict[str, float | None], base: str) -> dict[str, float | None]:
    """Compare.pm _generateComparisonTable's cells of one statistic: a run's -1 (v0.25's
    calc_hmean of a series with a value <= 0) is printed as 0, and a baseline's -1 makes every
    run's cell 0 (``$baseline{$operation}[$column] != -1``); NaN is 0 too.  Undefined (None)
    stands for MMTests' 0 here."""
    if values.get(base) == -1:
        return {n: None for n in values}
    return {n: (None if v is None or v == -1 or v != v else v) for n, v in values.items()}


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
            g = (lambda i: e[i] if i < len(e) else "")
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
                v = {"rrqm": t[6], "wrqm": t[7], "avgrqsz": t[12], "avgqusz": t[13], "await": t[14],
                     "r_await": -1.0 if fmt == 0 else t[15], "w_await": -1.0 if fmt == 0 else t[16],
                     "svctm": t[15] if fmt == 0 else t[17]}
                num = {"avgqusz": n[13], "await": n[14], "r_await": -1.0 if fmt == 0 else n[15],
                       "w_await": -1.0 if fmt == 0 else n[16]}
            elif fmt == 2:
                v = {"rrqm": t[10], "wrqm": t[11], "avgqusz": t[16], "r_await": t[14], "w_await": t[15],
                     "svctm": t[19], "await": (n[14] + n[15]) / 2, "avgrqsz": (n[17] + n[18]) / 2}
                num = {"avgqusz": n[16], "await": (n[14] + n[15]) / 2, "r_await": n[14], "w_await": n[15]}
            else:
                v = {op: None for op in IOSTAT_OPS}     # MMTests reads undef from an unknown layout
                num = {"avgqusz": 0.0, "await": 0.0, "r_await": 0.0, "w_await": 0.0}
            if num["avgqusz"] > 1000000 or num["await"] > 3600000 or num["r_await"] > 3600000 \
                    or num["w_await"] > 3600000:
                continue
            seen[dev] = seen.get(dev, 0) + 1
            if seen[dev] == 1:
                continue
            name = _ANSI.sub("", dev)
            for op in IOSTAT_OPS:
                vals = out.setdefault(f"{name}-{op}", [])    # the op exists even with no value
                x = v[op]
                if x is not None:
                    vals.append(perl_num(x) if isinstance(x, str) else float(x))
        return out
