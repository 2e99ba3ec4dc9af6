"""Issue 22 item 0: the primary family.  A suite declares the rows it is about (`[suite] primary`);
they form one small Benjamini-Hochberg family (`*`, the only rows --fail-on-regression reads),
every other tested row is exploratory (its own family, `~`, never gating), every row says which
family it is in, and the reports open with the primary rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import mmbench, store_records
from mmbench.analysis import vmstat as vm
from mmbench.analysis.compare import build_comparison, regressions
from mmbench.config import primary as pr
from mmbench.config.load import load_suite
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
from mmbench.plugins import exporters

SEED001 = (
    '[suite]\nprimary = ["Compaction stalls", "THP fault fallback", "THP fault alloc", '
    '"Percentage huge", "mm-trace:Compaction stall (us)"]\n'
)
PCT = MetricDef("Percentage huge", "%", "higher", "percent")
NOISE = [MetricDef(f"noise {i}", "s", "lower") for i in range(90)]


def seed001_run(name: str, stalls: list[int], fallback: list[int], huge: list[float], seed: int) -> RunRecord:
    """The seed001 VM comparison of issue 22 item 0, with 90 exploratory rows of noise beside it
    (as many iterations as values given)."""
    rng = np.random.default_rng(seed)
    its = []
    for i in range(len(stalls)):
        samples = {PCT.name: [huge[i]]} | {m.name: [float(rng.normal(10, 0.5))] for m in NOISE}
        its.append(
            IterationResult(
                "thpavail",
                i,
                False,
                "ok",
                samples=samples,
                duration={"user": 1.0 + 0.01 * i, "system": 2.0 + 0.02 * i, "elapsed": 30.0 + i},
                vmstat_delta={
                    "compact_stall": stalls[i],
                    "thp_fault_fallback": fallback[i],
                    "thp_fault_alloc": 165 - fallback[i],
                    "pgfault": 100000 + 7 * i,
                    "pgmajfault": 10 + i,
                    "compact_success": stalls[i] // 3,
                },
            )
        )
    return RunRecord(
        name, "complete", 0.0, 1.0, SEED001, "", {}, {}, [WorkloadRun("thpavail", "thpavail", {}, [PCT, *NOISE], its)]
    )


# 5 iterations a side, as the seed experiments run (docs/examples.md): at 3 a side no count row
# can be starred (the exact count test's smallest p is 0.10), see test_three_iterations_say_why
ON = ([347, 387, 343, 365, 352], [112, 121, 98, 109, 115], [36.5, 35.1, 37.9, 36.0, 36.8])
OFF = ([0, 0, 0, 0, 0], [132, 158, 157, 149, 141], [14.1, 15.0, 13.2, 14.6, 13.8])


@pytest.fixture(scope="module")
def seed001():
    on = seed001_run("compaction", *ON, 1)
    off = seed001_run("nocompaction", *OFF, 2)
    return build_comparison([on, off])


def _row(c, metric, kind=None):
    return next(
        r
        for s in c.sections
        for r in s.rows
        if r.metric == metric and r.stat in ("Amean", "Hmean", "Gmean") and (kind is None or s.kind == kind)
    )


def test_compaction_switched_off_is_starred_at_five_iterations(seed001):
    # 347/387/343 vs 0/0/0: one family over ~100 tested rows printed q = 0.095, no star; at 5
    # iterations a side the exact count test gives 2/252 and the primary family stars it
    stalls = _row(seed001, "Compaction stalls", "vmstat")
    assert stalls.family == "primary" and stalls.test == "count-exact"
    assert stalls.significant["nocompaction"] and stalls.p["nocompaction"] < 0.01
    fallback = _row(seed001, "THP fault fallback", "vmstat")
    assert fallback.family == "primary" and fallback.significant["nocompaction"]
    huge = _row(seed001, "Percentage huge")
    assert huge.family == "primary" and huge.significant["nocompaction"]
    # the exploratory rows are their own family, never starred
    assert seed001.family_sizes["exploratory"] > 90 and seed001.family_sizes["primary"] <= 6
    for s in seed001.sections:
        for r in s.rows:
            if r.family == "exploratory":
                assert not any(r.significant.values())
    # a primary entry the runs did not record is said, not dropped
    missing = [pl for pl in seed001.primary if pl.row is None]
    assert [pl.entry for pl in missing] == ["mm-trace:Compaction stall (us)"]


def test_three_iterations_say_why_a_count_cannot_be_starred():
    # issue 36: at 3 vs 3 a count row that fired in every iteration of one run and never in the
    # other is what a counter firing half the time gives 3 % of the time; no count row is starred,
    # and the primary summary says why (Percentage huge, a Welch row, still is)
    on = seed001_run("compaction", *(x[:3] for x in ON), 1)
    off = seed001_run("nocompaction", *(x[:3] for x in OFF), 2)
    c = build_comparison([on, off])
    stalls = _row(c, "Compaction stalls", "vmstat")
    assert not stalls.significant["nocompaction"] and stalls.p["nocompaction"] is None
    assert "cannot reach q <= 0.05" in stalls.why["nocompaction"] and "0.1" in stalls.why["nocompaction"]
    assert _row(c, "Percentage huge").significant["nocompaction"]
    text = exporters()["text"].render(c, {})
    assert "Compaction stalls (vmstat: thpavail)" in text and "exact count test's smallest p is 0.1" in text


def test_every_row_says_its_family(seed001):
    d = json.loads(exporters()["json"].render(seed001, {}))
    fams = {(s["title"], r["metric"], r["stat"]): r["family"] for s in d["sections"] for r in s["rows"]}
    assert fams[("vmstat: thpavail", "Compaction stalls", "Amean")] == "primary"
    assert fams[("thpavail", "noise 3", "Amean")] == "exploratory"
    assert fams[("thpavail", "noise 3", "Stddev")] is None
    assert d["primary"]["entries"][0] == "Compaction stalls" and d["primary"]["family_sizes"]["primary"] >= 3


@pytest.mark.parametrize("fmt,opening", [("text", "Primary rows"), ("markdown", "### Primary rows")])
def test_reports_open_with_the_primary_family(seed001, fmt, opening):
    out = exporters()[fmt].render(seed001, {"pvalues": True})
    first_table = out.index("\nthpavail\n" if fmt == "text" else "### thpavail")
    head = out.index(opening)
    assert head < first_table
    summary = out[head:first_table]
    assert "Compaction stalls" in summary and "* better" in summary  # 360 -> 0 stalls: better
    assert "no such row" in summary  # mm-trace not recorded
    assert summary.count("\n") < 20  # one line per primary row


def test_html_opens_with_the_primary_family(seed001):
    from mmbench.report.html import render_report

    page = render_report([], seed001)
    assert page.index('id="primary"') < page.index('id="comparison"')
    assert "Compaction stalls" in page[page.index('id="primary"') : page.index('id="runs"')]


def test_fail_on_regression_reads_primary_rows_only(seed001):
    # the reverse comparison: compaction switched back on is a regression of a primary row
    # (stalls up from 0); the exploratory noise rows never gate
    on = seed001_run("compaction", *ON, 1)
    off = seed001_run("nocompaction", *OFF, 2)
    regs = regressions(build_comparison([off, on]), 5.0)
    assert {r.metric for r in regs} == {"Compaction stalls"}
    # a big exploratory change alone gates nothing
    a = seed001_run("a", [5, 6, 5, 6, 5], [100, 101, 99, 100, 102], [30.0, 30.5, 29.5, 30.2, 29.8], 3)
    b = seed001_run("b", [5, 6, 5, 6, 5], [100, 101, 99, 100, 102], [30.0, 30.5, 29.5, 30.2, 29.8], 4)
    for it in b.workloads[0].iterations:
        it.samples["noise 1"] = [it.samples["noise 1"][0] + 50]
    c = build_comparison([a, b])
    assert _row(c, "noise 1").lead["b"] and regressions(c, 5.0) == []


def test_fail_on_regression_cli_exit(tmp_path):
    store_records(tmp_path / "res", seed001_run("off", *OFF, 2), seed001_run("on", *ON, 1))
    proc = mmbench("compare", "--results", str(tmp_path / "res"), "--fail-on-regression", "off", "on")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.index("Primary rows") < proc.stdout.index("\nthpavail\n")


def test_primary_checked_when_loading(suite_file, results):
    base = (
        '[suite]\niterations = 2\nbudget = "256M"\n{}\n'
        '[[workload]]\nname = "faultin"\n[workload.params]\nsize = "0.25x"\n'
    )
    good = load_suite(suite_file(base.format('primary = ["Minor Faults", "duration:System"]')))
    assert good.primary == ["Minor Faults", "duration:System"]
    assert good.effective["suite"]["primary"] == good.primary  # stored with the run
    # no primary: the default from headline and aims, resolved now and stored
    dflt = load_suite(suite_file(base.format('aims = ["thp", "compaction"]')))
    assert dflt.primary[1:] == ["vmstat:THP fault alloc", "vmstat:THP fault fallback"]
    assert dflt.mechanisms == ["vmstat:Compaction stalls", "vmstat:Compaction failures"]
    assert dflt.effective["suite"]["primary"] == dflt.primary
    assert dflt.effective["suite"]["mechanisms"] == dflt.mechanisms
    # a row of a known monitor the suite does not run (--set monitors.mm-trace=false): a note
    off = load_suite(suite_file(base.format('primary = ["kthreads:kswapd0 CPU (s)"]')))
    assert any("runs no kthreads monitor" in n for n in off.notes)
    for bad, needle in [
        ('primary = ["Compaction stals"]', "did you mean 'Compaction stalls'"),
        ('primary = ["kthreads:kswapd0 CPU"]', "not a row of this suite"),
        ('primary = ["Compaction stalls@P99"]', "only its mean row"),
        ('primary = ["a", "b", "c", "d", "e", "f", "g"]', "at most 6"),
    ]:
        proc = mmbench("run", "--check", "--config", str(suite_file(base.format(bad))), "--results", str(results), "x")
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "suite.primary" in proc.stderr and needle in proc.stderr, proc.stderr


def test_entry_grammar():
    sections = {"vmstat", "duration", "mm-trace", "thpfault"}
    e = pr.parse_entry("mm-trace:Compaction stall (us)@P99", sections)
    assert (e.section, e.name, e.stat) == ("mm-trace", "compaction stall (us)", "p99")
    e = pr.parse_entry("duration:thpfault:System", sections)  # two prefixes: both must match
    assert e.sections == ("duration", "thpfault") and e.name == "system"
    assert e.matches({"duration", "thpfault"}, "System", "Amean", ("Amean",))
    assert not e.matches({"duration", "other"}, "System", "Amean", ("Amean",))
    e = pr.parse_entry("host:6.1 metric", sections)  # not a section: part of the name
    assert e.section is None and e.name == "host:6.1 metric"
    assert pr.parse_entry("a@b", sections).name == "a@b"


def test_vmstat_row_names_match_the_analysis():
    assert pr.VMSTAT_ROWS == tuple(r.name for r in vm.ROWS)


def test_shipped_suites_declare_checked_primary_rows():
    from mmbench.config.load import shipped_suites

    for name in ("seed000-largecopy", "seed001-thpavail", "seed002-simoop", "seed003-compaction", "seed004-pagealloc"):
        text = shipped_suites()[name].read_text()
        assert "\nprimary = [" in text, name


def test_fail_on_regression_ignores_the_stats_filter(tmp_path):
    # --stats only trims the printed rows: the gate still reads every primary row
    store_records(tmp_path / "res", seed001_run("off", *OFF, 2), seed001_run("on", *ON, 1))
    proc = mmbench(
        "compare", "--results", str(tmp_path / "res"), "--stats", "stddev", "--fail-on-regression", "off", "on"
    )
    assert proc.returncode == 1, proc.stderr


def test_an_mde_past_1000_percent_says_too_few_iterations():
    # 2 vs 3 iterations: a t quantile with 1-2 degrees of freedom printed "mde 6251157323452497526784.0%"
    from mmbench.analysis.compare.power import mde_text

    assert mde_text(42.04) == "+42.0%" and mde_text(-80.6) == "-80.6%"
    assert mde_text(6.25e21) == ">1000% (too few iterations)"
