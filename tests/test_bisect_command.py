"""``mmbench bisect`` end to end on a real git repository, with the kernel build and the guest
replaced by a simulated measurement (driver/bisect.py's ``kernel_for``/``arm_for``): the range read
from git, runs stored under the commits' names, the step lines, the first bad commit with its
diffstat, JSON, the log and --resume, a commit that does not build, and the command's one-line
errors (which need no simulation)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import needs_root

from mmbench.analysis import bisection as bis
from mmbench.commands import bisect as cmd
from mmbench.driver.rounds import Arm
from mmbench.model.guest_kernel import GuestKernel
from mmbench.model.request import BisectRequest, RunRequest
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
from mmbench.store import open_store

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITE = '[suite]\niterations = 1\nwarmup = 0\n[[workload]]\nname = "idle"\n[workload.params]\nduration = "1s"\n'


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A repository of 1 + 12 commits; the 8th after the base (tag first-bad) is the change."""
    r = tmp_path / "linux"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    (r / "mm").mkdir()
    (r / "mm" / "page_alloc.c").write_text("int fair;\n")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "base")
    _git(r, "tag", "good")
    for i in range(1, 13):
        f = r / "mm" / ("page_alloc.c" if i == 8 else f"f{i}.c")
        f.write_text(f.read_text() + "int slower;\n" if i == 8 else f"int f{i};\n")
        _git(r, "add", ".")
        _git(r, "commit", "-q", "-m", "mm: page_alloc: the planted change" if i == 8 else f"harmless edit {i}")
        if i == 8:
            _git(r, "tag", "first-bad")
    _git(r, "tag", "bad")
    return r


class Sim:
    """Each commit's kernel is a stand-in; each round stores one iteration whose "tput" is 1000 (before
    the planted commit) or 900 (from it on), with noise of 1 % (seeded)."""

    def __init__(self, repo: Path, fail: set[str] = frozenset(), stop_after: int | None = None):
        self.order = _git(repo, "rev-list", "--reverse", "good..bad").split()
        self.first_bad = _git(repo, "rev-parse", "first-bad")
        self.rng = random.Random(7)
        self.fail, self.stop_after = fail, stop_after
        self.rounds = 0
        self.built: list[str] = []

    def kernel_for(self, sha: str) -> GuestKernel:
        if sha in self.fail:
            raise bis.MeasureFailed("does not build: kernel build failed: mm/f3.o: error")
        self.built.append(sha)
        return GuestKernel(
            f"git:x@{sha}", Path("/nonexistent/bzImage"), "6.1.0", None, None, build={"objects_compiled": 6}
        )

    def arm_for(self, name: str, kernel: GuestKernel) -> Arm:
        sha = kernel.spec.split("@")[1]
        bad = sha in self.order and self.order.index(sha) >= self.order.index(self.first_bad)
        metric = MetricDef("tput", "MB/s", "higher", "rate")

        def run(suite, part, store, *, force, progress):
            if self.stop_after is not None and self.rounds >= self.stop_after:
                raise KeyboardInterrupt
            self.rounds += 1
            w = store.create_run(
                part, force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
            )
            w.add_workload(WorkloadRun("w", "sim", {}, [metric], []))
            value = (900.0 if bad else 1000.0) * (1 + self.rng.gauss(0, 0.01))
            w.add_iteration(IterationResult("w", 0, False, "ok", samples={"tput": [value]}))
            w.finish("complete")
            return "complete"

        suite = types.SimpleNamespace(
            headline=["tput"],
            workloads=[types.SimpleNamespace(label="w", plugin="sim", iterations=1, warmup=0, metrics=[metric])],
        )
        return Arm(name, suite, run)


def _request(tmp_path, repo, **kw) -> BisectRequest:
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)
    run = RunRequest(config=str(suite), name="bisect", results=str(tmp_path / "res"), quiet=True)
    return BisectRequest(repo=str(repo), good="good", bad="bad", run=run, log=str(tmp_path / "bisect.json"), **kw)


def test_bisect_names_the_planted_commit_with_its_steps_and_cost(tmp_path, repo, capsys):
    sim = Sim(repo)
    assert cmd.bisect(_request(tmp_path, repo), kernel_for=sim.kernel_for, arm_for=sim.arm_for) == 0
    out = capsys.readouterr().out
    short = sim.first_bad[:12]
    assert f"first bad commit: {short} mm: page_alloc: the planted change" in out
    assert "mm/page_alloc.c | 1 +" in out  # its diffstat
    assert "row: w/tput" in out or "row: tput" in out or "row: " in out
    steps = [line for line in out.splitlines() if line.startswith("step ")]
    assert 3 <= len(steps) <= 5  # ceil(log2 12) = 4, give or take a skip
    assert all("harmless edit" in s or "planted change" in s for s in steps)
    assert all(("good" in s or "bad" in s) and "error probability" in s and "round" in s for s in steps)
    assert "error bound: 0.2 " in out  # 4 steps x 5 %
    assert "kernel(s) built (" in out and "wall time" in out
    # every round stored as an ordinary run named after its commit
    names = open_store(tmp_path / "res").list_runs()
    assert any(r["name"].startswith(f"bisect-{short}-r1") for r in names)
    log = bis.load_log(tmp_path / "bisect.json")
    assert log.outcome.status == "found" and log.outcome.first_bad == sim.first_bad
    assert len(sim.built) <= 4 + 2 + 4  # ends once per call, steps once per round at most


