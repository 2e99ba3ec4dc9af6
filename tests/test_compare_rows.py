"""Issue 13 items 5 and 6: vmstat rows tested in their own direction (so --fail-on-regression
and --ratio see them), and the two spreads of metrics with several samples per iteration."""

import math

from mmbench.analysis import vmstat as vm
from mmbench.analysis.compare import build_comparison, regressions
from mmbench.plugins import exporters
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

TIME = MetricDef("Time", "s", "lower", "time")
LAT = MetricDef("Launch", "ms", "lower", "latency")


PRIMARY = '[suite]\nprimary = ["Major Faults", "THP fault alloc"]\n'


def run(name, vmstats, samples=None, metrics=(TIME,)):
    its = [
        IterationResult(
            "w",
            i,
            False,
            "ok",
            samples=(samples[i] if samples else {"Time": [1.0 + 0.01 * i]}),
            duration={"elapsed": 10.0},
            vmstat_delta=d,
        )
        for i, d in enumerate(vmstats)
    ]
    return RunRecord(
        name, "complete", 0.0, 1.0, PRIMARY, "", {}, {}, [WorkloadRun("w", "bench", {}, list(metrics), its)]
    )


def deltas(scale, *, fallback=0):
    # major faults and THP allocations vary a little per iteration; swap stays 0 everywhere
    return [
        {
            "pgfault": 100000,
            "pgmajfault": int(scale * (1000 + 10 * i)),
            "pswpin": 0,
            "thp_fault_alloc": int(500 / scale) + i,
            "thp_fault_fallback": fallback,
        }
        for i in range(5)
    ]


def test_vmstat_rows_tested_in_their_own_direction():
    assert next(r for r in vm.ROWS if r.name == "Major Faults").better == "lower"
    assert next(r for r in vm.ROWS if r.name == "THP fault alloc").better == "higher"
    c = build_comparison([run("a", deltas(1)), run("b", deltas(2))], ratio=True)
    rows = {(r.metric, r.stat): r for s in c.sections if s.kind == "vmstat" for r in s.rows}
    major, thp = rows[("Major Faults", "Amean")], rows[("THP fault alloc", "Amean")]
    assert major.significant["b"] and major.pct["b"] < -90  # twice the faults: worse
    assert thp.significant["b"] and thp.pct["b"] < -40  # half the THPs: worse
    assert major.ci["b"] is not None and major.mde["b"] is not None
    assert major.test == "count-exact" and thp.test == "count-exact"  # counters: the exact count test
    swap = rows[("Swap Ins", "Amean")]  # 0 vs 0 everywhere: not tested
    assert swap.p["b"] is None and not swap.significant["b"] and swap.why["b"].startswith("no change")
    found = {(r.section, r.metric) for r in regressions(c, 10.0)}
    assert ("vmstat: w", "Major Faults") in found and ("vmstat: w", "THP fault alloc") in found
    ratio = {(r.metric, r.stat): r for s in c.sections if s.kind == "ratio" for r in s.rows}
    assert math.isclose(ratio[("Major Faults (vmstat)", "Ratio Amean")].values["b"], 0.5, rel_tol=0.01)
    # the better direction of each row decides: fewer major faults is an improvement, not flagged
    better = build_comparison([run("a", deltas(2)), run("b", deltas(1))])
    assert not any(r.metric == "Major Faults" for r in regressions(better, 10.0))


def test_vmstat_row_undefined_in_an_iteration_is_not_tested():
    a = [{"pgscan_kswapd": 100, "pgsteal_kswapd": 90 + i} for i in range(4)]
    b = [{"pgscan_kswapd": 100 if i else 0, "pgsteal_kswapd": 50 if i else 0} for i in range(4)]
    c = build_comparison([run("a", a), run("b", b)])
    eff = next(r for s in c.sections if s.kind == "vmstat" for r in s.rows if r.metric == "Kswapd efficiency %")
    assert eff.p["b"] is None and "undefined in some iterations of b" in eff.note


def test_two_spreads_for_several_samples_per_iteration():
    # three iterations of four launches: the iteration means are 10, 11, 12; the samples spread wider
    launches = [[8.0, 12.0, 9.0, 11.0], [9.0, 13.0, 10.0, 12.0], [10.0, 14.0, 11.0, 13.0]]
    a = run("a", [{}] * 3, samples=[{"Launch": s, "Time": [1.0]} for s in launches], metrics=(LAT, TIME))
    b = run(
        "b", [{}] * 3, samples=[{"Launch": [v + 1 for v in s], "Time": [1.0]} for s in launches], metrics=(LAT, TIME)
    )
    c = build_comparison([a, b])
    rows = {(r.metric, r.stat): r for s in c.sections if s.kind == "workload" for r in s.rows}
    pooled = [v for s in launches for v in s]
    m = sum(pooled) / len(pooled)
    sd_samples = math.sqrt(sum((v - m) ** 2 for v in pooled) / (len(pooled) - 1))
    assert math.isclose(rows[("Launch", "Stddev")].values["a"], 1.0)  # of 10, 11, 12
    assert math.isclose(rows[("Launch", "Stddev.samples")].values["a"], sd_samples)  # of all twelve
    assert math.isclose(rows[("Launch", "CoeffVar.samples")].values["a"], 100 * sd_samples / m)
    assert rows[("Launch", "Stddev.samples")].p["b"] is None  # descriptive
    assert ("Time", "Stddev.samples") not in rows  # one sample each
    stats = [r.stat for s in c.sections if s.kind == "workload" for r in s.rows if r.metric == "Launch"]
    assert stats[stats.index("CoeffVar") + 1 : stats.index("CoeffVar") + 3] == ["Stddev.samples", "CoeffVar.samples"]
    assert any(n.startswith("Stddev.samples and CoeffVar.samples: the spread of all samples") for n in c.notes)
    text = exporters()["text"].render(c, {})
    assert "Stddev.samples" in text and "CoeffVar.samples" in text
