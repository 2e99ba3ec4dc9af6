"""``mmbench bisect``: the command line parsed into a ``BisectRequest``, run by driver/bisect.py, one
line per step on stdout (or the whole log as JSON) and the first bad commit at the end."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from mmbench.commands.common import percentage, positive_int, store_at
from mmbench.errors import UsageError
from mmbench.model.request import BisectRequest, RunRequest, VmShape


def add_bisect_parser(sub: argparse._SubParsersAction, results_arg, fleet_rounds) -> None:
    """``bisect`` on ``sub``; ``fleet_rounds(url, tag, results, say)`` runs rounds as fleet jobs
    (the fleet's, handed in: a command does not import the fleet)."""
    b = sub.add_parser(
        "bisect",
        help="find the commit of a kernel git repository that moved a row, "
        "each step decided at a stated confidence (docs/bisect.md)",
    )
    b.add_argument("repo", metavar="REPO", help="a local kernel git repository (a path)")
    b.add_argument("good", metavar="GOOD", help="a commit, tag or branch that behaves as before")
    b.add_argument("bad", metavar="BAD", help="a later commit, tag or branch that behaves as after")
    b.add_argument("--config", required=True, metavar="FILE", help="suite file, or the name of a shipped suite")
    results_arg(b)
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="as for run")
    b.add_argument(
        "--row",
        metavar="ROW",
        help="the row to follow, as compare --primary names it (default: "
        "the suite's primary row that moved most between the two ends, in their pilot rounds)",
    )
    b.add_argument(
        "--min-change",
        type=percentage,
        default=2.0,
        metavar="PCT",
        help="choosing the row: one that moved less than PCT %% between the ends is followed only when "
        "no row moved more (a rebuild with unrelated edits moves a time row by ~1 %%; default 2)",
    )
    b.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        metavar="P",
        help="each step's confidence (default 0.95: a step errs at most 5%% of the time)",
    )
    b.add_argument(
        "--max-rounds",
        type=positive_int,
        default=10,
        metavar="N",
        help="rounds a step (and each end) may take before it stops undecided (default 10)",
    )
    b.add_argument(
        "--good-runs",
        metavar="RUN[,RUN...]",
        help="stored runs of the good end (the pilot; default: 3 rounds measured first)",
    )
    b.add_argument("--bad-runs", metavar="RUN[,RUN...]", help="stored runs of the bad end")
    b.add_argument(
        "--log",
        metavar="FILE",
        help="the bisection's log, written after every round (default bisect-GOOD-BAD.json here)",
    )
    b.add_argument("--resume", action="store_true", help="go on from --log's finished rounds")
    b.add_argument("--vm-memory", metavar="SIZE", help="guest memory (default: the suite's [vm], else 1G)")
    b.add_argument("--vm-cpus", type=positive_int, metavar="N", help="guest CPUs")
    b.add_argument("--vm-numa", type=positive_int, metavar="N", help="guest NUMA nodes")
    b.add_argument("--vm-clock", choices=("auto", "instructions", "host"), help="the guest's clock under TCG")
    b.add_argument(
        "--queue",
        metavar="URL",
        help="the lab's PostgreSQL: each round runs as a fleet job on a "
        "machine tagged --machines (REPO at the same path there); the runs go to --results, by default "
        "this URL",
    )
    b.add_argument("--machines", metavar="TAG", help="with --queue: the tag of the agents that run the rounds")
    b.add_argument("--format", choices=("text", "json"), default="text", help="json: the whole log on stdout")
    b.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    b.set_defaults(func=cmd_bisect, fleet_rounds=fleet_rounds)


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability, got {text!r}") from None
    if not math.isfinite(value) or not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a probability from 0.5 to below 1, got {text!r}")
    return value


def _names(option: str, text: str | None) -> tuple[str, ...]:
    from mmbench.model.store import validate_run_name

    if text is None:
        return ()
    names = tuple(n.strip() for n in text.split(","))
    if not all(names):
        raise UsageError(f"{option} {text!r}: an empty run name")
    for n in names:
        validate_run_name(n)
    return names


