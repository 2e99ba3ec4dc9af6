"""MMTests' own summary statistics, for ``compare --convention mmtests`` of imported MMTests runs:
the summary rows each MMTests summary type prints (Multiops, Variabletime, Singleops), with the
definitions, row names and percentage formulas of the MMTests release that wrote the tree
(``rules``: "v0.25", "v1.00" or "head"), the confidence intervals its significance marks and
ratio summary use, its ``pdiff``/``pndiff``/``cidiff``/``rdiff``, and how it lays out a table.
Its monitor statistics (vmstat, schedstat, iostat, the monitor views) are ``mmtests_monitors.py``.

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
from typing import Any, Literal, Sequence


Rules = Literal["v0.25", "v1.00", "head"]
RULES: tuple[Rules, ...] = ("v0.25", "v1.00", "head")
SummaryType = Literal["Multiops", "Variabletime", "Singleops"]
Preferred = Literal["Lower", "Higher"]
NAN = float("nan")
ALPHA = 0.05
Z975 = 1.959963984540054  # qnorm(1 - 0.05/2)

# _SummaryStats of each summary type (SummariseMultiops.pm, SummariseVariabletime.pm; HEAD
# Summarise.pm setSummaryMultiops) and the _RatioSummaryStat whose first entry is the stat the
# significance mark and the ratio summary use.
_STATS: dict[tuple[str, str], tuple[list[str], list[str]]] = {
    ("Multiops", "v0.25"): (
        ["min", "_mean", "stddev", "coeffvar", "max", "_mean-50", "_mean-95", "_mean-99"],
        ["_mean", "stddev"],
    ),
    ("Multiops", "v1.00"): (
        ["min", "_mean", "stddev-_mean", "coeffvar-_mean", "max", "_mean-50", "_mean-95", "_mean-99"],
        ["_mean", "meanci_low-_mean", "meanci_high-_mean"],
    ),
    ("Multiops", "head"): (
        ["min", "_mean", "stddev-_mean", "coeffvar-_mean", "max", "_mean-95"],
        ["_mean", "meanci_low-_mean", "meanci_high-_mean"],
    ),
    ("Variabletime", "v0.25"): (
        [
            "min",
            "percentile-25",
            "percentile-50",
            "percentile-75",
            "percentile-1",
            "percentile-5",
            "percentile-10",
            "percentile-90",
            "percentile-95",
            "percentile-99",
            "max",
            "_mean",
            "stddev",
            "coeffvar",
            "_mean-99",
            "_mean-95",
            "_mean-90",
            "_mean-75",
            "_mean-50",
            "_mean-25",
        ],
        ["percentile-95"],
    ),
    ("Variabletime", "v1.00"): (
        [
            "min",
            "percentile-25",
            "percentile-50",
            "percentile-75",
            "percentile-1",
            "percentile-5",
            "percentile-10",
            "percentile-90",
            "percentile-95",
            "percentile-99",
            "max",
            "_mean",
            "stddev-_mean",
            "coeffvar-_mean",
            "_mean-99",
            "_mean-95",
            "_mean-90",
            "_mean-75",
            "_mean-50",
            "_mean-25",
        ],
        ["percentile-95", "percentileci_low-95", "percentileci_high-95"],
    ),
    ("Singleops", "v0.25"): (["_value"], ["_value"]),
}
_STATS[("Variabletime", "head")] = _STATS[("Variabletime", "v1.00")]
_STATS[("Singleops", "v1.00")] = _STATS[("Singleops", "head")] = _STATS[("Singleops", "v0.25")]

# stat_names of Stat.pm per release (the v0.25 names where a later release renamed them)
_NAMES_COMMON = {
    "min": "Min",
    "max": "Max",
    "amean": "Amean",
    "hmean": "Hmean",
    "stddev": "Stddev",
    "coeffvar": "CoeffVar",
    "stddev-amean": "Stddev",
    "stddev-hmean": "HStddev",
    "coeffvar-amean": "CoeffVar",
    "coeffvar-hmean": "HCoeffVar",
}
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
    """ "pdiff" or "pndiff": Stat.pm stat_compare (stddev, coeffvar → pndiff), else by preference."""
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
    target = p * (1 - 64 * 2.220446049250313e-16)  # R's fuzz against rounding (qbinom.c)
    lp, lq = math.log(prob), math.log1p(-prob)
    cdf = 0.0
    for x in range(size + 1):
        cdf += math.exp(
            math.lgamma(size + 1) - math.lgamma(x + 1) - math.lgamma(size - x + 1) + x * lp + (size - x) * lq
        )
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
    ratio_index: int | None  # which row carries the significance mark (_ComparisonStatIndex)
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
    return math.sqrt(_sum(d * d) * h**4 / n)


def _k(n: int, pct: float) -> int:
    return max(1, int(n * pct / 100))


def summarise(
    values: Sequence[float],
    summary: SummaryType,
    preferred: Preferred,
    rules: Rules,
    opname: str = "Ops",
    presorted: bool = False,
) -> Summary:
    """The rows MMTests prints for one op whose samples (all iterations pooled) are ``values``
    (``presorted``: a float64 array sorted ascending already)."""
    import numpy as np

    data = values if presorted else np.sort(np.asarray(values, dtype=np.float64))  # best first
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
            cache["positive"] = int(bad[0]) if bad.size else data.size  # the best values > 0
            cache["recip"] = np.cumsum(1.0 / data[: cache["positive"]])
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
    pdev = math.sqrt((new_sd**2 + base_sd**2) / 2)
    return new - base if pdev == 0 else (new - base) / pdev


def significant_ttest(base: Summary, new: Summary, level: float = 0.10) -> bool:
    """v0.25's mark (Compare.pm _significanceTest), on the Amean/Hmean rows: t = |Δmean| /
    √(s_b²/n_b + s_n²/n_n) with df = n_b + n_n − 2 (not Welch's), two-sided p < 0.10; with both
    spreads 0, any difference of the means."""
    if base.t_data is None or new.t_data is None:
        return False
    (mb, sb, nb), (mn, sn, nn) = base.t_data, new.t_data
    se = math.sqrt(sb**2 / nb + sn**2 / nn) if nb and nn else 0.0
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


# ---- how MMTests prints a table (Compare.pm, PrintGeneric.pm) ----------------------------------
# The column width (_FieldLength) and decimals (_Precision) of each table compare-kernels.sh prints,
# per release: Extract.pm's default width is 18 in HEAD (ExtractShellpack: every HEAD benchmark)
# and Summarise.pm's 12 before; the decimals are shellpack.yaml's DecimalPlaces in HEAD (stutterp
# 4) and the extract module's _Precision before (ExtractPft.pm 4, ExtractStutterp.pm 4).  Checked
# on the trees of tests/data/mmtests (HEAD, v1.00, v0.25 compare-kernels.txt).
_TABLE_FIELD: dict[tuple[str, str], int] = {("pft", "v0.25"): 14, ("highalloc", "v0.25"): 25}
_TABLE_DECIMALS: dict[tuple[str, str], int] = {
    ("pft", "v0.25"): 4,
    ("stutterp", "v0.25"): 4,
    ("stutterp", "v1.00"): 4,
    ("stutterp", "head"): 4,
}


def table_layout(fmt: str | None, rules: Rules) -> tuple[int, int]:
    """(field width, decimals) of a benchmark's table (and of its --print-ratio table)."""
    field = 18 if rules == "head" else _TABLE_FIELD.get((fmt or "", rules), 12)
    return field, _TABLE_DECIMALS.get((fmt or "", rules), 2)


# the title lines compare-kernels.sh echoes before a benchmark's tables where it is not the
# benchmark's name alone ("case $SUBREPORT" of the release's compare-kernels.sh); "{b}" is the name
_TITLES: dict[tuple[str, str], tuple[str, ...]] = {
    ("thpscale", "v0.25"): ("{b} Fault Latencies", "{b} Percentage Faults Huge", "{b} Percentage Locality"),
    ("pft", "v0.25"): ("{b} faults",),
    ("simoop", "v0.25"): ("{b} latencies",),
    ("simoop", "v1.00"): ("{b} latencies",),
    ("simoop", "head"): ("{b} latencies",),
}


def report_titles(bench: str, rules: Rules) -> tuple[str, ...]:
    """The titles of a benchmark's tables: the main table's, then thpscale's two percentage tables'."""
    key = "thpscale" if bench.startswith("thp") and bench.endswith("scale") else bench
    titles = _TITLES.get((key, rules))
    if titles is None and key == "thpscale":
        titles = _TITLES[("thpscale", "v0.25")]
    return tuple(t.format(b=bench) for t in (titles or ("{b}",)))


def header_names(name: str) -> tuple[str, str]:
    """Compare.pm _generateHeaderTable: a run name split at its first '-' into the two header lines
    (past a "-rcN" after it); Perl's substr with the index -1 of a name without '-' drops the name's
    last character from the first line."""
    i = name.find("-")
    if re.match(r"-rc[0-9]", name[i : i + i + 3] if i >= 0 else name[-1:]):
        i += 4
    top = name[:i] if i >= 0 else name[:-1]
    return top, name[i + 1 :]


def compare_cells(values: dict[str, float | None], base: str) -> dict[str, float | None]:
    """Compare.pm _generateComparisonTable's cells of one statistic: a run's -1 (v0.25's
    calc_hmean of a series with a value <= 0) is printed as 0, and a baseline's -1 makes every
    run's cell 0 (``$baseline{$operation}[$column] != -1``); NaN is 0 too.  Undefined (None)
    stands for MMTests' 0 here."""
    if values.get(base) == -1:
        return {n: None for n in values}
    return {n: (None if v is None or v == -1 or v != v else v) for n, v in values.items()}
