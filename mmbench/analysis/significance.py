"""Significance tests, confidence intervals, power and the false-discovery-rate control.

* :func:`welch` — Welch's unequal-variance t-test on iteration means (or per-iteration values
  of duration and vmstat rows); needs ≥ 2 iterations on each side.
* :func:`count_test` — the quasi-Poisson rate test for rows that count events (per-iteration
  counts: compaction stalls, pages scanned): a likelihood-ratio F test whose dispersion is
  estimated from the iterations (never below Poisson's), so 360 → 0 in every iteration is found at
  3 iterations a side, where an exact permutation test cannot go below p = 0.10.
* :func:`mann_whitney` — Mann–Whitney U (two-sided); no longer used by compare (the iteration is
  the unit of replication; one iteration a side gets no test), kept for the calibration script.
* :func:`ratio_ci` — Welch t-interval of new/base on the log scale (the interval compare shows);
  :func:`bootstrap_ratio_ci`, the percentile bootstrap it replaced, stays for
  ``bench/stats-calibration``.
* :func:`min_detectable_effect` and :func:`iterations_to_detect` — power at 80 %: the smallest
  change these data could detect, and the iterations per run that would detect a given one.
* :func:`bh_adjust` — Benjamini–Hochberg adjusted p-values over every test of one report.

"Too few samples" is an explicit state (:class:`TestResult.state`), never a guessed p-value.

Welch, the t-interval, the minimum detectable effect and BH are plain Python (small n; numpy's
import alone costs 0.1 s of a compare); Mann–Whitney and the bootstrap import numpy when called.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Sequence

from mmbench.analysis.stats import MeanKind, Values, floats

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_BUDGET = 4_000_000   # max resamples × sample count per CI (keeps compare fast)
BOOTSTRAP_MIN_RESAMPLES = 200
WELCH_MIN_ITERATIONS = 2
MWU_MIN_SAMPLES = 3
# Values closer than this (relative) are the same value: 7 and 7.00000001 are equal, a spread of
# 1e-8 of the mean is rounding, not variation (issue 22 item 2).
REL_TOL = 1e-8

# "no-variance": both sides constant (within REL_TOL), so a t statistic has no scale: not tested,
# never a p of 0 (issue 22 item 2); "same-constant" when the two constants are equal as well.
TestState = Literal["ok", "too-few-samples", "no-variance", "same-constant", "undefined", "not-counts"]


@dataclass(frozen=True)
class TestResult:
    test: str                     # "welch" | "count" | "mann-whitney"
    state: TestState
    p: float | None = None        # raw p-value when state == "ok"
    n_base: int = 0
    n_new: int = 0
    # the smallest p this test could give with these iteration counts (and, for counts, these
    # totals): above ALPHA, no q can reach ALPHA whatever the data (issue 22 item 2)
    p_floor: float = 0.0

    @property
    def ok(self) -> bool:
        """True when ``p`` may enter the significance table."""
        return self.state == "ok" and self.p is not None


def close(a: float, b: float) -> bool:
    """Equal within :data:`REL_TOL` (relative to the larger magnitude)."""
    return a == b or abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def constant(a: list[float]) -> bool:
    """Every value equal to the first within :data:`REL_TOL`."""
    return all(close(a[0], v) for v in a[1:]) if a else True


def _finite(x: Values) -> list[float]:
    return [v for v in floats(x) if math.isfinite(v)]


def _var(a: list[float]) -> float:
    m = math.fsum(a) / len(a)
    return math.fsum((v - m) * (v - m) for v in a) / (len(a) - 1)


def welch_df(vb: float, vn: float, nb: int, nn: int) -> float:
    """Degrees of freedom of Welch's test and interval: the Welch–Satterthwaite df, but at most the
    geometric mean of it and the df it would have at equal variances.  With equal iteration counts
    this is Welch–Satterthwaite itself.  With unequal counts (3 vs 30, 2 vs 10) the estimated df
    rises exactly when the small run's variance happens to be low, so Welch's interval covered
    only 89–93 % there (issue 22 item 5); the bound brings 3 vs 30 and 3 vs 10 back to 94–97 %
    (bench/stats-calibration, "coverage at unequal n")."""
    ws = (vb + vn) ** 2 / (vb ** 2 / (nb - 1) + vn ** 2 / (nn - 1))
    eq = (1.0 / nb + 1.0 / nn) ** 2 / (1.0 / (nb * nb * (nb - 1)) + 1.0 / (nn * nn * (nn - 1)))
    return min(ws, math.sqrt(ws * eq))


def welch(base_iter_means: Values, new_iter_means: Values) -> TestResult:
    """Welch's t-test (as scipy ``ttest_ind(equal_var=False)``, two-sided) on iteration means.

    State ``too-few-samples`` when a side has fewer than 2 iterations.  Two constant series
    (no spread on either side, within :data:`REL_TOL`) are not tested: ``same-constant`` when
    the constants are equal, else ``no-variance`` ("no variance: not tested"; a count row goes
    to :func:`count_test` instead).  The data are scaled by their largest magnitude first so
    extreme finite values (1e100, 1e-90) cannot overflow the degrees of freedom."""
    b, n = _finite(base_iter_means), _finite(new_iter_means)
    nb, nn = len(b), len(n)
    if nb < WELCH_MIN_ITERATIONS or nn < WELCH_MIN_ITERATIONS:
        return TestResult("welch", "too-few-samples", None, nb, nn)
    if constant(b) and constant(n):
        return TestResult("welch", "same-constant" if close(b[0], n[0]) else "no-variance", None, nb, nn)
    scale = max(max(map(abs, b)), max(map(abs, n)))
    try:                                  # what ttest_ind(equal_var=False) computes (tested equal)
        bs, ns = [v / scale for v in b], [v / scale for v in n]
        vb, vn = _var(bs) / nb, _var(ns) / nn
        t = (math.fsum(ns) / nn - math.fsum(bs) / nb) / math.sqrt(vb + vn)
        df = welch_df(vb, vn, nb, nn)
        p = t_two_sided_p(t, df)
    except (OverflowError, ZeroDivisionError, ValueError):
        return TestResult("welch", "undefined", None, nb, nn)
    if math.isnan(p):
        return TestResult("welch", "undefined", None, nb, nn)
    return TestResult("welch", "ok", p, nb, nn)


def is_counts(values: Values) -> bool:
    """Non-negative whole numbers (within :data:`REL_TOL`): what :func:`count_test` accepts."""
    a = floats(values)
    return bool(a) and all(math.isfinite(v) and v >= 0 and abs(v - round(v)) <= REL_TOL * max(1.0, v)
                           for v in a)


def _xlogy(x: float, y: float) -> float:
    return 0.0 if x == 0 else x * math.log(y)


def _f1_p(f: float, df: float) -> float:
    """P(F(1, df) > f) = P(|t_df| > √f)."""
    if f <= 0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + f)))


def count_dispersion(b: list[float], n: list[float]) -> float:
    """Quasi-Poisson dispersion of two groups of counts: Pearson χ² / (N − 2), at least 1 (a
    count never varies less than Poisson's; an underdispersed estimate from 3 iterations is
    chance, and a dispersion of 0 would make 7 7 7 vs 8 8 8 a certain change)."""
    pearson = 0.0
    for g in (b, n):
        m = math.fsum(g) / len(g)
        if m > 0:
            pearson += math.fsum((v - m) ** 2 for v in g) / m
    return max(1.0, pearson / (len(b) + len(n) - 2))


def count_test(base: Values, new: Values) -> TestResult:
    """Quasi-Poisson rate test (two-sided) of per-iteration event counts: the likelihood-ratio
    statistic of "one rate" against "a rate per run", D = 2[T_b·ln(m_b/m) + T_n·ln(m_n/m)],
    divided by the dispersion (:func:`count_dispersion`), against F(1, N − 2).  Overdispersed
    counts (the usual case for kernel counters) widen it; a run that is 0 in every iteration
    where the other had hundreds is still found at 3 iterations a side.

    State ``not-counts`` when a value is negative or fractional (the caller uses Welch);
    ``too-few-samples`` below 2 iterations a side; ``same-constant`` when every iteration of both
    runs holds the same count.  ``p_floor`` is the p of the most extreme split of the same total
    (all of it in one run, spread evenly): above 0.05 no data with this many events can be
    significant."""
    b, n = floats(base), floats(new)
    nb, nn = len(b), len(n)
    if not is_counts(b) or not is_counts(n):
        return TestResult("count", "not-counts", None, nb, nn)
    if nb < WELCH_MIN_ITERATIONS or nn < WELCH_MIN_ITERATIONS:
        return TestResult("count", "too-few-samples", None, nb, nn)
    if constant(b) and constant(n) and close(b[0], n[0]):
        return TestResult("count", "same-constant", None, nb, nn)
    tb, tn = math.fsum(b), math.fsum(n)
    big = len(b) + len(n)
    df = big - 2
    m = (tb + tn) / big
    d = 2.0 * (_xlogy(tb, (tb / nb) / m) + _xlogy(tn, (tn / nn) / m))
    p = _f1_p(max(d, 0.0) / count_dispersion(b, n), df)
    # all events in the run with fewer iterations, evenly: the largest D these totals allow
    floor = _f1_p(2.0 * (tb + tn) * math.log(big / min(nb, nn)), df)
    if math.isnan(p):
        return TestResult("count", "undefined", None, nb, nn)
    return TestResult("count", "ok", p, nb, nn, p_floor=floor)


def count_ratio_ci(base: Values, new: Values, level: float = 0.95) -> tuple[float, float] | None:
    """Interval of mean(new)/mean(base) for counts: ln ratio ± t(level, N − 2)·√(φ(1/T_b + 1/T_n))
    with the quasi-Poisson dispersion φ.  None when a run counted nothing at all (the ratio's
    logarithm is unbounded) or with fewer than 2 iterations a side."""
    b, n = floats(base), floats(new)
    if len(b) < 2 or len(n) < 2 or not is_counts(b) or not is_counts(n):
        return None
    tb, tn = math.fsum(b), math.fsum(n)
    if tb <= 0 or tn <= 0:
        return None
    d = math.log((tn / len(n)) / (tb / len(b)))
    h = t_quantile(0.5 + level / 2.0, len(b) + len(n) - 2) * math.sqrt(
        count_dispersion(b, n) * (1.0 / tb + 1.0 / tn))
    try:
        return math.exp(d - h), math.exp(d + h)
    except OverflowError:
        return None


def mann_whitney(base_samples: Values, new_samples: Values) -> TestResult:
    """Two-sided Mann–Whitney U on pooled samples (as scipy ``mannwhitneyu``: exact when both
    sides have ≤ 8 samples and no ties, else the normal approximation with tie and continuity
    correction).  ``too-few-samples`` below 3 samples a side; ``no-variance`` (or
    ``same-constant``) when every sample of each side is the same value."""
    import numpy as np   # thousands of samples: ranks and tie counts vectorised
    b, n = np.asarray(_finite(base_samples)), np.asarray(_finite(new_samples))
    if b.size < MWU_MIN_SAMPLES or n.size < MWU_MIN_SAMPLES:
        return TestResult("mann-whitney", "too-few-samples", None, b.size, n.size)
    if b.min() == b.max() and n.min() == n.max():   # as welch(): no variance, no test
        return TestResult("mann-whitney", "same-constant" if b[0] == n[0] else "no-variance", None,
                          b.size, n.size)
    p = _mwu_pvalue(b, n)
    if math.isnan(p):
        return TestResult("mann-whitney", "undefined", None, b.size, n.size)
    return TestResult("mann-whitney", "ok", p, b.size, n.size)


# Distribution functions without scipy: importing scipy.special costs 0.2 s and scipy.stats 0.6 s
# on every `mmbench compare`, which is meant to answer in well under half a second.  Both are
# tested against scipy.stats to 1e-9 (tests/test_stats.py).

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with ``df`` (real) degrees of freedom."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


def _mwu_exact_sf(u: float, n1: int, n2: int) -> float:
    """P(U >= u) under H0 for samples without ties: counts of rank-sum arrangements (DP)."""
    import numpy as np
    # f[i][j][k]: arrangements of i and j items with U = k; rolled into one table over (j, k).
    counts = np.zeros((n2 + 1, n1 * n2 + 1))
    counts[:, 0] = 1.0
    for i in range(1, n1 + 1):
        new = np.zeros_like(counts)
        new[0, 0] = 1.0
        for j in range(1, n2 + 1):
            # the largest item belongs to sample 1 (adds j to U) or to sample 2 (adds nothing)
            new[j, j:] += counts[j, : n1 * n2 + 1 - j]
            new[j] += new[j - 1]
        counts = new
    dist = counts[n2]
    k = int(math.ceil(u - 1e-9))
    return float(dist[k:].sum() / dist.sum())


def _mwu_pvalue(b: Any, n: Any) -> float:
    """Two-sided p of Mann–Whitney U, equal to scipy's ``mannwhitneyu`` with method "exact" when
    both samples are ≤ 8 and there are no ties, else with method "asymptotic" (normal
    approximation with tie and continuity correction).  (scipy's "auto" also goes exact when only
    one side is ≤ 8; with thousands of latency samples on the other side that costs seconds.)"""
    import numpy as np
    n1, n2 = b.size, n.size
    both = np.concatenate([b, n])
    ranks = _rankdata(both)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    u = max(u1, n1 * n2 - u1)
    _, tie_counts = np.unique(both, return_counts=True)
    if n1 <= 8 and n2 <= 8 and (tie_counts == 1).all():
        return min(1.0, 2.0 * _mwu_exact_sf(u, n1, n2))
    mu = n1 * n2 / 2.0
    N = n1 + n2
    tie_term = float((tie_counts ** 3 - tie_counts).sum())
    sigma = math.sqrt(n1 * n2 / 12.0 * ((N + 1) - tie_term / (N * (N - 1))))
    if sigma == 0:
        return math.nan
    z = (u - mu - 0.5) / sigma
    return float(min(1.0, math.erfc(z / math.sqrt(2.0))))   # 2·Φ(−z)


def _rankdata(a: Any) -> Any:
    """Average ranks (1-based), ties sharing their mean rank."""
    import numpy as np
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_a)) + 1]
    ends = np.r_[starts[1:], a.size]
    avg = (starts + ends + 1) / 2.0
    ranks = np.empty(a.size)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def row_seed(seed: int, key: str) -> Any:
    """A generator for one CI: the report seed combined with a stable hash of the row key, so a
    CI does not depend on the order rows are computed in."""
    import numpy as np
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(key.encode())])


def _resampled_means(a: Any, idx: Any, kind: MeanKind) -> Any:
    import numpy as np
    x = a[idx]                                       # (B, n)
    with np.errstate(all="ignore"):
        if kind == "amean":
            return x.mean(axis=1)
        if kind == "hmean":
            m = x.shape[1] / (1.0 / x).sum(axis=1)
            m[(x <= 0).any(axis=1)] = np.nan
            return m
        m = np.exp(np.log(x).mean(axis=1))           # gmean: zeros give 0, negatives NaN
        return m


def bootstrap_ratio_ci(base: Values, new: Values,
                       kind: MeanKind = "amean", *, seed: int = 0, key: str = "",
                       resamples: int = BOOTSTRAP_RESAMPLES,
                       level: float = 0.95) -> tuple[float, float] | None:
    """Percentile-bootstrap CI of mean(new)/mean(base) (mean of family ``kind``).

    Each side is resampled independently with replacement (B resamples, vectorised) from its
    units — iteration means, or samples when a side has a single iteration, as chosen by the
    caller.  None when a side has fewer than 2 units, or when more than 1 % of the resampled
    ratios are undefined (a base mean of 0 or a mean undefined for the data)."""
    import numpy as np
    b, n = np.asarray(_finite(base)), np.asarray(_finite(new))
    if b.size < 2 or n.size < 2:
        return None
    B = resamples
    biggest = max(b.size, n.size)
    if B * biggest > BOOTSTRAP_BUDGET:
        B = max(BOOTSTRAP_MIN_RESAMPLES, BOOTSTRAP_BUDGET // biggest)
    rng = row_seed(seed, key)
    mb = _resampled_means(b, rng.integers(0, b.size, size=(B, b.size)), kind)
    mn = _resampled_means(n, rng.integers(0, n.size, size=(B, n.size)), kind)
    with np.errstate(all="ignore"):
        r = mn / mb
    good = np.isfinite(r)
    if good.sum() < 0.99 * B:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(r[good], [tail, 100.0 - tail])
    return float(lo), float(hi)


@lru_cache(maxsize=4096)
def t_quantile(prob: float, df: float) -> float:
    """The ``prob`` quantile (prob > 0.5) of Student's t with ``df`` degrees of freedom (no scipy
    on the compare path).  Newton's method from the Cornish–Fisher start: 2–4 evaluations of the
    CDF instead of ~40 by bisection, which made the interval and the minimum detectable effect
    65 % of a 20-run compare.  The two-sided tail is convex and decreasing in t > 0, so Newton
    from the left climbs monotonically to the root; a step past 0 from the right is halved
    instead.  Cached: a row's interval and its MDE share t(0.975, df)."""
    if math.isnan(df) or df <= 0:
        return math.nan
    target = 2.0 * (1.0 - prob)          # two-sided tail probability at the quantile
    z = _normal_quantile(prob)
    t = (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)
         + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))
    if not t > 0:
        t = z
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    last = math.inf
    for _ in range(200):
        pdf = math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))
        if pdf == 0.0:
            return math.inf
        step = (t_two_sided_p(t, df) - target) / (2.0 * pdf)     # d(tail)/dt = -2 pdf
        nxt = t + step
        if nxt <= 0:
            nxt = t / 2.0
        # converged, or at the CDF's own precision (steps stop shrinking: huge df)
        if abs(nxt - t) <= 1e-12 * nxt or (abs(nxt - t) >= last and abs(nxt - t) <= 1e-8 * nxt):
            return nxt
        last = abs(nxt - t)
        t = nxt
    return t


