"""The ``mmbench`` command: a thin layer of argument parsing over the stages.

Exit statuses (docs/cli.md): 0 ok; 1 only when ``compare --fail-on-regression`` found a
significant regression; 2 bad input or usage (one line on stderr naming the file, field or
argument); 3 a kernel feature or tool is missing; 4 a run or restore could not put every change
back (the last line says what is left); 5 a run was stored but is not complete; 70 an internal
error (one line, the traceback saved to a file); 130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import NoReturn

from mmbench import __version__
from mmbench.plugins import module_names
from mmbench.commands.results import (
    cmd_analyze,
    cmd_compare,
    cmd_import,
    cmd_import_mmtests,
    cmd_list,
    cmd_plot,
    cmd_reindex,
    cmd_report,
    cmd_rm,
    cmd_show,
    cmd_verify,
)
from mmbench.commands.common import percentage, positive_int
from mmbench.commands.kernel import add_build_args, cmd_kernel_build, cmd_kernel_list
from mmbench.commands.run import cmd_monitor, cmd_restore, cmd_run
from mmbench.errors import (
    EXIT_INTERNAL,
    EXIT_RUN_FAILED,
    EXIT_UNSUPPORTED,
    EXIT_USAGE,
    EnvironmentUnsupported,
    UsageError,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage too)
        raise UsageError(f"{self.prog}: {message}")


def _family_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--primary",
        metavar="ROW[,ROW...]",
        action="append",
        help="the outcome rows, chosen now instead of the runs' stored [suite] primary (same syntax: "
        "[SECTION:]NAME[@STAT], each naming one row, at most 6; repeat the option or write \\, "
        "for a comma inside a name); the only rows --fail-on-regression reads",
    )
    p.add_argument(
        "--mechanisms",
        metavar="ROW[,ROW...]",
        action="append",
        help="the mechanism rows (moved up or down, never gating), chosen now instead of the runs' "
        "stored [suite] mechanisms",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mmbench",
        description="Benchmark Linux memory management: run suites of workloads "
        "while the kernel is watched, then compare runs.",
    )
    p.add_argument("--version", action="version", version=f"mmbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def results_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--results", metavar="DIR", help="results directory (default $MMBENCH_RESULTS or ./results)")

    r = sub.add_parser("run", help="run a suite and store it under NAME")
    r.add_argument("--config", required=True, metavar="FILE", help="suite file, or the name of a shipped suite")
    results_arg(r)
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting or parameter, e.g. thp.enabled=never, faultin.size=1G",
    )
    r.add_argument("--iterations", type=positive_int, metavar="N", help="measured iterations per workload")
    r.add_argument("--force", action="store_true", help="replace an existing run of the same name")
    r.add_argument(
        "--kernel",
        metavar="KERNEL",
        help="run inside a QEMU guest booting this kernel: "
        "debian:linux-image-..., a bzImage/vmlinuz path (IMAGE:MODULES_DIR) or a build tree; "
        "or built from source first: source, source:linux-source-6.1, tree:PATH, git:PATH@REF",
    )
    add_build_args(r)
    r.add_argument(
        "--baseline-kernel",
        metavar="KERNEL",
        help="with --baseline NAME: run the baseline on this "
        "kernel, alternating with --kernel round by round (A B, B A, ...), --iterations rounds",
    )
    add_build_args(r, "baseline-")
    r.add_argument("--vm-memory", metavar="SIZE", help="guest memory, the machine under test (default 1G)")
    r.add_argument("--vm-cpus", type=positive_int, metavar="N", help="guest CPUs (default 2)")
    r.add_argument("--vm-numa", type=positive_int, metavar="N", help="guest NUMA nodes (default 1)")
    r.add_argument(
        "--vm-clock",
        choices=("auto", "instructions", "host"),
        help="the guest's clock under TCG: instructions (deterministic: time counts the work "
        "done; the default under TCG) or host (emulated time, drifts with the host's load)",
    )
    r.add_argument(
        "--until",
        metavar="ci<PCT%",
        help="size the run so the headline metrics' 95%% "
        "interval is within ±PCT (of the mean, or of the ratio to --baseline): the number of "
        "iterations is fixed before any is measured, from --baseline or a 3-round pilot stored as warm-up",
    )
    r.add_argument("--baseline", metavar="NAME", help="with --until: the run to compare against")
    r.add_argument(
        "--baseline-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --until: run the baseline as this configuration, alternating (A B, B A, ...)",
    )
    r.add_argument("--max-iterations", type=positive_int, metavar="N", help="with --until (default 30)")
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
    c.add_argument(
        "--pvalues",
        action="store_true",
        help="show q-values (Benjamini-Hochberg adjusted within the row's family) and minimum detectable "
        "effects; intervals of the ratio in markdown, JSON and HTML (text: in the primary summary)",
    )
    c.add_argument("--ratio", action="store_true", help="ratios to the baseline and their geometric mean")
    c.add_argument(
        "--stats",
        metavar="LIST",
        help="only these rows, e.g. mean,stddev (the seeds' mean and +/- table) or mean,p95,p99",
    )
    c.add_argument(
        "--convention",
        choices=["mmbench", "mmtests"],
        default="mmbench",
        help="summary definitions: mmbench's (docs/statistics.md) or MMTests' (samples of all "
        "iterations pooled, B-means floored; docs/mmtests-import.md)",
    )
    c.add_argument(
        "--monitor-view",
        action="append",
        default=[],
        metavar="MONITOR:SERIES",
        help="with --convention mmtests: MMTests' per-interval view of one more series (compare-mmtests.pl "
        "--print-monitor MONITOR --sub-heading SERIES), e.g. proc-vmstat:thp_fault_alloc or vmstat:cs; "
        "repeatable",
    )
    _family_args(c)
    c.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 if any significant change in the bad direction exceeds --threshold",
    )
    c.add_argument(
        "--threshold",
        type=percentage,
        default=0.0,
        metavar="PCT",
        help="with --fail-on-regression: ignore regressions smaller than PCT percent",
    )
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

    vf = sub.add_parser(
        "verify",
        help="check a store: every file, digest and index row, and runs that say "
        "running; says what it found and how to repair it, changing nothing without --repair",
    )
    results_arg(vf)
    vf.add_argument(
        "--repair",
        action="store_true",
        help="rebuild a damaged index, remove leftovers and "
        "unreferenced sidecars, mark runs whose writer is gone incomplete, drop damaged cached copies "
        "of PostgreSQL runs (damaged run data is only reported)",
    )
    vf.add_argument("names", nargs="*", metavar="RUN", help="runs to check (default: all, and the whole index)")
    vf.set_defaults(func=cmd_verify)

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
    imm.add_argument(
        "--partial",
        action="store_true",
        help="import a benchmark whose raw logs are in an unknown layout with its duration, "
        "vmstat and monitors only (default: exit 2 naming it)",
    )
    imm.add_argument(
        "--mmtests-rules",
        choices=["v0.25", "v1.00", "head"],
        help="the MMTests release whose report rules compare --convention mmtests follows "
        "(default: found from the tree)",
    )
    imm.add_argument("dir", metavar="DIR", help="MMTests checkout, its work/log, or a folder of run folders")
    imm.add_argument("names", nargs="*", metavar="NAME", help="runs to import (default: all)")
    imm.set_defaults(func=cmd_import_mmtests)

    rp = sub.add_parser("report", help="write a self-contained HTML report")
    results_arg(rp)
    rp.add_argument("-o", "--output", required=True, metavar="FILE.html", help="a regular file, or - for stdout")
    _family_args(rp)
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

    k = sub.add_parser("kernel", help="build kernels under test from source, list the cached builds")
    ksub = k.add_subparsers(dest="kernel_command", required=True, parser_class=_Parser)
    kb = ksub.add_parser("build", help="build a kernel (cached): prints its image, release, key and objects compiled")
    kb.add_argument(
        "spec",
        nargs="?",
        default="source",
        metavar="SPEC",
        help="source (default), source:linux-source-6.1, tree:PATH or git:PATH@REF",
    )
    add_build_args(kb)
    kb.set_defaults(func=cmd_kernel_build)
    kl = ksub.add_parser("list", help="the cached kernel builds")
    kl.set_defaults(func=cmd_kernel_list)

    an = sub.add_parser("analyze", help="analyse saved trace output")
    an.add_argument(
        "kind",
        choices=["irqsoff", "irqsoff-sections"],
        help="irqsoff: the tracer's irqsoff.txt files; irqsoff-sections: the monitor's folders "
        "(hist.txt + symbols.tsv), merged",
    )
    an.add_argument("files", nargs="+")
    an.set_defaults(func=cmd_analyze)

    from mmbench.commands.bisect import add_bisect_parser

    add_bisect_parser(sub, results_arg, _fleet_rounds)

    from mmbench.fleet.commands import add_fleet_commands  # push, pull, submit, agent, jobs, history

    add_fleet_commands(sub, results_arg, add_build_args)
    return p


def _fleet_rounds(*args, **kwargs):
    """bisect --queue's rounds as fleet jobs (fleet/queue.py, imported when used)."""
    from mmbench.fleet.queue import fleet_rounds

    return fleet_rounds(*args, **kwargs)


