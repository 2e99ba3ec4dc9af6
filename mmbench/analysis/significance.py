"""Significance tests, confidence intervals, power and the false-discovery-rate control.

* :func:`welch` — Welch's unequal-variance t-test on iteration means (or per-iteration values
  of duration and vmstat rows); needs ≥ 2 iterations on each side.
* :func:`count_test` — the test of rows that count events (per-iteration counts: compaction
  stalls, pages scanned): an exact permutation test of the per-iteration counts wherever the
  splits can be counted (at most :data:`EXACT_SPLITS`), else the larger p of the pooled and of
  Welch's t with Hsu's degrees of freedom, each run's variance at least Poisson's.  It holds its
  level on bursty counters (zero-inflated, negative-binomial, one run all zeros).
* :func:`deterministic` — rows that are constant at their resolution within each run (a
  deterministic guest clock): a difference larger than the resolution, seen in every iteration
  of both runs, is a change; a smaller one is none.
* :func:`mann_whitney` — Mann–Whitney U (two-sided), for the calibration script; compare does
  not use it (the iteration is the unit of replication; one iteration a side gets no test).
* :func:`ratio_ci` — Welch t-interval of new/base on the log scale (the interval compare shows);
  :func:`bootstrap_ratio_ci`, the percentile bootstrap, for ``bench/stats-calibration``'s
  comparison of the two.
* :func:`min_detectable_effect` and :func:`iterations_to_detect` — power at 80 %: the smallest
  change these data could detect, and the iterations per run that would detect a given one.
* :func:`bh_adjust` — Benjamini–Hochberg adjusted p-values over every test of one report.

"Too few samples" is an explicit state (:class:`TestResult.state`), never a guessed p-value.

Welch, the t-interval, the minimum detectable effect and BH are plain Python (small n; numpy's
import alone costs 0.1 s of a compare); Mann–Whitney and the bootstrap import numpy when called.
"""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Sequence

from mmbench.analysis.stats import MeanKind, Values, floats

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_BUDGET = 4_000_000  # max resamples × sample count per CI (keeps compare fast)
BOOTSTRAP_MIN_RESAMPLES = 200
WELCH_MIN_ITERATIONS = 2
MWU_MIN_SAMPLES = 3
# Values closer than this (relative) are the same value: 7 and 7.00000001 are equal, a spread of
# 1e-8 of the mean is rounding, not variation.
REL_TOL = 1e-8

# "no-variance": both sides constant (within REL_TOL), so a t statistic has no scale: not tested,
# never a p of 0; "same-constant" when the two constants are equal as well.
TestState = Literal["ok", "too-few-samples", "no-variance", "same-constant", "undefined", "not-counts"]
# Count rows are tested exactly (every split of the iterations between the runs) up to this many
# splits: C(6, 3) = 20 at 3 vs 3, 252 at 5 vs 5, 3432 at 7 vs 7, 5456 at 3 vs 30.
EXACT_SPLITS = 6000


@dataclass(frozen=True)
class TestResult:
    test: str  # "welch" | "count-exact" | "count" | "mann-whitney"
    state: TestState
    p: float | None = None  # raw p-value when state == "ok"
    n_base: int = 0
    n_new: int = 0
    # the smallest p this test could give with these iteration counts (and, for counts, these
    # totals): above ALPHA, no q can reach ALPHA whatever the data
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


@lru_cache(maxsize=256)
def _variance_ratio_quantiles(fb: int, fn: int) -> tuple[float, float]:
    """The quantiles of F(fb, fn) at g/2 and 1 − g/2, g = min(fb, fn) / max(fb, fn): the central
    interval of the ratio of two sample variances with these degrees of freedom, as wide as the
    two runs' knowledge of their spread differs (equal: both ends the median)."""
    g = min(fb, fn) / max(fb, fn)
    return _f_quantile(g / 2.0, fb, fn), _f_quantile(1.0 - g / 2.0, fb, fn)


def _ws(theta: float, fb: int, fn: int) -> float:
    """Welch–Satterthwaite df when the base mean's variance is ``theta`` times the new one's."""
    if math.isinf(theta):
        return float(fb)
    return (1.0 + theta) ** 2 / (theta * theta / fb + 1.0 / fn)


