"""Adaptive repetitions (`mmbench run --until`): the intervals, the plan (a fixed number of measured
iterations decided before any is seen: from a stored baseline, or from a pilot stored as warm-up),
and real runs that stop as planned on a loose target, at --max-iterations on an unreachable one,
and interleave A B, B A, A B ..."""

from __future__ import annotations

import json
import math

import pytest

from conftest import mmbench, needs_root
from mmbench.analysis import samplesize
from mmbench.analysis.samplesize import own_halfwidth_pct, ratio_halfwidth_pct, t975
from mmbench.commands.run import parse_until
from mmbench.driver.rounds import Arm, run_rounds
from mmbench.errors import UsageError

SMALL = ["--set", "budget=256M", "--set", "faultin.size=32M", "--set", "faultin.passes=2", "--set", "warmup=0"]


def test_until_grammar():
    assert parse_until("ci<2%") == 2.0 and parse_until(" ci < 0.5 ") == 0.5
    for bad in ("ci>2%", "2%", "ci<", "ci<5000%", "ci<0%", "rse<2%"):
        with pytest.raises(UsageError):
            parse_until(bad)


def test_intervals_match_scipy():
    from scipy import stats

    assert math.isclose(t975(4), stats.t.ppf(0.975, 4), rel_tol=1e-7)
    x = [100.0, 103.0, 98.0, 101.0]
    m, sd = sum(x) / 4, stats.tstd(x)
    assert math.isclose(own_halfwidth_pct(x), stats.t.ppf(0.975, 3) * sd / 2 / m * 100, rel_tol=1e-7)
    base, new = [100.0, 104.0, 98.0], [110.0, 108.0, 113.0, 111.0]
    la, lb = [math.log(v) for v in base], [math.log(v) for v in new]
    va, vb = stats.tvar(la) / 3, stats.tvar(lb) / 4
    from mmbench.analysis.significance import welch_df

    df = welch_df(va, vb, 3, 4)  # compare's df (bounded at unequal n, issue 22 item 5)
    want = (math.exp(stats.t.ppf(0.975, df) * math.sqrt(va + vb)) - 1) * 100
    assert math.isclose(ratio_halfwidth_pct(base, new), want, rel_tol=1e-7)
    assert own_halfwidth_pct([5.0]) == math.inf and ratio_halfwidth_pct([1.0, 1.0], [2.0, 2.0]) == 0.0


def test_until_flags_are_checked(results, suite_file):
    out = mmbench("run", "--config", "smoke", "--results", str(results), "--until", "ci<x", "n")
    assert out.returncode == 2 and "--until" in out.stderr
    out = mmbench("run", "--config", "smoke", "--results", str(results), "--baseline", "b", "n")
    assert out.returncode == 2 and "--baseline goes with --until" in out.stderr
    out = mmbench(
        "run", "--config", "smoke", "--results", str(results), "--until", "ci<5%", "--max-iterations", "2", "n"
    )
    assert out.returncode == 2 and "--max-iterations" in out.stderr
    bad = suite_file('[suite]\nheadline = ["Fault throughputt"]\n[[workload]]\nname = "faultin"\n')
    out = mmbench("run", "--config", str(bad), "--results", str(results), "n")
    assert out.returncode == 2 and "suite.headline" in out.stderr and "Fault throughput" in out.stderr


def _measured(results, name):
    data = json.loads(mmbench("compare", "--results", str(results), "--format", "json", name, check=True).stdout)
    return data


@needs_root
def test_stops_early_on_a_quiet_headline(results, suite_file):
    """THP Active under thp=always is the same every iteration: the interval is 0 after the minimum
    of 3 iterations, so the run stops there."""
    from mmbench.config.load import find_suite

    text = find_suite("smoke").read_text().replace("[suite]\n", '[suite]\nheadline = ["THP Active"]\n', 1)
    suite = suite_file(text, "smoke-quiet.toml")
    out = mmbench(
        "run",
        "--config",
        str(suite),
        "--results",
        str(results),
        *SMALL,
        "--until",
        "ci<1%",
        "--max-iterations",
        "10",
        "loose",
    )
    assert out.returncode == 0, out.stderr
    assert "stopped after 3 measured iterations as planned (+3 pilot" in out.stderr
    assert "THP Active ±0.00%" in out.stderr
    its = sorted((results / "loose" / "faultin").glob("iter-*"))
    assert len(its) == 6
    warm = [json.loads((p / "result.json").read_text())["warmup"] for p in its]
    assert warm == [True] * 3 + [False] * 3  # the pilot is warm-up: never tested


