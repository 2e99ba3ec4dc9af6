"""Every summary statistic against hand-computed values, with its edge cases."""

import math

import numpy as np
import pytest

from mmbench.analysis import significance as sig
from mmbench.analysis import stats as st

nan = math.isnan


def test_amean():
    assert st.amean([1, 2, 3, 6]) == 3.0
    assert st.amean([7]) == 7.0
    assert nan(st.amean([]))
    assert nan(st.amean([1, float("nan")]))


def test_hmean():
    assert st.hmean([1, 2, 4]) == pytest.approx(3 / (1 + 0.5 + 0.25))
    assert st.hmean([5]) == 5.0
    assert nan(st.hmean([1, 0, 2]))  # zero → undefined, documented
    assert nan(st.hmean([1, -1]))
    assert nan(st.hmean([]))


def test_gmean():
    assert st.gmean([1, 4, 16]) == pytest.approx(4.0)
    assert st.gmean([2, 0, 8]) == 0.0  # zero → 0, no fudge
    assert nan(st.gmean([2, -1]))
    assert nan(st.gmean([]))
    assert st.gmean([1e300, 1e300]) == pytest.approx(1e300)  # log space: no overflow


def test_stddev_n_minus_1():
    assert st.stddev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))
    assert nan(st.stddev([3]))
    assert nan(st.stddev([]))
    assert st.stddev([5, 5, 5]) == 0.0


def test_coeffvar_same_family():
    x = [1.0, 2.0, 4.0]
    sd = math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    assert st.coeffvar(x, "amean") == pytest.approx(100 * sd / (7 / 3))
    assert st.coeffvar(x, "hmean") == pytest.approx(100 * sd / (3 / 1.75))
    assert st.coeffvar(x, "gmean") == pytest.approx(100 * sd / 2.0)
    assert nan(st.coeffvar([1.0], "amean"))
    assert nan(st.coeffvar([-1.0, 1.0], "amean"))  # mean 0


def test_min_max():
    assert st.vmin([3, 1, 2]) == 1 and st.vmax([3, 1, 2]) == 3
    assert nan(st.vmin([])) and nan(st.vmax([]))


def test_bmean_k_rounds_up():
    assert st.bmean_k(5, 95) == 5  # ceil(4.75)
    assert st.bmean_k(20, 95) == 19
    assert st.bmean_k(21, 95) == 20  # ceil(19.95)
    assert st.bmean_k(1, 50) == 1
    assert st.bmean_k(10, 1) == 1  # at least one
    assert st.bmean_k(0, 95) == 0


def test_bmean_direction():
    x = list(range(1, 21))  # 1..20, k = 19
    assert st.bmean(x, 95, "lower") == pytest.approx(np.mean(range(1, 20)))
    assert st.bmean(x, 95, "higher") == pytest.approx(np.mean(range(2, 21)))
    assert st.bmean([4, 1, 3, 2], 50, "lower") == 1.5
    assert st.bmean([4, 1, 3, 2], 50, "higher") == 3.5
    assert st.bmean([1, 2, 4, 8], 75, "higher", "hmean") == pytest.approx(3 / (1 / 2 + 1 / 4 + 1 / 8))
    assert st.bmean([2, 2, 2, 9], 75, "lower") == 2.0  # ties
    assert nan(st.bmean([], 95))


def test_percentiles_from_low_end_linear():
    x = [10, 20, 30, 40, 50]
    # linear: position (n-1)·p/100
    assert st.percentile(x, 50) == 30
    assert st.percentile(x, 90) == pytest.approx(46.0)
    assert st.percentile(x, 95) == pytest.approx(48.0)
    assert st.percentile(x, 99) == pytest.approx(49.6)
    assert st.percentiles(x) == pytest.approx([30, 46, 48, 49.6])
    assert st.percentile([7], 99) == 7
    assert nan(st.percentile([], 50))
    assert st.percentile([1, 1, 1, 5], 50) == 1  # ties


def test_units_and_iteration_values():
    per = [np.array([1.0, 3.0]), np.array([5.0]), np.array([])]
    assert list(st.iteration_values(per)) == [2.0, 5.0]
    u, kind = st.units(per)
    assert kind == "iterations" and list(u) == [2.0, 5.0]
    u, kind = st.units([np.array([1.0, 2.0, 6.0])])
    assert kind == "samples" and list(u) == [1.0, 2.0, 6.0]
    assert st.units([])[1] == "none"
    assert list(st.pooled(per)) == [1.0, 3.0, 5.0]


