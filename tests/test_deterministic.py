"""Issue 33 item 4: rows judged at their resolution.  Under a deterministic guest clock (QEMU
-icount) a row can be constant within each run with a different constant in each: a difference
larger than the row's resolution, in every iteration of both runs (at least 2 a side), is a change
that gates like a starred row and says how it was judged; float noise never is."""

from __future__ import annotations

import json

import pytest

from conftest import mmbench
from mmbench.analysis import significance as sig
from mmbench.analysis.compare import build_comparison, regressions
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun, default_resolution
from mmbench.plugins import exporters

HUGE = MetricDef("Percentage huge", "%", "higher", "percent")
TIME = MetricDef("Pipe loop", "ms", "lower", "time")


def run(
    name: str,
    per_iter: list[dict[str, float]],
    metrics: list[MetricDef],
    suite: str = "",
    vmstat: list[dict[str, int]] | None = None,
) -> RunRecord:
    its = [
        IterationResult(
            "w", i, False, "ok", samples={k: [v] for k, v in s.items()}, vmstat_delta=(vmstat[i] if vmstat else {})
        )
        for i, s in enumerate(per_iter)
    ]
    return RunRecord(name, "complete", 0.0, 1.0, suite, "", {}, {}, [WorkloadRun("w", "w", {}, metrics, its)])


def row(c, metric, kind="workload"):
    return next(
        r
        for s in c.sections
        for r in s.rows
        if s.kind == kind and r.metric == metric and r.stat in ("Amean", "Hmean", "Gmean")
    )


def test_default_resolutions():
    assert default_resolution("events", "time") == 1.0 and default_resolution("x", "count") == 1.0
    assert default_resolution("ms") == pytest.approx(1e-6) and default_resolution("s") == pytest.approx(1e-9)
    assert default_resolution("ns") == 1.0 and default_resolution("us") == pytest.approx(1e-3)
    assert default_resolution("%", "percent") == 0.01
    assert default_resolution("MB/s", "rate") == 0.0 and default_resolution("KiB", "size") == 0.0
    assert MetricDef("t", "s", "lower", resolution=0.01).effective_resolution == 0.01


def test_a_primary_row_at_100_against_0_is_a_change_that_gates():
    # the case: exit 0 under --fail-on-regression before, never starred
    suite = '[suite]\nprimary = ["Percentage huge"]\n'
    a = run("a", [{HUGE.name: 100.0}] * 3, [HUGE], suite)
    b = run("b", [{HUGE.name: 0.0}] * 3, [HUGE], suite)
    c = build_comparison([a, b])
    r = row(c, HUGE.name)
    assert r.family == "primary" and r.significant["b"] and r.p["b"] is None and r.judged["b"] == "deterministic"
    assert "judged deterministic: 100 vs 0 in every iteration (3 vs 3)" in r.why["b"]
    assert [x.metric for x in regressions(c, 5.0)] == [HUGE.name]
    text = exporters()["text"].render(c, {})
    assert "* worse (judged deterministic" in text
    assert "outcome Percentage huge worse (100 -> 0, -100.0%, judged deterministic)" in c.verdicts["b"]
    d = json.loads(exporters()["json"].render(c, {}))
    jr = next(x for s in d["sections"] for x in s["rows"] if x["metric"] == HUGE.name and x["stat"] == "Amean")
    assert jr["judged"]["b"] == "deterministic" and jr["significant"]["b"] and jr["resolution"] == 0.01
    assert d["families"]["primary"]["deterministic_changes"] == 1


def test_float_noise_and_sub_resolution_differences_are_no_change():
    # the earlier defect: 7 vs 7.00000001 was starred
    t = MetricDef("t", "s", "lower", "time")
    c = build_comparison([run("a", [{"t": 7.0}] * 3, [t]), run("b", [{"t": 7.00000001}] * 3, [t])])
    assert not row(c, "t").significant["b"] and row(c, "t").why["b"].startswith("no change")
    # float noise of a computation (1e-12 relative) on a deterministic timing
    vals = [2934.077 * (1 + e) for e in (0.0, 3e-13, -2e-12)]
    c = build_comparison(
        [run("a", [{TIME.name: v} for v in vals], [TIME]), run("b", [{TIME.name: v} for v in reversed(vals)], [TIME])]
    )
    assert not row(c, TIME.name).significant["b"]
    # half the resolution of a percentage: no change, and said so
    c = build_comparison([run("a", [{HUGE.name: 31.5}] * 3, [HUGE]), run("b", [{HUGE.name: 31.505}] * 3, [HUGE])])
    r = row(c, HUGE.name)
    assert not r.significant["b"] and r.why["b"].startswith("no change beyond the resolution 0.01")
    # a subtraction at the resolution that float arithmetic rounds up (0.06 - 0.05 on a 0.01 clock)
    clock = MetricDef("e", "s", "lower", "time", resolution=0.01)
    a = run("a", [{"e": round(0.05 / 0.01) * 0.01}, {"e": 0.05}], [clock])
    b = run("b", [{"e": 6 * 0.01}, {"e": 0.06}], [clock])
    assert not row(build_comparison([a, b]), "e").significant["b"]