@needs_root
def test_stops_at_max_iterations_on_an_unreachable_target(results):
    out = mmbench(
        "run",
        "--config",
        "smoke",
        "--results",
        str(results),
        *SMALL,
        "--until",
        "ci<0.0001%",
        "--max-iterations",
        "4",
        "tight",
    )
    assert out.returncode == 0, out.stderr
    assert "more than --max-iterations 4" in out.stderr and "not reached" in out.stderr
    assert len(list((results / "tight" / "faultin").glob("iter-*"))) == 3 + 4
    assert "complete" in mmbench("list", "--results", str(results), check=True).stdout


@needs_root
def test_baseline_configuration_interleaved(results):
    out = mmbench(
        "run",
        "--config",
        "smoke",
        "--results",
        str(results),
        *SMALL,
        "--set",
        "thp.enabled=always",
        "--until",
        "ci<1000%",
        "--max-iterations",
        "3",
        "--baseline",
        "nothp",
        "--baseline-set",
        "thp.enabled=never",
        "thp",
    )
    assert out.returncode == 0, out.stderr
    starts = []
    for name in ("nothp", "thp"):
        for res in (results / name / "faultin").glob("iter-*/result.json"):
            starts.append((json.loads(res.read_text())["started"], name))
        assert json.loads((results / name / "run.json").read_text())["status"] == "complete"
    # pilot, then 3 measured; counterbalanced: A B, B A, A B ...
    assert [n for _, n in sorted(starts)] == ["nothp", "thp", "thp", "nothp"] * 3
    settings = json.loads((results / "nothp" / "run.json").read_text())["settings"]
    assert settings.get("thp.enabled") == "never"


def test_plan_against_a_stored_baseline_says_when_unreachable():
    # issue 22 item 4: 3 baseline iterations at 2.5 % spread set a floor on the interval of the
    # ratio; the run used to go silently to 30 iterations.  Now it says so before it starts.
    plan = samplesize.plan_iterations(2.0, 30, {}, {"w/m": [100.0, 103.0, 98.0]}, base_fixed=True)
    assert plan.iterations < 10 and "unreachable against this baseline" in plan.notes[0]
    assert "about 14 iterations" in plan.notes[0]
    ok = samplesize.plan_iterations(5.0, 30, {}, {"w/m": [100.0, 101.0, 99.5]}, base_fixed=True)
    assert ok.iterations == 3 and not ok.notes


def test_plan_does_not_depend_on_metric_order():
    # an undefined width (a mean of 0) used to stop the run when it came last and never when first
    a = samplesize.plan_iterations(2.0, 30, {"w/z": [0.0, 0.0, 0.0], "w/m": [100.0, 103.0, 98.0]})
    b = samplesize.plan_iterations(2.0, 30, {"w/m": [100.0, 103.0, 98.0], "w/z": [0.0, 0.0, 0.0]})
    assert a.iterations == b.iterations == 9
    assert any("w/z" in n and "not used" in n for n in a.notes)
    none = samplesize.plan_iterations(2.0, 12, {"w/z": [0.0, 0.0, 0.0]})
    assert none.iterations == 12 and "no headline metric" in none.notes[-1]


class _Log:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)


def _fake_campaign(tmp_path, values, **kw):
    """run_adaptive with a stand-in runner: each round stores one iteration of workload "w" whose
    headline metric takes the next value of ``values`` (no root, no workload)."""
    import types
    from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
    from mmbench.store import open_store

    metric = MetricDef("tput", "MB/s", "higher", "rate")
    suite = types.SimpleNamespace(
        headline=["tput"],
        workloads=[types.SimpleNamespace(label="w", plugin="sim", iterations=3, warmup=0, metrics=[metric])],
    )
    feed = iter(values)
    store = open_store(tmp_path / "res")

    def run_suite(s, name, st, force, progress):
        w = st.create_run(
            name, force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
        )
        wl = s.workloads[0]
        w.add_workload(WorkloadRun("w", "sim", {}, [metric], []))
        for i in range(wl.warmup + wl.iterations):
            w.add_iteration(IterationResult("w", i, i < wl.warmup, "ok", samples={"tput": [next(feed)]}))
        w.finish("complete")
        return "complete"

    log = _Log()
    until = kw.pop("until")
    arms = kw.pop("arms", None)
    baseline = kw.pop("baseline", None)
    arms = [Arm(a, suite, run_suite) for a in arms] if arms else [Arm("new", suite, run_suite)]
    status, why = run_rounds(
        arms,
        store,
        until=parse_until(until) if until else None,
        fixed_baseline=None if len(arms) == 2 else baseline,
        max_iterations=kw.pop("max_iterations", 30),
        max_time=None,
        force=True,
        progress=log,
    )
    return store, status, why, log.lines


