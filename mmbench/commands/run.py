"""``mmbench run``, ``monitor`` and ``restore``: the command line parsed once into a ``RunRequest``
(``parse_request``), run by the driver (mmbench/driver/), its end said with the exit status;
putting the machine back."""

from __future__ import annotations

import argparse
import re
import signal
import sys

from mmbench.commands.common import store_at
from mmbench.errors import EXIT_NOT_RESTORED, EXIT_RUN_FAILED, UsageError
from mmbench.model.request import KernelRequest, RunRequest, VmShape


def parse_until(text: str) -> float:
    """``--until ci<PCT%`` → PCT: the 95% interval's half-width target, in percent."""
    m = re.fullmatch(r"\s*ci\s*<\s*([0-9]*\.?[0-9]+)\s*%?\s*", text or "")
    if not m:
        raise UsageError(f"--until {text!r}: expected ci<PCT, e.g. 'ci<2%' (the 95% interval within ±2%)")
    pct = float(m.group(1))
    if not 0 < pct <= 1000:
        raise UsageError(f"--until {text!r}: the target must be above 0 and at most 1000 percent")
    return pct


def parse_request(args: argparse.Namespace) -> RunRequest:
    """``mmbench run``'s arguments as one request, every argument checked here (exit 2 naming it):
    ``--until`` and the flags that go with it, the kernels' build inputs, the ``--vm-*`` flags."""
    from mmbench.kbuild.resolve import kernel_request
    from mmbench.model.sizes import parse_duration
    from mmbench.model.store import validate_run_name

    until, baseline = args.until, args.baseline
    baseline_set = list(args.baseline_set or [])
    max_iterations, max_time = args.max_iterations, args.max_time
    kernel, baseline_kernel = args.kernel, args.baseline_kernel
    patches, base_patches = list(args.kernel_patches or []), list(args.baseline_kernel_patches or [])
    kconfigs, fragments = list(args.kconfig or []), list(args.fragment or [])
    vm = VmShape(args.vm_memory, args.vm_cpus, args.vm_numa, args.vm_clock)
    # --until and the flags that go with it first (--check refuses exactly what the run would)
    ab_kernels = baseline_kernel is not None
    if ab_kernels and until is not None:
        # A pilot round (--until) is stored as warm-up only, which a guest's `mmbench run` cannot
        # express (a workload runs at least 1 measured iteration), so A/B kernels take a fixed count.
        raise UsageError(
            "--until: not available with --baseline-kernel (its pilot rounds cannot run in a "
            "guest yet); give --iterations N (rounds, A B then B A)"
        )
    until_pct = max_time_s = None
    if until is None:
        for flag, value in (
            ("baseline", baseline),
            ("baseline_set", baseline_set),
            ("max_iterations", max_iterations),
            ("max_time", max_time),
        ):
            if value not in (None, []) and not (ab_kernels and flag in ("baseline", "max_time")):
                raise UsageError(
                    f"--{flag.replace('_', '-')} goes with --until"
                    + (" (or --baseline-kernel)" if flag == "baseline" else "")
                )
    else:
        until_pct = parse_until(until)
    if max_time is not None:
        try:
            max_time_s = parse_duration(max_time)
        except ValueError as e:
            raise UsageError(f"--max-time: {e}") from None
    if until is not None:
        if baseline_set and not baseline:
            raise UsageError("--baseline-set needs --baseline NAME (the name the baseline configuration is stored as)")
        if baseline:
            validate_run_name(baseline)
    # the kernels and their build inputs
    new_kernel = kernel_request(kernel, patches, fragments, kconfigs)
    base_kernel = None
    if ab_kernels:
        if not baseline:
            raise UsageError(
                "--baseline-kernel needs --baseline NAME (the name the baseline kernel's run is stored as)"
            )
        if not kernel:
            raise UsageError("--baseline-kernel goes with --kernel (the kernel of run NAME)")
        if baseline_set:
            raise UsageError("--baseline-kernel and --baseline-set: give one difference between the arms at a time")
    if base_patches:
        from mmbench.kbuild.spec import is_build_spec

        if not (baseline_kernel and is_build_spec(baseline_kernel)):
            raise UsageError(
                "--baseline-patch/--baseline-series go with --baseline-kernel source|tree:PATH|git:PATH@REF"
            )
    if ab_kernels:
        base_kernel = KernelRequest(baseline_kernel, tuple(base_patches), tuple(fragments), tuple(kconfigs))
    # --kernel and --vm-* are the [vm] table's keys
    if kernel is not None and not kernel.strip():
        raise UsageError(
            "--kernel: empty; give a Debian package (debian:linux-image-...), a bzImage/vmlinuz "
            "path or a kernel build tree"
        )
    if kernel is None and vm.clock is not None:
        raise UsageError(
            "--vm-clock: does not apply to a run on this machine (no --kernel): the instruction "
            "clock is a TCG guest's; a host run's times are real time"
        )
    if kernel is None and any(v is not None for v in (vm.memory, vm.cpus, vm.numa)):
        raise UsageError("--vm-memory/--vm-cpus/--vm-numa go with --kernel (or a [vm] table in the suite)")
    return RunRequest(
        config=args.config,
        name=args.name,
        sets=tuple(args.set or []),
        iterations=args.iterations,
        force=args.force,
        results=args.results,
        kernel=new_kernel,
        baseline_kernel=base_kernel,
        vm=vm,
        until_pct=until_pct,
        baseline=baseline,
        baseline_sets=tuple(baseline_set),
        max_iterations=max_iterations,
        max_time_s=max_time_s,
        check=args.check,
        quiet=args.quiet,
        json_log=args.json_log,
    )


