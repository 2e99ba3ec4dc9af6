"""CLI paths not covered elsewhere: monitor-only mode, regression gating, irqsoff analysis, lists."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, mmbench, mmbench_cgroups, needs_root
from mmbench.store.fs import FileStore


@needs_root
def test_monitor_only_mode(tmp_path):
    res = str(tmp_path / "res")
    out = mmbench("monitor", "--duration", "2s", "--results", res, "--set", "monitors.slabinfo=false", "idle-box")
    assert out.returncode == 0, out.stderr
    run = FileStore(res).load_run("idle-box")
    it = run.workloads[0].iterations[0]
    assert it.status == "ok" and 1.5 < it.duration["elapsed"] < 10
    assert {"proc-vmstat", "meminfo", "psi", "kthreads"} <= set(it.monitors)
    assert "slabinfo" not in it.monitors
    text = mmbench("compare", "--results", res, "idle-box", check=True).stdout
    assert "monitor proc-vmstat" in text and "Free memory (MiB)" in text
    assert mmbench_cgroups() == []


def _samples(path: Path, values: list[float]) -> Path:
    rows = ["workload,metric,unit,better,iteration,value"]
    rows += [f"tool,Elapsed,s,lower,{i},{v}" for i, v in enumerate(values)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_fail_on_regression(tmp_path):
    res = str(tmp_path / "res")
    mmbench(
        "import", "--results", res, str(_samples(tmp_path / "a.csv", [10.0, 10.1, 9.9, 10.05, 9.95])), "a", check=True
    )
    mmbench(
        "import", "--results", res, str(_samples(tmp_path / "b.csv", [13.0, 13.1, 12.9, 13.05, 12.95])), "b", check=True
    )
    mmbench("import", "--results", res, str(_samples(tmp_path / "c.csv", [8.0, 8.1, 7.9, 8.05, 7.95])), "c", check=True)
    bad = mmbench("compare", "--results", res, "--format", "json", "--fail-on-regression", "a", "b")
    assert bad.returncode == 1 and "regression" in bad.stderr
    assert json.loads(bad.stdout)["runs"] == ["a", "b"]  # JSON still on stdout
    # a 30% slowdown passes a 50% threshold, and an improvement never fails
    assert mmbench("compare", "--results", res, "--fail-on-regression", "--threshold", "50", "a", "b").returncode == 0
    assert mmbench("compare", "--results", res, "--fail-on-regression", "a", "c").returncode == 0


def test_analyze_irqsoff_cli():
    files = sorted(str(p) for p in (REPO / "tests" / "data" / "irqsoff").glob("*.txt"))
    out = mmbench("analyze", "irqsoff", *files, check=True).stdout
    assert out.startswith("Total sampled time IRQs off")
    summary = out.split("\n\n")[0]  # the sorted list, before the per-offender details
    events = [l for l in summary.splitlines() if l.startswith("Event ")]
    lat = [int(l.rsplit(" us count ", 1)[0].rsplit(" ", 1)[1]) for l in events]  # Event CALLER (a..b) N us count K
    assert events and lat == sorted(lat, reverse=True)
    missing = mmbench("analyze", "irqsoff", "/nonexistent")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_lists():
    assert "faultin" in mmbench("list", "workloads", check=True).stdout
    assert "proc-vmstat" in mmbench("list", "monitors", check=True).stdout
    suites = mmbench("list", "suites", check=True).stdout
    for name in ("smoke", "thpavail", "usemem-swap", "largecopy", "simoop", "compaction-irqsoff"):
        assert name in suites
    assert "failed to load" not in mmbench("list", "workloads", check=True).stdout


def test_compare_stats_filter(tmp_path):
    res = str(tmp_path / "res")
    mmbench("import", "--results", res, str(_samples(tmp_path / "a.csv", [10.0, 10.1, 9.9])), "a", check=True)
    mmbench("import", "--results", res, str(_samples(tmp_path / "b.csv", [13.0, 13.1, 12.9])), "b", check=True)
    out = mmbench("compare", "--results", res, "--stats", "mean,stddev", "a", "b", check=True).stdout
    # table lines: the family letter (P, e or blank) in the first two columns, then the statistic
    stats = {line[2:].split()[0] for line in out.splitlines() if "Elapsed [s]" in line}
    assert stats == {"Amean", "Stddev"}
    bad = mmbench("compare", "--results", res, "--stats", "p9", "a", "b")
    assert bad.returncode == 2 and "--stats" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def _run_with_system_time(res: str, name: str, system: list[float]) -> None:
    """A stored run whose workload metric is flat and whose System time is ``system``."""
    from mmbench.model.results import IterationResult, MetricDef, WorkloadRun

    store = FileStore(res)
    # System time is the suite's primary row: the only kind --fail-on-regression reads
    w = store.create_run(
        name,
        force=False,
        suite_text='[suite]\nprimary = ["duration:System"]\n',
        suite_hash="x",
        suite_effective={},
        fingerprint={},
        settings={},
    )
    w.add_workload(WorkloadRun("tool", "import", {}, [MetricDef("Elapsed", "s", "lower", "time")], []))
    for i, s in enumerate(system):
        w.add_iteration(
            IterationResult(
                "tool",
                i,
                False,
                "ok",
                samples={"Elapsed": [10.0]},
                duration={"user": 1.0, "system": s, "elapsed": 10.0},
            )
        )
    w.finish("complete")


def test_fail_on_regression_sees_system_time(tmp_path):
    # issue 13 item 5: the workload metric is unchanged, only System time regresses (+20 %)
    res = str(tmp_path / "res")
    _run_with_system_time(res, "a", [5.0, 5.05, 4.95, 5.02, 4.98])
    _run_with_system_time(res, "b", [6.0, 6.05, 5.95, 6.02, 5.98])
    bad = mmbench("compare", "--results", res, "--format", "json", "--fail-on-regression", "a", "b")
    assert bad.returncode == 1 and "1 significant regression" in bad.stderr, bad.stderr
    rows = [
        r
        for s in json.loads(bad.stdout)["sections"]
        if s["title"].startswith("duration")
        for r in s["rows"]
        if r["metric"] == "System" and r["stat"] == "Amean"
    ]
    assert rows[0]["significant"]["b"] and rows[0]["pct"]["b"] < -15
    assert mmbench("compare", "--results", res, "--fail-on-regression", "b", "a").returncode == 0
