"""``mmbench run``, ``monitor`` and ``restore``: a suite on this machine, in a VM guest, or
adaptively (``--until``); putting the machine back."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from mmbench.commands.common import store_of
from mmbench.errors import (EXIT_NOT_RESTORED, EXIT_RUN_FAILED,
                            UsageError)


def cmd_run(args: argparse.Namespace) -> int:
    from mmbench.config.load import load_suite
    from mmbench.errors import Interrupted
    from mmbench.run.progress import make_progress
    from mmbench.run import signals
    from mmbench.run.runner import last_restore, require_root, run_suite
    _check_until_args(args)   # --check refuses exactly what the run would
    if getattr(args, "check", False):   # validate the suite (files, sizes, settings) and stop
        suite = load_suite(args.config, list(args.set or []) + _vm_sets(args), args.iterations)
        from mmbench.model.store import validate_run_name
        validate_run_name(args.name)
        from mmbench.guest import in_guest
        _check_kernel_flags(args)
        from mmbench.kbuild.spec import is_build_spec
        for spec, items in ((suite.vm.get("kernel"), getattr(args, "kernel_patches", None)),
                            (getattr(args, "baseline_kernel", None), getattr(args, "baseline_kernel_patches", None))):
            if spec and is_build_spec(spec):   # every build input read and checked; nothing built
                from mmbench.kbuild.build import plan, request_from_args
                frags = [*suite.vm.get("kernel_fragments", []), *(getattr(args, "fragment", None) or [])]
                req = request_from_args(spec, list(items or []), list(dict.fromkeys(frags)),
                                        getattr(args, "kconfig", None) or [])
                key = plan(req)[3]
                print(f"kernel {spec}: {len(req.patches)} patch(es), fragments {'+'.join(req.fragment_names())}: "
                      f"cache key {key}")
        if suite.vm.get("kernel") and not in_guest():
            print("settings are checked by the kernel under test when the run boots it")
        else:
            from mmbench.run.settings import validate_suite_settings
            validate_suite_settings(suite)
        print(f"{suite.path}: ok: {len(suite.workloads)} workload(s), {len(suite.settings)} setting(s), "
              f"{len(suite.monitors)} monitor(s); nothing was run")
        print(f"primary rows, the outcomes ({'declared' if suite.primary_declared else 'default from the headline and aims'}): "
              + ", ".join(suite.primary))
        print(f"mechanism rows ({'declared' if suite.mechanisms_declared else 'default from the aims'}): "
              + (", ".join(suite.mechanisms) or "none"))
        for note in suite.notes:
            if note.startswith(("suite.primary", "suite.mechanisms")):
                print(f"note: {note}")
        return 0
    require_root()
    signals.ignore_after_exit()
    _check_kernel_flags(args)
    args.set = list(args.set or []) + _vm_sets(args)
    suite = load_suite(args.config, args.set, args.iterations)
    progress = make_progress(quiet=args.quiet, json_log=args.json_log)
    one_run = False
    try:
        from mmbench.guest import in_guest
        if getattr(args, "baseline_kernel", None) is not None:
            status = _run_ab_kernels(args, suite, progress)
        elif suite.vm.get("kernel") and not in_guest():
            status = _run_in_vm(args, suite, progress)
        elif getattr(args, "until", None) is not None:
            status = _run_adaptive(args, progress, run_suite)
        else:
            one_run = True
            status = run_suite(suite, args.name, store_of(args), force=args.force, progress=progress)
    except (KeyboardInterrupt, Interrupted) as e:
        by = "SIGINT" if isinstance(e, KeyboardInterrupt) else str(e)
        if not last_restore:   # stopped while queueing for the machine: nothing was changed
            print(f"mmbench: stopped by {by} before the run started; nothing was changed", file=sys.stderr)
        else:
            if one_run and last_restore.get("stored") and last_restore.get("status") in ("complete", "failed"):
                # it came after the run had been stored and the machine put back, while the
                # runner was saying so: the status is final, nothing was cut short (one run: in
                # rounds, an earlier round's record would say so of a run still going)
                said = f"stopped by {by} as the run ended; nothing was cut short"
            else:
                said = f"stopped by {by}; " + ("completed iterations are kept" if last_restore.get("stored")
                                               else "no run was stored")
            print(f"mmbench: {said} (run {args.name!r}: {last_restore.get('status')})", file=sys.stderr)
            # the last line says exactly what was and was not put back
            print("mmbench: " + ("machine restored: " if last_restore.get("restored")
                                 else "machine NOT fully restored: ") + str(last_restore.get("summary")),
                  file=sys.stderr)
        return 130 if isinstance(e, KeyboardInterrupt) else 143
    failed, total = _failed_iterations(args) if status == "complete" else (0, 0)
    print(f"run {args.name}: {status}" + (f", but {failed} of {total} iterations failed" if failed else ""),
          file=sys.stderr)
    signals.late_context = f"run {args.name!r}: {status}"
    late = signals.late_signal()
    if late is not None:   # it came as the run ended: nothing was cut short, the status still says so
        print(f"mmbench: stopped by {signals.signal_name(late)} as the run ended; nothing was cut short "
              f"(run {args.name!r}: {status})", file=sys.stderr)
        signals.report_late()
    if last_restore and not last_restore.get("restored"):
        print("mmbench: machine NOT fully restored: " + str(last_restore.get("summary")), file=sys.stderr)
        return EXIT_NOT_RESTORED
    if late is not None:
        return 130 if late == signal.SIGINT else 143
    return 0 if status == "complete" and not failed else EXIT_RUN_FAILED


def _failed_iterations(args: argparse.Namespace) -> tuple[int, int]:
    """(failed, all) iterations of the run just stored: a run with failed iterations exits 5."""
    try:
        run = store_of(args).load_run(args.name)
    except UsageError:
        return 0, 0
    its = [it for w in run.workloads for it in w.iterations]
    return sum(it.status != "ok" for it in its), len(its)


def _check_until_args(args: argparse.Namespace) -> None:
    """``--until`` and the flags that go with it, checked before anything else (``--check`` too)."""
    ab_kernels = getattr(args, "baseline_kernel", None) is not None
    if ab_kernels and getattr(args, "until", None) is not None:
        # A pilot round (--until) is stored as warm-up only, which a guest's `mmbench run` cannot
        # express (a workload runs at least 1 measured iteration), so A/B kernels take a fixed count.
        raise UsageError("--until: not available with --baseline-kernel (its pilot rounds cannot run in a "
                         "guest yet); give --iterations N (rounds, A B then B A)")
    if getattr(args, "until", None) is None:
        for flag in ("baseline", "baseline_set", "max_iterations", "max_time"):
            if getattr(args, flag, None) not in (None, []) and not (ab_kernels and flag in ("baseline", "max_time")):
                raise UsageError(f"--{flag.replace('_', '-')} goes with --until"
                                 + (" (or --baseline-kernel)" if flag == "baseline" else ""))
        return
    from mmbench.campaign import parse_until
    from mmbench.model.sizes import parse_duration
    parse_until(args.until)
    if args.max_time is not None:
        try:
            parse_duration(args.max_time)
        except ValueError as e:
            raise UsageError(f"--max-time: {e}") from None
    if args.baseline_set and not args.baseline:
        raise UsageError("--baseline-set needs --baseline NAME (the name the baseline configuration is stored as)")
    if args.baseline:
        from mmbench.model.store import validate_run_name
        validate_run_name(args.baseline)


def _vm_sets(args: argparse.Namespace) -> list[str]:
    """--kernel and --vm-* are the [vm] table's keys, as --set would give them."""
    out = []
    if getattr(args, "kernel", None) is not None and not args.kernel.strip():
        raise UsageError("--kernel: empty; give a Debian package (debian:linux-image-...), a bzImage/vmlinuz "
                         "path or a kernel build tree")
    for flag, key in (("kernel", "kernel"), ("vm_memory", "memory"), ("vm_cpus", "cpus"), ("vm_numa", "numa"),
                      ("vm_clock", "clock")):
        value = getattr(args, flag, None)
        if value is not None:
            out.append(f"vm.{key}={value}")
    if getattr(args, "kernel", None) is None and getattr(args, "vm_clock", None) is not None:
        raise UsageError("--vm-clock: does not apply to a run on this machine (no --kernel): the instruction "
                         "clock is a TCG guest's; a host run's times are real time")
    if getattr(args, "kernel", None) is None and any(getattr(args, f, None) is not None
                                                     for f in ("vm_memory", "vm_cpus", "vm_numa")):
        raise UsageError("--vm-memory/--vm-cpus/--vm-numa go with --kernel (or a [vm] table in the suite)")
    return out