def welch_df(vb: float, vn: float, nb: int, nn: int) -> float:
    """Degrees of freedom of Welch's test and interval (vb, vn: the variances of the two means).
    With equal iteration counts, the Welch–Satterthwaite df (scipy's).  With unequal counts, the
    smallest Welch–Satterthwaite df over an interval of the ratio of the runs' true variances
    around the one measured (:func:`_variance_ratio_quantiles`): the estimated df rises exactly when
    the smaller run's spread happens to come out low, and Welch's test then starred 10–22 % of
    A/A reports at 2 vs 10, 3 vs 10 and 3 vs 30 with the small run 2–3x as noisy
    (bench/stats-calibration --reports, "unequal iteration counts and spread"); with the interval,
    at most 5 %."""
    ws = (vb + vn) ** 2 / (vb**2 / (nb - 1) + vn**2 / (nn - 1))
    if nb == nn:
        return ws
    fb, fn = nb - 1, nn - 1
    lo_q, hi_q = _variance_ratio_quantiles(fb, fn)
    if vn == 0:
        return min(ws, float(fb))
    ratio = (vb * nb) / (vn * nn)  # s_b² / s_n²
    scale = nn / nb  # variance of the means' ratio per variance ratio
    return min(ws, _ws(ratio / hi_q * scale, fb, fn), _ws(ratio / lo_q * scale, fb, fn))


def welch(base_iter_means: Values, new_iter_means: Values) -> TestResult:
    """Welch's t-test (two-sided) on iteration means: scipy's ``ttest_ind(equal_var=False)`` at
    equal iteration counts; at unequal counts its degrees of freedom are :func:`welch_df`'s (at
    most Welch–Satterthwaite's, so p at least scipy's).

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
    try:  # what ttest_ind(equal_var=False) computes (tested equal)
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
    return bool(a) and all(math.isfinite(v) and v >= 0 and abs(v - round(v)) <= REL_TOL * max(1.0, v) for v in a)


def count_dispersion(b: list[float], n: list[float]) -> float:
    """Quasi-Poisson dispersion of two groups of counts: Pearson χ² within the runs over its
    degrees of freedom, at least 1 (a count never varies less than Poisson's; an underdispersed
    estimate from 3 iterations is chance, and a dispersion of 0 would make 7 7 7 vs 8 8 8 a
    certain change).  A run that counted nothing in every iteration adds nothing to χ² and none
    of its iterations to the degrees of freedom (dividing by N − 2 there halved the dispersion of
    0 0 0 against 300 290 0)."""
    pearson = 0.0
    df = 0
    for g in (b, n):
        m = math.fsum(g) / len(g)
        if m > 0:
            pearson += math.fsum((v - m) ** 2 for v in g) / m
            df += len(g) - 1
    return max(1.0, pearson / df) if df else 1.0


def _split_sums(values: list[int], k: int) -> dict[int, int]:
    """How many of the C(N, k) ways to pick k of ``values`` give each sum.  Counted per distinct
    value and its multiplicity (a knapsack over the distinct values, in place) when ties are many
    (the zeros of a bursty counter: a handful of states), else by enumerating the k-subsets
    (distinct page counts: C(N, k) sums of k values, cheaper than the knapsack's states)."""
    mult = _multiplicities(values)
    if len(mult) > len(values) // 2:
        out: dict[int, int] = {}
        for combo in itertools.combinations(values, k):
            t = sum(combo)
            out[t] = out.get(t, 0) + 1
        return out
    layers: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(k)]
    for v, c in mult.items():
        for j in range(k, 0, -1):  # descending: each layer reads the ones below as they were
            d = layers[j]
            for t in range(1, min(c, j) + 1):
                ways_t = math.comb(c, t)
                shift = t * v
                for total, ways in layers[j - t].items():
                    key = total + shift
                    d[key] = d.get(key, 0) + ways * ways_t
    return layers[k]


# Beyond this many splits of distinct values, numpy sums them (0.2 ms for 3,432 splits of 7 vs 7
# against 10-18 ms in Python; numpy is imported only then).
_NUMPY_SPLITS = 1000


