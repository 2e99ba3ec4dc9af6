"""The commands that read the result store: ``compare``, ``list``, ``show``, ``report``, ``plot``,
``analyze``, ``import``, ``import-mmtests``, ``reindex``, ``verify``, ``rm``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from mmbench.commands.common import store_of
from mmbench.report import listing
from mmbench.errors import EXIT_REGRESSION, EXIT_USAGE, UsageError


def _load_runs(args: argparse.Namespace, names: list[str]) -> list[Any]:
    store = store_of(args)
    return [store.load_run(n) for n in names]


def _families(args: argparse.Namespace) -> dict[str, list[str] | None]:
    """``--primary`` / ``--mechanisms``: the declared families chosen at compare time."""
    from mmbench.analysis.compare.families import parse_override

    return {
        "primary": parse_override("--primary", args.primary) if args.primary is not None else None,
        "mechanisms": parse_override("--mechanisms", args.mechanisms) if args.mechanisms is not None else None,
    }


def cmd_compare(args: argparse.Namespace) -> int:
    from mmbench.analysis.compare import build_comparison, regressions
    from mmbench.analysis.compare.stat_filter import keep_stats
    from mmbench.plugins import exporters

    chosen = _families(args)
    runs = _load_runs(args, [args.baseline, *args.others])
    from mmbench.analysis.runstatus import run_status_notes

    for text in run_status_notes(runs, [r.name for r in runs]):  # also in the notes: said up front
        print(f"mmbench: warning: {text}", file=sys.stderr)
    views = _monitor_views(args, runs)
    comparison = build_comparison(
        runs,
        pvalues=args.pvalues,
        ratio=args.ratio,
        convention=getattr(args, "convention", "mmbench"),
        monitor_views=views,
        **chosen,
    )
    # the gate reads every primary row, whatever --stats leaves in the printed tables
    bad = regressions(comparison, args.threshold) if args.fail_on_regression else []
    if args.stats:
        keep_stats(comparison, args.stats)
    fmts = exporters()
    color = args.format == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    sys.stdout.write(
        fmts[args.format].render(comparison, {"pvalues": args.pvalues, "ratio": args.ratio, "color": color})
    )
    if args.fail_on_regression:
        if bad:
            print(f"mmbench: {len(bad)} significant regression(s) beyond {args.threshold:g}%", file=sys.stderr)
            return EXIT_REGRESSION
    return 0


def _monitor_views(args: argparse.Namespace, runs: list[Any]) -> list[tuple[str, str]]:
    """``--monitor-view`` as (monitor, series); it reads MMTests' monitor files of imported runs."""
    asked = getattr(args, "monitor_view", None) or []
    if not asked:
        return []
    from mmbench.analysis.mmtests_monitors import parse_monitor_view

    views = []
    for text in asked:
        try:
            views.append(parse_monitor_view(text))
        except ValueError as e:
            raise UsageError(f"--monitor-view {e}") from None
    if getattr(args, "convention", "mmbench") != "mmtests":
        raise UsageError(
            "--monitor-view needs --convention mmtests (it is MMTests' compare-mmtests.pl --print-monitor view)"
        )
    native = [r.name for r in runs if (r.fingerprint or {}).get("imported_from") != "mmtests"]
    if native:
        raise UsageError(
            f"--monitor-view: run {native[0]} was not imported from MMTests (import-mmtests); "
            f"the view reads MMTests' monitor files"
        )
    return views


def cmd_list(args: argparse.Namespace) -> int:
    what = args.what
    if what == "runs":
        runs = store_of(args).list_runs()
        if not runs:
            print(f"no runs in {store_of(args)}")
            return 0
        sys.stdout.write(listing.runs_table(runs))
    elif what == "workloads":
        from mmbench.plugins import LOAD_ERRORS, workloads

        for name, cls in workloads().items():
            tag = " (companion)" if cls.companion else ""
            print(f"{name:14} {cls.summary}{tag}")
            if args.verbose:
                sys.stdout.write(listing.plugin_details(cls.params, cls.metrics))
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
                sys.stdout.write(listing.plugin_details({"interval": _interval_param(cls), **cls.params}, []))
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