def _check_kernel_flags(args: argparse.Namespace) -> None:
    from mmbench.commands.kernel import check_build_flags
    check_build_flags(args, getattr(args, "kernel", None))
    if getattr(args, "baseline_kernel", None) is not None:
        if not args.baseline:
            raise UsageError("--baseline-kernel needs --baseline NAME (the name the baseline kernel's run is stored as)")
        if not getattr(args, "kernel", None):
            raise UsageError("--baseline-kernel goes with --kernel (the kernel of run NAME)")
        if args.baseline_set:
            raise UsageError("--baseline-kernel and --baseline-set: give one difference between the arms at a time")
    if getattr(args, "baseline_kernel_patches", None):
        from mmbench.kbuild.spec import is_build_spec
        if not (args.baseline_kernel and is_build_spec(args.baseline_kernel)):
            raise UsageError("--baseline-patch/--baseline-series go with --baseline-kernel source|tree:PATH|git:PATH@REF")


def _guest_kernel(args: argparse.Namespace, spec: str, patches: list[tuple[str, str]], suite: Any,
                  progress: Any) -> Any:
    """The kernel stage's GuestKernel for ``spec`` (built from source, fetched or found).  Both
    kernels of a comparison get the suite's ``[vm] kernel_fragments`` and the command line's
    --fragment/--kconfig."""
    from mmbench.kbuild.resolve import get_kernel
    from mmbench.model.request import KernelRequest
    fragments = [*suite.vm.get("kernel_fragments", []), *(getattr(args, "fragment", None) or [])]
    request = KernelRequest(spec, tuple(patches), tuple(dict.fromkeys(fragments)),
                            tuple(getattr(args, "kconfig", None) or []))
    return get_kernel(request, progress.info)


