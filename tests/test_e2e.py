"""End to end, as a user would: two smoke runs that differ by one knob, then every compare format."""

from __future__ import annotations

import csv
import io
import json

import pytest

from conftest import THP, mmbench, mmbench_cgroups, needs_root
from mmbench.model.kernel import read_knob

pytestmark = needs_root


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    results = tmp_path_factory.mktemp("e2e") / "results"
    before = read_knob(THP / "enabled")
    small = ["--set", "budget=256M", "--set", "faultin.size=64M", "--iterations", "3"]
    for name, thp in (("thp", "always"), ("nothp", "never")):
        out = mmbench(
            "run",
            "--config",
            "configs/smoke.toml",
            "--results",
            str(results),
            "--set",
            f"thp.enabled={thp}",
            *small,
            name,
            cwd=str(THP_REPO),
        )
        assert out.returncode == 0, out.stderr
        assert read_knob(THP / "enabled") == before
    assert mmbench_cgroups() == []
    return results


from conftest import REPO as THP_REPO  # noqa: E402


def test_compare_text(two_runs):
    out = mmbench("compare", "--results", str(two_runs), "thp", "nothp", check=True).stdout
    assert "thp.enabled" in out.split("faultin")[0]  # differing environment first
    lines = [l for l in out.splitlines() if "THP Active" in l and l[2:].split()[:1] in (["Amean"], ["Mean"])]
    assert lines, out
    assert "%)" in lines[0]
    assert "duration" in out and "vmstat" in out and "THP fault alloc" in out


def test_compare_json_shape(two_runs):
    data = json.loads(
        mmbench("compare", "--results", str(two_runs), "--format", "json", "thp", "nothp", check=True).stdout
    )
    assert data["baseline"] == "thp" and data["runs"] == ["thp", "nothp"]
    rows = {(s["title"], r["metric"], r["stat"]): r for s in data["sections"] for r in s["rows"]}
    active = next(r for (t, m, s), r in rows.items() if m == "THP Active" and s in ("Amean", "Mean"))
    assert active["better"] == "higher" and active["unit"]
    assert active["values"]["thp"] > 0 and active["values"]["nothp"] == 0
    assert active["pct"]["thp"] == 0
    # N vs 0 in every iteration (zero variance on both sides), a count: judged deterministic
    # when Poisson noise at N would rarely be that constant (issue 33 item 4), else the exact count
    # test, which at 3 vs 3 cannot reach q <= 0.05 (issue 36); never p = 0 by rule (issue 22 item
    # 2); an exploratory row, so at most a lead ("~"), not a star
    assert active["family"] == "exploratory" and not active["significant"]["nothp"]
    if active["judged"]["nothp"] == "deterministic":
        assert active["lead"]["nothp"] is True and active["p"]["nothp"] is None
    else:
        assert active["test"] == "count-exact" and "cannot reach q <= 0.05" in active["why"]["nothp"]
    for r in rows.values():
        assert set(r) >= {"metric", "stat", "unit", "better", "values", "pct", "significant", "p", "ci"}
        assert set(r["values"]) == {"thp", "nothp"}
    titles = [s["title"] for s in data["sections"]]
    assert any("duration" in t for t in titles) and any("vmstat" in t for t in titles)


def test_compare_markdown_and_csv(two_runs):
    md = mmbench("compare", "--results", str(two_runs), "--format", "markdown", "thp", "nothp", check=True).stdout
    assert "| " in md and "THP Active" in md
    text = mmbench("compare", "--results", str(two_runs), "--format", "csv", "thp", "nothp", check=True).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and any(r.get("metric") == "Fault throughput" for r in rows)


def test_single_run_summary_and_show(two_runs):
    out = mmbench("compare", "--results", str(two_runs), "thp", check=True).stdout
    assert "Fault throughput" in out
    show = mmbench("show", "--results", str(two_runs), "nothp", check=True).stdout
    assert "thp.enabled=never" in show and "status:   complete" in show
    names = [
        line.split()[0]
        for line in mmbench("list", "--results", str(two_runs), check=True).stdout.splitlines()
        if line.strip()
    ]
    assert "thp" in names and "nothp" in names  # whole names: "thp" is also a substring of "nothp"
