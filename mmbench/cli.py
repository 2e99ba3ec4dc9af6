"""The ``mmbench`` command: a thin layer of argument parsing over the stages.

Exit statuses (docs/cli.md): 0 ok; 1 only when ``compare --fail-on-regression`` found a
significant regression; 2 bad input or usage (one line on stderr naming the file, field or
argument); 3 a kernel feature or tool is missing; 4 a run or restore could not put every change
back (the last line says what is left); 5 a run was stored but is not complete; 70 an internal
error (one line, the traceback saved to a file); 130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from mmbench import __version__
from mmbench.plugins import module_names
from mmbench.errors import (EXIT_INTERNAL, EXIT_NOT_RESTORED, EXIT_REGRESSION, EXIT_RUN_FAILED,
                            EXIT_UNSUPPORTED, EXIT_USAGE, EnvironmentUnsupported, UsageError)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage too)
        raise UsageError(f"{self.prog}: {message}")


def _results(args: argparse.Namespace) -> str:
    return str(args.results or os.environ.get("MMBENCH_RESULTS") or "results")


def _store(args: argparse.Namespace):
    from mmbench.store import open_store
    return open_store(_results(args))


def cmd_run(args: argparse.Namespace) -> int:
    from mmbench.config.load import load_suite
    from mmbench.errors import Interrupted
    from mmbench.run.progress import make_progress
    from mmbench.run import signals
    from mmbench.run.runner import last_restore, require_root, run_suite
    if getattr(args, "check", False):   # validate the suite (files, sizes, settings) and stop
        suite = load_suite(args.config, list(args.set or []) + _vm_sets(args), args.iterations)
        from mmbench.model.store import validate_run_name
        validate_run_name(args.name)
        from mmbench.guest import in_guest
        if suite.vm.get("kernel") and not in_guest():
            print("settings are checked by the kernel under test when the run boots it")
        else:
            from mmbench.run.settings import validate_suite_settings
            validate_suite_settings(suite)
        print(f"{suite.path}: ok: {len(suite.workloads)} workload(s), {len(suite.settings)} setting(s), "
              f"{len(suite.monitors)} monitor(s); nothing was run")
        return 0
    require_root()
    signals.ignore_after_exit()
    if getattr(args, "until", None) is None:
        for flag in ("baseline", "baseline_set", "max_iterations", "max_time"):
            if getattr(args, flag, None) not in (None, []):
                raise UsageError(f"--{flag.replace('_', '-')} goes with --until")
    args.set = list(args.set or []) + _vm_sets(args)
    suite = load_suite(args.config, args.set, args.iterations)
    progress = make_progress(quiet=args.quiet, json_log=args.json_log)
    try:
        from mmbench.guest import in_guest
        if suite.vm.get("kernel") and not in_guest():
            status = _run_in_vm(args, suite, progress)
        elif getattr(args, "until", None) is not None:
            status = _run_adaptive(args, progress, run_suite)
        else:
            status = run_suite(suite, args.name, _store(args), force=args.force, progress=progress)
    except (KeyboardInterrupt, Interrupted) as e:
        by = "SIGINT" if isinstance(e, KeyboardInterrupt) else str(e)
        if not last_restore:   # stopped while queueing for the machine: nothing was changed
            print(f"mmbench: stopped by {by} before the run started; nothing was changed", file=sys.stderr)
        else:
            kept = ("completed iterations are kept" if last_restore.get("stored") else "no run was stored")
            print(f"mmbench: stopped by {by}; {kept} (run {args.name!r}: "
                  f"{last_restore.get('status')})", file=sys.stderr)
            # the last line says exactly what was and was not put back
            print("mmbench: " + ("machine restored: " if last_restore.get("restored")
                                 else "machine NOT fully restored: ") + str(last_restore.get("summary")),
                  file=sys.stderr)
        return 130 if isinstance(e, KeyboardInterrupt) else 143
    print(f"run {args.name}: {status}", file=sys.stderr)
    if last_restore and not last_restore.get("restored"):
        print("mmbench: machine NOT fully restored: " + str(last_restore.get("summary")), file=sys.stderr)
        return EXIT_NOT_RESTORED
    return 0 if status == "complete" else EXIT_RUN_FAILED


def _vm_sets(args: argparse.Namespace) -> list[str]:
    """--kernel and --vm-* are the [vm] table's keys, as --set would give them."""
    out = []
    if getattr(args, "kernel", None) is not None and not args.kernel.strip():
        raise UsageError("--kernel: empty; give a Debian package (debian:linux-image-...), a bzImage/vmlinuz "
                         "path or a kernel build tree")
    for flag, key in (("kernel", "kernel"), ("vm_memory", "memory"), ("vm_cpus", "cpus"), ("vm_numa", "numa")):
        value = getattr(args, flag, None)
        if value is not None:
            out.append(f"vm.{key}={value}")
    if getattr(args, "kernel", None) is None and any(getattr(args, f, None) is not None
                                                     for f in ("vm_memory", "vm_cpus", "vm_numa")):
        raise UsageError("--vm-memory/--vm-cpus/--vm-numa go with --kernel (or a [vm] table in the suite)")
    return out


