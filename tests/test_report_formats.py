"""Exporters: registry, the text layout of the seeds, markdown, csv and the exact JSON shape."""

import csv
import io
import json
import math

import numpy as np
import pytest

from mmbench.analysis.compare import build_comparison
from mmbench.plugins import exporters
from mmbench.report.base import Exporter
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

TPUT = MetricDef("Fault throughput", "faults/s", "higher", "rate")
LAT = MetricDef("Fault latency", "us", "lower", "latency")


def run(name, scale, seed, fp=None):
    rng = np.random.default_rng(seed)
    its = [
        IterationResult(
            "faultin",
            i,
            False,
            "ok",
            samples={TPUT.name: [1000 * scale + rng.normal(0, 5)], LAT.name: list(rng.exponential(10 / scale, 50))},
            duration={"user": 1.0, "system": 2.0, "elapsed": 3.0},
            vmstat_delta={"pgfault": 100, "pgmajfault": 0, "compact_stall": 0, "compact_success": 0},
        )
        for i in range(5)
    ]
    return RunRecord(
        name,
        "complete",
        0,
        1,
        "",
        "",
        fp or {"kernel": name},
        {},
        [WorkloadRun("faultin", "pft", {}, [TPUT, LAT], its)],
    )


@pytest.fixture(scope="module")
def comparison():
    return build_comparison([run("vanilla", 1.0, 1), run("patched", 1.2, 2)], ratio=True)


OPTS = {"pvalues": False, "ratio": False, "color": False}


def test_registry():
    ex = exporters()
    assert set(ex) >= {"text", "markdown", "csv", "json"}
    assert all(isinstance(e, Exporter) and e.name == k for k, e in ex.items())


def test_text_layout(comparison):
    out = exporters()["text"].render(comparison, OPTS)
    lines = out.splitlines()
    assert lines[0] == "Environment differences"
    assert "kernel" in lines[1] and "vanilla=vanilla" in lines[1]
    hm = next(l for l in lines if l.startswith("P Hmean") and "Fault throughput" in l)
    # family letter, value (  pct%) per run, '*' after the significant primary cell
    assert "(   0.00%)" in hm and "*" in hm and "q=" not in hm
    # issue 22 item 0: the primary summary comes before every table
    head = next(i for i, l in enumerate(lines) if l.startswith("Primary rows"))
    assert head < lines.index("faultin (pft)")
    assert "Fault throughput" in lines[head + 1] and "* better" in lines[head + 1] and "CI [" in lines[head + 1]
    import re

    pcts = [float(x) for x in re.findall(r"\(\s*(-?[0-9.]+)%\)", hm)]
    assert pcts[0] == 0.0 and 15 < pcts[1] < 25
    assert "Notes" not in out or out.index("Notes") > out.index("Hmean")
    assert "\x1b[" not in out


def test_text_pvalues_and_alignment(comparison):
    out = exporters()["text"].render(comparison, {**OPTS, "pvalues": True})
    lines = out.splitlines()
    hm = next(l for l in lines if l.startswith("P Hmean") and "Fault throughput" in l)
    assert "q=" in hm
    # every data line of the workload table has the first run's '(' at the same column
    block = lines[lines.index("faultin (pft)") + 2 :]
    block = block[: next(i for i, l in enumerate(block) if not l.strip())]
    assert len({l.index("(") for l in block}) == 1


