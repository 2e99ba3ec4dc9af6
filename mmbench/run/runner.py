"""Run a suite: journal, settings, swap, then every workload iteration into the store.

Order of work: take the system journal (restoring what a killed run left), validate and apply the
suite's settings and swap through the journal, take the environment fingerprint, then for each
workload run its warm-up and measured iterations, storing each one durably as it completes.
Whatever happens — success, a failing workload, SIGINT, SIGTERM — the journal is replayed before
returning; after SIGKILL the next ``mmbench run`` or ``mmbench restore`` does it.
"""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

from mmbench.config.aims import memcg_warning
from mmbench.config.load import Suite
from mmbench.errors import Interrupted, UsageError
from mmbench.run import signals
from mmbench.run.fingerprint import fingerprint
from mmbench.run.iteration import CompanionSpec, IterationPlan, MonitorSpec, run_iteration
from mmbench.run.journal import Journal
from mmbench.run.progress import PlainProgress, Progress
from mmbench.run.settings import apply_settings, validate_suite_settings
from mmbench.model.files import StoreFull
from mmbench.model.store import Store, validate_run_name
from mmbench.model.results import WorkloadRun


# SIGTERM/SIGHUP: a BaseException (mmbench.errors), kept importable from here.
__all__ = ["Interrupted", "run_suite", "restore_machine"]

# What the last run's final restore did, one line: the CLI prints it last, after an interruption.
last_restore: dict[str, object] = {}


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("mmbench run needs root: it changes sysctls and creates memory cgroups")


def setup_swap(suite: Suite, journal: Journal) -> dict:
    if suite.swap.get("type", "none") == "none" and suite.swap.get("zswap") is None:
        return {}
    from mmbench.run import swap as swap_mod  # zram / swap file / zswap

    return swap_mod.setup_swap(suite.swap, suite.budget, journal)


def run_suite(suite: Suite, name: str, store: Store, *, force: bool = False, progress: Progress | None = None) -> str:
    """Run ``suite`` as ``name``; returns the final status (complete, failed, incomplete)."""
    progress = progress or PlainProgress()
    validate_run_name(name)
    require_root()
    if store.exists(name) and not force:
        raise UsageError(f"run {name!r} already exists; use --force to replace it or pick another name")
    last_restore.clear()
    with signals.catch_signals():
        journal = Journal()
        for msg in journal.acquire():
            progress.warn(msg)
        return _run(suite, name, store, force, progress, journal)