def _save_traceback(exc: BaseException) -> str:
    """Write the traceback of an unexpected exception to a file; return its path (or why not)."""
    import tempfile
    import traceback

    base = os.environ.get("MMBENCH_CRASH_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "mmbench"
    )
    try:
        os.makedirs(base, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix="crash-", suffix=".txt", dir=base)
        with os.fdopen(fd, "w") as fh:
            fh.write(hide_passwords(f"mmbench {__version__}: {' '.join(sys.argv)}\n"))
            fh.write(hide_passwords("".join(traceback.format_exception(exc))))
        return path
    except OSError as e:
        return f"(could not be saved: {e})"


def hide_passwords(text: str) -> str:
    """Text with the password of every PostgreSQL URL in it removed (a crash report keeps argv)."""
    import re

    text = re.sub(r"(postgres(?:ql)?://[^:/@\s]*):[^@\s]*@", r"\1@", text)
    return re.sub(r"(password=)[^&\s'\"]*", r"\1***", text)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    status = _main(argv)
    if argv is None:  # this process's own command line: a run's or restore's last moments
        _exit_with_late_signal(status)
    return status


def _exit_with_late_signal(status: int) -> None:
    """After a run or restore (the only commands that catch signals), a SIGINT/SIGTERM/SIGHUP that
    arrives until the very last moment still makes the status 130/143, as docs/cli.md promises:
    exit handlers run here, the signal is checked, and the process ends at once (Python's own
    finalisation would put the default handlers back, and a signal then kills it)."""
    signals = sys.modules.get("mmbench.run.signals")
    if signals is None or not signals.catching_after_exit():
        return
    import atexit

    atexit._run_exitfuncs()
    late = signals.late_signal()
    if late is not None and status in (0, EXIT_RUN_FAILED):
        if not signals.late_reported():
            print(
                f"mmbench: {signals.signal_name(late)} arrived as it ended; nothing was cut short "
                f"({signals.late_context})",
                file=sys.stderr,
            )
        status = 130 if late == signal.SIGINT else 143
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(status)


def _main(argv: list[str] | None) -> int:
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
    except KeyboardInterrupt:  # Ctrl-C in a command that changes nothing: no traceback
        print("mmbench: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.filename is None:
            return _internal(e)
        # a path the user gave (or the store holds) cannot be read or written: bad input, one line
        print(f"mmbench: error: {e.filename}: {e.strerror or _one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug: one line, never exit 1, the traceback kept for a report
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
    print(
        f"mmbench: internal error: {type(e).__name__}: {_one_line(e)[:200]} (traceback saved in {path})",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
