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
    mmbench("import", "--results", res, str(_samples(tmp_path / "a.csv", [10.0, 10.1, 9.9, 10.05, 9.95])), "a", check=True)
    mmbench("import", "--results", res, str(_samples(tmp_path / "b.csv", [13.0, 13.1, 12.9, 13.05, 12.95])), "b", check=True)
    mmbench("import", "--results", res, str(_samples(tmp_path / "c.csv", [8.0, 8.1, 7.9, 8.05, 7.95])), "c", check=True)
    bad = mmbench("compare", "--results", res, "--format", "json", "--fail-on-regression", "a", "b")
    assert bad.returncode == 1 and "regression" in bad.stderr
    assert json.loads(bad.stdout)["runs"] == ["a", "b"]           # JSON still on stdout
    # a 30% slowdown passes a 50% threshold, and an improvement never fails
    assert mmbench("compare", "--results", res, "--fail-on-regression", "--threshold", "50", "a", "b").returncode == 0
    assert mmbench("compare", "--results", res, "--fail-on-regression", "a", "c").returncode == 0


def test_analyze_irqsoff_cli():
    files = sorted(str(p) for p in (REPO / "tests" / "data" / "irqsoff").glob("*.txt"))
    out = mmbench("analyze", "irqsoff", *files, check=True).stdout
    assert out.startswith("Total sampled time IRQs off")
    summary = out.split("\n\n")[0]             # the sorted list, before the per-offender details
    events = [l for l in summary.splitlines() if l.startswith("Event ")]
    lat = [int(l.split()[2]) for l in events]
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
    stats = {line.split()[0] for line in out.splitlines() if "Elapsed" in line}
    assert stats == {"Amean", "Stddev"}
    bad = mmbench("compare", "--results", res, "--stats", "p9", "a", "b")
    assert bad.returncode == 2 and "--stats" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