def test_more_than_the_resolution_apart_in_every_iteration():
    clock = MetricDef("e", "s", "lower", "time", resolution=0.01)
    a = run("a", [{"e": 0.04}, {"e": 0.04}], [clock])
    b = run("b", [{"e": 0.06}, {"e": 0.06}], [clock])
    assert row(build_comparison([a, b]), "e").judged["b"] == "deterministic"
    # nearly constant: jitter within the resolution in each run (a count of 1000 +- 1)
    cnt = MetricDef("Pages", "pages", "lower", "count")
    a = run("a", [{"Pages": v} for v in (1000, 1001, 1000)], [cnt])
    b = run("b", [{"Pages": v} for v in (1010, 1010, 1011)], [cnt])
    r = row(build_comparison([a, b]), "Pages")
    assert r.judged["b"] == "deterministic" and "1000-1001 vs 1010-1011" in r.why["b"]
    # one iteration a side: no verdict at all (the iteration is the unit)
    r = row(build_comparison([run("a", [{"Pages": 1000}], [cnt]), run("b", [{"Pages": 1010}], [cnt])]), "Pages")
    assert not r.judged and r.why["b"].startswith("no test: 1 vs 1 iterations")
    # a spread wider than the resolution is tested as usual (Welch: not constant)
    a = run("a", [{TIME.name: v} for v in (2934.077, 2934.067)], [TIME])
    b = run("b", [{TIME.name: 3090.93}] * 3, [TIME])
    r = row(build_comparison([a, b]), TIME.name)
    assert r.test == "welch" and r.significant["b"] and not r.judged


def test_a_small_count_constant_by_chance_goes_to_the_count_test():
    # 0 0 vs 2 2: Poisson noise at a mean of 1 looks this constant 31 % of the time per run
    assert sig.poisson_range_chance(2, 2.0, 0) > 0.2
    assert sig.deterministic([0, 0], [2, 2], 1.0, count=True) is None
    # 1000 1000 vs 1010 1010: Poisson noise at 1000 agrees twice 0.9 % of the time per run
    assert sig.deterministic([1000, 1000], [1010, 1010], 1.0, count=True).changed
    cnt = MetricDef("Events", "events", "lower", "count")
    r = row(build_comparison([run("a", [{"Events": 0}] * 2, [cnt]), run("b", [{"Events": 2}] * 2, [cnt])]), "Events")
    assert r.test == "count-exact" and not r.judged


def test_vmstat_and_duration_rows_have_resolutions():
    from mmbench.analysis import vmstat as vm

    rows = {r.name: r for r in vm.ROWS}
    assert rows["Compaction stalls"].resolution == 1.0 and rows["Kswapd efficiency %"].resolution == 0.01
    assert rows["Kswapd velocity"].resolution == 0.0
    a = run("a", [{TIME.name: 1.0}] * 3, [TIME], vmstat=[{"compact_stall": 413}] * 3)
    b = run("b", [{TIME.name: 1.0}] * 3, [TIME], vmstat=[{"compact_stall": 0}] * 3)
    r = row(build_comparison([a, b]), "Compaction stalls", "vmstat")
    assert r.judged["b"] == "deterministic" and r.resolution == 1.0


def test_an_exploratory_deterministic_change_is_a_lead_that_never_gates():
    other = MetricDef("other", "ms", "lower", "time")
    suite = '[suite]\nprimary = ["Pipe loop"]\n'
    a = run("a", [{TIME.name: 10.0 + i, "other": 5.0} for i in range(3)], [TIME, other], suite)
    b = run("b", [{TIME.name: 10.0 + i, "other": 9.0} for i in range(3)], [TIME, other], suite)
    c = build_comparison([a, b])
    r = row(c, "other")
    assert r.family == "exploratory" and r.lead["b"] and not r.significant["b"] and regressions(c, 0.0) == []


def test_a_stated_resolution_is_stored_and_read_back(tmp_path):
    from mmbench.store import open_store

    store = open_store(tmp_path / "res")
    clock = MetricDef("e", "s", "lower", "time", resolution=0.01)
    for name, v in (("a", 0.04), ("b", 0.06)):
        w = store.create_run(
            name, force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
        )
        w.add_workload(WorkloadRun("w", "w", {}, [clock], []))
        for i in range(2):
            w.add_iteration(IterationResult("w", i, False, "ok", samples={"e": [v]}))
        w.finish("complete")
    got = store.load_run("a").workloads[0].metrics[0]
    assert got.resolution == 0.01
    assert MetricDef("x", "s", "lower").to_dict().get("resolution", "absent") == "absent"  # not stated: not stored
    proc = mmbench("compare", "--results", str(tmp_path / "res"), "--fail-on-regression", "a", "b")
    assert proc.returncode == 1 and "judged deterministic: 0.04 vs 0.06" in proc.stdout, proc.stdout + proc.stderr