def cmd_show(args: argparse.Namespace) -> int:
    from mmbench.model.results import summarise_rounds
    from mmbench.run.fingerprint import flatten

    run = store_of(args).load_run(args.name)
    sys.stdout.write(listing.run_details(run, flatten(summarise_rounds(run.fingerprint))))
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    """Rebuild index.sqlite from the run folders (the folders are the truth)."""
    from mmbench.store.fs import FileStore

    store = store_of(args)
    if not isinstance(store, FileStore):
        raise UsageError("reindex: --results must be a results directory (a PostgreSQL store has no index file)")
    store._check_root()
    if not store.root.is_dir():
        raise UsageError(f"reindex: {store.root}: no such results directory")
    indexed, _, damaged = store.sync(rebuild=True)
    print(
        f"indexed {indexed} run(s) in {store.root / 'index.sqlite'}"
        + (f"; skipped {len(damaged)} damaged: {', '.join(damaged)}" if damaged else "")
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Check a whole store (or the runs named) and say what is wrong and how to repair it; exit 2
    when damaged or unsafe files remain."""
    from mmbench.store.verify import render, verify

    store = store_of(args)
    report = verify(store, list(args.names), repair=args.repair)
    sys.stdout.write(render(report))
    left = report.left()
    if left:
        print(f"mmbench: error: verify: {left} damaged or unsafe file(s) in {store} (listed above)", file=sys.stderr)
        return EXIT_USAGE
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    """Remove runs from the folders and the index; every name is checked before anything goes."""
    from mmbench.model.store import validate_run_name

    store = store_of(args)
    names = [validate_run_name(n) for n in args.names]
    if hasattr(store, "run_status"):  # a results directory: run.json alone (a damaged run can go too)
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
        stale = store.stale_running(n, "remove") if hasattr(store, "stale_running") else None
        if stale:  # it says running, but nobody provably writes it: removed, and why said
            print(f"mmbench: warning: {stale}", file=sys.stderr)
        store.remove_run(n)
        print(f"removed {n}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from mmbench.importers.samples import read_samples_file
    from mmbench.importers.store import import_run

    workloads = read_samples_file(Path(args.file))
    path = import_run(store_of(args), args.name, workloads, source=args.file, force=args.force)
    print(f"imported {args.file} as run {args.name} ({path})")
    return 0


def cmd_import_mmtests(args: argparse.Namespace) -> int:
    from mmbench.importers.mmtests import import_tree
    from mmbench.model.store import copied_runs

    with copied_runs():  # the MMTests tree still exists: no file-by-file fsync
        done, warnings = import_tree(
            store_of(args),
            Path(args.dir),
            list(args.names),
            prefix=args.prefix or "",
            force=args.force,
            partial=args.partial,
            rules=args.mmtests_rules,
        )
    for w in warnings:
        print(f"mmbench: warning: {w}", file=sys.stderr)
    for name, path in done:
        print(f"imported MMTests run as {name} ({path})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from mmbench.report.html import write_report
    from mmbench.report.output import resolve_target

    resolve_target(args.output)  # a directory, device or FIFO is refused before any work
    chosen = _families(args)
    runs = _load_runs(args, [args.baseline, *args.others])
    where = write_report(runs, args.output, **chosen)
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

        for f in args.files:  # an empty, binary or unrelated file is refused, not "0 us"
            check_trace_file(f)
        sys.stdout.write(analyze([Path(f) for f in args.files]))
    elif args.kind == "irqsoff-sections":
        from mmbench.monitors.trace import irqsoff_sections as sections

        sys.stdout.write(sections.analyze_dirs([Path(f) for f in args.files]))
    return 0
