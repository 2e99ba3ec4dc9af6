"""Run a suite: journal, settings, swap, then every workload iteration into the store.

Order of work: take the system journal (restoring what a killed run left), validate and apply the
suite's settings and swap through the journal, take the environment fingerprint, then for each
workload run its warm-up and measured iterations, storing each one durably as it completes.
Whatever happens — success, a failing workload, SIGINT, SIGTERM — the journal is replayed before
returning; after SIGKILL the next ``mmbench run`` or ``mmbench restore`` does it.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Iterator

from mmbench.config.aims import memcg_warning
from mmbench.config.load import Suite
from mmbench.errors import UsageError
from mmbench.run.fingerprint import fingerprint
from mmbench.run.iteration import CompanionSpec, IterationPlan, MonitorSpec, run_iteration
from mmbench.run.journal import Journal
from mmbench.run.progress import PlainProgress, Progress
from mmbench.run.settings import apply_settings, validate_settings
from mmbench.store.base import Store, validate_run_name
from mmbench.store.model import WorkloadRun


class Interrupted(Exception):
    """SIGTERM (or SIGHUP) arrived: stop, keep what completed, restore the machine."""


@contextmanager
def _signals_raise() -> Iterator[None]:
    """The first SIGINT/SIGTERM/SIGHUP stops the run; later ones are ignored, so a second Ctrl-C
    cannot cut the restore short (the journal would still catch it, on the next run)."""
    stopping = False

    def handler(signum: int, frame: object) -> None:
        nonlocal stopping
        if stopping:
            print("mmbench: still putting the machine back; please wait", file=sys.stderr)
            return
        stopping = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Interrupted(signal.Signals(signum).name)
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("mmbench run needs root: it changes sysctls and creates memory cgroups")


def setup_swap(suite: Suite, journal: Journal) -> dict:
    if suite.swap.get("type", "none") == "none" and suite.swap.get("zswap") is None:
        return {}
    from mmbench.run import swap as swap_mod  # zram / swap file / zswap
    return swap_mod.setup_swap(suite.swap, suite.budget, journal)


def run_suite(suite: Suite, name: str, store: Store, *, force: bool = False,
              progress: Progress | None = None) -> str:
    """Run ``suite`` as ``name``; returns the final status (complete, failed, incomplete)."""
    progress = progress or PlainProgress()
    validate_run_name(name)
    require_root()
    if store.exists(name) and not force:
        raise UsageError(f"run {name!r} already exists; use --force to replace it or pick another name")
    journal = Journal()
    for msg in journal.acquire():
        progress.warn(msg)
    with _signals_raise():
        return _run(suite, name, store, force, progress, journal)


def _run(suite: Suite, name: str, store: Store, force: bool, progress: Progress, journal: Journal) -> str:
    writer = None
    status = "failed"
    try:
        validated = validate_settings(suite.settings)
        apply_settings(validated, journal)
        if not suite.scratch.exists():  # workloads' scratch space: removed with the run
            journal.record("remove", path=str(suite.scratch))
            suite.scratch.mkdir(parents=True)
        swap_info = setup_swap(suite, journal)
        fp = fingerprint(suite.hash, suite.budget, suite.sandbox, suite.aims)
        if swap_info:
            fp["swap"]["setup"] = swap_info
        writer = store.create_run(name, force=force, suite_text=suite.text, suite_hash=suite.hash,
                                  suite_effective=suite.effective, fingerprint=fp,
                                  settings={k: v for k, (p, v) in validated.items()},
                                  description=suite.description)
        writer.meta["workload_order"] = [w.label for w in suite.workloads]
        writer.meta["suite"] = suite.path.stem  # for history: one suite's runs over time
        progress.total = sum(w.warmup + w.iterations for w in suite.workloads)
        progress.monitors = [m.name for m in suite.monitors]
        mode = "whole machine, no memcg limit" if suite.sandbox == "none" else "memcg sandbox"
        progress.info(f"run {name}: {len(suite.workloads)} workload(s), budget "
                      f"{suite.budget >> 20} MiB ({mode}), results in {writer.path}")
        for note in suite.notes:
            progress.info(note)
        warning = memcg_warning(suite.aims, suite.sandbox, suite.budget, fp["memory"].get("MemTotal"))
        if warning:
            progress.warn(warning)
            writer.meta["warnings"] = [warning]
        announced: set[str] = set()

        def announce(mon: str, reason: str) -> None:
            if mon not in announced:
                announced.add(mon)
                progress.warn(f"monitor {mon} is not available here: {reason}")

        ok_iterations = 0
        for rw in suite.workloads:
            writer.add_workload(WorkloadRun(label=rw.label, plugin=rw.plugin, params=rw.params,
                                            metrics=rw.metrics))
            count = rw.warmup + rw.iterations
            for index in range(count):
                warm = index < rw.warmup
                progress.start_iteration(suite.path.stem, rw.label, index, count, warm)
                plan = IterationPlan(
                    run_name=name, label=rw.label, workload=rw.workload, params=rw.params,
                    metrics=rw.metrics, budget=suite.budget, index=index, warmup=warm,
                    itdir=writer.iteration_dir(rw.label, index), rundir=writer.path,
                    scratch=suite.scratch, actions=suite.actions,
                    monitors=[MonitorSpec(m.name, m.cls, m.interval, m.params) for m in suite.monitors],
                    companions=[CompanionSpec(w, p) for w, p in rw.companions],
                    sandbox_mode=suite.sandbox)
                result = run_iteration(plan, journal, log=progress.info, announce_unavailable=announce)
                writer.add_iteration(result)  # durable before the next iteration starts
                ok_iterations += result.status == "ok"
                progress.end_iteration(rw.label, index, result.status, result.reason,
                                       result.duration.get("elapsed", 0.0))
        status = "complete" if ok_iterations else "failed"
        writer.finish(status)
        return status
    except (KeyboardInterrupt, Interrupted) as e:
        status = "incomplete"
        if writer is not None:
            writer.finish("incomplete", note=f"interrupted by {e.__class__.__name__ if isinstance(e, KeyboardInterrupt) else e}")
        raise
    except BaseException:
        if writer is not None and status != "complete":
            writer.finish("failed", note="mmbench stopped with an error")
        raise
    finally:
        problems = journal.restore()
        journal.release()
        for p in problems:
            progress.warn(p)
        if writer is not None:
            progress.info("machine state restored" if not problems else "machine state restored with problems (above)")
        progress.close()


def restore_machine() -> list[str]:
    """``mmbench restore``: put back whatever a killed run left changed."""
    journal = Journal()
    pending = journal.pending()
    msgs = journal.acquire()
    journal.release()
    if not pending:
        return ["nothing to restore: no unfinished mmbench changes on this machine"]
    return msgs or [f"restored {len(pending)} change(s)"]