def _run_in_vm(args: argparse.Namespace, suite: Any, progress: Any) -> str:
    """Run the suite inside a guest; the guest runs `mmbench run` with the same arguments."""
    from mmbench.vm.runner import VmOptions, run_in_vm
    vm = suite.vm
    opts = VmOptions(kernel=vm["kernel"], memory_mb=vm["memory_mb"], cpus=vm["cpus"], numa=vm["numa"],
                     disk_gb=vm["disk_gb"], timeout=vm["timeout_s"], accel=vm["accel"], append=vm["append"])
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
    return run_in_vm(opts, suite, [*guest_args, args.name], args.name, _store(args), force=args.force,
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
        lambda sets: load_suite(args.config, sets), list(args.set), args.name, _store(args), until=until,
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


def _load_runs(args: argparse.Namespace, names: list[str]) -> list[Any]:
    store = _store(args)
    return [store.load_run(n) for n in names]


def cmd_compare(args: argparse.Namespace) -> int:
    from mmbench.analysis.compare import build_comparison, regressions
    from mmbench.plugins import exporters
    runs = _load_runs(args, [args.baseline, *args.others])
    from mmbench.analysis.runstatus import run_status_notes
    for text in run_status_notes(runs, [r.name for r in runs]):   # also in the notes: said up front
        print(f"mmbench: warning: {text}", file=sys.stderr)
    comparison = build_comparison(runs, pvalues=args.pvalues, ratio=args.ratio,
                                  convention=getattr(args, "convention", "mmbench"))
    if args.stats:
        _keep_stats(comparison, args.stats)
    fmts = exporters()
    color = args.format == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    sys.stdout.write(fmts[args.format].render(comparison, {"pvalues": args.pvalues, "ratio": args.ratio,
                                                           "color": color}))
    if args.fail_on_regression:
        bad = regressions(comparison, args.threshold)
        if bad:
            print(f"mmbench: {len(bad)} significant regression(s) beyond {args.threshold:g}%", file=sys.stderr)
            return EXIT_REGRESSION
    return 0


def _keep_stats(comparison: Any, spec: str) -> None:
    """Keep only the rows whose statistic is listed ("mean" is Amean, Hmean or Gmean)."""
    wanted = {w.strip().lower() for w in spec.split(",") if w.strip()}
    stats = {r.stat.lower() for s in comparison.sections for r in s.rows}
    unknown = sorted(w for w in wanted if w != "mean" and w not in stats)
    if unknown:
        raise UsageError(f"--stats: no row has the statistic {unknown[0]!r}; "
                         f"the rows have: mean, {', '.join(sorted(stats))}")

    def keep(stat: str) -> bool:
        s = stat.lower()
        return s in wanted or ("mean" in wanted and s in ("amean", "hmean", "gmean"))
    for section in comparison.sections:
        section.rows = [r for r in section.rows if keep(r.stat)]


def cmd_list(args: argparse.Namespace) -> int:
    what = args.what
    if what == "runs":
        runs = _store(args).list_runs()
        if not runs:
            print(f"no runs in {_store(args)}")
            return 0
        import time
        # measured iterations and warm-ups counted apart (a warm-up is never in a comparison)
        width = max(24, *(len(r["name"]) for r in runs))
        print(f"{'NAME':{width}} {'STATUS':10} {'CREATED':16}  {'KERNEL':24} {'MEASURED':>8} {'WARM-UP':>7}  "
              f"DESCRIPTION")
        for r in runs:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"] or 0))
            failed = r.get("failed") or 0
            measured = f"{r['iterations']}" + (f" ({failed} failed)" if failed else "")
            print(f"{r['name']:{width}} {r['status']:10} {when:16}  {r['kernel']:24} {measured:>8} "
                  f"{r.get('warmup', 0):>7}  {r['description']}")
    elif what == "workloads":
        from mmbench.plugins import LOAD_ERRORS, workloads
        for name, cls in workloads().items():
            tag = " (companion)" if cls.companion else ""
            print(f"{name:14} {cls.summary}{tag}")
            if args.verbose:
                _describe(cls.params, cls.metrics)
        for name, err in LOAD_ERRORS["workload"].items():
            print(f"{name:14} [failed to load: {err}]")
    elif what == "monitors":
        from mmbench.plugins import LOAD_ERRORS, monitors
        for name, err in LOAD_ERRORS["monitor"].items():
            print(f"{name:14} [failed to load: {err}]")
        for name, cls in monitors().items():
            reason = cls().unavailable_reason()
            print(f"{name:14} {cls.summary}" + (f"  [unavailable: {reason}]" if reason else ""))
            if args.verbose:
                _describe({"interval": _interval_param(cls), **cls.params}, [])
    elif what == "suites":
        from mmbench.config.load import shipped_suites
        import tomllib
        for name, path in sorted(shipped_suites().items()):
            try:
                desc = tomllib.loads(path.read_text()).get("suite", {}).get("description", "")
            except Exception:
                desc = "(unreadable)"
            print(f"{name:20} {desc}")
    return 0


def _interval_param(cls: Any) -> Any:
    from mmbench.model.params import Param
    return Param("duration", cls.default_interval, "sampling interval")


def _describe(params: dict[str, Any], metrics: list[Any]) -> None:
    for pname, p in params.items():
        choices = f" one of {list(p.choices)}" if p.choices else ""
        print(f"    param  {pname:18} {p.kind:9} default {p.default!s:10} {p.help}{choices}")
    for m in metrics:
        print(f"    metric {m.name:30} {m.unit:8} {m.better}-is-better ({m.kind})")


def cmd_show(args: argparse.Namespace) -> int:
    from mmbench.run.fingerprint import flatten
    run = _store(args).load_run(args.name)
    import time
    print(f"run:      {run.name}")
    print(f"status:   {run.status}")
    print(f"created:  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.created))}")
    print(f"path:     {run.path}")
    print(f"settings: {', '.join(f'{k}={v}' for k, v in run.settings.items()) or 'none'}")
    print("environment:")
    for k, v in flatten(run.fingerprint).items():
        if not k.startswith("vm."):
            print(f"  {k} = {v}")
    print("workloads:")
    for w in run.workloads:
        params = ", ".join(f"{k}={v}" for k, v in w.params.items())
        print(f"  {w.label} ({w.plugin}) {params}")
        for it in w.iterations:
            d = it.duration
            tag = " warm-up" if it.warmup else ""
            print(f"    iteration {it.index}{tag}: {it.status}"
                  + (f" ({it.reason})" if it.reason else "")
                  + (f"  user {d.get('user', 0):.2f}s system {d.get('system', 0):.2f}s "
                     f"elapsed {d.get('elapsed', 0):.2f}s" if d else ""))
    return 0


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
    return 0 if ok else EXIT_NOT_RESTORED


def cmd_reindex(args: argparse.Namespace) -> int:
    """Rebuild index.sqlite from the run folders (the folders are the truth)."""
    from mmbench.store.fs import FileStore
    store = _store(args)
    if not isinstance(store, FileStore):
        raise UsageError("reindex: --results must be a results directory (a PostgreSQL store has no index file)")
    store._check_root()
    if not store.root.is_dir():
        raise UsageError(f"reindex: {store.root}: no such results directory")
    indexed, _, damaged = store.sync(rebuild=True)
    print(f"indexed {indexed} run(s) in {store.root / 'index.sqlite'}"
          + (f"; skipped {len(damaged)} damaged: {', '.join(damaged)}" if damaged else ""))
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    """Remove runs from the folders and the index; every name is checked before anything goes."""
    from mmbench.model.store import validate_run_name
    store = _store(args)
    names = [validate_run_name(n) for n in args.names]
    if hasattr(store, "run_status"):   # a results directory: run.json alone (a damaged run can go too)
        status = {n: store.run_status(n) for n in names}
    else:
        listed = {r["name"]: r["status"] for r in store.list_runs()}
        status = {n: listed.get(n) for n in names}
    for n in names:
        if status[n] is None:
            raise UsageError(f"rm: no run named {n!r} in {store}; nothing removed")
        if status[n] == "running":
            raise UsageError(f"rm: run {n!r} is still running; stop it first; nothing removed")
    for n in dict.fromkeys(names):
        store.remove_run(n)
        print(f"removed {n}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from mmbench.importers.samples import read_samples_file
    from mmbench.importers.store import import_run
    workloads = read_samples_file(Path(args.file))
    path = import_run(_store(args), args.name, workloads, source=args.file, force=args.force)
    print(f"imported {args.file} as run {args.name} ({path})")
    return 0


def cmd_import_mmtests(args: argparse.Namespace) -> int:
    from mmbench.importers.mmtests import import_tree
    done, warnings = import_tree(_store(args), Path(args.dir), list(args.names), prefix=args.prefix or "",
                                 force=args.force)
    for w in warnings:
        print(f"mmbench: warning: {w}", file=sys.stderr)
    for name, path in done:
        print(f"imported MMTests run as {name} ({path})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from mmbench.report.html import write_report
    from mmbench.report.output import resolve_target
    resolve_target(args.output)   # a directory, device or FIFO is refused before any work
    runs = _load_runs(args, [args.baseline, *args.others])
    where = write_report(runs, args.output)
    print(f"wrote {where}", file=sys.stderr if where == "stdout" else sys.stdout)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from mmbench.report.plots import write_plots
    runs = _load_runs(args, [args.baseline, *args.others])
    files = write_plots(runs, Path(args.output_dir), fmt=args.format)
    for f in files:
        print(f)
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    if args.kind == "irqsoff":
        from mmbench.monitors.trace.irqsoff_trace import analyze, check_trace_file
        for f in args.files:   # an empty, binary or unrelated file is refused, not "0 us"
            check_trace_file(f)
        sys.stdout.write(analyze([Path(f) for f in args.files]))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _threshold(text: str) -> float:
    """A percentage ≥ 0: nan, inf or a negative number would turn the regression gate off or on."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite percentage ≥ 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mmbench", description="Benchmark Linux memory management: run suites of workloads "
                "while the kernel is watched, then compare runs.")
    p.add_argument("--version", action="version", version=f"mmbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def results_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--results", metavar="DIR", help="results directory (default $MMBENCH_RESULTS or ./results)")

    r = sub.add_parser("run", help="run a suite and store it under NAME")
    r.add_argument("--config", required=True, metavar="FILE", help="suite file, or the name of a shipped suite")
    results_arg(r)
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting or parameter, e.g. thp.enabled=never, faultin.size=1G")
    r.add_argument("--iterations", type=_positive_int, metavar="N", help="measured iterations per workload")
    r.add_argument("--force", action="store_true", help="replace an existing run of the same name")
    r.add_argument("--kernel", metavar="KERNEL", help="run inside a QEMU guest booting this kernel: "
                   "debian:linux-image-..., a bzImage/vmlinuz path (IMAGE:MODULES_DIR) or a build tree")
    r.add_argument("--vm-memory", metavar="SIZE", help="guest memory, the machine under test (default 1G)")
    r.add_argument("--vm-cpus", type=_positive_int, metavar="N", help="guest CPUs (default 2)")
    r.add_argument("--vm-numa", type=_positive_int, metavar="N", help="guest NUMA nodes (default 1)")
    r.add_argument("--until", metavar="ci<PCT%", help="add iterations until the headline metrics' 95%% "
                   "interval is within ±PCT (of the mean, or of the ratio to --baseline)")
    r.add_argument("--baseline", metavar="NAME", help="with --until: the run to compare against")
    r.add_argument("--baseline-set", action="append", default=[], metavar="KEY=VALUE",
                   help="with --until: run the baseline as this configuration, alternating (A B A B ...)")
    r.add_argument("--max-iterations", type=_positive_int, metavar="N", help="with --until (default 30)")
    r.add_argument("--max-time", metavar="DURATION", help="with --until: stop adding rounds after this long")
    r.add_argument("--check", action="store_true", help="only validate the suite, its sizes and settings; run nothing")
    r.add_argument("--quiet", action="store_true", help="only warnings and errors")
    r.add_argument("--json-log", action="store_true", help="progress as JSON lines on stderr")
    r.add_argument("name", help="run name: a folder name, e.g. 6.12.0-rc3+ (no '/', no leading '.')")
    r.set_defaults(func=cmd_run)

    m = sub.add_parser("monitor", help="record monitors with no workload (the system under your own load)")
    m.add_argument("--duration", default="60s", help="how long to record (e.g. 60s, 5m)")
    m.add_argument("--config", metavar="FILE", help="suite naming the monitors (default: the shipped 'monitor')")
    m.add_argument("--monitor", action="append", metavar="NAME", help="add a monitor")
    results_arg(m)
    m.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    m.add_argument("--force", action="store_true")
    m.add_argument("--quiet", action="store_true")
    m.add_argument("--json-log", action="store_true")
    m.add_argument("name")
    m.set_defaults(func=cmd_monitor)

    c = sub.add_parser("compare", help="compare runs side by side (the first is the baseline)")
    results_arg(c)
    c.add_argument("--format", choices=module_names("exporter"), default="text")
    c.add_argument("--pvalues", action="store_true", help="show p-values and confidence intervals")
    c.add_argument("--ratio", action="store_true", help="ratios to the baseline and their geometric mean")
    c.add_argument("--stats", metavar="LIST",
                   help="only these rows, e.g. mean,stddev (the seeds' mean and +/- table) or mean,p95,p99")
    c.add_argument("--convention", choices=["mmbench", "mmtests"], default="mmbench",
                   help="summary definitions: mmbench's (docs/statistics.md) or MMTests' (samples of all "
                   "iterations pooled, B-means floored; docs/mmtests-import.md)")
    c.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 if any significant change in the bad direction exceeds --threshold")
    c.add_argument("--threshold", type=_threshold, default=0.0, metavar="PCT",
                   help="with --fail-on-regression: ignore regressions smaller than PCT percent")
    c.add_argument("baseline")
    c.add_argument("others", nargs="*")
    c.set_defaults(func=cmd_compare)

    ls = sub.add_parser("list", help="list runs, workloads, monitors or shipped suites")
    results_arg(ls)
    ls.add_argument("what", nargs="?", default="runs", choices=["runs", "workloads", "monitors", "suites"])
    ls.add_argument("-v", "--verbose", action="store_true", help="with parameters and metrics")
    ls.set_defaults(func=cmd_list)

    s = sub.add_parser("show", help="show a run: environment, settings, what ran, status")
    results_arg(s)
    s.add_argument("name")
    s.set_defaults(func=cmd_show)

    rs = sub.add_parser("restore", help="put back whatever a killed mmbench run left changed")
    rs.set_defaults(func=cmd_restore)

    ri = sub.add_parser("reindex", help="rebuild the results directory's index.sqlite from its run folders")
    results_arg(ri)
    ri.set_defaults(func=cmd_reindex)

    rm = sub.add_parser("rm", help="remove runs (folders and index)")
    results_arg(rm)
    rm.add_argument("names", nargs="+", metavar="NAME")
    rm.set_defaults(func=cmd_rm)

    im = sub.add_parser("import", help="create a run from a CSV or JSON file of samples")
    results_arg(im)
    im.add_argument("--force", action="store_true")
    im.add_argument("file")
    im.add_argument("name")
    im.set_defaults(func=cmd_import)

    imm = sub.add_parser("import-mmtests", help="create runs from an MMTests result tree (work/log/<run>/iter-N)")
    results_arg(imm)
    imm.add_argument("--force", action="store_true", help="replace runs of the same name")
    imm.add_argument("--prefix", metavar="TEXT", help="store run R as TEXT+R")
    imm.add_argument("dir", metavar="DIR", help="MMTests checkout, its work/log, or a folder of run folders")
    imm.add_argument("names", nargs="*", metavar="NAME", help="runs to import (default: all)")
    imm.set_defaults(func=cmd_import_mmtests)

    rp = sub.add_parser("report", help="write a self-contained HTML report")
    results_arg(rp)
    rp.add_argument("-o", "--output", required=True, metavar="FILE.html", help="a regular file, or - for stdout")
    rp.add_argument("baseline")
    rp.add_argument("others", nargs="*")
    rp.set_defaults(func=cmd_report)

    pl = sub.add_parser("plot", help="write the report's graphs as image files")
    results_arg(pl)
    pl.add_argument("--format", choices=["png", "svg"], default="png")
    pl.add_argument("-o", "--output-dir", default="plots", metavar="DIR")
    pl.add_argument("baseline")
    pl.add_argument("others", nargs="*")
    pl.set_defaults(func=cmd_plot)

    an = sub.add_parser("analyze", help="analyse saved trace output")
    an.add_argument("kind", choices=["irqsoff"])
    an.add_argument("files", nargs="+")
    an.set_defaults(func=cmd_analyze)

    from mmbench.fleet.commands import add_fleet_commands  # push, pull, submit, agent, jobs, history
    add_fleet_commands(sub, results_arg)
    return p


def _save_traceback(exc: BaseException) -> str:
    """Write the traceback of an unexpected exception to a file; return its path (or why not)."""
    import tempfile
    import traceback
    base = os.environ.get("MMBENCH_CRASH_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "mmbench")
    try:
        os.makedirs(base, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix="crash-", suffix=".txt", dir=base)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"mmbench {__version__}: {' '.join(sys.argv)}\n")
            fh.write("".join(traceback.format_exception(exc)))
        return path
    except OSError as e:
        return f"(could not be saved: {e})"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except UsageError as e:
        print(f"mmbench: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except EnvironmentUnsupported as e:  # the machine lacks something: said plainly, no traceback
        print(f"mmbench: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:   # Ctrl-C in a command that changes nothing: no traceback
        print("mmbench: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.filename is None:
            return _internal(e)
        # a path the user gave (or the store holds) cannot be read or written: bad input, one line
        print(f"mmbench: error: {e.filename}: {e.strerror or _one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:   # a bug: one line, never exit 1, the traceback kept for a report
        return _internal(e)


def _quiet_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _internal(e: BaseException) -> int:
    path = _save_traceback(e)
    print(f"mmbench: internal error: {type(e).__name__}: {_one_line(e)[:200]} (traceback saved in {path})",
          file=sys.stderr)
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