def _normal_quantile(prob: float) -> float:
    """Approximate normal quantile for prob > 0.5 (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4):
    only the start of :func:`t_quantile`'s Newton iteration, which does the exact part.  (The
    stdlib's ``statistics.NormalDist`` costs 12 ms of imports.)"""
    q = min(max(1.0 - prob, 1e-300), 0.5)
    w = math.sqrt(-2.0 * math.log(q))
    return w - (2.515517 + 0.802853 * w + 0.010328 * w * w) / (1.0 + 1.432788 * w + 0.189269 * w * w
                                                                 + 0.001308 * w ** 3)


def _mean_and_var_of_log_mean(x: list[float], kind: MeanKind) -> tuple[float, float] | None:
    """log of the ``kind`` mean of ``x`` and its delta-method variance (None if undefined)."""
    k = len(x)
    if kind == "gmean":
        if min(x) <= 0:
            return None
        v = [math.log(a) for a in x]
        m = sum(v) / k
        return m, sum((a - m) ** 2 for a in v) / (k - 1) / k
    if kind == "hmean":
        if min(x) <= 0:
            return None
        v = [1.0 / a for a in x]
        m = sum(v) / k
        return -math.log(m), sum((a - m) ** 2 for a in v) / (k - 1) / k / (m * m)
    if min(x) < 0:
        return None
    m = sum(x) / k
    if m <= 0:
        return None
    return math.log(m), sum((a - m) ** 2 for a in x) / (k - 1) / k / (m * m)