def cmd_run(args: argparse.Namespace) -> int:
    return run(parse_request(args))


def run(request: RunRequest) -> int:
    """Run ``request`` (or with ``check`` only validate it); the exit status."""
    from mmbench.driver.run import load, mode, run_request
    from mmbench.errors import Interrupted
    from mmbench.run.progress import make_progress
    from mmbench.run import signals
    from mmbench.run.runner import last_restore, require_root

    if request.check:  # validate the suite (files, sizes, settings) and stop
        return _check(request)
    require_root()
    signals.ignore_after_exit()
    suite = load(request)
    progress = make_progress(quiet=request.quiet, json_log=request.json_log)
    one_run = mode(request, suite) == "single"
    name = request.name
    try:
        outcome = run_request(request, suite, store_at(request.results), progress)
        if outcome.note is not None:
            print(f"mmbench: {outcome.note}", file=sys.stderr)
        status = outcome.status
    except (KeyboardInterrupt, Interrupted) as e:
        by = "SIGINT" if isinstance(e, KeyboardInterrupt) else str(e)
        if not last_restore:  # stopped while queueing for the machine: nothing was changed
            print(f"mmbench: stopped by {by} before the run started; nothing was changed", file=sys.stderr)
        else:
            if one_run and last_restore.get("stored") and last_restore.get("status") in ("complete", "failed"):
                # it came after the run had been stored and the machine put back, while the
                # runner was saying so: the status is final, nothing was cut short (one run: in
                # rounds, an earlier round's record would say so of a run still going)
                said = f"stopped by {by} as the run ended; nothing was cut short"
            else:
                said = f"stopped by {by}; " + (
                    "completed iterations are kept" if last_restore.get("stored") else "no run was stored"
                )
            print(f"mmbench: {said} (run {name!r}: {last_restore.get('status')})", file=sys.stderr)
            # the last line says exactly what was and was not put back
            print(
                "mmbench: "
                + ("machine restored: " if last_restore.get("restored") else "machine NOT fully restored: ")
                + str(last_restore.get("summary")),
                file=sys.stderr,
            )
        return 130 if isinstance(e, KeyboardInterrupt) else 143
    failed, total = _failed_iterations(request) if status == "complete" else (0, 0)
    print(f"run {name}: {status}" + (f", but {failed} of {total} iterations failed" if failed else ""), file=sys.stderr)
    signals.late_context = f"run {name!r}: {status}"
    late = signals.late_signal()
    if late is not None:  # it came as the run ended: nothing was cut short, the status still says so
        print(
            f"mmbench: stopped by {signals.signal_name(late)} as the run ended; nothing was cut short "
            f"(run {name!r}: {status})",
            file=sys.stderr,
        )
        signals.report_late()
    if last_restore and not last_restore.get("restored"):
        print("mmbench: machine NOT fully restored: " + str(last_restore.get("summary")), file=sys.stderr)
        return EXIT_NOT_RESTORED
    if late is not None:
        return 130 if late == signal.SIGINT else 143
    return 0 if status == "complete" and not failed else EXIT_RUN_FAILED


