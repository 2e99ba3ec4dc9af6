"""The fleet's subcommands: push, pull, submit (a ``RunRequest`` queued as a job), agent, jobs,
history; ``cli.py`` registers them, heavy imports happen inside each command."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

from mmbench.errors import UsageError


def _store(spec: str | None, option: str = "--results"):
    from mmbench.store import open_store

    return open_store(spec, option)


def _queue_url(args: argparse.Namespace) -> str:
    url = args.queue or os.environ.get("MMBENCH_QUEUE") or args.results or os.environ.get("MMBENCH_RESULTS")
    if not url or not url.startswith(("postgresql://", "postgres://")):
        raise UsageError("--queue: give the lab's PostgreSQL URL (postgresql://...) or set MMBENCH_QUEUE")
    from mmbench.store.pg import check_url

    check_url(url, "--queue")
    return url


def _refuse_passwords(command: str, args: argparse.Namespace) -> None:
    """submit and agent hand URLs on (the job table, agents' children): one with a password is refused."""
    from mmbench.store.pg import redact, url_password

    for what, url in (
        ("--queue", args.queue or os.environ.get("MMBENCH_QUEUE")),
        ("--results", args.results or os.environ.get("MMBENCH_RESULTS")),
    ):
        if url and url.startswith(("postgresql://", "postgres://")) and url_password(url) is not None:
            raise UsageError(
                f"{command} {what} {redact(url)}: the URL holds a password, which {command} would "
                f"pass on to the job table and agents; give it to libpq instead (a service "
                f"file with ~/.pgpass, or PGPASSWORD in the agent's environment)"
            )


def cmd_push(args: argparse.Namespace) -> int:
    from mmbench.store.transfer import copy_runs

    src, dst = _store(args.results), _store(args.to, "--to")
    for line in copy_runs(src, dst, args.runs, force=args.force):
        print(f"pushed {line} to {dst}")
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from mmbench.store.transfer import copy_runs

    src, dst = _store(getattr(args, "from"), "--from"), _store(args.results)
    for line in copy_runs(src, dst, args.runs, force=args.force):
        print(f"pulled {line} into {dst}")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from mmbench.driver.jobs import job_entry
    from mmbench.fleet.queue import submit
    from mmbench.kbuild.resolve import kernel_request, pack_inputs
    from mmbench.model.request import RunRequest
    from mmbench.model.store import validate_run_name

    _refuse_passwords("submit", args)
    url = _queue_url(args)
    kernel = kernel_request(
        args.kernel, list(args.kernel_patches or []), list(args.fragment or []), list(args.kconfig or [])
    )
    if kernel is not None:
        pack_inputs(kernel)  # every patch and config file read and checked before anything is queued
    if args.interleave:
        names = [validate_run_name(n) for n in args.names]
        if len(names) != len(args.interleave):
            raise UsageError(
                f"--interleave: {len(args.interleave)} configuration(s) but {len(names)} "
                f"run name(s); give one NAME per configuration"
            )
        configs = []
        for spec, name in zip(args.interleave, names):
            # CONFIG[,KEY=VALUE...]: each configuration is a suite plus its own --set values
            config, *sets = spec.split(",")
            configs.append(job_entry(RunRequest(config=config, name=name, sets=(*args.set, *sets), kernel=kernel)))
        job: dict[str, Any] = {
            "kind": "interleave",
            "configs": configs,
            "rounds": args.rounds,
            "name": "+".join(names),
            "results": args.results,
        }
    else:
        if not args.config or len(args.names) != 1:
            raise UsageError("submit: give --config SUITE and one NAME (or --interleave A B ... with one NAME each)")
        name = validate_run_name(args.names[0])
        job = {
            "kind": "run",
            **job_entry(
                RunRequest(
                    config=args.config, name=name, sets=tuple(args.set), iterations=args.iterations, kernel=kernel
                )
            ),
            "name": name,
            "results": args.results,
        }
    job_id = submit(url, args.machines, job)
    print(f"queued job {job_id} ({job['name']}) for machines tagged {args.machines!r}")
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    from mmbench.fleet.queue import run_agent

    _refuse_passwords("agent", args)
    tags = [t for t in args.tags.split(",") if t]
    if not tags:
        raise UsageError("--tags: give at least one machine tag")
    if os.geteuid() != 0:
        raise UsageError("mmbench agent needs root: the runs it takes change sysctls and create cgroups")
    run_agent(_queue_url(args), tags, results=args.results)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    from mmbench.fleet.queue import list_jobs

    jobs = list_jobs(_queue_url(args))
    if args.json:
        import json

        print(json.dumps(jobs, indent=1))
        return 0
    print(f"{'id':>5}  {'status':9} {'tag':12} {'name':28} {'machine':20} {'try':>3}  started")
    for j in jobs:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(j["started"])) if j["started"] else "-"
        print(
            f"{j['id']:>5}  {j['status']:9} {j['tag']:12} {j['name']:28} {j['machine'] or '-':20} "
            f"{j['attempt']:>3}  {when}"
        )
        if j["status"] == "failed" and j["reason"]:
            print(f"{'':7}failed: {j['reason']}")
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j["status"]] = counts.get(j["status"], 0) + 1
    print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no jobs")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from mmbench.analysis.history import PSEUDO_FIELDS, field_values, history
    from mmbench.report.history import render_html, render_series, render_text

    store = _store(args.results)
    if args.fields:
        for name, values in field_values(store).items():
            shown = ", ".join(v or "''" for v in values[:6]) + (
                f", ... ({len(values)} values)" if len(values) > 6 else ""
            )
            print(f"{name:32} {shown}" + (f"   [{PSEUDO_FIELDS[name]}]" if name in PSEUDO_FIELDS else ""))
        return 0
    metrics = [m.strip() for m in (args.metric or []) for m in m.split(",") if m.strip()]
    h = history(
        store,
        machine=args.machine,
        suite=args.suite,
        metrics=metrics,
        where=args.where,
        split_by=[f.strip() for f in args.split_by for f in f.split(",") if f.strip()],
    )
    if args.series:
        sys.stdout.write(render_series(h))
    elif args.output:
        from mmbench.report.output import write_output

        title = f"{args.suite or 'all suites'} on {args.machine or 'all machines'}"
        where = write_output(args.output, render_html(h, title))
        print(f"wrote {where}", file=sys.stderr if where == "stdout" else sys.stdout)
    else:
        sys.stdout.write(render_text(h))
    return 0