def test_summarise_rows():
    per = [np.array([10.0]), np.array([12.0]), np.array([14.0])]
    rows = dict(st.summarise(per, kind="amean", better="lower"))
    assert list(rows) == ["Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean.95"]
    assert rows["Min"] == 10 and rows["Max"] == 14 and rows["Amean"] == 12
    assert rows["Stddev"] == pytest.approx(2.0)
    assert rows["CoeffVar"] == pytest.approx(100 * 2 / 12)
    assert rows["BAmean.95"] == 12.0  # k = ceil(2.85) = 3
    lat = dict(st.summarise([np.arange(1, 101, dtype=float)], latency=True))
    assert lat["P50"] == pytest.approx(50.5) and lat["P99"] == pytest.approx(99.01)
    assert nan(lat["Stddev"]) is False  # one iteration: spread of its samples
    hm = dict(st.summarise([np.array([1.0]), np.array([2.0])], kind="hmean", better="higher"))
    assert "Hmean" in hm and "BHmean.95" in hm
    assert hm["Hmean"] == pytest.approx(4 / 3)
    one = dict(st.summarise([np.array([5.0])]))
    assert one["Amean"] == 5 and nan(one["Stddev"]) and nan(one["CoeffVar"])


def test_outliers_named_and_robust():
    found = st.outliers([10, 10.1, 9.9, 10.05, 30])
    assert [i for i, _ in found] == [4] and found[0][1] > st.OUTLIER_Z
    assert st.outliers([10, 10.1, 9.9, 10.05, 10.2]) == []
    assert st.outliers([1, 2]) == []
    assert st.outliers([5, 5, 5, 5]) == []  # zero scale flags nothing


# ---- significance ---------------------------------------------------------------------------


def test_welch_states():
    assert sig.welch([1.0], [2.0, 3.0]).state == "too-few-samples"
    d = sig.welch([1.0, 1.0], [2.0, 2.0])  # constants differ: no variance, not tested
    assert d.state == "no-variance" and d.p is None and not d.ok
    e = sig.welch([7.0] * 10, [7.0] * 10)  # equal constants -> no change, not tested
    assert e.state == "same-constant" and e.p is None
    # issue 22 item 2: 7 7 7 vs 7.00000001 x3 printed "-0.00%* p=0"; equal within REL_TOL
    f = sig.welch([7.0] * 3, [7.00000001] * 3)
    assert f.state == "same-constant" and not f.ok
    r = sig.welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.5])
    assert r.ok
    from scipy import stats

    assert r.p == pytest.approx(stats.ttest_ind([1, 2, 3], [4, 5, 6.5], equal_var=False).pvalue)


def test_welch_extreme_finite_values_no_overflow():
    # issue 13 item 8: OverflowError at 1e100, ZeroDivisionError near 1e-90
    r = sig.welch([1e100, 2e100], [1e100, 3e100])
    assert r.ok and 0.0 < r.p <= 1.0
    from scipy import stats

    assert r.p == pytest.approx(stats.ttest_ind([1, 2], [1, 3], equal_var=False).pvalue)
    r2 = sig.welch([1e-90, 2e-90], [1e-90, 3e-90])
    assert r2.ok and r2.p == pytest.approx(r.p)


def test_mann_whitney_states():
    assert sig.mann_whitney([1, 2], [3, 4, 5]).state == "too-few-samples"
    mw = sig.mann_whitney([1, 1, 1], [1, 1, 1])  # equal constants: no change, not tested
    assert mw.state == "same-constant" and mw.p is None
    assert sig.mann_whitney([1, 1, 1], [2, 2, 2]).state == "no-variance"
    r = sig.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.ok and r.p == pytest.approx(2 / 252)  # exact: 2 / C(10,5)


