"""Bisection of a kernel git repository: every commit built through the kernel stage, measured in
guests by the round driver and stored as ordinary runs; the steps judged by analysis/bisection."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mmbench.analysis import bisection as bis
from mmbench.driver.rounds import Arm, measure
from mmbench.driver.run import kernel_arm, load
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.guest_kernel import GuestKernel
from mmbench.model.request import BisectRequest, KernelRequest, RunRequest


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]

    @property
    def label(self) -> str:
        return f"{self.short} {self.subject}"


def _git(repo: str, *args: str, what: str) -> str:
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise UsageError(f"{what}: {err}")
    return proc.stdout


def git_range(repo: str, good: str, bad: str) -> list[Commit]:
    """The commits to bisect, good end first: ``good`` and the first-parent history up to ``bad``.
    ``good`` must be an ancestor of ``bad`` and differ from it (one-line errors naming them)."""
    if not Path(repo, ".git").exists() and not Path(repo, "HEAD").is_file():
        raise UsageError(f"REPO {repo}: not a git repository")
    shas = []
    for ref, which in ((good, "GOOD"), (bad, "BAD")):
        out = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], capture_output=True, text=True
        )
        if out.returncode != 0:
            raise UsageError(f"{which} {ref!r}: not a commit, tag or branch of {repo}")
        shas.append(out.stdout.strip())
    g, b = shas
    if g == b:
        raise UsageError(f"GOOD {good!r} and BAD {bad!r} are the same commit ({g[:12]}): nothing to bisect")
    if subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", g, b]).returncode != 0:
        raise UsageError(f"GOOD {good!r} is not an ancestor of BAD {bad!r}: give the older commit as GOOD")
    log = _git(repo, "log", "--first-parent", "--reverse", "--format=%H%x00%s", f"{g}..{b}", what="git log")
    first = _git(repo, "log", "-1", "--format=%H%x00%s", g, what="git log").strip()
    commits = [Commit(*line.split("\0", 1)) for line in [first, *log.splitlines()] if line]
    if commits[-1].sha != b:
        raise UsageError(f"BAD {bad!r} is not on the first-parent line from GOOD {good!r}")
    return commits


def diffstat(repo: str, sha: str) -> str:
    """``git show --stat`` of one commit, without its message."""
    return _git(repo, "show", "--stat", "--format=", sha, what="git show").rstrip()


@dataclass
class KernelMeasure:
    """``measure(commit, rounds)`` for the bisection core: the commit's kernel (built, or from the
    image cache), booted ``rounds`` times by the round driver into one run named
    ``bisect-SHORT-rA-B`` (its rounds A to B), the followed row's per-round values read back as
    ``compare`` reads them.  A commit that does not build, or whose guest run does not complete,
    raises ``MeasureFailed``.  ``kernel_for``/``arm_for`` replace the build and the guest (tests)."""

    request: BisectRequest
    suite: Any
    store: Any
    progress: Any
    commits: dict[str, Commit]
    row: str | None = None
    kernel_for: Callable[[str], GuestKernel] | None = None
    arm_for: Callable[[str, GuestKernel], Arm] | None = None
    done: dict[str, int] = field(default_factory=dict)  # rounds measured per commit
    builds: dict[str, int] = field(default_factory=dict)  # objects compiled per commit built now
    reuse: bool = False  # --resume: a complete run of the same name is kept
    # runs the requests elsewhere (the fleet: one job per round), returns {run name: why} of those
    # that failed; None: rounds run here, through the round driver
    remote: Callable[[list[RunRequest]], dict[str, str]] | None = None
    job_for: Callable[[str, str], RunRequest] | None = None  # (commit, run name) -> the job's request

    def kernel(self, sha: str) -> tuple[GuestKernel, int | None]:
        """The commit's kernel and the objects compiled for it now (None: from the image cache)."""
        if self.kernel_for is not None:
            k = self.kernel_for(sha)
        else:
            from mmbench.kbuild.resolve import get_kernel

            frags = self.suite.vm.get("kernel_fragments", [])
            started = time.strftime("%Y-%m-%d %H:%M:%S")
            try:
                k = get_kernel(
                    KernelRequest(f"git:{self.request.repo}@{sha}").with_fragments_first(frags), self.progress.info
                )
            except (UsageError, EnvironmentUnsupported) as e:
                raise bis.MeasureFailed(f"does not build: {e}") from None
            if (k.build or {}).get("built", "") >= started:
                self.builds[sha] = int((k.build or {}).get("objects_compiled") or 0)
                return k, self.builds[sha]
            return k, None
        compiled = (k.build or {}).get("objects_compiled")
        if compiled is not None:
            self.builds[sha] = int(compiled)
        return k, compiled

    def runs(self, sha: str, rounds: int) -> tuple[list[Any], dict[str, Any]]:
        """``rounds`` more rounds of the commit as one stored run; the runs and what the call cost."""
        t0 = time.monotonic()
        first = self.done.get(sha, 0) + 1
        name = f"bisect-{sha[:12]}-r{first}" + (f"-{first + rounds - 1}" if rounds > 1 else "")
        if self.remote is not None:
            return self._remote_runs(sha, first, rounds, t0)
        kept = self._kept(name) if self.reuse else None
        info: dict[str, Any] = {}
        if kept is not None:
            run = kept
            self.progress.info(f"bisect: {name} is stored complete: kept (--resume)")
        else:
            kernel, compiled = self.kernel(sha)
            info["objects_compiled"] = compiled if compiled is not None else 0  # 0: the image was cached
            arm = (self.arm_for or self._arm)(name, kernel)
            got = measure([arm], self.store, rounds, progress=self.progress)
            if got.status != "complete":
                raise bis.MeasureFailed(
                    f"the guest run {name} is {got.status}" + (f" ({got.note})" if got.note else "")
                )
            run = got.runs[0]
        self.done[sha] = first + rounds - 1
        info["wall_s"] = round(time.monotonic() - t0, 1)
        return [run], info

    def job_request(self, sha: str, name: str) -> RunRequest:
        """One round of the commit as a fleet job runs it: ``mmbench run --kernel git:REPO@COMMIT
        --iterations 1 NAME`` with the bisection's suite, ``--set`` values and VM shape."""
        if self.job_for is not None:
            return self.job_for(sha, name)
        return self.request.run.replace(
            name=name,
            iterations=1,
            results=None,
            force=True,
            quiet=True,
            kernel=KernelRequest(f"git:{self.request.repo}@{sha}"),
        )

    def _remote_runs(self, sha: str, first: int, rounds: int, t0: float) -> tuple[list[Any], dict[str, Any]]:
        """``rounds`` rounds as one job each (one guest boot each, on any machine of the tag, at
        once when there are several), then read from the shared store."""
        names = [f"bisect-{sha[:12]}-r{k}" for k in range(first, first + rounds)]
        todo = [n for n in names if not (self.reuse and self._kept(n) is not None)]
        failed = self.remote([self.job_request(sha, n) for n in todo]) if todo else {}
        if failed:
            raise bis.MeasureFailed("; ".join(f"{n}: {why}" for n, why in failed.items()))
        runs = [self.store.load_run(n) for n in names]
        self.done[sha] = first + rounds - 1
        return runs, {"wall_s": round(time.monotonic() - t0, 1), "jobs": len(todo)}

    def _arm(self, name: str, kernel: GuestKernel) -> Arm:
        return kernel_arm(self.request.run, name, self.suite, kernel)

    def _kept(self, name: str) -> Any | None:
        try:
            run = self.store.load_run(name)
        except UsageError:
            return None
        if run.status != "complete":
            return None
        return run

    def values(self, runs: list[Any], entries: list[str] | None) -> dict[str, Any]:
        """The declared rows' values in ``runs`` (``entries``, or the stored primary family)."""
        from mmbench.analysis.compare.rowvalues import row_iterations

        return row_iterations(runs, entries)

    def __call__(self, sha: str, rounds: int) -> bis.Measured:
        assert self.row is not None
        runs, info = self.runs(sha, rounds)
        rv = self.values(runs, [self.row])[self.row]
        samples = [v for r in runs for v in rv.values[r.name]]
        if len(samples) != rounds:
            raise bis.MeasureFailed(
                f"{', '.join(r.name for r in runs)}: {len(samples)} of {rounds} rounds have a value of {self.row!r}"
            )
        return bis.Measured(samples, [r.name for r in runs], info)