def add_fleet_commands(
    sub: Any,
    results_arg: Callable[[argparse.ArgumentParser], None],
    build_args: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The fleet's subcommands on ``sub``; ``results_arg`` and ``build_args`` add the flags they
    share with the other commands (--results; --patch/--series/--kconfig/--fragment)."""

    def queue_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--queue",
            metavar="URL",
            help="the lab's PostgreSQL (default $MMBENCH_QUEUE, else --results when it is a PostgreSQL URL)",
        )

    ps = sub.add_parser("push", help="copy runs to another store (a results directory or PostgreSQL)")
    results_arg(ps)
    ps.add_argument("--to", required=True, metavar="STORE", help="target: DIR or postgresql://...")
    ps.add_argument("--force", action="store_true", help="replace runs of the same name there")
    ps.add_argument("runs", nargs="+", metavar="RUN")
    ps.set_defaults(func=cmd_push)

    pu = sub.add_parser("pull", help="copy runs from another store into this one")
    results_arg(pu)
    pu.add_argument("--from", required=True, metavar="STORE", help="source: DIR or postgresql://...")
    pu.add_argument("--force", action="store_true")
    pu.add_argument("runs", nargs="+", metavar="RUN")
    pu.set_defaults(func=cmd_pull)

    sm = sub.add_parser("submit", help="queue a run for a test machine (see mmbench agent)")
    results_arg(sm)
    queue_arg(sm)
    sm.add_argument("--config", metavar="SUITE", help="suite file or shipped suite name")
    sm.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sm.add_argument("--kernel", metavar="KERNEL", help="run in a VM with this kernel (see mmbench run)")
    build_args(sm)  # their files' contents travel with the job
    sm.add_argument("--iterations", type=int, metavar="N")
    sm.add_argument("--machines", required=True, metavar="TAG", help="run on an agent with this tag")
    sm.add_argument(
        "--interleave",
        nargs="+",
        metavar="CONFIG[,KEY=VALUE...]",
        help="configurations run alternately on one machine (A B A B ...), one NAME each",
    )
    sm.add_argument("--rounds", type=int, default=3, metavar="N", help="rounds of --interleave (default 3)")
    sm.add_argument("names", nargs="+", metavar="NAME")
    sm.set_defaults(func=cmd_submit)

    ag = sub.add_parser("agent", help="take queued jobs for this machine's tags, one at a time")
    results_arg(ag)
    queue_arg(ag)
    ag.add_argument("--tags", required=True, metavar="TAG,...")
    ag.set_defaults(func=cmd_agent)

    jb = sub.add_parser("jobs", help="queued, running, done and failed jobs with their machine")
    results_arg(jb)
    queue_arg(jb)
    jb.add_argument("--json", action="store_true")
    jb.set_defaults(func=cmd_jobs)

    hi = sub.add_parser("history", help="metrics over time, one series per configuration, with change points")
    results_arg(hi)
    hi.add_argument("--machine", metavar="HOST", help="the fingerprint's host (default: all)")
    hi.add_argument("--suite", metavar="SUITE", help="suite name (default: all)")
    hi.add_argument("--metric", action="append", metavar="NAME", help="metric (or WORKLOAD.METRIC); repeatable")
    hi.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="FIELD=GLOB",
        help="keep runs whose FIELD matches (FIELD!=GLOB: does not); repeatable; see --fields",
    )
    hi.add_argument(
        "--split-by",
        action="append",
        default=[],
        metavar="FIELD",
        help="split series further by FIELD (e.g. kernel.release, thp.enabled); repeatable",
    )
    hi.add_argument("--series", action="store_true", help="list the series that exist, nothing else")
    hi.add_argument("--fields", action="store_true", help="list the fields --where and --split-by take, with values")
    hi.add_argument("-o", "--output", metavar="FILE.html", help="write an HTML page instead of text")
    hi.set_defaults(func=cmd_history)