@lru_cache(maxsize=64)
def _split_index(n: int, k: int) -> Any:
    """Every k-subset of range(n) as rows of an index array (cached per n, k)."""
    import numpy as np

    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n), k)), dtype=np.intp, count=math.comb(n, k) * k
    )
    return flat.reshape(-1, k)


def _permutation_p_numpy(values: list[int], k: int, obs_sum: int) -> tuple[float, float] | None:
    """:func:`_permutation_p` for distinct values beyond _NUMPY_SPLITS splits, in int64 (None when
    the products could overflow it: the caller counts with Python ints)."""
    big, total = len(values), sum(values)
    if max(values) * k * big >= 2**62 or total * k >= 2**62:
        return None
    import numpy as np

    sums = np.asarray(values, dtype=np.int64)[_split_index(big, k)].sum(axis=1)
    devs = np.abs(sums * big - k * total)
    obs = abs(obs_sum * big - k * total)
    return min(1.0, float(np.count_nonzero(devs >= obs)) / devs.size), float(
        np.count_nonzero(devs == devs.max())
    ) / devs.size


def _multiplicities(values: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _permutation_p(b: list[int], n: list[int]) -> tuple[float, float]:
    """Two-sided exact permutation test of the difference of the runs' mean counts: the share of
    all C(N, k) splits of the pooled iterations whose difference is at least as large as the
    observed one.  Returns (p, the smallest p any split of these values can give).  The difference
    of a split whose k-run sums to s is (s·N − k·T) / (k·(N − k)): compared as the integer |s·N − k·T|,
    exactly."""
    k = min(len(b), len(n))
    small = b if len(b) == k else n
    pool = b + n
    big, total = len(pool), sum(pool)
    if math.comb(big, k) > _NUMPY_SPLITS and len(_multiplicities(pool)) > big // 2:
        got = _permutation_p_numpy(pool, k, sum(small))
        if got is not None:
            return got
    sums = _split_sums(pool, k)
    splits = math.comb(big, k)
    obs = abs(sum(small) * big - k * total)
    devs = [(abs(s * big - k * total), w) for s, w in sums.items()]
    widest = max(d for d, _ in devs)
    p = sum(w for d, w in devs if d >= obs) / splits
    floor = sum(w for d, w in devs if d == widest) / splits
    return min(1.0, p), floor


def _count_t_p(b: list[float], n: list[float]) -> float:
    """The larger two-sided p of two t statistics on the per-iteration counts, each run's variance
    at least the Poisson variance of the pooled mean: the pooled-variance t on N − 2 df (the
    quasi-Poisson score test) and Welch's t on min(k) − 1 df (Hsu's, valid whatever the runs'
    spreads).  Used beyond :data:`EXACT_SPLITS`, where it stars at most 5 % of A/A reports on
    bursty counters (bench/stats-calibration --reports)."""
    kb, kn = len(b), len(n)
    mb, mn = math.fsum(b) / kb, math.fsum(n) / kn
    m = (math.fsum(b) + math.fsum(n)) / (kb + kn)
    ssb = math.fsum((v - mb) ** 2 for v in b)
    ssn = math.fsum((v - mn) ** 2 for v in n)
    pooled = max((ssb + ssn) / (kb + kn - 2), m)
    t_pooled = (mn - mb) / math.sqrt(pooled * (1.0 / kb + 1.0 / kn))
    vb, vn = max(ssb / (kb - 1), m) / kb, max(ssn / (kn - 1), m) / kn
    t_hsu = (mn - mb) / math.sqrt(vb + vn)
    return max(t_two_sided_p(t_pooled, kb + kn - 2), t_two_sided_p(t_hsu, min(kb, kn) - 1))


def count_test(base: Values, new: Values) -> TestResult:
    """The test of per-iteration event counts (two-sided).

    * ``count-exact``: at most :data:`EXACT_SPLITS` splits of the iterations between the runs
      (C(N, k), k the smaller run): an exact permutation test of the difference of the mean counts.
      It holds its level whatever the counter's shape; its smallest p is that of the most extreme
      split (0.10 at 3 vs 3, 0.029 at 4 vs 4, 0.0079 at 5 vs 5): at 3 vs 3 no count row reaches
      q < 0.05, because 347 387 343 against 0 0 0 is also what a counter that fires in half the
      iterations gives, 3 % of the time.
    * ``count``: more splits: :func:`_count_t_p`.

    State ``not-counts`` when a value is negative or fractional (the caller uses Welch);
    ``too-few-samples`` below 2 iterations a side; ``same-constant`` when every iteration of both
    runs holds the same count.  ``p_floor`` is the smallest p any split of these values could
    give: above 0.05, no q can reach 0.05."""
    b, n = floats(base), floats(new)
    nb, nn = len(b), len(n)
    if not is_counts(b) or not is_counts(n):
        return TestResult("count", "not-counts", None, nb, nn)
    if nb < WELCH_MIN_ITERATIONS or nn < WELCH_MIN_ITERATIONS:
        return TestResult("count", "too-few-samples", None, nb, nn)
    if constant(b) and constant(n) and close(b[0], n[0]):
        return TestResult("count", "same-constant", None, nb, nn)
    if math.comb(nb + nn, min(nb, nn)) <= EXACT_SPLITS:
        p, floor = _permutation_p([round(v) for v in b], [round(v) for v in n])
        return TestResult("count-exact", "ok", p, nb, nn, p_floor=floor)
    try:
        p = _count_t_p(b, n)
        # the most extreme split: the largest counts all in the smaller run
        pool = sorted(b + n)
        k = min(nb, nn)
        floor = min(_count_t_p(pool[:-k], pool[-k:]), _count_t_p(pool[k:], pool[:k]))
    except (OverflowError, ZeroDivisionError, ValueError):
        return TestResult("count", "undefined", None, nb, nn)
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
    h = t_quantile(0.5 + level / 2.0, len(b) + len(n) - 2) * math.sqrt(count_dispersion(b, n) * (1.0 / tb + 1.0 / tn))
    try:
        return math.exp(d - h), math.exp(d + h)
    except OverflowError:
        return None


def mann_whitney(base_samples: Values, new_samples: Values) -> TestResult:
    """Two-sided Mann–Whitney U on pooled samples (as scipy ``mannwhitneyu``: exact when both
    sides have ≤ 8 samples and no ties, else the normal approximation with tie and continuity
    correction).  ``too-few-samples`` below 3 samples a side; ``no-variance`` (or
    ``same-constant``) when every sample of each side is the same value."""
    import numpy as np  # thousands of samples: ranks and tie counts vectorised

    b, n = np.asarray(_finite(base_samples)), np.asarray(_finite(new_samples))
    if b.size < MWU_MIN_SAMPLES or n.size < MWU_MIN_SAMPLES:
        return TestResult("mann-whitney", "too-few-samples", None, b.size, n.size)
    if b.min() == b.max() and n.min() == n.max():  # as welch(): no variance, no test
        return TestResult("mann-whitney", "same-constant" if b[0] == n[0] else "no-variance", None, b.size, n.size)
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


def _betainc_inverse(a: float, b: float, prob: float) -> float:
    """x with I_x(a, b) = prob, by bisection (I is increasing in x): 1e-15 in about 50 steps."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if betainc(a, b, mid) < prob:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(mid, 1e-300):
            break
    return (lo + hi) / 2.0


def _f_quantile(prob: float, d1: float, d2: float) -> float:
    """The ``prob`` quantile of Fisher's F(d1, d2): d1·X / (d1·X + d2) is Beta(d1/2, d2/2)."""
    x = _betainc_inverse(d1 / 2.0, d2 / 2.0, prob)
    return math.inf if x >= 1.0 else d2 * x / (d1 * (1.0 - x))


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
    tie_term = float((tie_counts**3 - tie_counts).sum())
    sigma = math.sqrt(n1 * n2 / 12.0 * ((N + 1) - tie_term / (N * (N - 1))))
    if sigma == 0:
        return math.nan
    z = (u - mu - 0.5) / sigma
    return float(min(1.0, math.erfc(z / math.sqrt(2.0))))  # 2·Φ(−z)


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

    x = a[idx]  # (B, n)
    with np.errstate(all="ignore"):
        if kind == "amean":
            return x.mean(axis=1)
        if kind == "hmean":
            m = x.shape[1] / (1.0 / x).sum(axis=1)
            m[(x <= 0).any(axis=1)] = np.nan
            return m
        m = np.exp(np.log(x).mean(axis=1))  # gmean: zeros give 0, negatives NaN
        return m


def bootstrap_ratio_ci(
    base: Values,
    new: Values,
    kind: MeanKind = "amean",
    *,
    seed: int = 0,
    key: str = "",
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
) -> tuple[float, float] | None:
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
    target = 2.0 * (1.0 - prob)  # two-sided tail probability at the quantile
    z = _normal_quantile(prob)
    t = (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )
    if not t > 0:
        t = z
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    last = math.inf
    for _ in range(200):
        pdf = math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))
        if pdf == 0.0:
            return math.inf
        step = (t_two_sided_p(t, df) - target) / (2.0 * pdf)  # d(tail)/dt = -2 pdf
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
    return w - (2.515517 + 0.802853 * w + 0.010328 * w * w) / (1.0 + 1.432788 * w + 0.189269 * w * w + 0.001308 * w**3)


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