def _samples(values: dict[str, Any], runs: list[str]) -> dict[str, list[float]]:
    """entry → the values of ``runs`` in order, one list per end."""
    return {entry: [v for n in runs for v in rv.values.get(n, [])] for entry, rv in values.items()}


@dataclass
class BisectResult:
    log: bis.BisectLog
    commits: list[Commit]
    row_reason: str
    builds: int  # kernels built now (not from the image cache)
    objects: int  # objects compiled for them
    wall_s: float
    diffstat: str = ""


def run_bisection(
    request: BisectRequest,
    store: Any,
    progress: Any,
    say: Callable[[str], None],
    *,
    kernel_for: Callable[[str], GuestKernel] | None = None,
    arm_for: Callable[[str, GuestKernel], Arm] | None = None,
    remote: Callable[[list[RunRequest]], dict[str, str]] | None = None,
    job_for: Callable[[str, str], RunRequest] | None = None,
) -> BisectResult:
    """Bisect ``request``'s range on its row: the ends' pilot (their own runs, or 3 rounds each
    measured first) chooses the row when none is given, then the core's fresh ends and steps.
    ``say`` gets one line per event (the pilot, the row, each step's verdict)."""
    t0 = time.monotonic()
    commits = git_range(request.repo, request.good, request.bad)
    by_sha = {c.sha: c for c in commits}
    suite = load(request.run.replace(kernel=KernelRequest(f"git:{request.repo}@{commits[0].sha}")))
    log_path = Path(request.log or f"bisect-{commits[0].short}-{commits[-1].short}.json")
    old = None
    if request.resume and log_path.is_file():
        old = bis.load_log(log_path)
    elif request.resume:
        # stopped while measuring the ends' pilot, before the first log: the rounds stored complete
        # are kept (reuse) and the rest measured
        say(
            f"--resume: no log at {log_path} yet (stopped before the pilot ended): starting, keeping the "
            f"rounds stored complete"
        )
    elif log_path.exists():
        raise UsageError(f"--log {log_path}: exists; go on from it with --resume, or remove it")
    meas = KernelMeasure(
        request,
        suite,
        store,
        progress,
        by_sha,
        kernel_for=kernel_for,
        arm_for=arm_for,
        reuse=request.resume,
        remote=remote,
        job_for=job_for,
    )
    shas = [c.sha for c in commits]
    settings = bis.Settings(confidence=request.confidence, max_rounds=request.max_rounds)
    pilot = None
    reason = ""
    if old is not None:
        row = old.row
        if request.row is not None and request.row != row:
            raise UsageError(f"--row {request.row!r}: the log follows {row!r}; resume without --row or with it")
        settings = bis.Settings(
            confidence=request.confidence, max_rounds=request.max_rounds, resolution=old.settings.resolution
        )
        for samples in log_samples(old):
            meas.done[samples.commit] = meas.done.get(samples.commit, 0) + len(samples.samples)
        reason = f"{row}: followed by the log {log_path}"
    else:
        entries = [request.row] if request.row else None
        ends: list[tuple[list[Any], dict[str, Any]]] = []
        for which, sha, given in (("good", shas[0], request.good_runs), ("bad", shas[-1], request.bad_runs)):
            if given:
                runs = [store.load_run(n) for n in given]
                info: dict[str, Any] = {"runs_given": True}
            else:
                say(f"pilot: measuring the {which} end {by_sha[sha].label}, {bis.PILOT_ROUNDS} rounds")
                runs, info = meas.runs(sha, bis.PILOT_ROUNDS)
            ends.append((runs, info))
        all_runs = ends[0][0] + ends[1][0]
        values = meas.values(all_runs, entries)
        if request.row and request.row not in values:
            raise UsageError(f"--row {request.row!r}: not a row of the ends' runs")
        good = _samples(values, [r.name for r in ends[0][0]])
        bad = _samples(values, [r.name for r in ends[1][0]])
        if request.row:
            row = request.row
            reason = f"{row}: chosen with --row"
        else:
            choice = bis.choose_row(
                good, bad, list(values), {e: v.resolution for e, v in values.items()}, request.min_change
            )
            row, reason = choice.row, choice.reason
        settings = bis.Settings(
            confidence=request.confidence, max_rounds=request.max_rounds, resolution=values[row].resolution
        )
        pilot = (
            bis.Measured(good[row], [r.name for r in ends[0][0]], ends[0][1]),
            bis.Measured(bad[row], [r.name for r in ends[1][0]], ends[1][1]),
        )
    meas.row = row
    say(f"row: {reason}")
    said: set[Any] = set()

    def save(lg: bis.BisectLog) -> None:
        lg.save(log_path)
        if lg.end_rounds is not None and "pilot" not in said and lg.pilot is not None:
            said.add("pilot")
            say(f"pilot: {_ends_line(lg.pilot_good, lg.pilot_bad, lg.pilot)}, p = {lg.pilot_p:.2g}")
            say(f"fresh ends: {lg.end_plan}")
        if lg.ends is not None and "ends" not in said:
            said.add("ends")
            say(f"ends: {_ends_line(lg.good, lg.bad, lg.ends)}")
        for k, step in enumerate(lg.steps):
            if k not in said and step.verdict is not None:
                said.add(k)
                say(_step_line(lg, step, k + 1, by_sha.get(step.commit)))

    log = bis.bisect(shas, meas, row, settings=settings, pilot=pilot, log=old, save=save)
    save(log)
    out = log.outcome
    stat = diffstat(request.repo, out.first_bad) if out is not None and out.first_bad else ""
    return BisectResult(log, commits, reason, len(meas.builds), sum(meas.builds.values()), time.monotonic() - t0, stat)