def test_bisect_json_is_the_whole_log(tmp_path, repo, capsys):
    sim = Sim(repo)
    assert cmd.bisect(_request(tmp_path, repo, json_out=True), kernel_for=sim.kernel_for, arm_for=sim.arm_for) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "mmbench-bisect-log" and doc["outcome"]["first_bad"] == sim.first_bad
    assert doc["subjects"][sim.first_bad] == "mm: page_alloc: the planted change"
    assert all(s["verdict"] in ("good", "bad") for s in doc["steps"])
    assert doc["steps"][0]["info"]["objects_compiled"] == 6


def test_interrupted_bisection_resumes_to_the_same_answer(tmp_path, repo, capsys):
    (tmp_path / "a").mkdir()
    full = Sim(repo)
    assert cmd.bisect(_request(tmp_path / "a", repo), kernel_for=full.kernel_for, arm_for=full.arm_for) == 0
    first = capsys.readouterr().out
    part = Sim(repo, stop_after=9)
    req = _request(tmp_path, repo)
    assert cmd.bisect(req, kernel_for=part.kernel_for, arm_for=part.arm_for) == 130
    assert "every finished round is in the log: go on with --resume" in capsys.readouterr().err
    part.stop_after = None
    assert cmd.bisect(dataclasses.replace(req, resume=True), kernel_for=part.kernel_for, arm_for=part.arm_for) == 0
    again = capsys.readouterr().out
    line = next(x for x in first.splitlines() if x.startswith("first bad commit"))
    assert line in again
    # the rounds finished before the interrupt were kept, not measured again (the interrupted
    # call's own rounds, at most the pilot's 3, are measured again)
    assert part.rounds <= full.rounds + 3


