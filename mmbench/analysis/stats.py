"""Summary statistics: typed pure functions on numpy arrays (definitions in docs/statistics.md).

Every function returns ``nan`` where the statistic is undefined (no data, one value for a spread,
a harmonic mean of data that is not all positive, ...).  Nothing is fudged: a caller that wants
to show "undefined" turns the NaN into ``None``.

The per-iteration structure is kept: :func:`summarise` takes a list of per-iteration sample
arrays.  The *observation units* of the mean, stddev and coefficient of variation are the
iteration means when there are at least two iterations, else the samples of the lone iteration
(:func:`units`).  Min, Max, B-means and percentiles describe all samples pooled.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal, Sequence

import numpy as np

MeanKind = Literal["amean", "hmean", "gmean"]
Better = Literal["higher", "lower"]
# "mmbench": the definitions above; "mmtests": MMTests' (bin/lib/MMTests/Stat.pm, Summarise.pm) for
# reproducing its compare-kernels tables of imported trees (docs/mmtests-import.md)
Convention = Literal["mmbench", "mmtests"]

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
BMEAN_PCT = 95
PERCENTILE_METHOD = "linear"  # numpy's default: the (n-1)*p/100 interpolation (Hyndman & Fan 7)

_NAN = float("nan")


def _arr(x: Iterable[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a.ravel()


def amean(x: Sequence[float] | np.ndarray) -> float:
    """Arithmetic mean; NaN when empty or when a value is NaN."""
    a = _arr(x)
    return float(a.mean()) if a.size else _NAN


def hmean(x: Sequence[float] | np.ndarray) -> float:
    """Harmonic mean n / sum(1/x).  Defined for positive data only: NaN if any value <= 0 (or
    NaN) and when empty.  A rate of 0 has no harmonic mean; we say so rather than guess."""
    a = _arr(x)
    if not a.size or np.isnan(a).any() or (a <= 0).any():
        return _NAN
    # the formula scipy.stats.hmean evaluates, without its ~0.5 ms per-call wrapper (tested equal)
    return float(a.size / np.sum(1.0 / a))


def gmean(x: Sequence[float] | np.ndarray) -> float:
    """Geometric mean exp(mean(log x)), computed in log space (no overflow).  Any zero → 0,
    any negative or NaN → NaN, empty → NaN.  No fudge factors."""
    a = _arr(x)
    if not a.size or np.isnan(a).any() or (a < 0).any():
        return _NAN
    if (a == 0).any():
        return 0.0
    # scipy.stats.gmean's formula exp(mean(log x)), without its per-call wrapper (tested equal)
    return float(np.exp(np.mean(np.log(a))))


MEANS = {"amean": amean, "hmean": hmean, "gmean": gmean}


def mean(x: Sequence[float] | np.ndarray, kind: MeanKind = "amean") -> float:
    return MEANS[kind](x)


def stddev(x: Sequence[float] | np.ndarray) -> float:
    """Sample standard deviation with n−1 in the denominator; NaN if n < 2."""
    a = _arr(x)
    return float(a.std(ddof=1)) if a.size >= 2 else _NAN


def coeffvar(x: Sequence[float] | np.ndarray, kind: MeanKind = "amean") -> float:
    """100·stddev/mean, the mean being of the same family as the row's mean (``kind``).
    NaN when the stddev is undefined (n < 2) or the mean is 0 or undefined."""
    sd = stddev(x)
    m = mean(x, kind)
    if math.isnan(sd) or math.isnan(m) or m == 0:
        return _NAN
    return 100.0 * sd / abs(m)


def vmin(x: Sequence[float] | np.ndarray) -> float:
    a = _arr(x)
    return float(a.min()) if a.size else _NAN


def vmax(x: Sequence[float] | np.ndarray) -> float:
    a = _arr(x)
    return float(a.max()) if a.size else _NAN


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


def bmean(x: Sequence[float] | np.ndarray, pct: float = BMEAN_PCT, better: Better = "lower",
          kind: MeanKind = "amean", convention: Convention = "mmbench") -> float:
    """Mean (of family ``kind``) of the best ``pct``% of the values: the lowest ones when lower is
    better, the highest ones when higher is better.  k is :func:`bmean_k`."""
    a = _arr(x)
    if not a.size:
        return _NAN
    k = bmean_k(a.size, pct, convention)
    s = np.sort(a)
    best = s[:k] if better == "lower" else s[a.size - k:]
    return mean(best, kind)


def percentile(x: Sequence[float] | np.ndarray, p: float) -> float:
    """The conventional p-th percentile counted from the low end whatever the direction of the
    metric, linear interpolation between order statistics (numpy ``method='linear'``)."""
    a = _arr(x)
    if not a.size:
        return _NAN
    return float(np.percentile(a, p, method=PERCENTILE_METHOD))


def percentiles(x: Sequence[float] | np.ndarray, ps: Sequence[float] = PERCENTILES) -> list[float]:
    a = _arr(x)
    if not a.size:
        return [_NAN] * len(ps)
    return [float(v) for v in np.percentile(a, list(ps), method=PERCENTILE_METHOD)]


# --------------------------------------------------------------------------------------------
# Per-iteration structure


def pooled(per_iter: Sequence[Sequence[float] | np.ndarray]) -> np.ndarray:
    """All samples of all iterations in one array."""
    parts = [_arr(s) for s in per_iter]
    return np.concatenate(parts) if parts else np.empty(0)


def iteration_values(per_iter: Sequence[Sequence[float] | np.ndarray],
                     kind: MeanKind = "amean") -> np.ndarray:
    """One value per iteration: the mean (family ``kind``) of its samples.  Iterations without
    samples are skipped."""
    return np.array([mean(s, kind) for s in per_iter if len(s)], dtype=float)


UnitsKind = Literal["iterations", "samples", "none"]


def units(per_iter: Sequence[Sequence[float] | np.ndarray],
          kind: MeanKind = "amean") -> tuple[np.ndarray, UnitsKind]:
    """The observation units of the mean/stddev rows: iteration means when there are ≥ 2
    iterations with samples, else the samples of the only iteration (or nothing)."""
    nonempty = [s for s in per_iter if len(s)]
    if len(nonempty) >= 2:
        return iteration_values(nonempty, kind), "iterations"
    if len(nonempty) == 1:
        return _arr(nonempty[0]), "samples"
    return np.empty(0), "none"


def mean_label(kind: MeanKind) -> str:
    return {"amean": "Amean", "hmean": "Hmean", "gmean": "Gmean"}[kind]


def bmean_label(kind: MeanKind, pct: float = BMEAN_PCT) -> str:
    return f"B{mean_label(kind)}.{int(pct)}"


def summarise(per_iter: Sequence[Sequence[float] | np.ndarray], *, kind: MeanKind = "amean",
              better: Better = "lower", latency: bool = False,
              convention: Convention = "mmbench") -> list[tuple[str, float]]:
    """The summary rows of one metric of one run, in display order:

    Min, <Mean>, Stddev, CoeffVar, Max, B<Mean>.95 and, for latency metrics, P50 P90 P95 P99.
    ``convention="mmtests"``: the mean and stddev are of all samples pooled (MMTests pools every
    iteration, Summarise.pm:362) and B-means floor their k (:func:`bmean_k`).
    """
    allv = pooled(per_iter)
    u = allv if convention == "mmtests" else units(per_iter, kind)[0]
    m = mean(u, kind)
    sd = stddev(u)
    cv = _NAN if (math.isnan(sd) or math.isnan(m) or m == 0) else 100.0 * sd / abs(m)
    rows = [
        ("Min", vmin(allv)),
        (mean_label(kind), m),
        ("Stddev", sd),
        ("CoeffVar", cv),
        ("Max", vmax(allv)),
        (bmean_label(kind), bmean(allv, BMEAN_PCT, better, kind, convention)),
    ]
    if latency:
        rows += [(f"P{p}", v) for p, v in zip(PERCENTILES, percentiles(allv))]
    return rows


# --------------------------------------------------------------------------------------------
# Outliers


MAD_SCALE = 1.4826       # makes the MAD a consistent estimator of σ for normal data
MEANAD_SCALE = 1.2533    # sqrt(pi/2): the same for the mean absolute deviation
OUTLIER_Z = 3.5          # Iglewicz & Hoaglin's modified z-score threshold


def outliers(values: Sequence[float] | np.ndarray, z: float = OUTLIER_Z) -> list[tuple[int, float]]:
    """Indices (and robust z-scores) of values whose robust z-score exceeds ``z``.

    score = |x − median| / scale, scale = max(1.4826·MAD, 1.2533·mean|x − median|).
    The plain MAD alone is unusable with the 3–10 iterations benchmarks have: with 5 normal
    values it flags one in five sets; the max() with the mean absolute deviation brings the
    false-flag rate under 1 % for n = 5…20 (measured by simulation) while a value 10σ away is
    still flagged for n ≥ 7.  Needs at least 3 finite values; a zero scale flags nothing."""
    a = _arr(values)
    ok = np.isfinite(a)
    if ok.sum() < 3:
        return []
    med = float(np.median(a[ok]))
    dev = np.abs(a - med)
    scale = max(MAD_SCALE * float(np.median(dev[ok])), MEANAD_SCALE * float(dev[ok].mean()))
    if scale == 0:
        return []
    score = dev / scale
    return [(int(i), float(score[i])) for i in np.flatnonzero(ok & (score > z))]