def test_until_pilot_is_warmup_and_the_size_is_fixed_before_measuring(tmp_path, monkeypatch):
    # issue 22 item 4: a pilot of 3 rounds sizes the run and is left out of every statistic; the
    # measured iterations are exactly the planned number whatever they show
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    pilot = [100.0, 103.0, 98.0]  # 2.5 % spread: ci<2% needs 9 measured iterations
    measured = [100.0] * 20  # identical: the old rule stopped after 3 of these
    store, status, why, lines = _fake_campaign(tmp_path, pilot + measured, until="ci<2%")
    assert status == "complete" and "9 measured iterations planned" in lines[-1]
    run = store.load_run("new")
    its = run.workloads[0].iterations
    assert [it.warmup for it in its] == [True] * 3 + [False] * 9
    assert "stopped after 9 measured iterations as planned (+3 pilot" in why


def test_until_against_a_stored_baseline_says_unreachable_first(tmp_path, monkeypatch):
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
    from mmbench.store import open_store

    store = open_store(tmp_path / "res")
    w = store.create_run(
        "old", force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
    )
    w.add_workload(WorkloadRun("w", "sim", {}, [MetricDef("tput", "MB/s", "higher", "rate")], []))
    for i, v in enumerate([100.0, 103.0, 98.0]):
        w.add_iteration(IterationResult("w", i, False, "ok", samples={"tput": [v]}))
    w.finish("complete")
    _, status, why, lines = _fake_campaign(tmp_path, [100.0] * 40, until="ci<2%", baseline="old")
    assert "unreachable against this baseline" in " ".join(lines[:2])  # said before the run
    assert "measured iterations planned" in lines[0] and "not reached" in why


def test_fixed_rounds_with_arm_runners(tmp_path, monkeypatch):
    # without --until (A/B kernels, helper kbuild): exactly max_iterations rounds per arm, no pilot
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    store, status, why, _ = _fake_campaign(
        tmp_path, [100.0] * 10, until=None, baseline="old", arms=["old", "new"], max_iterations=2
    )
    assert status == "complete" and why.startswith("ran 2 rounds")
    for name in ("old", "new"):
        assert [it.warmup for it in store.load_run(name).workloads[0].iterations] == [False, False]


def test_a_guest_panic_reruns_its_round_once_and_is_said(tmp_path, monkeypatch):
    # A/B kernels under TCG: a guest that dies of a panic (docs/kernels.md: an int3 oops while a
    # static key is patched) gets its round once more, with the console kept and a warning; a
    # round whose rerun panics too fails the run
    import types
    from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
    from mmbench.store import open_store

    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    metric = MetricDef("tput", "MB/s", "higher", "rate")
    suite = types.SimpleNamespace(
        headline=["tput"],
        workloads=[types.SimpleNamespace(label="w", plugin="sim", iterations=1, warmup=0, metrics=[metric])],
    )
    panics = {"new.round1", "new.round2", "new.round2.retry"}
    calls = []

    def runner(s, name, st, force, progress):
        calls.append(name)
        w = st.create_run(
            name, force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
        )
        w.add_workload(WorkloadRun("w", "sim", {}, [metric], []))
        if name in panics:
            w.finish("failed", note="the guest kernel panicked; console: Kernel panic - not syncing")
            return "failed"
        w.add_iteration(IterationResult("w", 0, False, "ok", samples={"tput": [100.0]}))
        w.finish("complete")
        return "complete"

    class Log(_Log):
        def warn(self, text):
            self.lines.append("WARN " + text)

    log = Log()
    store = open_store(tmp_path / "res")
    status, why = run_rounds(
        [Arm("old", suite, runner, retry_panics=True), Arm("new", suite, runner, retry_panics=True)],
        store,
        until=None,
        fixed_baseline=None,
        max_iterations=3,
        max_time=None,
        force=True,
        progress=log,
    )
    assert calls[:4] == ["old.round0", "new.round0", "new.round1", "new.round1.retry"]  # round 1: B A
    assert calls[4] == "old.round1"  # the panic's round ran once more first
    warned = [l for l in log.lines if l.startswith("WARN")]
    assert len(warned) == 2 and "panicked" in warned[0] and "running the round once more" in warned[0]
    assert calls[-2:] == ["new.round2", "new.round2.retry"]  # another round's panic: rerun too
    assert status == "failed" and "round 3 of new" in why and "panicked" in why  # its rerun panicked
    assert len(store.load_run("new").workloads[0].iterations) == 2  # round 0 and round 1's retry kept