def _check(request: RunRequest) -> int:
    """``run --check``: the suite, its sizes and settings and the kernels' build inputs validated;
    nothing is run or built."""
    from mmbench.driver.run import kernel_requests, load
    from mmbench.model.guest import in_guest
    from mmbench.kbuild.resolve import builds_from_source, plan_line
    from mmbench.model.store import validate_run_name

    suite = load(request)
    validate_run_name(request.name)
    for kernel in reversed(kernel_requests(request, suite)):  # every build input read and checked
        if builds_from_source(kernel):
            print(plan_line(kernel))
    if suite.vm.get("kernel") and not in_guest():
        print("settings are checked by the kernel under test when the run boots it")
    else:
        from mmbench.run.settings import validate_suite_settings

        validate_suite_settings(suite)
    print(
        f"{suite.path}: ok: {len(suite.workloads)} workload(s), {len(suite.settings)} setting(s), "
        f"{len(suite.monitors)} monitor(s); nothing was run"
    )
    print(
        "primary rows, the outcomes "
        f"({'declared' if suite.primary_declared else 'default from the headline and aims'}): "
        + ", ".join(suite.primary)
    )
    print(
        f"mechanism rows ({'declared' if suite.mechanisms_declared else 'default from the aims'}): "
        + (", ".join(suite.mechanisms) or "none")
    )
    for note in suite.notes:
        if note.startswith(("suite.primary", "suite.mechanisms")):
            print(f"note: {note}")
    return 0


def _failed_iterations(request: RunRequest) -> tuple[int, int]:
    """(failed, all) iterations of the run just stored: a run with failed iterations exits 5."""
    try:
        run = store_at(request.results).load_run(request.name)
    except UsageError:
        return 0, 0
    its = [it for w in run.workloads for it in w.iterations]
    return sum(it.status != "ok" for it in its), len(its)


def cmd_monitor(args: argparse.Namespace) -> int:
    from mmbench.model.sizes import parse_duration

    try:
        seconds = parse_duration(args.duration)
    except ValueError as e:
        raise UsageError(f"--duration: {e}") from None
    sets = [f"idle.duration={seconds}", *(args.set or []), *(f"monitors.{m}" for m in args.monitor or [])]
    return run(
        RunRequest(
            config=args.config or "monitor",
            name=args.name,
            sets=tuple(sets),
            iterations=1,
            force=args.force,
            results=args.results,
            quiet=args.quiet,
            json_log=args.json_log,
        )
    )


def cmd_restore(args: argparse.Namespace) -> int:
    from mmbench.errors import Interrupted
    from mmbench.run import signals
    from mmbench.run.runner import require_root, restore_machine

    require_root()
    signals.ignore_after_exit()
    try:
        messages, ok = restore_machine()
    except (KeyboardInterrupt, Interrupted) as e:
        from mmbench.run.journal import Journal

        left = len(Journal().pending())
        by = "SIGINT" if isinstance(e, KeyboardInterrupt) else str(e)
        print(
            f"mmbench restore: stopped by {by}; "
            + (
                f"{left} change(s) are still journaled: run 'mmbench restore' again to finish"
                if left
                else "nothing is left to restore"
            ),
            file=sys.stderr,
        )
        return 130 if isinstance(e, KeyboardInterrupt) else 143
    for msg in messages:
        print(msg)
    signals.late_context = "nothing is left to restore" if ok else "some changes are still journaled"
    late = signals.late_signal()
    if late is not None and ok:
        print(
            f"mmbench restore: {signals.signal_name(late)} arrived as it ended; nothing is left to restore",
            file=sys.stderr,
        )
        signals.report_late()
        return 130 if late == signal.SIGINT else 143
    return 0 if ok else EXIT_NOT_RESTORED