def ratio_ci(base: Values, new: Values, kind: MeanKind = "amean", level: float = 0.95) -> tuple[float, float] | None:
    """CI of mean(new)/mean(base): a Welch t-interval on the log ratio (delta method on each
    side's log mean, Welch–Satterthwaite df), exponentiated.  Chosen over the percentile
    bootstrap by bench/stats-calibration: the bootstrap covers 81 % at 3 iterations.
    None when a side has fewer than 2 units or a mean is undefined; a zero-width interval for
    two constant series."""
    got = _scaled_log_means(base, new, kind)
    if got is None:
        return None
    nb, nn, mb, mn = got
    d = mn[0] - mb[0]
    vb, vn = mb[1], mn[1]
    if vb + vn == 0:
        return math.exp(d), math.exp(d)
    df = welch_df(vb, vn, nb, nn)
    h = t_quantile(0.5 + level / 2.0, df) * math.sqrt(vb + vn)
    try:
        return math.exp(d - h), math.exp(d + h)
    except OverflowError:
        return None


def _scaled_log_means(
    base: Values, new: Values, kind: MeanKind
) -> tuple[int, int, tuple[float, float], tuple[float, float]] | None:
    """Iteration counts and each side's (log mean, variance of the log mean), the values scaled
    by the larger magnitude first so that extreme data cannot overflow; None with fewer than 2
    iterations a side, all zeros, or a mean that is undefined."""
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
    return len(b), len(n), mb, mn