def _vm_options(suite: Any, guest_kernel: Any) -> Any:
    from mmbench.vm.runner import VmOptions
    vm = suite.vm
    return VmOptions(kernel=guest_kernel, memory_mb=vm["memory_mb"], cpus=vm["cpus"], numa=vm["numa"],
                     disk_gb=vm["disk_gb"], timeout=vm["timeout_s"], accel=vm["accel"], append=vm["append"],
                     clock=vm["clock"], clock_shift=vm["clock_shift"],
                     below_4g_mb=vm["below_4g_mb"])


def _run_ab_kernels(args: argparse.Namespace, suite: Any, progress: Any) -> str:
    """``--kernel A --baseline NAME --baseline-kernel B``: both kernels built first, then rounds of
    one iteration per kernel, one guest boot each, the order turned round each round (A B, B A, ...; campaign.py), so
    drift of the machine hits both; ``--iterations N`` rounds, or with --until until the
    headline intervals are narrow enough."""
    from mmbench.campaign import DEFAULT_MAX_ITERATIONS, run_adaptive
    from mmbench.config.load import load_suite
    from mmbench.model.sizes import parse_duration
    from mmbench.store import open_store
    from mmbench.vm.runner import run_in_vm
    if suite.vm.get("kernel") is None:
        raise UsageError("--baseline-kernel: the run needs --kernel too")
    base_patches = list(getattr(args, "baseline_kernel_patches", None) or [])
    kernels = {args.baseline: (args.baseline_kernel, _guest_kernel(args, args.baseline_kernel, base_patches,
                                                                  suite, progress)),
               args.name: (suite.vm["kernel"], _guest_kernel(args, suite.vm["kernel"],
                                                             list(args.kernel_patches or []), suite, progress))}
    _record_commits(kernels[args.baseline][1], kernels[args.name][1], progress)
    common = [item for item in args.set if not item.split("=", 1)[0].startswith("vm.")]

    def arm(run_name: str) -> Any:
        spec, gk = kernels[run_name]

        def run_round(round_suite: Any, part: str, parts_store: Any, *, force: bool, progress: Any) -> str:
            guest_args: list[str] = []
            for item in common:
                guest_args += ["--set", item]
            guest_args += ["--iterations", "1"]
            for w in round_suite.workloads:
                guest_args += ["--set", f"{w.label}.warmup={w.warmup}"]
            return run_in_vm(_vm_options(round_suite, gk), round_suite, [*guest_args, part], part, parts_store,
                             force=True, progress=progress, open_store=open_store)
        return run_round
    until = None   # refused with --baseline-kernel by _check_until_args
    max_time = None
    if args.max_time is not None:
        try:
            max_time = parse_duration(args.max_time)
        except ValueError as e:
            raise UsageError(f"--max-time: {e}") from None
    rounds = args.max_iterations or (DEFAULT_MAX_ITERATIONS if until else
                                     (args.iterations or max(w.iterations for w in suite.workloads)))
    status, why = run_adaptive(
        lambda sets: load_suite(args.config, sets), list(args.set), args.name, store_of(args), until=until,
        baseline=args.baseline, baseline_sets=[], max_iterations=rounds, max_time=max_time, force=args.force,
        progress=progress, run_suite=None, arm_runners={n: arm(n) for n in kernels})
    print(f"mmbench: {why}", file=sys.stderr)
    return status