def ratio_ci(base: Values, new: Values,
             kind: MeanKind = "amean", level: float = 0.95) -> tuple[float, float] | None:
    """CI of mean(new)/mean(base): a Welch t-interval on the log ratio (delta method on each
    side's log mean, Welch–Satterthwaite df), exponentiated.  Chosen over the percentile
    bootstrap by bench/stats-calibration: the bootstrap covers 81 % at 3 iterations.
    None when a side has fewer than 2 units or a mean is undefined; a zero-width interval for
    two constant series."""
    b, n = _finite(base), _finite(new)
    if len(b) < 2 or len(n) < 2:
        return None
    scale = max(max(abs(v) for v in b), max(abs(v) for v in n))
    if scale == 0:
        return None
    b = [v / scale for v in b]
    n = [v / scale for v in n]
    mb, mn = _mean_and_var_of_log_mean(b, kind), _mean_and_var_of_log_mean(n, kind)
    if mb is None or mn is None:
        return None
    d = mn[0] - mb[0]
    vb, vn = mb[1], mn[1]
    if vb + vn == 0:
        return math.exp(d), math.exp(d)
    df = welch_df(vb, vn, len(b), len(n))
    h = t_quantile(0.5 + level / 2.0, df) * math.sqrt(vb + vn)
    try:
        return math.exp(d - h), math.exp(d + h)
    except OverflowError:
        return None


