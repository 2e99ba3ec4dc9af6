"""One workload iteration: actions, sandbox, monitors, the workload itself, measurements, cleanup.

Duration is the sandbox's CPU accounting (user and system time of every process that ran in it,
orphans included) plus wall-clock elapsed; vmstat is the /proc/vmstat delta across the workload.
An iteration that did no work fails with that reason (``no_work_reason``: the metrics each
workload declares as its proof of work were absent or all zero), never becomes a row of numbers.
Everything the iteration changed is journaled and restored before it returns, however it ends.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import EnvironmentUnsupported, WorkloadError
from mmbench.run import signals
from mmbench.monitors.base import Monitor, MonitorContext, load_summary
from mmbench.run.context import IterationContext
from mmbench.run.journal import Journal
from mmbench.run.sandbox import MemorySandbox
from mmbench.cbuild import binary_for
from mmbench.model.kernel import parse_vmstat, read_vmstat, vmstat_delta
from mmbench.model.results import IterationResult, MetricDef
from mmbench.workloads.base import Samples, Workload


@dataclass
class MonitorSpec:
    name: str
    cls: type[Monitor]
    interval: float
    params: dict[str, Any]


@dataclass
class CompanionSpec:
    workload: Workload
    params: dict[str, Any]


@dataclass
class IterationPlan:
    run_name: str
    label: str
    workload: Workload
    params: dict[str, Any]
    metrics: list[MetricDef]
    budget: int
    index: int
    warmup: bool
    itdir: Path  # where files are written (a staging folder during a run)
    rundir: Path
    scratch: Path
    actions: dict[str, Any] = field(default_factory=dict)
    monitors: list[MonitorSpec] = field(default_factory=list)
    companions: list[CompanionSpec] = field(default_factory=list)
    recorded_dir: Path | None = None  # <run>/<label>/iter-<N>: the folder once stored (default itdir)
    timeout: float | None = None  # seconds; the workload is stopped and the iteration fails after

    sandbox_mode: str = "memcg"  # "memcg" (limit = budget) or "none" (whole machine)


class _Watchdog:
    """Stops a workload that runs past its timeout: sets the stop event and kills what runs in the
    sandbox until the workload's code returns."""

    def __init__(self, timeout: float | None, sandbox: MemorySandbox, stop_events: list[threading.Event]) -> None:
        self.timeout = timeout
        self.sandbox = sandbox
        self.stop_events = stop_events
        self.fired = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "_Watchdog":
        if self.timeout:
            self._thread = threading.Thread(target=self._watch, name="mmbench-timeout", daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        assert self.timeout is not None
        if self._done.wait(self.timeout):
            return
        self.fired.set()
        for ev in self.stop_events:
            ev.set()
        while not self._done.wait(0.1):
            try:
                self.sandbox.kill_all()
            except OSError:
                pass

    def finish(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def per_iteration_actions(actions: dict[str, Any]) -> None:
    """sync/wait for writeback, drop caches, compact memory: in that order, before each iteration."""
    if actions.get("sync", True):
        os.sync()
        deadline = time.monotonic() + float(actions.get("writeback_timeout", 60))
        while time.monotonic() < deadline:
            v = parse_vmstat(read_vmstat())
            if v.get("nr_dirty", 0) + v.get("nr_writeback", 0) <= 1024:
                break
            time.sleep(0.1)
    if actions.get("drop_caches", False):
        # drop_caches is an action, not a setting: nothing to restore.
        Path("/proc/sys/vm/drop_caches").write_text("3")
    if actions.get("compact_memory", False):
        Path("/proc/sys/vm/compact_memory").write_text("1")


def run_iteration(
    plan: IterationPlan,
    journal: Journal,
    log: Callable[[str], None] = print,
    announce_unavailable: Callable[[str, str], None] | None = None,
) -> IterationResult:
    itdir = plan.itdir
    rawdir = itdir / "raw"
    rawdir.mkdir(parents=True, exist_ok=True)
    recorded = plan.recorded_dir or itdir
    result = IterationResult(
        workload=plan.label,
        index=plan.index,
        warmup=plan.warmup,
        status="ok",
        path=str(recorded.relative_to(plan.rundir)),
    )
    mark = journal.mark()
    workdir = plan.scratch / f"{plan.run_name}-{plan.label}-{plan.index}-{os.getpid()}"
    sandbox: MemorySandbox | None = None
    ctx: IterationContext | None = None
    running: list[tuple[MonitorSpec, Monitor]] = []
    companion_threads: list[tuple[threading.Thread, dict[str, Any]]] = []
    try:
        journal.record("remove", path=str(workdir))
        workdir.mkdir(parents=True, exist_ok=True)
        per_iteration_actions(plan.actions)
        sandbox = MemorySandbox(
            f"{plan.run_name}-{plan.label}-{plan.index}-{os.getpid()}",
            plan.budget,
            journal,
            whole_machine=plan.sandbox_mode == "none",
        ).create()
        ctx = IterationContext(
            params=plan.params,
            budget=plan.budget,
            workdir=workdir,
            rawdir=rawdir,
            sandbox=sandbox,
            journal=journal,
            log=log,
        )
        # innermost monitors start last and stop first (_teardown stops them in that order)
        for spec in sorted(plan.monitors, key=lambda m: bool(getattr(m.cls, "innermost", False))):
            mon = spec.cls()
            reason = mon.unavailable_reason()
            if reason:
                result.monitors[spec.name] = {"unavailable": reason}
                if announce_unavailable:
                    announce_unavailable(spec.name, reason)
                continue
            mdir = itdir / "monitors" / spec.name
            try:
                mon.start(
                    MonitorContext(
                        outdir=mdir,
                        interval=spec.interval,
                        params=spec.params,
                        sandbox_paths=dict(sandbox.paths),
                        sandbox_pids=sandbox.pids,
                        journal=journal,
                        log=log,
                        binary=binary_for,
                    )
                )
                running.append((spec, mon))
            except Exception as e:  # a failing monitor is reported; the run goes on
                result.monitors[spec.name] = {"error": f"{type(e).__name__}: {e}"}
                log(f"monitor {spec.name} failed to start: {e}")
            except BaseException:
                # A signal cut its start short: what it opened (mm-trace's trace_pipe_raw files)
                # would keep its trace instance busy, so the journal could not remove it.  The
                # teardown below stops it like the others.
                running.append((spec, mon))
                raise
        before = read_vmstat()
        (itdir / "vmstat-before").write_text(before)
        cpu0 = sandbox.cpu_times() or (0.0, 0.0)
        result.started = time.time()
        t0 = time.monotonic()
        for comp in plan.companions:
            ccx = ctx.for_companion(comp.params)
            box: dict[str, Any] = {"ctx": ccx, "workload": comp.workload}
            th = threading.Thread(target=_companion, args=(comp.workload, ccx, box), daemon=True)
            th.start()
            companion_threads.append((th, box))
        watchdog = _Watchdog(
            plan.timeout, sandbox, [ctx.stop_event, *(box["ctx"].stop_event for _, box in companion_threads)]
        ).start()
        try:
            samples = plan.workload.run(ctx)
        except (WorkloadError, EnvironmentUnsupported) as e:
            samples = {}
            result.status, result.reason = "failed", str(e)
        finally:
            watchdog.finish()
            elapsed = time.monotonic() - t0
            for th, box in companion_threads:
                box["ctx"].stop_event.set()
            for th, box in companion_threads:
                th.join(timeout=120)
                box["ctx"].stop_all()
        result.finished = time.time()
        after = read_vmstat()
        (itdir / "vmstat-after").write_text(after)
        cpu1 = sandbox.cpu_times() or (0.0, 0.0)
        result.duration = {
            "user": round(cpu1[0] - cpu0[0], 6),
            "system": round(cpu1[1] - cpu0[1], 6),
            "elapsed": round(elapsed, 6),
        }
        result.vmstat_delta = vmstat_delta(parse_vmstat(before), parse_vmstat(after))
        ooms = sandbox.oom_kills()
        result.memcg = {
            "oom_kills": ooms,
            "failcnt": sandbox.failcnt(),
            "max_usage": sandbox.max_usage() or 0,
            "limit": sandbox.limit,
            "mode": sandbox.mode,
        }
        for th, box in companion_threads:
            if "error" in box and result.status == "ok":
                result.status, result.reason = "failed", f"companion {box['workload'].name}: {box['error']}"
            samples = {**samples, **box.get("samples", {})}
        if watchdog.fired.is_set():
            assert plan.timeout is not None
            result.status = "failed"
            result.reason = (
                f"timed out: the workload did not finish within {plan.timeout:g} s "
                f"(raise it with the suite's or the workload's timeout)"
            )
            samples = {}
        elif ooms:
            result.status = "oom"
            where = (
                "OOM kill on the machine (whole-machine mode: "
                f"{ooms} process(es) killed, MemTotal {sandbox.limit >> 20} MiB)"
                if sandbox.whole_machine
                else f"OOM kill in the sandbox ({ooms} process(es) killed at the {plan.budget >> 20} MiB limit)"
            )
            result.reason = where + (f"; {result.reason}" if result.reason else "")
        if result.status == "ok":
            declared = {m.name for m in plan.metrics}
            unknown = sorted(set(samples) - declared)
            if unknown:
                result.status = "failed"
                result.reason = f"workload returned undeclared metric(s): {', '.join(unknown)}"
        if result.status == "ok":
            for wl, params, role in [
                (plan.workload, plan.params, ""),
                *((c.workload, c.params, f"companion {c.workload.name}: ") for c in plan.companions),
            ]:
                why = no_work_reason(wl, params, samples)
                if why:
                    result.status, result.reason = "failed", role + why
                    break
        result.samples = {k: [float(x) for x in v] for k, v in samples.items()}
        return result
    finally:
        # Teardown is held against signals (mmbench.run.signals): one arriving now is raised by
        # the runner's next checkpoint, after the machine is put back and the iteration stored.
        # Interrupted/KeyboardInterrupt are BaseExceptions: the handlers below never catch them.
        with signals.held():
            _teardown(plan, result, running, ctx, sandbox, journal, mark, workdir, log)


def no_work_reason(workload: Workload, params: dict[str, Any], samples: Samples) -> str | None:
    """Why the samples show that ``workload`` did no work, or None when each
    metric it declares as proof of work has a sample that is finite and not 0."""
    proofs = workload.work_metrics(params)
    if proofs is None:
        return (
            f"workload {workload.name} declares no metric that proves an iteration did work "
            f"(Workload.work), so its figures cannot be trusted"
        )
    for proof in proofs:
        names = (proof,) if isinstance(proof, str) else tuple(proof)
        values = [v for n in names for v in samples.get(n, [])]
        if any(math.isfinite(v) and v != 0 for v in values):
            continue
        what = " or ".join(f"'{n}'" for n in names)
        state = "has no samples" if not values else f"is 0 in all {len(values)} samples"
        return f"did no work: {what} {state} (an iteration that did no work is not measured)"
    return None


def _teardown(
    plan: IterationPlan,
    result: IterationResult,
    running: list[tuple[MonitorSpec, Monitor]],
    ctx: IterationContext | None,
    sandbox: MemorySandbox | None,
    journal: Journal,
    mark: int,
    workdir: Path,
    log: Callable[[str], None],
) -> None:
    itdir = plan.itdir
    recorded = plan.recorded_dir or itdir
    for spec, mon in sorted(running, key=lambda r: not getattr(r[0].cls, "innermost", False)):
        try:
            meta = mon.stop()
        except Exception as e:
            meta = {"error": f"{type(e).__name__}: {e}"}
        for w in (meta or {}).get("warnings") or []:  # e.g. mm-trace decoded without its C decoder
            log(f"warning: monitor {spec.name}: {w}")
        result.monitors[spec.name] = {
            "dir": str((recorded / "monitors" / spec.name).relative_to(plan.rundir)),
            **(meta or {}),
        }
        try:  # summarise once now, so compare and report read a small cached summary
            load_summary(spec.cls, itdir / "monitors" / spec.name, result.monitors[spec.name])
        except Exception as e:
            result.monitors[spec.name].setdefault("errors", []).append(f"summary: {type(e).__name__}: {e}")
    if ctx is not None:
        ctx.stop_all()
    if sandbox is not None:
        sandbox.destroy()
    problems = journal.restore(since=mark)
    for p in problems:
        log(f"warning: {p}")
    shutil.rmtree(workdir, ignore_errors=True)


def _companion(workload: Workload, ctx: IterationContext, box: dict[str, Any]) -> None:
    try:
        box["samples"] = workload.run(ctx)
    except Exception as e:
        box["error"] = f"{type(e).__name__}: {e}"