def _ends_line(good: Any, bad: Any, c: bis.Contrast) -> str:
    """good mean (rounds) -> bad mean (rounds), the change with its interval."""

    def mean(x: Any) -> float:
        return sum(x.samples) / len(x.samples)

    pct = c.pct(c.diff)
    lo, hi = c.pct(c.low), c.pct(c.high)
    change = (
        f"{pct:+.2f}% [{lo:+.2f}%, {hi:+.2f}%]"
        if None not in (pct, lo, hi)
        else f"{c.diff:+.4g} [{c.low:+.4g}, {c.high:+.4g}]"
    )
    return (
        f"good {mean(good):.6g} over {len(good.samples)} rounds, bad {mean(bad):.6g} over {len(bad.samples)}: {change}"
    )


def log_samples(log: bis.BisectLog) -> list[Any]:
    return [s for s in (log.pilot_good, log.pilot_bad, log.good, log.bad, *log.steps) if s is not None]


def _step_line(log: bis.BisectLog, step: Any, number: int, commit: Commit | None) -> str:
    label = commit.label if commit else step.commit
    line = bis.step_line(step, log.settings, number, label)
    if step.verdict == "skipped":
        return line
    cost = f"{step.rounds} round{'s' if step.rounds != 1 else ''}"
    objects = step.info.get("objects_compiled")
    if objects is not None:
        cost += f", build: {objects} objects compiled" if objects else ", build: image cached"
    if step.info.get("jobs") is not None:
        cost += f", {step.info['jobs']} fleet job(s)"
    if step.info.get("wall_s") is not None:
        cost += f", {_duration(step.info['wall_s'])}"
    return f"{line} [{cost}]"


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
