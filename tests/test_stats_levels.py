"""Issue 36 item 6: the tests hold their level, and the tests of that can fail.

The A/A rate per report (6 primary rows, Benjamini-Hochberg) is measured on 2,000 seeded reports
per cell with compare's own decision (the row tests of ``significance`` and ``bh_adjust``, checked
flag for flag against ``build_comparison``).  The bound asserted is 6.5 %: a true rate of 5 % passes
it with probability 0.999, a true 8 % fails it with probability 0.994; the same check applied to the
rule before (scipy's Welch-Satterthwaite df) fails."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import mmbench, store_records
from mmbench.analysis import significance as sig
from mmbench.analysis.compare import build_comparison
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
from mmbench.plugins import exporters

REPORTS = 2000
BOUND = 0.065
PRIMARY = 6


def decide(base: list[list[float]], new: list[list[float]], count: bool, resolution: float = 0.0) -> bool:
    """compare's decision for one A/A report: any primary row starred (a test's q < 0.05 within the
    family, or a deterministic change)."""
    ps = []
    for b, n in zip(base, new):
        det = sig.deterministic(b, n, resolution, count)
        if det is not None:
            if det.changed:
                return True
            continue
        r = sig.count_test(b, n) if count and sig.is_counts(b) and sig.is_counts(n) else sig.welch(b, n)
        if r.ok and r.p_floor <= sig.ALPHA:
            ps.append(r.p)
    return any(q < sig.ALPHA for q in sig.bh_adjust(ps)) if ps else False


def _normal(rng, k, cv):
    return list(100 * (1 + cv * rng.standard_normal(k)))


def _zero_inflated(rng, k):
    return [0.0 if rng.random() < 2 / 3 else float(rng.poisson(282)) for _ in range(k)]


def _negative_binomial(rng, k, mean=20.0, sd=40.0):
    r = mean * mean / (sd * sd - mean)
    return [float(x) for x in rng.negative_binomial(r, r / (r + mean), k)]


CELLS = {
    "continuous 3 vs 3": (lambda rng, w: _normal(rng, 3, 0.02), False),
    "3 vs 10, the 3-run 3x as noisy": (
        lambda rng, w: _normal(rng, 3, 0.06) if w == "a" else _normal(rng, 10, 0.02),
        False,
    ),
    "2 vs 10, the 2-run 3x as noisy": (
        lambda rng, w: _normal(rng, 2, 0.06) if w == "a" else _normal(rng, 10, 0.02),
        False,
    ),
    "3 vs 30, equal spread": (lambda rng, w: _normal(rng, 3 if w == "a" else 30, 0.02), False),
    "10 vs 3, the 3-run 2x as noisy": (
        lambda rng, w: _normal(rng, 10, 0.02) if w == "a" else _normal(rng, 3, 0.04),
        False,
    ),
    "zero-inflated counts, 3 vs 3": (lambda rng, w: _zero_inflated(rng, 3), True),
    "zero-inflated counts, 5 vs 5": (lambda rng, w: _zero_inflated(rng, 5), True),
    "negative binomial sd 2x mean, 5 vs 5": (lambda rng, w: _negative_binomial(rng, 5), True),
    "negative binomial sd 2x mean, 10 vs 10": (lambda rng, w: _negative_binomial(rng, 10), True),
    "zero-inflated counts, 3 vs 10": (lambda rng, w: _zero_inflated(rng, 3 if w == "a" else 10), True),
}


def _reports(name: str, n: int, seed: int):
    draw, count = CELLS[name]
    rng = np.random.default_rng([seed, list(CELLS).index(name)])
    for _ in range(n):
        yield [draw(rng, "a") for _ in range(PRIMARY)], [draw(rng, "b") for _ in range(PRIMARY)], count


@pytest.mark.parametrize("cell", list(CELLS))
def test_aa_rate_per_report_within_5_percent(cell):
    rate = sum(decide(b, n, c) for b, n, c in _reports(cell, REPORTS, 11)) / REPORTS
    assert rate <= BOUND, (cell, rate)


def test_the_rate_check_can_fail():
    # the rule before issue 36: Welch-Satterthwaite's df (scipy's p) at 3 vs 10 with the 3-run 3x as
    # noisy starred 12-13 % of A/A reports; the same check on the same data must fail it
    from scipy import stats

    starred = 0
    for b, n, _ in _reports("3 vs 10, the 3-run 3x as noisy", REPORTS, 11):
        ps = [stats.ttest_ind(x, y, equal_var=False).pvalue for x, y in zip(b, n)]
        starred += any(q < 0.05 for q in sig.bh_adjust(ps))
    assert starred / REPORTS > BOUND
    # and the count test before (quasi-Poisson, dispersion over N - 2) on zero-inflated counts:
    # 0 0 0 against 300 290 0 printed q = 0.029 *; the exact test gives 0.40
    assert sig.count_test([0, 0, 0], [300, 290, 0]).p == pytest.approx(0.4)


@pytest.mark.parametrize(
    "cell", ["3 vs 10, the 3-run 3x as noisy", "zero-inflated counts, 5 vs 5", "negative binomial sd 2x mean, 10 vs 10"]
)
def test_the_decision_is_compares(cell):
    # flag for flag: the decision above is what build_comparison stars
    kind = "count" if CELLS[cell][1] else "time"
    ms = [MetricDef(f"m{i}", "events" if kind == "count" else "s", "lower", kind) for i in range(PRIMARY)]
    suite = "[suite]\nprimary = [" + ", ".join(f'"{m.name}"' for m in ms) + "]\n"

    def run(name, cols):
        its = [
            IterationResult("w", i, False, "ok", samples={m.name: [col[i]] for m, col in zip(ms, cols)})
            for i in range(len(cols[0]))
        ]
        return RunRecord(name, "complete", 0.0, 1.0, suite, "", {}, {}, [WorkloadRun("w", "w", {}, ms, its)])

    for b, n, c in _reports(cell, 60, 5):
        cmp = build_comparison([run("a", b), run("b", n)])
        starred = any(r.significant.get("b") for s in cmp.sections for r in s.rows)
        assert starred == decide(b, n, c), (b, n)


def test_one_arm_all_zeros_from_the_command_line(tmp_path):
    # the case: counts 0,0,0 against 300,290,0 printed q=0.029 * and --fail-on-regression exit 1
    cnt = MetricDef("Immediate reclaim", "events", "lower", "count")

    def run(name, vals):
        its = [IterationResult("w", i, False, "ok", samples={cnt.name: [v]}) for i, v in enumerate(vals)]
        return RunRecord(name, "complete", 0.0, 1.0, "", "", {}, {}, [WorkloadRun("w", "w", {}, [cnt], its)])

    res = store_records(tmp_path / "res", run("a", [0, 0, 0]), run("b", [300, 290, 0]))
    proc = mmbench("compare", "--results", res, "--fail-on-regression", "a", "b")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "*" not in proc.stdout.split("\n% vs the baseline")[0].split("Primary rows")[1]
    assert (
        "cannot reach q <= 0.05 at this n: at 3 vs 3 iterations the exact count test's smallest p is 0.4" in proc.stdout
    )


def test_one_iteration_a_side_says_no_test_is_possible():
    lat = [MetricDef(f"m{i}", "us", "lower", "latency") for i in range(3)]
    suite = '[suite]\nprimary = ["m0", "m1"]\n'
    rng = np.random.default_rng(3)

    def run(name, scale):
        it = IterationResult(
            "w", 0, False, "ok", samples={m.name: list(rng.exponential(100 * scale, 500)) for m in lat}
        )
        return RunRecord(name, "complete", 0.0, 1.0, suite, "", {}, {}, [WorkloadRun("w", "w", {}, lat, [it])])

    c = build_comparison([run("a", 1.0), run("b", 1.5)])  # a 50 % change: still no test
    text = exporters()["text"].render(c, {"pvalues": True})
    summary = text[text.index("Primary rows") : text.index("\n\n", text.index("Primary rows"))]
    assert summary.count("no test: 1 vs 1 iterations (a test needs 2 a side: the iteration is the unit)") == 2
    assert "*" not in summary and "q=" not in text
    assert "one iteration a side allows no test" in text
    assert "outcome m0: no test: 1 vs 1 iterations" in c.verdicts["b"]


def test_mde_is_capped_in_json_and_given_in_the_direction_seen():
    t = MetricDef("t", "s", "lower", "time")

    def run(name, vals, metric=t):
        its = [IterationResult("w", i, False, "ok", samples={metric.name: [v]}) for i, v in enumerate(vals)]
        return RunRecord(name, "complete", 0.0, 1.0, "", "", {}, {}, [WorkloadRun("w", "w", {}, [metric], its)])

    # 2 vs 2 iterations far apart: the MDE runs past 1000 %; JSON says null and why, as the text does
    c = build_comparison([run("a", [1.0, 30.0]), run("b", [2.0, 50.0])])
    d = json.loads(exporters()["json"].render(c, {}))
    r = next(x for s in d["sections"] for x in s["rows"] if x["stat"] == "Amean" and x["metric"] == "t")
    assert r["mde_pct"]["b"] is None and r["mde_why"]["b"] == "above 1000% (too few iterations)"
    assert ">1000% (too few iterations)" in exporters()["text"].render(c, {"pvalues": True})
    # a count row that fell: the MDE of a fall (-), not the rise of the same size on the log scale
    cnt = MetricDef("Stalls", "events", "lower", "count")
    c = build_comparison([run("a", [400, 380, 900, 410, 390, 420], cnt), run("b", [300, 150, 800, 170, 390, 180], cnt)])
    row = next(x for s in c.sections for x in s.rows if x.metric == "Stalls" and x.stat == "Amean")
    assert -100 < row.mde["b"] < 0
    up = sig.count_min_detectable_effect(
        [400, 380, 900, 410, 390, 420], [300, 150, 800, 170, 390, 180], alpha=0.05, direction="up"
    )
    assert up > -row.mde["b"] and np.log1p(up / 100) == pytest.approx(-np.log1p(row.mde["b"] / 100))
    assert f"a true change of {row.mde['b']:+.3g}% would be starred" in exporters()["text"].render(c, {})