def _log_mean_variances(base: Values, new: Values, kind: MeanKind) -> tuple[int, int, float, float] | None:
    """Iteration counts and the variances of each side's log mean (``_scaled_log_means``)."""
    got = _scaled_log_means(base, new, kind)
    return None if got is None else (got[0], got[1], got[2][1], got[3][1])


def noncentrality(alpha: float, power: float, df: float) -> float:
    """The shift (in standard errors) a two-sided t test at level ``alpha`` with ``df`` degrees of
    freedom detects with probability ``power``: the noncentral t's quantile by Jennett and Welch's
    normal approximation, t_c(1 − 1/(4ν)) + z_power·√(1 + t_c²/(2ν)), t_c = t(1 − α/2, ν); within
    0.5 % of scipy's ``nct`` for ν ≥ 2 (tested).  The textbook t_c + t(power, ν), used before,
    overstates the power at a few iterations: 71–75 % instead of 80 % at ν = 4 and α = 0.01."""
    tc = t_quantile(1.0 - alpha / 2.0, df)
    return tc * (1.0 - 1.0 / (4.0 * df)) + _normal_quantile(power) * math.sqrt(1.0 + tc * tc / (2.0 * df))


Direction = Literal["up", "down"]


def _signed(k: float, direction: Direction) -> float | None:
    """A shift of ``k`` on the log scale as a percent change of the baseline, up or down."""
    try:
        return 100.0 * math.expm1(k if direction == "up" else -k)
    except OverflowError:
        return None