def test_bootstrap_ci_seeded_and_sane():
    b = [100.0, 102.0, 98.0, 101.0, 99.0]
    n = [110.0, 112.0, 108.0, 111.0, 109.0]
    ci1 = sig.bootstrap_ratio_ci(b, n, seed=3, key="k")
    ci2 = sig.bootstrap_ratio_ci(b, n, seed=3, key="k")
    assert ci1 == ci2
    assert ci1[0] < 1.1 < ci1[1] and ci1[0] > 1.0
    assert sig.bootstrap_ratio_ci([1.0], n) is None
    assert sig.bootstrap_ratio_ci([0.0, 0.0, 0.0], n) is None  # base mean 0
    big = np.random.default_rng(0).exponential(1.0, 50_000)
    assert sig.bootstrap_ratio_ci(big, big * 2, key="x") is not None  # budget-limited, still fine


def test_bh_matches_hand_computation():
    p = [0.01, 0.04, 0.03, 0.5]
    # sorted 0.01,0.03,0.04,0.5 → 0.04, 0.06, 0.0533, 0.5 → monotone: 0.04, 0.0533, 0.0533, 0.5
    q = sig.bh_adjust(p)
    assert q == pytest.approx([0.04, 0.05333333, 0.05333333, 0.5])
    assert sig.bh_adjust([]) == []


def test_means_equal_scipy():
    from scipy import stats

    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.lognormal(0, 2, rng.integers(1, 50))
        assert st.hmean(x) == pytest.approx(stats.hmean(x), rel=1e-12)
        assert st.gmean(x) == pytest.approx(stats.gmean(x), rel=1e-12)