def _record_commits(base: Any, new: Any, progress: Any) -> None:
    from mmbench.kbuild.resolve import record_pair_commits
    record_pair_commits(base, new, progress.info)


def _run_in_vm(args: argparse.Namespace, suite: Any, progress: Any) -> str:
    """Run the suite inside a guest; the guest runs `mmbench run` with the same arguments."""
    from mmbench.vm.runner import run_in_vm
    gk = _guest_kernel(args, suite.vm["kernel"], list(getattr(args, "kernel_patches", None) or []), suite, progress)
    opts = _vm_options(suite, gk)
    guest_args: list[str] = []
    for item in args.set:
        if not item.split("=", 1)[0].startswith("vm."):
            guest_args += ["--set", item]
    if args.iterations:
        guest_args += ["--iterations", str(args.iterations)]
    extra_runs: list[str] = []
    if getattr(args, "until", None) is not None:
        guest_args += ["--until", args.until]
        for flag in ("baseline", "max_iterations", "max_time"):
            if getattr(args, flag, None) is not None:
                guest_args += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        for item in args.baseline_set or []:
            guest_args += ["--baseline-set", item]
        if args.baseline and args.baseline_set:
            extra_runs.append(args.baseline)
    from mmbench.store import open_store
    return run_in_vm(opts, suite, [*guest_args, args.name], args.name, store_of(args), force=args.force,
                     progress=progress, open_store=open_store, extra_runs=extra_runs,
                     baseline=args.baseline if getattr(args, "until", None) and not args.baseline_set else None)


def _run_adaptive(args: argparse.Namespace, progress: Any, run_suite: Any) -> str:
    """``run --until``: rounds of one iteration until the headline intervals are narrow enough."""
    from mmbench.campaign import DEFAULT_MAX_ITERATIONS, parse_until, run_adaptive
    from mmbench.config.load import load_suite
    from mmbench.model.sizes import parse_duration
    until = parse_until(args.until)
    max_time = None
    if args.max_time is not None:
        try:
            max_time = parse_duration(args.max_time)
        except ValueError as e:
            raise UsageError(f"--max-time: {e}") from None
    if args.baseline_set and not args.baseline:
        raise UsageError("--baseline-set needs --baseline NAME (the name the baseline configuration is stored as)")
    status, why = run_adaptive(
        lambda sets: load_suite(args.config, sets), list(args.set), args.name, store_of(args), until=until,
        baseline=args.baseline, baseline_sets=args.baseline_set or None,
        max_iterations=args.max_iterations or DEFAULT_MAX_ITERATIONS, max_time=max_time, force=args.force,
        progress=progress, run_suite=run_suite)
    print(f"mmbench: {why}", file=sys.stderr)
    return status


def cmd_monitor(args: argparse.Namespace) -> int:
    from mmbench.model.sizes import parse_duration
    try:
        seconds = parse_duration(args.duration)
    except ValueError as e:
        raise UsageError(f"--duration: {e}") from None
    args.set = [f"idle.duration={seconds}"] + list(args.set or [])
    for m in args.monitor or []:
        args.set.append(f"monitors.{m}")
    args.config = args.config or "monitor"
    args.iterations = 1
    return cmd_run(args)


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
        print(f"mmbench restore: stopped by {by}; "
              + (f"{left} change(s) are still journaled: run 'mmbench restore' again to finish"
                 if left else "nothing is left to restore"), file=sys.stderr)
        return 130 if isinstance(e, KeyboardInterrupt) else 143
    for msg in messages:
        print(msg)
    signals.late_context = "nothing is left to restore" if ok else "some changes are still journaled"
    late = signals.late_signal()
    if late is not None and ok:
        print(f"mmbench restore: {signals.signal_name(late)} arrived as it ended; nothing is left to restore",
              file=sys.stderr)
        signals.report_late()
        return 130 if late == signal.SIGINT else 143
    return 0 if ok else EXIT_NOT_RESTORED