def min_detectable_effect(
    base: Values,
    new: Values,
    kind: MeanKind = "amean",
    power: float = 0.8,
    alpha: float = ALPHA,
    direction: Direction = "up",
) -> float | None:
    """Smallest true change (percent of the baseline mean) a two-sided Welch test at ``alpha``
    finds with probability ``power`` at these data's variation and iteration counts:
    100·(exp(±:func:`noncentrality`·SE(log ratio)) − 1), a rise for ``direction="up"``, a fall
    (negative) for ``"down"`` (the interval is symmetric on the log scale: +417 % up is −81 %
    down).  The caller passes the level of the row's family (compare: α/m, the level
    Benjamini–Hochberg gives one change among m tests).  None when undefined (fewer than 2
    iterations a side)."""
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
    return _signed(noncentrality(alpha, power, df) * math.sqrt(vb + vn), direction)


def count_min_detectable_effect(
    base: Values, new: Values, power: float = 0.8, alpha: float = ALPHA, direction: Direction = "up"
) -> float | None:
    """:func:`min_detectable_effect` for :func:`count_test`: the change of the rate found with
    probability ``power`` at level ``alpha``, with the standard error of the log ratio at the
    baseline's rate, √(φ/m_b · (1/k_b + 1/k_n)), on the degrees of freedom of the test that
    applies (N − 2 for the exact test, Hsu's min(k) − 1 beyond it).  None when the baseline
    counted nothing, or when no split of these iterations could reach ``alpha`` (the exact test's
    smallest p: 0.10 at 3 vs 3): no true change of any size would be found."""
    b, n = floats(base), floats(new)
    if len(b) < 2 or len(n) < 2 or not is_counts(b) or not is_counts(n):
        return None
    mb = math.fsum(b) / len(b)
    if mb <= 0:
        return None
    kb, kn = len(b), len(n)
    exact = math.comb(kb + kn, min(kb, kn)) <= EXACT_SPLITS
    if exact and 2.0 / math.comb(kb + kn, min(kb, kn)) > alpha:
        return None
    df = kb + kn - 2 if exact else min(kb, kn) - 1
    phi = count_dispersion(b, n)
    se = math.sqrt(phi / mb * (1.0 / kb + 1.0 / kn))
    # dispersion at its floor (Poisson's): the denominator is known, the statistic ~normal;
    # estimated above it: a t-like statistic (noncentrality)
    shift = (
        t_quantile(1.0 - alpha / 2.0, df) + _normal_quantile(power) if phi <= 1.0 else noncentrality(alpha, power, df)
    )
    return _signed(shift * se, direction)


def iterations_to_detect(
    base: Values,
    new: Values,
    kind: MeanKind = "amean",
    effect_pct: float = 5.0,
    power: float = 0.8,
    alpha: float = ALPHA,
    limit: int = 100_000,
) -> int | None:
    """The number of iterations per run (the same on both sides) at which
    :func:`min_detectable_effect` falls to ``effect_pct``, assuming each side's per-iteration
    variation stays what these data show.  None when it is undefined (fewer than 2 iterations a
    side) or more than ``limit``."""
    got = _log_mean_variances(base, new, kind)
    if got is None:
        return None
    nb, nn, vb, vn = got
    ub, un = vb * nb, vn * nn  # variance of one iteration's log mean
    if ub + un == 0:
        return 2
    target = math.log1p(effect_pct / 100.0)

    def detects(k: int) -> bool:
        df = max(1.0, min((k - 1) * (ub + un) ** 2 / (ub * ub + un * un), 2 * k - 3))  # as the MDE's
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
    while hi - lo > 1:  # detects(hi) holds, detects(lo) does not (or lo < 2)
        mid = (lo + hi) // 2
        if mid >= 2 and detects(mid):
            hi = mid
        else:
            lo = mid
    return hi


# A count row's constancy within each run is taken as determinism only when Poisson noise at each
# run's level would look that constant less often than this (7 7 vs 9 9 happens by chance: at a
# mean of 1, two iterations agree 31 % of the time).
CHANCE_MAX = 1e-3