def _welch_ref(a, b):
    """Welch's p as docs/statistics.md defines it, computed independently with scipy: scipy's own
    ttest_ind(equal_var=False) at equal sizes; at unequal sizes its t on the smallest
    Welch-Satterthwaite df over the interval of the variance ratio between F(fb, fn)'s g/2 and
    1 - g/2 quantiles (scipy.stats.f.ppf), g = min(fb, fn) / max(fb, fn)."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    ref = stats.ttest_ind(a, b, equal_var=False)
    if a.size == b.size:
        return ref.pvalue
    fa, fb = a.size - 1, b.size - 1
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    g = min(fa, fb) / max(fa, fb)
    ratio = a.var(ddof=1) / b.var(ddof=1)

    def ws(theta):
        return (1 + theta) ** 2 / (theta**2 / fa + 1 / fb)

    ends = [ratio / stats.f.ppf(q, fa, fb) * b.size / a.size for q in (g / 2, 1 - g / 2)]
    df = min([(va + vb) ** 2 / (va**2 / fa + vb**2 / fb)] + [ws(t) for t in ends])
    return 2 * stats.t.sf(abs(ref.statistic), df)


def test_welch_equals_ttest_ind():
    from scipy import stats

    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.normal(0, 1, rng.integers(2, 9)), rng.normal(0.5, 2, rng.integers(2, 9))
        assert sig.welch(a, b).p == pytest.approx(_welch_ref(a, b), rel=1e-9)
        # unequal sizes: the df is bounded (issue 22 item 5), so never less conservative than scipy's
        assert sig.welch(a, b).p >= stats.ttest_ind(a, b, equal_var=False).pvalue * (1 - 1e-9)


def test_significance_matches_scipy_stats():
    """Our Welch / Mann–Whitney / BH (built on scipy.special for speed) equal scipy.stats."""
    import numpy as np
    from scipy import stats as st

    from mmbench.analysis import significance as sig

    rng = np.random.default_rng(7)
    for trial in range(40):
        nb, nn = rng.integers(2, 12, size=2)
        b = rng.normal(10, 2, nb)
        n = rng.normal(10 + rng.uniform(-3, 3), rng.uniform(0.5, 4), nn)
        if trial % 3 == 0:
            b, n = np.round(b), np.round(n)  # ties
        ours = sig.welch(b, n).p
        assert ours == pytest.approx(_welch_ref(b, n), rel=1e-9, abs=1e-12)
        if nb >= 3 and nn >= 3:
            ours = sig.mann_whitney(b, n).p
            exact = nb <= 8 and nn <= 8 and np.unique(np.r_[b, n]).size == nb + nn
            ref = st.mannwhitneyu(b, n, alternative="two-sided", method="exact" if exact else "asymptotic").pvalue
            assert ours == pytest.approx(ref, rel=1e-9, abs=1e-12), (b, n)
    p = rng.uniform(0, 1, 30)
    assert sig.bh_adjust(p) == pytest.approx(list(st.false_discovery_control(p, method="bh")))


def test_t_distribution_without_scipy_matches_scipy():
    from scipy import stats as st

    from mmbench.analysis.significance import t_two_sided_p

    for df in (1.0, 1.7, 2.0, 3.3, 7.9, 30.0, 250.0, 1e4):
        for t in (0.0, 0.01, 0.5, 1.0, 1.96, 3.0, 8.0, 40.0, -2.5):
            assert t_two_sided_p(t, df) == pytest.approx(2 * st.t.sf(abs(t), df), rel=1e-9, abs=1e-15)


def test_t_quantile_matches_scipy():
    from scipy import stats

    for df in (1.0, 2.0, 3.7, 9.0, 120.0):
        assert sig.t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-8)


def test_ratio_ci_calibration_small():
    """The calibration script's small version (issue 13 item 2): seeded A/A trials; the
    interval's coverage stays near 95 % and Welch's false-positive rate near 5 % at 3, 5 and 10
    iterations for normal, lognormal and heavy-tailed noise."""
    import importlib.machinery
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "bench" / "stats-calibration"
    cal = importlib.machinery.SourceFileLoader("stats_calibration", str(path)).load_module()
    res = cal.calibrate(trials=300, seed=7, bootstrap=False)
    for (dist, n), r in res.items():
        assert 0.92 <= r["cov_t"] <= 0.99, (dist, n, r)
        assert r["fp"] <= 0.09, (dist, n, r)
    assert res[("normal", 10)]["power5"] > 0.9  # a 5 % change at 2 % noise is found at n=10


def test_min_detectable_effect():
    # 2 % noise, n = 10: 5 % is detectable, so the MDE is below 5 %; at n = 3 it is not
    rng = np.random.default_rng(3)
    a10, b10 = 100 * (1 + 0.02 * rng.standard_normal(10)), 100 * (1 + 0.02 * rng.standard_normal(10))
    a3, b3 = a10[:3], b10[:3]
    assert 0 < sig.min_detectable_effect(a10, b10) < 5.0
    assert sig.min_detectable_effect(a3, b3) > sig.min_detectable_effect(a10, b10)
    assert sig.min_detectable_effect([1.0], [1.0, 2.0]) is None


# ---- the count test (issue 22 items 0 and 2) -------------------------------------------------


def test_count_test_is_exact_at_small_n():
    # issue 36: 347/387/343 vs 0/0/0 is also what a counter that fires in half the iterations gives
    # 3 % of the time; the exact test says 0.10 (2 of 20 splits) and that nothing lower is possible
    r = sig.count_test([347, 387, 343], [0, 0, 0])
    assert r.ok and r.test == "count-exact" and r.p == pytest.approx(0.1) and r.p_floor == pytest.approx(0.1)
    # at 5 vs 5 the same pattern is 2 of 252 splits: a primary family of up to 6 stars it
    r5 = sig.count_test([0] * 5, [18, 32, 24, 18, 14])
    assert r5.p == pytest.approx(2 / 252)
    # the command-line case: 0 0 0 vs 300 290 0 printed q=0.029 *; exact: 0.40
    assert sig.count_test([0, 0, 0], [300, 290, 0]).p == pytest.approx(0.4)
    # THP fault fallback 112/121/98 vs 132/158/157: fully separated, the smallest p of 3 vs 3
    f = sig.count_test([112, 121, 98], [132, 158, 157])
    assert f.ok and f.p == pytest.approx(0.1)
    lo, hi = sig.count_ratio_ci([112, 121, 98], [132, 158, 157])
    assert 1.0 < lo < 1.35 < hi
    assert sig.count_ratio_ci([347, 387, 343], [0, 0, 0]) is None  # ln of a 0 rate


def test_count_test_states_and_floor():
    assert sig.count_test([1.5, 2, 3], [1, 2, 3]).state == "not-counts"
    assert sig.count_test([-1, 2, 3], [1, 2, 3]).state == "not-counts"
    assert sig.count_test([3], [1, 2, 3]).state == "too-few-samples"
    assert sig.count_test([0, 0, 0], [0, 0, 0]).state == "same-constant"
    # one event in all can never be significant at this n: the floor says so
    one = sig.count_test([0, 0, 0], [1, 0, 0])
    assert one.ok and one.p_floor > 0.05
    assert sig.count_test([0] * 6, [40, 41, 39, 42, 40, 38]).p_floor < 0.01
    # beyond EXACT_SPLITS (10 vs 10: 184,756 splits): the pooled and Hsu t, Poisson's variance at least
    big = sig.count_test([0] * 10, [40, 41, 39, 42, 40, 38, 44, 37, 41, 40])
    assert big.test == "count" and big.p < 1e-6 and big.p_floor < 1e-6
    assert sig.count_test([7] * 10, [8] * 10).p > 0.01  # Poisson-sized difference, no evidence


def test_count_test_equals_an_exact_permutation_test():
    # independent reference: every split of the pooled iterations enumerated
    import itertools

    rng = np.random.default_rng(4)
    for nb, nn, zeros in (
        (3, 3, 0.5),
        (4, 6, 0.5),
        (5, 5, 0.5),
        (2, 10, 0.5),
        (3, 12, 0.5),
        (3, 12, 0.0),
        (7, 7, 0.0),
        (3, 25, 0.0),
        (6, 7, 0.2),
    ):  # ties (knapsack), distinct (numpy)
        for _ in range(5):
            b = [int(x) for x in np.where(rng.random(nb) < zeros, 0, rng.poisson(2000, nb))]
            n = [int(x) for x in np.where(rng.random(nn) < zeros, 0, rng.poisson(2000, nn))]
            if min(b + n) == max(b + n):
                continue
            pool, k = b + n, nb
            obs = abs(sum(b) / k - sum(n) / nn)
            splits = list(itertools.combinations(range(nb + nn), k))
            hits = sum(
                abs(sum(pool[i] for i in c) / k - (sum(pool) - sum(pool[i] for i in c)) / nn) >= obs - 1e-9
                for c in splits
            )
            assert sig.count_test(b, n).p == pytest.approx(hits / len(splits), rel=1e-12), (b, n)


def test_count_t_equals_scipy_beyond_exact():
    # the parametric count test is the larger p of scipy's pooled t and of Welch's t on Hsu's df,
    # each run's variance floored at the pooled mean (Poisson's)
    from scipy import stats

    b = [120, 95, 130, 101, 88, 140, 99, 117, 125, 108]
    n = [150, 131, 170, 160, 122, 149, 151, 139, 165, 128]
    p = sig.count_test(b, n).p
    pooled = stats.ttest_ind(b, n, equal_var=True).pvalue
    t = stats.ttest_ind(b, n, equal_var=False).statistic
    hsu = 2 * stats.t.sf(abs(t), len(b) - 1)
    assert sig.count_test(b, n).test == "count" and p == pytest.approx(max(pooled, hsu), rel=1e-9)


def test_welch_df_bounded_at_unequal_n():
    # issue 36: at unequal n the df is the smallest Welch-Satterthwaite df over an interval of the
    # variance ratio; equal n: Welch-Satterthwaite itself (scipy's)
    assert sig.welch_df(1 / 3, 1 / 3, 3, 3) == pytest.approx(4.0)  # equal n: unchanged
    ws = (1 / 3 + 1 / 30) ** 2 / ((1 / 3) ** 2 / 2 + (1 / 30) ** 2 / 29)
    assert sig.welch_df(1 / 3, 1 / 30, 3, 30) <= ws
    small = sig.welch_df(0.01 / 3, 1 / 30, 3, 30)  # the small run happened quiet
    assert small < (0.01 / 3 + 1 / 30) ** 2 / ((0.01 / 3) ** 2 / 2 + (1 / 30) ** 2 / 29)
    assert sig.welch_df(1.0, 0.0, 3, 10) == pytest.approx(2.0)  # all the spread in the 3-run


def test_f_quantile_matches_scipy():
    from scipy import stats

    for d1, d2, q in ((1, 9, 0.05), (2, 9, 0.11), (2, 29, 0.035), (9, 1, 0.95), (4, 4, 0.5), (29, 2, 0.0345)):
        assert sig._f_quantile(q, d1, d2) == pytest.approx(stats.f.ppf(q, d1, d2), rel=1e-9)
