"""Issue 33 item 3 and issue 37 item 3: outcomes and mechanisms, and the families chosen at
compare time.

A suite's ``[suite] primary`` rows are its outcomes (a better direction; the only rows
--fail-on-regression reads); ``[suite] mechanisms`` are how the kernel got there: their own small
family, reported as moved up or down, never better or worse, never gating.  The verdict puts the
two together in one line.  ``compare --primary``/``--mechanisms`` (and ``report``) replace the
stored families with the same syntax and checks; an entry that names more than one row names them
and asks for a section."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import mmbench, store_records
from mmbench.analysis.compare import build_comparison, regressions
from mmbench.config.load import load_suite
from mmbench.errors import UsageError
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
from mmbench.plugins import exporters

PCT = MetricDef("Percentage huge", "%", "higher", "percent")
SUITE = '[suite]\nprimary = ["THP fault alloc", "Percentage huge"]\nmechanisms = ["Compaction stalls"]\n'


# THP fault alloc and Percentage huge fall ~31 % with a spread that 5 rounds cannot resolve
ALLOC = {True: [108, 40, 150, 95, 170], False: [75, 120, 30, 60, 90]}
HUGE = {True: [60.0, 25.0, 85.0, 55.0, 75.0], False: [41.0, 70.0, 20.0, 30.0, 44.0]}


def thpavail(name: str, compaction: bool, seed: int, n: int = 5, suite: str = SUITE) -> RunRecord:
    """The held-out A/B of issue 33: THP direct compaction switched off.  Compaction stalls ~413 -> 0
    in every iteration; THP fault alloc and Percentage huge fall ~31 %, unresolved at 5 rounds."""
    rng = np.random.default_rng(seed)
    its = []
    for i in range(n):
        alloc = ALLOC[compaction][i % 5]
        its.append(
            IterationResult(
                "thpavail",
                i,
                False,
                "ok",
                samples={PCT.name: [HUGE[compaction][i % 5]]},
                duration={"user": 1.0, "system": float(rng.normal(2, 0.05)), "elapsed": float(rng.normal(30, 1))},
                vmstat_delta={
                    "compact_stall": int(rng.normal(413, 30)) if compaction else 0,
                    "thp_fault_alloc": alloc,
                    "thp_fault_fallback": int(rng.normal(70, 10)),
                    "pgfault": int(rng.normal(1e5, 900)),
                },
            )
        )
    return RunRecord(
        name, "complete", 0.0, 1.0, suite, "", {}, {}, [WorkloadRun("thpavail", "thpavail", {}, [PCT], its)]
    )


@pytest.fixture(scope="module")
def held_out():
    return build_comparison([thpavail("vanilla", True, 1), thpavail("nocompact", False, 2)], pvalues=True)


def _row(c, metric):
    return next(r for s in c.sections for r in s.rows if r.metric == metric and r.stat in ("Amean", "Hmean"))


def test_a_mechanism_moves_up_or_down_never_better(held_out):
    stalls = _row(held_out, "Compaction stalls")
    assert stalls.family == "mechanism" and stalls.significant["nocompact"]
    assert stalls.pct["nocompact"] == pytest.approx(-100.0)  # the raw change: down, not "better"
    text = exporters()["text"].render(held_out, {"pvalues": True})
    mech = text[text.index("Mechanism rows") :]
    mech = mech[: mech.index("\n\n")]
    lines = mech.split("\n", 1)[1]
    assert "* moved down" in lines and "better" not in lines and "worse" not in lines
    assert "\nM Amean      Compaction stalls" in text
    assert held_out.family_sizes["mechanism"] == 1
    # never gates, whichever way it moves; the outcomes do
    back = build_comparison([thpavail("nocompact", False, 2), thpavail("vanilla", True, 1)])
    assert "Compaction stalls" not in {r.metric for r in regressions(back, 0.0)}


def test_the_verdict_puts_mechanisms_and_outcomes_together(held_out):
    v = held_out.verdicts["nocompact"]
    assert v.startswith("mechanism Compaction stalls moved down (")
    assert "outcome THP fault alloc not resolved at n=5 (MDE -" in v
    assert "outcome Percentage huge not resolved at n=5 (MDE -" in v
    assert v.count("\n") == 0
    text = exporters()["text"].render(held_out, {})
    assert (
        text.index("Verdict, nocompact against vanilla: mechanism Compaction stalls moved down")
        < text.index("Primary rows")
        < text.index("Mechanism rows")
    )
    md = exporters()["markdown"].render(held_out, {})
    assert "### Verdict" in md and "### Mechanism rows" in md and "| mechanism row |" in md
    d = json.loads(exporters()["json"].render(held_out, {}))
    assert d["verdicts"] == {"nocompact": v}
    assert (
        d["mechanisms"]["entries"] == ["Compaction stalls"]
        and d["mechanisms"]["rows"][0]["metric"] == "Compaction stalls"
    )
    jr = next(r for s in d["sections"] for r in s["rows"] if r["metric"] == "Compaction stalls")
    assert jr["family"] == "mechanism" and jr["better"] is None
    assert d["families"]["mechanism"]["gates"] is False and d["families"]["primary"]["gates"] is True
    from mmbench.report.html import render_report

    page = render_report([], held_out)
    assert 'id="verdict"' in page and 'id="mechanisms"' in page
    assert page.index('id="verdict"') < page.index('id="primary"') < page.index('id="mechanisms"')


def test_suite_declarations_checked(suite_file):
    base = (
        '[suite]\niterations = 2\nbudget = "256M"\n{}\n[[workload]]\nname = "faultin"\n'
        '[workload.params]\nsize = "0.25x"\n'
    )
    s = load_suite(suite_file(base.format('primary = ["THP fault alloc"]\nmechanisms = ["Compaction stalls"]')))
    assert s.primary == ["THP fault alloc"] and s.mechanisms == ["Compaction stalls"]
    assert s.effective["suite"]["mechanisms"] == ["Compaction stalls"]  # stored with the run
    # declaring primary rows only: no default mechanisms (the suite chose what to judge)
    s = load_suite(suite_file(base.format('aims = ["compaction"]\nprimary = ["THP fault alloc"]')))
    assert s.mechanisms == []
    for bad, needle in [
        ('primary = ["Compaction stalls"]\nmechanisms = ["vmstat:Compaction stalls"]', "not both"),
        ('mechanisms = ["a", "b", "c", "d", "e", "f", "g"]', "suite.mechanisms: 7 rows; at most 6"),
        ('mechanisms = ["Compaction stals"]', "did you mean 'Compaction stalls'"),
    ]:
        with pytest.raises(UsageError, match=needle):
            load_suite(suite_file(base.format(bad)))


def test_an_entry_naming_several_rows_asks_for_a_section(suite_file):
    two = (
        '[suite]\niterations = 2\nbudget = "256M"\nprimary = [{}]\n'
        '[[workload]]\nname = "faultin"\nlabel = "one"\n[workload.params]\nsize = "0.25x"\n'
        '[[workload]]\nname = "faultin"\nlabel = "two"\n[workload.params]\nsize = "0.25x"\n'
    )
    with pytest.raises(UsageError) as e:
        load_suite(suite_file(two.format('"Compaction stalls"')))
    msg = str(e.value)
    assert "matches 2 rows" in msg and "vmstat: one" in msg and "vmstat: two" in msg
    assert "e.g. 'vmstat:one:Compaction stalls'" in msg
    # a monitor's row: the hint names the monitor (an accepted section) and keeps the entry's spelling,
    # and the hinted entry loads
    kthreads = two + "[monitors.kthreads]\n"
    with pytest.raises(UsageError) as e:
        load_suite(suite_file(kthreads.format('"kthreads:kswapd0 CPU (s)"')))
    assert "e.g. 'kthreads:one:kswapd0 CPU (s)'" in str(e.value), str(e.value)
    assert load_suite(suite_file(kthreads.format('"kthreads:one:kswapd0 CPU (s)"'))).primary == [
        "kthreads:one:kswapd0 CPU (s)"
    ]
    s = load_suite(suite_file(two.format('"one:Compaction stalls", "duration:two:System"')))
    assert s.primary == ["one:Compaction stalls", "duration:two:System"]
    # the cap counts rows: the default of a two-workload suite names one row per entry
    s = load_suite(suite_file(two.format("").replace("primary = []\n", 'aims = ["thp"]\n')))
    assert all(e.split(":")[0] in ("one", "two") for e in s.primary) and len(s.primary) <= 6


def test_compare_primary_chooses_the_family_now(tmp_path):
    old = '[suite]\nprimary = ["Percentage huge"]\n'  # a run stored before its suite named these
    res = store_records(tmp_path / "res", thpavail("on", True, 1, suite=old), thpavail("off", False, 2, suite=old))
    proc = mmbench(
        "compare",
        "--results",
        res,
        "--primary",
        "THP fault alloc",
        "--mechanisms",
        "Compaction stalls",
        "--format",
        "json",
        "on",
        "off",
    )
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["primary"]["entries"] == ["THP fault alloc"] and d["primary"]["chosen_at_compare"] is True
    assert d["mechanisms"]["chosen_at_compare"] is True
    fam = {(r["metric"], r["stat"]): r["family"] for s in d["sections"] for r in s["rows"]}
    assert fam[("THP fault alloc", "Amean")] == "primary" and fam[("Percentage huge", "Amean")] == "exploratory"
    text = mmbench("compare", "--results", res, "--primary", "THP fault alloc", "on", "off").stdout
    assert "Primary rows (the outcomes, 1 chosen at compare time with --primary;" in text
    # the same syntax, a section and a percentile included; a comma inside a name is \,
    ok = mmbench(
        "compare",
        "--results",
        res,
        "--primary",
        "vmstat:THP fault alloc",
        "--primary",
        "thpavail:Percentage huge",
        "on",
        "off",
    )
    assert ok.returncode == 0 and "2 chosen at compare time" in ok.stdout, ok.stderr
    for args, needle in [
        (["--primary", "THP fault alocc"], "not a row of this comparison (did you mean 'THP fault alloc'?)"),
        (["--primary", "Percentage huge@P99"], "has no P99 row"),
        (["--primary", "a,b,c,d,e,f,g"], "at most 6"),
        (["--primary", "THP fault alloc,"], "an empty row name"),
        (["--primary", "Compaction stalls", "--mechanisms", "vmstat:Compaction stalls"], "both primary"),
    ]:
        bad = mmbench("compare", "--results", res, *args, "on", "off")
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, (args, bad.stderr)
        assert needle in bad.stderr, (args, bad.stderr)
    # report takes the same options
    out = tmp_path / "r.html"
    rep = mmbench("report", "--results", res, "-o", str(out), "--primary", "THP fault alloc", "on", "off")
    assert rep.returncode == 0, rep.stderr
    assert "chosen at compare time with --primary" in out.read_text()


def test_compare_primary_entry_naming_several_rows(tmp_path):
    def two(name, shift):
        rng = np.random.default_rng(shift)
        t = MetricDef("time", "s", "lower", "time")
        wl = [
            WorkloadRun(
                lab,
                "sim",
                {},
                [t],
                [
                    IterationResult(lab, i, False, "ok", samples={"time": [float(rng.normal(10 + shift, 1))]})
                    for i in range(3)
                ],
            )
            for lab in ("w1", "w2")
        ]
        return RunRecord(name, "complete", 0.0, 1.0, "", "", {}, {}, wl)

    res = store_records(tmp_path / "res", two("a", 0), two("b", 1))
    bad = mmbench("compare", "--results", res, "--primary", "time", "a", "b")
    assert bad.returncode == 2 and "matches 2 rows (time (w1 (sim)); time (w2 (sim)))" in bad.stderr, bad.stderr
    assert "name one with a section, e.g. 'workload:w1:time'" in bad.stderr
    good = mmbench("compare", "--results", res, "--primary", "w2:time", "a", "b")
    assert good.returncode == 0 and "time (w2 (sim))" in good.stdout, good.stderr


def test_old_runs_keep_their_stored_family_and_have_no_mechanisms(tmp_path):
    from mmbench.analysis.compare.families import run_families

    r = thpavail("x", True, 1, suite="")
    (tmp_path / "suite-effective.json").write_text(json.dumps({"suite": {"primary": ["Compaction stalls"]}}))
    r.path = tmp_path
    assert run_families(r) == (["Compaction stalls"], [], "stored with the run")
    # runs whose suites disagree about a row's family: an error naming it, with the way out
    a = thpavail("a", True, 1, suite='[suite]\nprimary = ["Compaction stalls"]\n')
    b = thpavail("b", False, 2, suite='[suite]\nmechanisms = ["Compaction stalls"]\n')
    with pytest.raises(UsageError, match="both primary .* by the runs' suites.*--primary/--mechanisms"):
        build_comparison([a, b])
    c = build_comparison([a, b], mechanisms=["Compaction stalls"])
    assert _row(c, "Compaction stalls").family == "mechanism"
    assert any("chosen at compare time" in n for n in c.notes)
