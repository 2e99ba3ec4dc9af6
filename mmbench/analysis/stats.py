"""Summary statistics: typed pure functions (definitions in docs/statistics.md).

Every function returns ``nan`` where the statistic is undefined (no data, one value for a spread,
a harmonic mean of data that is not all positive, ...).  Nothing is fudged: a caller that wants
to show "undefined" turns the NaN into ``None``.

The per-iteration structure is kept: :func:`summarise` takes a list of per-iteration sample
sequences.  The *observation units* of the mean, stddev and coefficient of variation are the
iteration means when there are at least two iterations, else the samples of the lone iteration
(:func:`units`).  Min, Max, B-means and percentiles describe all samples pooled.

The arithmetic is plain Python on lists (``math.fsum``): a comparison holds a few to a few
thousand values per series, and importing numpy alone costs more (0.1 s) than a whole two-run
compare.  Inputs may be lists or numpy arrays.  Data holding a NaN or an
infinity take numpy's code path, so those edge cases keep numpy's exact semantics.  A large array
(stored samples of a long run) is summed in place by :mod:`exactsum`, with the very
result math.fsum gives.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal, Sequence

MeanKind = Literal["amean", "hmean", "gmean"]
Better = Literal["higher", "lower"]
# "mmbench": the definitions above; "mmtests": MMTests' (bin/lib/MMTests/Stat.pm, Summarise.pm) for
# reproducing its compare-kernels tables of imported trees (docs/mmtests-import.md)
Convention = Literal["mmbench", "mmtests"]

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
BMEAN_PCT = 95
PERCENTILE_METHOD = "linear"  # numpy's default: the (n-1)*p/100 interpolation (Hyndman & Fan 7)

_NAN = float("nan")
Values = Sequence[float] | Any  # a list, tuple or numpy array of numbers


def floats(x: Iterable[float] | Any) -> list[float]:
    """The values as a flat list of numbers (a list is returned as it is: the callers only read)."""
    if type(x) is list:
        return x
    if hasattr(x, "ravel"):  # numpy array: tolist() is 50x faster than iterating
        vals = x.ravel().tolist()
        return vals if getattr(x.dtype, "kind", "") == "f" else [float(v) for v in vals]
    return [float(v) for v in x]


def _finite_all(a: list[float]) -> bool:
    """True when every value is finite (one sum: a NaN or inf propagates; an overflowing sum of
    finite values, 9e307 + 9e307, is checked value by value: such data are finite and take the
    scaled path below, not numpy's overflowing one)."""
    return math.isfinite(sum(a)) or all(map(math.isfinite, a))


def _scale(a: list[float]) -> float:
    """The largest magnitude (at least 1): dividing by it keeps sums of finite data finite."""
    if len(a) > 10_000:  # the same maximum, found by numpy (a compare of 1 M-sample runs)
        np = _np()
        return max(1.0, float(np.max(np.abs(np.asarray(a, dtype=np.float64)))))
    return max(1.0, max(abs(v) for v in a))


def _np() -> Any:
    import numpy as np  # only for data holding NaN/inf (numpy's semantics) and the bootstrap

    return np


# arrays at least this long are summed by exactsum (below it a ctypes call costs more than it saves)
BIG_ARRAY = 512


def _big(x: Any) -> bool:
    return hasattr(x, "ravel") and x.size >= BIG_ARRAY


def amean(x: Values) -> float:
    """Arithmetic mean; NaN when empty or when a value is NaN."""
    if _big(x):
        from mmbench.analysis import exactsum

        total = exactsum.fsum(x)
        if total is not None:
            return total / x.size
    a = floats(x)
    if not a:
        return _NAN
    if not _finite_all(a):
        return float(_np().asarray(a).mean())
    try:
        return math.fsum(a) / len(a)
    except OverflowError:  # finite values near the float maximum (9e307)
        k = _scale(a)
        return k * (math.fsum(v / k for v in a) / len(a))


def hmean(x: Values) -> float:
    """Harmonic mean n / sum(1/x).  Defined for positive data only: NaN if any value <= 0 (or
    NaN) and when empty.  A rate of 0 has no harmonic mean; we say so rather than guess."""
    a = floats(x)
    if not a or any(v != v or v <= 0 for v in a):
        return _NAN
    # the formula scipy.stats.hmean evaluates (tested equal)
    total = math.fsum(1.0 / v for v in a)
    return len(a) / total if total else math.inf  # every value inf


def gmean(x: Values) -> float:
    """Geometric mean exp(mean(log x)), computed in log space (no overflow).  Any zero → 0,
    any negative or NaN → NaN, empty → NaN.  No fudge factors."""
    a = floats(x)
    if not a or any(v != v or v < 0 for v in a):
        return _NAN
    if any(v == 0 for v in a):
        return 0.0
    if any(math.isinf(v) for v in a):
        return math.inf
    # scipy.stats.gmean's formula exp(mean(log x)) (tested equal)
    return math.exp(math.fsum(map(math.log, a)) / len(a))


MEANS = {"amean": amean, "hmean": hmean, "gmean": gmean}


def mean(x: Values, kind: MeanKind = "amean") -> float:
    return MEANS[kind](x)


def _stddev(a: list[float]) -> float:
    if len(a) < 2:
        return _NAN
    if not _finite_all(a):
        return float(_np().asarray(a).std(ddof=1))
    k = _scale(a)
    if k > 1e150:  # squares would overflow: work on scaled values
        b = [v / k for v in a]
        m = math.fsum(b) / len(b)
        return k * math.sqrt(math.fsum((v - m) * (v - m) for v in b) / (len(b) - 1))
    m = math.fsum(a) / len(a)
    if len(a) > 10_000:  # the same IEEE operations, squared deviations formed by numpy
        d = _np().asarray(a) - m
        return math.sqrt(math.fsum((d * d).tolist()) / (len(a) - 1))
    return math.sqrt(math.fsum((v - m) * (v - m) for v in a) / (len(a) - 1))


def _stddev_array(x: Any) -> float | None:
    """:func:`_stddev` of a large finite array, summed in place; None where exactsum declines."""
    from mmbench.analysis import exactsum

    total = exactsum.fsum(x)
    if total is None or max(1.0, float(abs(x).max())) > 1e150:
        return None
    m = total / x.size
    sq = exactsum.fsum_sqdev(x, m)
    return None if sq is None else math.sqrt(sq / (x.size - 1))


def stddev(x: Values) -> float:
    """Sample standard deviation with n−1 in the denominator; NaN if n < 2."""
    if _big(x):
        sd = _stddev_array(x)
        if sd is not None:
            return sd
    return _stddev(floats(x))


def coeffvar(x: Values, kind: MeanKind = "amean") -> float:
    """100·stddev/mean, the mean being of the same family as the row's mean (``kind``).
    NaN when the stddev is undefined (n < 2) or the mean is 0 or undefined."""
    sd = stddev(x)
    m = mean(x, kind)
    if math.isnan(sd) or math.isnan(m) or m == 0:
        return _NAN
    return 100.0 * (sd / abs(m))


def vmin(x: Values) -> float:
    a = floats(x)
    if not a:
        return _NAN
    return min(a) if not any(v != v for v in a) else _NAN


def vmax(x: Values) -> float:
    a = floats(x)
    if not a:
        return _NAN
    return max(a) if not any(v != v for v in a) else _NAN


def bmean_k(n: int, pct: float, convention: Convention = "mmbench") -> int:
    """How many values B-mean keeps: k = max(1, ceil(n·pct/100)).

    Rounding up means "at least pct% of the values are kept": at most (100−pct)% of the worst
    values are dropped, never more.  (MMTests floors, so with n=5 its BAmean.95 drops 20%;
    ``convention="mmtests"`` gives its k = max(1, floor(n·pct/100)), Summarise.pm:323-334.)"""
    if n <= 0:
        return 0
    if convention == "mmtests":
        return max(1, min(n, math.floor(n * pct / 100.0 + 1e-9)))
    return max(1, min(n, math.ceil(n * pct / 100.0 - 1e-9)))


def sorted_values(a: list[float]) -> list[float]:
    """Sorted as numpy sorts: NaNs last."""
    if not _finite_all(a) and any(v != v for v in a):
        return sorted(v for v in a if v == v) + [v for v in a if v != v]
    return sorted(a)


def _bmean_of_sorted(
    s: list[float], pct: float, better: Better, kind: MeanKind, convention: Convention = "mmbench"
) -> float:
    if not len(s):
        return _NAN
    k = bmean_k(len(s), pct, convention)
    return mean(s[:k] if better == "lower" else s[len(s) - k :], kind)


def bmean(
    x: Values,
    pct: float = BMEAN_PCT,
    better: Better = "lower",
    kind: MeanKind = "amean",
    convention: Convention = "mmbench",
) -> float:
    """Mean (of family ``kind``) of the best ``pct``% of the values: the lowest ones when lower is
    better, the highest ones when higher is better.  k is :func:`bmean_k`."""
    return _bmean_of_sorted(sorted_values(floats(x)), pct, better, kind, convention)


def _percentile_of_sorted(s: list[float], p: float) -> float:
    """numpy's ``percentile(method="linear")`` of sorted finite data, step for step (the same
    virtual index and the same two-sided linear interpolation, so the result is bit-equal)."""
    n = len(s)
    vi = (n - 1) * (p / 100.0)
    lo = math.floor(vi)
    if lo >= n - 1:
        return float(s[n - 1])
    if lo < 0:
        return float(s[0])
    g = vi - lo
    a, b = float(s[lo]), float(s[lo + 1])
    d = b - a
    return b - d * (1.0 - g) if g >= 0.5 else a + d * g


def percentiles_of_sorted(s: list[float], ps: Sequence[float] = PERCENTILES) -> list[float]:
    """Percentiles of already sorted data, a list or an array (see :func:`percentile`)."""
    if not len(s):
        return [_NAN] * len(ps)
    if s[-1] != s[-1] or not math.isfinite(s[0]) or not math.isfinite(s[-1]):
        np = _np()
        return [float(v) for v in np.percentile(np.asarray(s), list(ps), method=PERCENTILE_METHOD)]
    return [_percentile_of_sorted(s, p) for p in ps]


def percentile(x: Values, p: float) -> float:
    """The conventional p-th percentile counted from the low end whatever the direction of the
    metric, linear interpolation between order statistics (numpy ``method='linear'``)."""
    return percentiles_of_sorted(sorted_values(floats(x)), (p,))[0]


def percentiles(x: Values, ps: Sequence[float] = PERCENTILES) -> list[float]:
    return percentiles_of_sorted(sorted_values(floats(x)), ps)


# --------------------------------------------------------------------------------------------
# Per-iteration structure


def pooled(per_iter: Sequence[Values]) -> list[float]:
    """All samples of all iterations in one list."""
    out: list[float] = []
    for s in per_iter:
        out.extend(floats(s))
    return out


def iteration_values(per_iter: Sequence[Values], kind: MeanKind = "amean") -> list[float]:
    """One value per iteration: the mean (family ``kind``) of its samples.  Iterations without
    samples are skipped."""
    return [mean(s, kind) for s in per_iter if len(s)]


UnitsKind = Literal["iterations", "samples", "none"]


def units(per_iter: Sequence[Values], kind: MeanKind = "amean") -> tuple[list[float], UnitsKind]:
    """The observation units of the mean/stddev rows: iteration means when there are ≥ 2
    iterations with samples, else the samples of the only iteration (or nothing)."""
    nonempty = [s for s in per_iter if len(s)]
    if len(nonempty) >= 2:
        return iteration_values(nonempty, kind), "iterations"
    if len(nonempty) == 1:
        return floats(nonempty[0]), "samples"
    return [], "none"


def mean_label(kind: MeanKind) -> str:
    return {"amean": "Amean", "hmean": "Hmean", "gmean": "Gmean"}[kind]


def bmean_label(kind: MeanKind, pct: float = BMEAN_PCT) -> str:
    return f"B{mean_label(kind)}.{int(pct)}"


def summarise(
    per_iter: Sequence[Values],
    *,
    kind: MeanKind = "amean",
    better: Better = "lower",
    latency: bool = False,
    iteration_means: list[float] | None = None,
    pooled_sorted: list[float] | None = None,
    convention: Convention = "mmbench",
) -> list[tuple[str, float]]:
    """The summary rows of one metric of one run, in display order:

    Min, <Mean>, Stddev, CoeffVar, Max, B<Mean>.95 and, for latency metrics, P50 P90 P95 P99.
    The pooled samples are sorted once for Min, Max, the B-mean and the percentiles.  A caller
    that already has the iteration means (:func:`iteration_values`) or the sorted pooled samples
    passes them, so they are not computed again.  ``convention="mmtests"``: the mean and stddev
    are of all samples pooled (MMTests pools every iteration, Summarise.pm:362) and B-means floor
    their k (:func:`bmean_k`).
    """
    s = pooled_sorted if pooled_sorted is not None else sorted_values(pooled(per_iter))  # list or array
    if convention == "mmtests":
        u = pooled(per_iter)
    elif iteration_means is not None and len(iteration_means) >= 2:
        u = iteration_means
    else:
        u, _ = units(per_iter, kind)
    m = mean(u, kind)
    sd = _stddev(u)
    cv = _NAN if (math.isnan(sd) or math.isnan(m) or m == 0) else 100.0 * (sd / abs(m))
    has_nan = len(s) > 0 and s[-1] != s[-1]
    rows = [
        ("Min", _NAN if not len(s) or has_nan else float(s[0])),
        (mean_label(kind), m),
        ("Stddev", sd),
        ("CoeffVar", cv),
        ("Max", _NAN if not len(s) or has_nan else float(s[-1])),
        (bmean_label(kind), _bmean_of_sorted(s, BMEAN_PCT, better, kind, convention)),
    ]
    if latency:
        rows += [(f"P{p}", v) for p, v in zip(PERCENTILES, percentiles_of_sorted(s))]
    return rows


# --------------------------------------------------------------------------------------------
# Outliers


MAD_SCALE = 1.4826  # makes the MAD a consistent estimator of σ for normal data
MEANAD_SCALE = 1.2533  # sqrt(pi/2): the same for the mean absolute deviation
OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's modified z-score threshold


def _median_of_sorted(s: list[float]) -> float:
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def outliers(values: Values, z: float = OUTLIER_Z) -> list[tuple[int, float]]:
    """Indices (and robust z-scores) of values whose robust z-score exceeds ``z``.

    score = |x − median| / scale, scale = max(1.4826·MAD, 1.2533·mean|x − median|).
    The plain MAD alone is unusable with the 3–10 iterations benchmarks have: with 5 normal
    values it flags one in five sets; the max() with the mean absolute deviation brings the
    false-flag rate to 1.0–1.5 % per run at n = 10…20 (bench/stats-calibration) while a value 10σ
    away is still flagged for n ≥ 7.  Needs at least 3 finite values; a zero scale flags
    nothing."""
    a = floats(values)
    ok = [v for v in a if math.isfinite(v)]
    if len(ok) < 3:
        return []
    med = _median_of_sorted(sorted(ok))
    dev_ok = [abs(v - med) for v in ok]
    scale = max(MAD_SCALE * _median_of_sorted(sorted(dev_ok)), MEANAD_SCALE * (math.fsum(dev_ok) / len(dev_ok)))
    if scale == 0:
        return []
    out = []
    for i, v in enumerate(a):
        if math.isfinite(v):
            score = abs(v - med) / scale
            if score > z:
                out.append((i, score))
    return out