def parse_bisect(args: argparse.Namespace) -> BisectRequest:
    """``mmbench bisect``'s arguments as one request (every argument checked here: exit 2 naming it)."""
    if not os.path.isdir(args.repo):
        raise UsageError(f"REPO {args.repo}: no such directory (give the path of a kernel git repository)")
    good_runs, bad_runs = _names("--good-runs", args.good_runs), _names("--bad-runs", args.bad_runs)
    if bool(good_runs) != bool(bad_runs):
        raise UsageError("--good-runs and --bad-runs go together (the pilot of both ends)")
    results = args.results
    if bool(args.queue) != bool(args.machines):
        raise UsageError("--queue and --machines go together (the lab's PostgreSQL and the tag of its agents)")
    if args.queue:
        from mmbench.store.pg import check_url, redact, url_password

        for what, url in (("--queue", args.queue), ("--results", results)):
            if url and not url.startswith(("postgresql://", "postgres://")):
                raise UsageError(
                    f"{what} {url}: with --queue the runs go to the lab's PostgreSQL, which the "
                    f"agents write to: give a postgresql:// URL"
                )
            if url:
                check_url(url, what)
                if url_password(url) is not None:
                    raise UsageError(
                        f"{what} {redact(url)}: the URL holds a password, which would go to the job "
                        f"table and agents; give it to libpq instead (a service file with ~/.pgpass)"
                    )
        results = results or args.queue
    run = RunRequest(
        config=args.config,
        name="bisect",
        sets=tuple(args.set or []),
        results=results,
        vm=VmShape(args.vm_memory, args.vm_cpus, args.vm_numa, args.vm_clock),
        quiet=args.quiet,
    )
    return BisectRequest(
        repo=os.path.abspath(args.repo),
        good=args.good,
        bad=args.bad,
        run=run,
        row=args.row,
        min_change=args.min_change,
        confidence=args.confidence,
        max_rounds=args.max_rounds,
        log=args.log,
        resume=args.resume,
        good_runs=good_runs,
        bad_runs=bad_runs,
        json_out=args.format == "json",
        queue=args.queue,
        machines=args.machines,
    )


def cmd_bisect(args: argparse.Namespace) -> int:
    return bisect(parse_bisect(args), fleet_rounds=args.fleet_rounds)


def bisect(request: BisectRequest, kernel_for=None, arm_for=None, job_for=None, fleet_rounds=None) -> int:
    """Run the bisection; 0 when it ended (found, or stopped saying where), 130 when interrupted.
    ``kernel_for``/``arm_for`` replace the kernel build and the guest, ``job_for`` a fleet job's
    request (driver/bisect.py)."""
    from mmbench.driver.bisect import run_bisection
    from mmbench.run.progress import make_progress
    from mmbench.run.runner import require_root

    if kernel_for is None and request.queue is None:
        require_root()
    progress = make_progress(quiet=request.run.quiet)
    out = sys.stderr if request.json_out else sys.stdout

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    remote = None
    if request.queue is not None:
        assert request.machines is not None and request.run.results is not None
        if fleet_rounds is None:
            from mmbench.errors import EnvironmentUnsupported

            raise EnvironmentUnsupported("bisect --queue: this mmbench has no fleet")
        remote = fleet_rounds(request.queue, request.machines, request.run.results, say)
    try:
        res = run_bisection(
            request,
            store_at(request.run.results),
            progress,
            say,
            kernel_for=kernel_for,
            arm_for=arm_for,
            remote=remote,
            job_for=job_for,
        )
    except KeyboardInterrupt:
        print(
            "mmbench bisect: stopped by SIGINT; every finished round is in the log: go on with --resume",
            file=sys.stderr,
        )
        return 130
    log, outcome = res.log, res.log.outcome
    assert outcome is not None
    subjects = {c.sha: c.subject for c in res.commits}
    if request.json_out:
        doc = log.as_dict()
        doc["subjects"] = subjects
        doc["repo"] = request.repo
        doc["builds"], doc["objects_compiled"], doc["wall_s"] = res.builds, res.objects, round(res.wall_s, 1)
        print(json.dumps(doc, indent=2))
        return 0

    def name(sha: str) -> str:
        return f"{sha[:12]} {subjects.get(sha, '')}".rstrip()

    if outcome.status == "found" and outcome.first_bad:
        say(f"first bad commit: {name(outcome.first_bad)}")
        if res.diffstat:
            say(res.diffstat)
    else:
        say(f"stopped ({outcome.status}): {outcome.message.split(': ', 1)[0]}; the first bad commit is one of:")
        for sha in outcome.candidates:
            say(f"  {name(sha)}")
    alpha = 1 - log.settings.confidence
    say(
        f"error bound: {outcome.error_bound:.2g} (each step wrong at most {alpha:.2g} of the time, over the "
        f"{round(outcome.error_bound / alpha)} steps of the path: the union bound)"
    )
    say(
        f"cost: {len(log.steps)} step(s), {_rounds(log)} rounds, {res.builds} kernel(s) built "
        f"({res.objects} objects compiled), wall time {_hms(res.wall_s)}"
    )
    return 0


def _rounds(log) -> int:
    from mmbench.driver.bisect import log_samples

    return sum(len(s.samples) for s in log_samples(log))


def _hms(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"