def _log_mean_variances(base: Values, new: Values, kind: MeanKind) -> tuple[int, int, float, float] | None:
    """Iteration counts and the variances of each side's log mean (values scaled by the larger
    magnitude first, so extreme data cannot overflow); None with fewer than 2 iterations a side
    or all zeros."""
    b, n = _finite(base), _finite(new)
    if len(b) < 2 or len(n) < 2:
        return None
    scale = max(max(abs(v) for v in b), max(abs(v) for v in n))
    if scale == 0:
        return None
    mb = _mean_and_var_of_log_mean([v / scale for v in b], kind)
    mn = _mean_and_var_of_log_mean([v / scale for v in n], kind)
    if mb is None or mn is None:
        return None
    return len(b), len(n), mb[1], mn[1]


def noncentrality(alpha: float, power: float, df: float) -> float:
    """The shift (in standard errors) a two-sided t test at level ``alpha`` with ``df`` degrees of
    freedom detects with probability ``power``: the noncentral t's quantile by Jennett and Welch's
    normal approximation, t_c(1 − 1/(4ν)) + z_power·√(1 + t_c²/(2ν)), t_c = t(1 − α/2, ν); within
    0.5 % of scipy's ``nct`` for ν ≥ 2 (tested).  The textbook t_c + t(power, ν), used before,
    overstates the power at a few iterations: 71–75 % instead of 80 % at ν = 4 and α = 0.01
    (issue 22 item 5)."""
    tc = t_quantile(1.0 - alpha / 2.0, df)
    return tc * (1.0 - 1.0 / (4.0 * df)) + _normal_quantile(power) * math.sqrt(1.0 + tc * tc / (2.0 * df))