def _run(suite: Suite, name: str, store: Store, force: bool, progress: Progress, journal: Journal) -> str:
    writer = None
    status = "failed"
    try:
        signals.checkpoint()
        validated = validate_suite_settings(suite)  # before any is applied, on the kernel that runs it
        apply_settings(validated, journal)
        if not suite.scratch.exists():  # workloads' scratch space: removed with the run
            # and so are the parents it needed (each removed only if still empty: not only ours then)
            missing = [d for d in reversed(suite.scratch.absolute().parents) if not d.exists()]
            for d in missing:
                journal.record("rmdir", path=str(d))
            journal.record("remove", path=str(suite.scratch))
            suite.scratch.mkdir(parents=True)
        swap_info = setup_swap(suite, journal)
        fp = fingerprint(suite.hash, suite.budget, suite.sandbox, suite.aims)
        if swap_info:
            fp["swap"]["setup"] = swap_info
        writer = store.create_run(
            name,
            force=force,
            suite_text=suite.text,
            suite_hash=suite.hash,
            suite_effective=suite.effective,
            fingerprint=fp,
            settings={k: v for k, (p, v) in validated.items()},
            description=suite.description,
        )
        writer.meta["workload_order"] = [w.label for w in suite.workloads]
        writer.meta["suite"] = suite.path.stem  # for history: one suite's runs over time
        progress.total = sum(w.warmup + w.iterations for w in suite.workloads)
        progress.monitors = [m.name for m in suite.monitors]
        mode = "whole machine, no memcg limit" if suite.sandbox == "none" else "memcg sandbox"
        progress.info(
            f"run {name}: {len(suite.workloads)} workload(s), budget "
            f"{suite.budget >> 20} MiB ({mode}), results in {writer.path}"
        )
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
            writer.add_workload(WorkloadRun(label=rw.label, plugin=rw.plugin, params=rw.params, metrics=rw.metrics))
            count = rw.warmup + rw.iterations
            for index in range(count):
                signals.checkpoint()
                warm = index < rw.warmup
                progress.start_iteration(suite.path.stem, rw.label, index, count, warm)
                # The iteration is written into a staging folder, renamed into place when stored:
                # an interrupted or unsaved iteration leaves no partial iter-N (the journal
                # removes the staging folder, after a SIGKILL too).
                staging = writer.staging_dir(rw.label, index)
                journal.record("remove", path=str(staging))
                plan = IterationPlan(
                    run_name=name,
                    label=rw.label,
                    workload=rw.workload,
                    params=rw.params,
                    metrics=rw.metrics,
                    budget=suite.budget,
                    index=index,
                    warmup=warm,
                    itdir=staging,
                    rundir=writer.path,
                    recorded_dir=writer.iteration_dir(rw.label, index),
                    scratch=suite.scratch,
                    actions=suite.actions,
                    monitors=[MonitorSpec(m.name, m.cls, m.interval, m.params) for m in suite.monitors],
                    companions=[CompanionSpec(w, p) for w, p in rw.companions],
                    timeout=rw.timeout,
                    sandbox_mode=suite.sandbox,
                )
                try:
                    result = run_iteration(plan, journal, log=progress.info, announce_unavailable=announce)
                except OSError as e:  # the iteration's files go into the results directory
                    if e.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise StoreFull(_no_space(staging, suite.scratch)) from None
                    raise
                with signals.held():
                    writer.add_iteration(result)  # durable before the next iteration starts
                ok_iterations += result.status == "ok"
                progress.end_iteration(
                    rw.label, index, result.status, result.reason, result.duration.get("elapsed", 0.0)
                )
        with signals.held():
            status = "complete" if ok_iterations else "failed"
            writer.finish(status)
        return status
    except (KeyboardInterrupt, Interrupted) as e:
        with signals.held():
            status = "incomplete"
            if writer is not None:
                by = "SIGINT" if isinstance(e, KeyboardInterrupt) else str(e)
                writer.finish("incomplete", note=f"interrupted by {by}")
        raise
    except StoreFull as e:  # the results filesystem filled up: what was stored is kept
        with signals.held():
            status = "incomplete"
            if writer is not None:
                writer.finish("incomplete", note=str(e))
        raise
    except BaseException:
        with signals.held():
            if writer is not None and status != "complete":
                status = "failed"
                writer.finish("failed", note="mmbench stopped with an error")
        raise
    finally:
        with signals.held():
            problems = journal.restore()
            journal.release()
            if writer is not None:
                writer.discard_staging()
        for p in problems:
            progress.warn(p)
        late = signals.take_pending()
        signals.note_late(late)  # the command still exits 130/143 for it
        if late is not None:
            progress.warn(
                f"{signals.signal_name(late)} arrived while the run was finishing; "
                f"nothing was cut short (run {name}: {status})"
            )
        summary = journal.summary()
        restored = not journal.failed and not journal.left
        last_restore.update(restored=restored, summary=summary, status=status, stored=writer is not None)
        if writer is not None or not restored:  # a usage error stays one line
            progress.info(("machine state restored: " if restored else "machine state NOT fully restored: ") + summary)
        progress.close()


def _no_space(staging: Path, scratch: Path) -> str:
    """Which filesystem filled up under an iteration: the results directory's or the scratch's."""
    full = []
    for what, path in (("results", staging.parent), ("scratch", scratch)):
        try:
            st = os.statvfs(path)
            if st.f_bavail * st.f_frsize < (256 << 10):
                full.append(f"{path} ({what})")
        except OSError:
            pass
    return f"no space left on {' and '.join(full) or 'the device'} (writing iteration files in {staging})"


def restore_machine() -> tuple[list[str], bool]:
    """``mmbench restore``: put back whatever a killed run left changed.

    Returns the messages and whether everything went back.  A signal (Ctrl-C) stops the pass
    between two undo steps; what is left stays journaled and ``KeyboardInterrupt``/``Interrupted``
    is raised for the CLI to say so.
    """
    with signals.catch_signals():
        journal = Journal()
        journal.lock()  # Ctrl-C while queueing for the lock raises here: nothing was touched
        with signals.held():
            if not journal.entries:
                journal.release()
                return [
                    *journal.unreadable,
                    "nothing to restore: no unfinished mmbench changes on this "
                    "machine" + (" (besides the unreadable lines above)" if journal.unreadable else ""),
                ], not journal.unreadable
            try:
                problems = journal.restore(stop_on_signal=True)
            finally:
                journal.release()
        late = signals.take_pending()
        if late is not None and journal.left:
            raise KeyboardInterrupt() if late == signal.SIGINT else Interrupted(signals.signal_name(late))
        signals.note_late(late)
        ok = not journal.failed and not journal.left and not journal.unreadable
        return [
            *journal.unreadable,
            *problems,
            ("restored: " if ok else "NOT fully restored: ") + journal.summary(),
        ], ok