@dataclass(frozen=True)
class Determinism:
    """:func:`deterministic`'s verdict on a row that is constant at its resolution in each run."""

    changed: bool  # the runs' values are more than ``resolution`` apart in every iteration
    base: tuple[float, float]  # the baseline's lowest and highest iteration value
    new: tuple[float, float]
    resolution: float  # the row's stated resolution
    tolerance: float  # the one applied: the resolution plus REL_TOL of the row's magnitude
    n_base: int
    n_new: int


def poisson_range_chance(k: int, mean: float, width: int) -> float:
    """P(k independent Poisson(mean) counts lie within ``width`` of each other): how often pure
    Poisson noise at this level looks as constant as a run whose iterations span ``width``.  Summed
    exactly up to a mean of 10⁴; above it bounded by ((2·width + 1)·the largest pmf)^(k − 1)."""
    if mean <= 0 or k < 2:
        return 1.0
    if mean > 1e4:
        return min(1.0, ((2 * width + 1) / math.sqrt(2.0 * math.pi * mean)) ** (k - 1))
    lo = max(0, int(mean - 12.0 * math.sqrt(mean) - 12))
    hi = int(mean + 12.0 * math.sqrt(mean) + 12) + width
    log_mean = math.log(mean)
    pmf = [math.exp(v * log_mean - mean - math.lgamma(v + 1.0)) for v in range(lo, hi + 1)]
    cum = [0.0]
    for x in pmf:
        cum.append(cum[-1] + x)
    total = 0.0
    for i in range(len(pmf) - width):
        inside = cum[i + width + 1] - cum[i]  # P(v <= X <= v + width), v = lo + i
        above = cum[i + width + 1] - cum[i + 1]  # P(v < X <= v + width)
        total += inside**k - above**k  # the smallest is v, all within the width
    return min(1.0, total)


def deterministic(base: Values, new: Values, resolution: float, count: bool = False) -> Determinism | None:
    """The verdict on a row whose iterations are constant at its resolution in each run (a
    deterministic guest clock: QEMU's -icount), else None (the row is tested as usual).

    Each run's iterations (at least 2) must lie within the resolution of each other (the
    resolution here is the row's plus :data:`REL_TOL` of its magnitude, so float noise never
    counts: 7 against 7.00000001 is no change, nor 0.06 against 0.05 on a 0.01 clock when the
    subtraction gives 0.010000000000000002).  Then ``changed`` when every iteration of one run
    is more than the resolution away from every iteration of the other.  A count row is judged
    this way only when Poisson noise would look this constant in both runs less often than
    :data:`CHANCE_MAX` (:func:`poisson_range_chance`); otherwise the count test decides."""
    b, n = _finite(base), _finite(new)
    if len(b) < WELCH_MIN_ITERATIONS or len(n) < WELCH_MIN_ITERATIONS:
        return None
    scale = max(max(map(abs, b)), max(map(abs, n)))
    res = float(resolution or 0.0) + REL_TOL * scale
    bl, bh, nl, nh = min(b), max(b), min(n), max(n)
    if bh - bl > res or nh - nl > res:
        return None
    if count and is_counts(b) and is_counts(n):
        chance = poisson_range_chance(len(b), math.fsum(b) / len(b), round(bh - bl)) * poisson_range_chance(
            len(n), math.fsum(n) / len(n), round(nh - nl)
        )
        if chance > CHANCE_MAX:
            return None
    gap = max(nl - bh, bl - nh)
    return Determinism(gap > res, (bl, bh), (nl, nh), float(resolution or 0.0), res, len(b), len(n))


def bh_adjust(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), same order as the input."""
    p = [float(v) for v in pvalues]
    m = len(p)  # as scipy.stats.false_discovery_control(method="bh")
    order = sorted(range(m), key=p.__getitem__)
    out = [0.0] * m
    q = math.inf
    for rank in range(m, 0, -1):  # running minimum from the largest p down
        i = order[rank - 1]
        q = min(q, p[i] * m / rank)
        out[i] = min(q, 1.0)
    return out