def min_detectable_effect(base: Values, new: Values,
                          kind: MeanKind = "amean", power: float = 0.8,
                          alpha: float = ALPHA) -> float | None:
    """Smallest true change (percent of the baseline mean) a two-sided Welch test at ``alpha``
    finds with probability ``power`` at these data's variation and iteration counts:
    100·(exp(:func:`noncentrality`·SE(log ratio)) − 1).  The caller passes the level of the
    row's family (compare: α/m, the level Benjamini–Hochberg gives one change among m tests).
    None when undefined (fewer than 2 iterations a side)."""
    got = _log_mean_variances(base, new, kind)
    if got is None:
        return None
    nb, nn, vb, vn = got
    if vb + vn == 0:
        return 0.0
    # One degree of freedom below the equal-variance df (at most): the test's own Welch df varies
    # from sample to sample, and the power at a fixed df overstates what it delivers (true change of
    # the MDE at 3 iterations: 59 % starred instead of 80 %; with this df 78 %, bench/stats-calibration)
    eq = (1.0 / nb + 1.0 / nn) ** 2 / (1.0 / (nb * nb * (nb - 1)) + 1.0 / (nn * nn * (nn - 1)))
    df = max(1.0, min(welch_df(vb, vn, nb, nn), eq - 1.0))
    k = noncentrality(alpha, power, df) * math.sqrt(vb + vn)
    try:
        return 100.0 * math.expm1(k)
    except OverflowError:
        return None