def test_text_colour_only_when_asked(comparison, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in exporters()["text"].render(comparison, {**OPTS, "color": True})
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in exporters()["text"].render(comparison, {**OPTS, "color": True})


def test_text_single_run_no_pct():
    out = exporters()["text"].render(build_comparison([run("solo", 1.0, 3)]), OPTS)
    assert "%)" not in out and "solo" in out


def test_markdown(comparison):
    out = exporters()["markdown"].render(comparison, {**OPTS, "pvalues": True})
    assert "### faultin (pft)" in out
    assert "| family | stat | metric | unit | vanilla | patched |" in out
    assert out.index("### Primary rows") < out.index("### faultin (pft)")
    assert "**" in out and "CI [" in out


def test_csv(comparison):
    out = exporters()["csv"].render(comparison, OPTS)
    rows = list(csv.DictReader(io.StringIO(out)))
    hm = [r for r in rows if r["stat"] == "Hmean" and r["run"] == "patched"][0]
    assert hm["significant"] == "1" and float(hm["pct"]) > 15 and hm["ci_lo"]
    assert {r["run"] for r in rows} == {"vanilla", "patched"}


def _check_shape(d):
    assert set(d) == {
        "schema",
        "baseline",
        "runs",
        "env_diff",
        "sections",
        "notes",
        "primary",
        "mechanisms",
        "families",
        "verdicts",
    }
    assert set(d["primary"]) == {"entries", "source", "chosen_at_compare", "family_sizes", "rows"}
    assert set(d["mechanisms"]) == {"entries", "source", "chosen_at_compare", "rows"}
    # issue 36: each family's error rate is named in the JSON itself
    assert set(d["families"]) == {"primary", "mechanism", "exploratory"}
    for fam, info in d["families"].items():
        assert info["false_discovery_rate"] == 0.05 and info["method"] == "Benjamini-Hochberg"
        assert info["gates"] is (fam == "primary") and "5%" in info["error_rate"]
    assert set(d["verdicts"]) == set(d["runs"][1:])
    assert d["schema"] == "mmbench-compare/1"
    assert d["baseline"] == d["runs"][0]
    assert isinstance(d["notes"], list) and all(isinstance(n, str) for n in d["notes"])
    for k, vals in d["env_diff"]:
        assert isinstance(k, str) and set(vals) == set(d["runs"])
    for s in d["sections"]:
        assert set(s) == {"title", "rows"} and isinstance(s["title"], str)
        for r in s["rows"]:
            assert set(r) == {
                "metric",
                "stat",
                "unit",
                "better",
                "values",
                "pct",
                "significant",
                "p",
                "ci",
                "mde_pct",
                "mde_why",
                "family",
                "test",
                "p_raw",
                "lead",
                "why",
                "judged",
                "resolution",
            }
            assert r["family"] in ("primary", "mechanism", "exploratory", None)
            assert r["better"] in ("higher", "lower") if r["family"] != "mechanism" else r["better"] is None
            for n in d["runs"]:  # issue 36: an MDE is a number within 1000 %, or null with a reason
                mde = r["mde_pct"][n]
                assert mde is None or abs(mde) <= 1000
                assert r["judged"][n] in ("test", "deterministic", None)
            for key in ("values", "pct", "significant", "p", "ci"):
                assert set(r[key]) == set(d["runs"])
            for n in d["runs"]:
                for key in ("values", "pct", "p"):
                    v = r[key][n]
                    assert v is None or (isinstance(v, (int, float)) and math.isfinite(v))
                assert isinstance(r["significant"][n], bool)
                ci = r["ci"][n]
                assert ci is None or (isinstance(ci, list) and len(ci) == 2 and ci[0] <= ci[1])


def test_json_shape(comparison):
    text = exporters()["json"].render(comparison, OPTS)
    d = json.loads(text)  # valid JSON: NaN/Infinity would be rejected by allow_nan=False
    _check_shape(d)
    assert d["runs"] == ["vanilla", "patched"]
    assert d["env_diff"] == [["kernel", {"vanilla": "vanilla", "patched": "patched"}]]
    titles = [s["title"] for s in d["sections"]]
    assert titles[0] == "faultin (pft)" and "duration: faultin" in titles and "vmstat: faultin" in titles
    assert "ratio: faultin" in titles
    hm = next(r for r in d["sections"][0]["rows"] if r["stat"] == "Hmean")
    assert hm["significant"]["patched"] is True and hm["pct"]["vanilla"] == 0.0
    # undefined ratio rows are absent; NaN became null
    vm = next(s for s in d["sections"] if s["title"].startswith("vmstat"))
    assert "Compaction efficiency" not in [r["metric"] for r in vm["rows"]]


def test_json_single_run_nulls():
    d = json.loads(exporters()["json"].render(build_comparison([run("solo", 1.0, 3)]), OPTS))
    _check_shape(d)
    assert all(r["pct"]["solo"] is None for s in d["sections"] for r in s["rows"])
