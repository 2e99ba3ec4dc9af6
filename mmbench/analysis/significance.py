"""Significance tests, bootstrap confidence intervals and the false-discovery-rate control.

* :func:`welch` — Welch's unequal-variance t-test on iteration means; needs ≥ 2 iterations on
  each side.  Used on the mean row of every workload metric.
* :func:`mann_whitney` — Mann–Whitney U (two-sided) on the pooled within-iteration samples; used
  for the percentile rows of ``latency`` metrics, whose per-sample distributions are skewed and
  which have many samples even with one iteration.  Needs ≥ 3 samples on each side.
* :func:`bootstrap_ratio_ci` — percentile-bootstrap 95 % CI of new/base of the metric's mean,
  from a fixed seed.
* :func:`bh_adjust` — Benjamini–Hochberg adjusted p-values over every test of one report.

"Too few samples" is an explicit state (:class:`TestResult.state`), never a guessed p-value.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
from scipy import stats as _st

from mmbench.analysis.stats import MeanKind

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_BUDGET = 4_000_000   # max resamples × sample count per CI (keeps compare fast)
BOOTSTRAP_MIN_RESAMPLES = 200
WELCH_MIN_ITERATIONS = 2
MWU_MIN_SAMPLES = 3

TestState = Literal["ok", "too-few-samples", "zero-variance", "undefined"]


@dataclass(frozen=True)
class TestResult:
    test: str                     # "welch" | "mann-whitney"
    state: TestState
    p: float | None = None        # raw p-value when state == "ok"
    n_base: int = 0
    n_new: int = 0

    @property
    def ok(self) -> bool:
        return self.state == "ok" and self.p is not None


def _finite(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    return a[np.isfinite(a)]


def welch(base_iter_means: Sequence[float] | np.ndarray,
          new_iter_means: Sequence[float] | np.ndarray) -> TestResult:
    """Welch's t-test (scipy ``ttest_ind(equal_var=False)``, two-sided) on iteration means.

    State ``too-few-samples`` when a side has fewer than 2 iterations; ``zero-variance`` when
    both sides have no spread at all (the t statistic is undefined; no p is invented)."""
    b, n = _finite(base_iter_means), _finite(new_iter_means)
    if b.size < WELCH_MIN_ITERATIONS or n.size < WELCH_MIN_ITERATIONS:
        return TestResult("welch", "too-few-samples", None, b.size, n.size)
    if np.ptp(b) == 0 and np.ptp(n) == 0:
        return TestResult("welch", "zero-variance", None, b.size, n.size)
    with np.errstate(all="ignore"):   # ttest_ind(equal_var=False) from the summary statistics
        p = float(_st.ttest_ind_from_stats(b.mean(), b.std(ddof=1), b.size,
                                           n.mean(), n.std(ddof=1), n.size, equal_var=False).pvalue)
    if math.isnan(p):
        return TestResult("welch", "undefined", None, b.size, n.size)
    return TestResult("welch", "ok", p, b.size, n.size)


def mann_whitney(base_samples: Sequence[float] | np.ndarray,
                 new_samples: Sequence[float] | np.ndarray) -> TestResult:
    """Two-sided Mann–Whitney U on pooled samples (scipy ``mannwhitneyu``, method ``auto``:
    exact for small samples without ties, else the normal approximation with tie and
    continuity correction).  ``too-few-samples`` below 3 samples a side; ``zero-variance`` when
    every sample of both sides is the same value."""
    b, n = _finite(base_samples), _finite(new_samples)
    if b.size < MWU_MIN_SAMPLES or n.size < MWU_MIN_SAMPLES:
        return TestResult("mann-whitney", "too-few-samples", None, b.size, n.size)
    if b.min() == b.max() == n.min() == n.max():
        return TestResult("mann-whitney", "zero-variance", None, b.size, n.size)
    p = float(_st.mannwhitneyu(b, n, alternative="two-sided").pvalue)
    if math.isnan(p):
        return TestResult("mann-whitney", "undefined", None, b.size, n.size)
    return TestResult("mann-whitney", "ok", p, b.size, n.size)


def row_seed(seed: int, key: str) -> np.random.Generator:
    """A generator for one CI: the report seed combined with a stable hash of the row key, so a
    CI does not depend on the order rows are computed in."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(key.encode())])


def _resampled_means(a: np.ndarray, idx: np.ndarray, kind: MeanKind) -> np.ndarray:
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


def bootstrap_ratio_ci(base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray,
                       kind: MeanKind = "amean", *, seed: int = 0, key: str = "",
                       resamples: int = BOOTSTRAP_RESAMPLES,
                       level: float = 0.95) -> tuple[float, float] | None:
    """Percentile-bootstrap CI of mean(new)/mean(base) (mean of family ``kind``).

    Each side is resampled independently with replacement (B resamples, vectorised) from its
    units — iteration means, or samples when a side has a single iteration, as chosen by the
    caller.  None when a side has fewer than 2 units, or when more than 1 % of the resampled
    ratios are undefined (a base mean of 0 or a mean undefined for the data)."""
    b, n = _finite(base), _finite(new)
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


def bh_adjust(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), same order as the input."""
    p = np.asarray(pvalues, dtype=float)
    if not p.size:
        return []
    fdc = getattr(_st, "false_discovery_control", None)
    if fdc is not None:
        return [float(v) for v in fdc(p, method="bh")]
    m = p.size                                        # scipy < 1.11: the same, by hand
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return [float(v) for v in out]