def count_min_detectable_effect(base: Values, new: Values, power: float = 0.8,
                                alpha: float = ALPHA) -> float | None:
    """:func:`min_detectable_effect` for :func:`count_test`: the change of the rate found with
    probability ``power`` at level ``alpha`` by the count test, with the standard error of the
    log ratio at the baseline's rate, √(φ/m_b · (1/k_b + 1/k_n)), and N − 2 degrees of freedom.
    None when the baseline counted nothing."""
    b, n = floats(base), floats(new)
    if len(b) < 2 or len(n) < 2 or not is_counts(b) or not is_counts(n):
        return None
    mb = math.fsum(b) / len(b)
    if mb <= 0:
        return None
    df = len(b) + len(n) - 2
    phi = count_dispersion(b, n)
    se = math.sqrt(phi / mb * (1.0 / len(b) + 1.0 / len(n)))
    # dispersion at its floor (Poisson's): the denominator is known, the statistic ~normal;
    # estimated above it: a t-like statistic (noncentrality)
    shift = (t_quantile(1.0 - alpha / 2.0, df) + _normal_quantile(power) if phi <= 1.0
             else noncentrality(alpha, power, df))
    try:
        return 100.0 * math.expm1(shift * se)
    except OverflowError:
        return None


def iterations_to_detect(base: Values, new: Values, kind: MeanKind = "amean",
                         effect_pct: float = 5.0, power: float = 0.8, alpha: float = ALPHA,
                         limit: int = 100_000) -> int | None:
    """The number of iterations per run (the same on both sides) at which
    :func:`min_detectable_effect` falls to ``effect_pct``, assuming each side's per-iteration
    variation stays what these data show.  None when it is undefined (fewer than 2 iterations a
    side) or more than ``limit``."""
    got = _log_mean_variances(base, new, kind)
    if got is None:
        return None
    nb, nn, vb, vn = got
    ub, un = vb * nb, vn * nn      # variance of one iteration's log mean
    if ub + un == 0:
        return 2
    target = math.log1p(effect_pct / 100.0)

    def detects(k: int) -> bool:
        df = max(1.0, min((k - 1) * (ub + un) ** 2 / (ub * ub + un * un), 2 * k - 3))   # as the MDE's
        return noncentrality(alpha, power, df) * math.sqrt((ub + un) / k) <= target

    # With normal quantiles instead of t the answer would be k0; t quantiles are larger, so the
    # answer is >= k0 and, except at a few iterations, close to it: gallop up, then bisect.
    z = _normal_quantile(1.0 - alpha / 2.0) + _normal_quantile(power)
    k0 = max(2, math.ceil(z * z * (ub + un) / (target * target)))
    if k0 > limit:
        return None
    lo, hi = k0 - 1, k0
    while not detects(hi):
        if hi >= limit:
            return None
        lo, hi = hi, min(limit, hi + max(1, hi - lo) * 2)
    while hi - lo > 1:             # detects(hi) holds, detects(lo) does not (or lo < 2)
        mid = (lo + hi) // 2
        if mid >= 2 and detects(mid):
            hi = mid
        else:
            lo = mid
    return hi


def bh_adjust(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), same order as the input."""
    p = [float(v) for v in pvalues]
    m = len(p)                              # as scipy.stats.false_discovery_control(method="bh")
    order = sorted(range(m), key=p.__getitem__)
    out = [0.0] * m
    q = math.inf
    for rank in range(m, 0, -1):            # running minimum from the largest p down
        i = order[rank - 1]
        q = min(q, p[i] * m / rank)
        out[i] = min(q, 1.0)
    return out