def test_a_commit_that_does_not_build_is_skipped(tmp_path, repo, capsys):
    order = _git(repo, "rev-list", "--reverse", "good..bad").split()
    sim = Sim(repo, fail={order[5]})  # the first step's commit (the middle)
    assert cmd.bisect(_request(tmp_path, repo), kernel_for=sim.kernel_for, arm_for=sim.arm_for) == 0
    out = capsys.readouterr().out
    assert f"{order[5][:12]} harmless edit 6: skipped (does not build: kernel build failed" in out
    assert f"first bad commit: {sim.first_bad[:12]}" in out


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mmbench", "bisect", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (["good", "good"], "are the same commit"),
        (["bad", "good"], "is not an ancestor of BAD"),
        (["good", "nosuchref"], "BAD 'nosuchref': not a commit, tag or branch"),
        (["good", "bad", "--good-runs", "a"], "--good-runs and --bad-runs go together"),
        (["good", "bad", "--confidence", "1.5"], "--confidence: expected a probability"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, repo, args, says):
    (tmp_path / "s.toml").write_text(SUITE)
    proc = _cli("linux", *args, "--config", "s.toml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_log_that_exists_needs_resume(tmp_path, repo):
    (tmp_path / "s.toml").write_text(SUITE)
    (tmp_path / "old.json").write_text("{}")
    proc = _cli("linux", "good", "bad", "--config", "s.toml", "--log", "old.json", cwd=tmp_path)
    assert proc.returncode == 2 and "old.json: exists; go on from it with --resume" in proc.stderr


def test_history_prints_the_bisect_command_for_a_change_point_between_git_commits(tmp_path):
    from mmbench.analysis.history import build_history
    from mmbench.report.history import render_text

    store = open_store(tmp_path / "res")
    metric = MetricDef("faults/sec", "faults/s", "higher", "rate")
    values = [
        100.0,
        101.0,
        99.5,
        100.4,
        100.9,
        99.8,
        100.2,
        99.9,
        100.6,
        120.2,
        119.7,
        121.0,
        120.4,
        119.9,
        120.6,
        120.1,
        119.6,
        120.8,
    ]
    for i, v in enumerate(values):
        commit = ("a" if i < 9 else "b") * 40
        fp = {"host": "lab1", "kernel": {"release": "6.1.192", "git_repo": "/src/linux", "git_commit": commit}}
        w = store.create_run(
            f"r{i:03}",
            force=True,
            suite_text="",
            suite_hash="h",
            settings={},
            fingerprint=fp,
            suite_effective={"suite": {"iterations": 2}, "workload": [{"name": "pft"}]},
        )
        w.meta["suite"] = "pft"
        w.add_workload(WorkloadRun("pft", "pft", {}, [metric]))
        for k in range(2):
            w.iteration_dir("pft", k).mkdir(parents=True, exist_ok=True)
            w.add_iteration(IterationResult("pft", k, False, "ok", samples={"faults/sec": [v + 0.2 * k]}))
        w.finish("complete")
    series = build_history(store, machine="lab1", suite="pft")
    (cp,) = series[0].change_points
    assert cp.bisect == (
        "mmbench bisect /src/linux aaaaaaaaaaaa bbbbbbbbbbbb --config pft --row pft:faults/sec "
        "--good-runs r008 --bad-runs r009"
    )
    assert f"find the commit: {cp.bisect}" in render_text(series)
    from mmbench.analysis.history import bisect_command

    same = {"kernel.git_repo": "/src/linux", "kernel.git_commit": "a" * 40, "run": "x", "suite": "pft"}
    assert bisect_command(same, dict(same, run="y"), "pft", "faults/sec") == ""  # one commit: nothing to bisect
    assert bisect_command({"run": "x"}, same, "pft", "faults/sec") == ""  # not built from git


@needs_root
def test_fleet_bisection_runs_each_round_as_a_job(tmp_path, pg_url):
    """--queue: every round is one fleet job (here a host run whose idle time stands for the kernel's
    cost: 1 s before the planted commit, 1.5 s from it on), the runs come back from PostgreSQL."""
    r = tmp_path / "linux"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    for i in range(5):
        (r / f"f{i}.c").write_text(f"int f{i};\n")
        _git(r, "add", ".")
        _git(r, "commit", "-q", "-m", f"commit {i}")
    order = _git(r, "rev-list", "--reverse", "HEAD").split()
    first_bad = order[3]
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)

    def job_for(sha: str, name: str) -> RunRequest:
        slow = order.index(sha) >= order.index(first_bad)
        return RunRequest(
            config=str(suite),
            name=name,
            sets=(f"idle.duration={'1.5s' if slow else '1s'}",),
            iterations=1,
            force=True,
            quiet=True,
        )

    env = {**os.environ, "MMBENCH_AGENT_HEARTBEAT": "1", "MMBENCH_CACHE": str(tmp_path / "cache")}
    with open(tmp_path / "agent.log", "a") as fh:
        agent = subprocess.Popen(
            [sys.executable, "-m", "mmbench", "agent", "--queue", pg_url, "--tags", "lab"],
            cwd=str(REPO_ROOT),
            env=env,
            stdout=fh,
            stderr=fh,
            start_new_session=True,
        )
    try:
        run = RunRequest(config=str(suite), name="bisect", results=pg_url, quiet=True)
        req = BisectRequest(
            repo=str(r),
            good=order[0],
            bad=order[-1],
            run=run,
            row="duration:idle:Elapsed",
            log=str(tmp_path / "fleet.json"),
            queue=pg_url,
            machines="lab",
        )
        from mmbench.fleet.queue import fleet_rounds

        assert cmd.bisect(req, job_for=job_for, fleet_rounds=fleet_rounds) == 0
    finally:
        agent.send_signal(signal.SIGINT)
        agent.wait(timeout=120)
    log = bis.load_log(tmp_path / "fleet.json")
    assert log.outcome.status == "found" and log.outcome.first_bad == first_bad
    names = {x["name"] for x in open_store(pg_url).list_runs()}
    assert f"bisect-{order[0][:12]}-r1" in names and f"bisect-{first_bad[:12]}-r1" in names
    assert all(s.info.get("jobs") == len(s.samples) for s in log.steps)


def test_resume_before_the_first_log_keeps_the_pilot_rounds_stored(tmp_path, repo, capsys):
    sim = Sim(repo, stop_after=4)  # the good end's 3 pilot rounds done, the bad end's cut
    req = _request(tmp_path, repo)
    assert cmd.bisect(req, kernel_for=sim.kernel_for, arm_for=sim.arm_for) == 130
    assert not (tmp_path / "bisect.json").exists()
    sim.stop_after = None
    done = sim.rounds
    assert cmd.bisect(dataclasses.replace(req, resume=True), kernel_for=sim.kernel_for, arm_for=sim.arm_for) == 0
    out = capsys.readouterr().out
    assert "--resume: no log at" in out and "keeping the rounds stored complete" in out
    assert f"first bad commit: {sim.first_bad[:12]}" in out
    log = bis.load_log(tmp_path / "bisect.json")
    assert log.pilot_good.runs == [f"bisect-{sim.order and _git(repo, 'rev-parse', 'good')[:12]}-r1-3"]
    assert done == 4 and sim.rounds - done == 3 + 2 * log.end_rounds + sum(s.rounds for s in log.steps)
