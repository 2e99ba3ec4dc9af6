"""The job queue of a test lab: ``submit`` queues a job (one ``RunRequest``, or several run
interleaved) on PostgreSQL through procrastinate, and ``run_agent`` takes jobs one at a time on a
test machine, each run as a child ``mmbench run`` writing to the central store.

A job goes to exactly one agent; an agent that stops sending heartbeats has its job re-queued once
by the others, and keeps a lease on its running job (it stops itself when it loses it); a run gets
a time limit from its suite's budget.  docs/fleet.md says how and why.
"""

from __future__ import annotations

import asyncio
import ctypes
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import EnvironmentUnsupported, UsageError

TASK = "mmbench.run_job"
# Agents' heartbeat period, how long without one means the agent is gone, and how often agents
# look for jobs of gone agents ($MMBENCH_AGENT_HEARTBEAT scales all of them, for tests).
HEARTBEAT_SECONDS = float(os.environ.get("MMBENCH_AGENT_HEARTBEAT", "5"))
STALLED_SECONDS = 4 * HEARTBEAT_SECONDS
# An agent that could not refresh its lease for this long stops its job itself: it checks every half
# heartbeat, so it is gone before 4 heartbeats pass and another agent may re-queue the job.
FENCE_SECONDS = 3 * HEARTBEAT_SECONDS
RECOVER_EVERY = 2 * HEARTBEAT_SECONDS
MAX_ATTEMPTS = 2  # a job is re-queued once after its agent died, then failed
# A job's run may take its suite's budget plus this (C builds, set-up, restore, copying results).
JOB_ALLOWANCE_SECONDS = float(os.environ.get("MMBENCH_JOB_ALLOWANCE", "600"))
DEFAULT_ITERATION_TIMEOUT = 7200.0
VM_BOOT_ALLOWANCE = 120.0
# How long an agent's run queues for the machine-wide lock (another agent's or a person's run).
LOCK_WAIT_SECONDS = float(os.environ.get("MMBENCH_AGENT_LOCK_WAIT", str(24 * 3600)))
EXIT_FENCED = 75  # the agent stopped itself: its job is re-queued by the others

ATTEMPTS_TABLE = """
CREATE TABLE IF NOT EXISTS mmbench_job_attempts (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    machine text NOT NULL,
    agent_pid integer NOT NULL,
    started double precision NOT NULL,
    finished double precision,
    outcome text,                 -- complete / failed / incomplete / lost (agent died)
    PRIMARY KEY (job_id, attempt)
);
ALTER TABLE mmbench_job_attempts ADD COLUMN IF NOT EXISTS reason text;
ALTER TABLE mmbench_job_attempts ADD COLUMN IF NOT EXISTS lock_wait double precision;
"""


def _procrastinate():
    try:
        import procrastinate
        from procrastinate import PsycopgConnector
    except ImportError:
        raise EnvironmentUnsupported(
            "the job queue needs procrastinate: pip install 'mmbench[fleet]' (scripts/setup.sh --test installs it)"
        ) from None
    return procrastinate, PsycopgConnector


def queue_name(tag: str) -> str:
    if not tag or not all(c.isalnum() or c in "-_." for c in tag):
        raise UsageError(f"machine tag {tag!r}: use letters, digits, '-', '_' and '.'")
    return f"mmbench:{tag}"


def make_app(url: str):
    procrastinate, PsycopgConnector = _procrastinate()
    # (procrastinate's pool checks a connection when it is taken: one the server dropped is replaced)
    app = procrastinate.App(connector=PsycopgConnector(conninfo=url))
    app.task(name=TASK, pass_context=True)(run_job)
    return app


def ensure_schema(url: str) -> None:
    """procrastinate's tables (its own schema, applied once) and mmbench's attempts table."""
    from mmbench.store.pg import connect

    with connect(url) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_queue_schema'))")
        cur.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        present = cur.fetchone()[0]
        cur.execute(ATTEMPTS_TABLE)
        if not present:
            procrastinate, _ = _procrastinate()
            cur.execute(procrastinate.schema.SchemaManager.get_schema())
        conn.commit()


def submit(url: str, tag: str, job: dict[str, Any]) -> int:
    """Queue ``job`` for a machine with ``tag``; returns the job id."""
    ensure_schema(url)
    app = make_app(url)
    with app.open():
        return app.configure_task(TASK, queue=queue_name(tag)).defer(job=job)


def list_jobs(url: str) -> list[dict[str, Any]]:
    from mmbench.store.pg import connect

    ensure_schema(url)
    with connect(url) as conn, conn.cursor() as cur:
        cur.execute(
            """
            SELECT j.id, j.queue_name, j.status::text, j.attempts, j.args,
                   a.machine, a.started, a.finished, a.outcome, a.attempt, a.agent_pid, a.reason, a.lock_wait
              FROM procrastinate_jobs j
              LEFT JOIN LATERAL (SELECT * FROM mmbench_job_attempts x WHERE x.job_id = j.id
                                 ORDER BY x.attempt DESC LIMIT 1) a ON true
             WHERE j.task_name = %s ORDER BY j.id""",
            (TASK,),
        )
        rows = cur.fetchall()
    out = []
    for jid, queue, status, attempts, args, machine, started, finished, outcome, attempt, pid, reason, wait in rows:
        job = (args or {}).get("job", {})
        shown = {"todo": "queued", "doing": "running", "succeeded": "done"}.get(status, status)
        out.append(
            {
                "id": jid,
                "tag": queue.split(":", 1)[-1],
                "status": shown,
                "name": job.get("name", ""),
                "kind": job.get("kind", "run"),
                "machine": machine or "",
                "agent_pid": pid,
                "attempt": attempt or 0,
                "started": started,
                "finished": finished,
                "outcome": outcome or "",
                "reason": reason or "",
                "lock_wait": wait,
            }
        )
    return out


# -- the agent side --------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Child processes get SIGTERM when the agent dies (even by SIGKILL), so a run never outlives
    its agent unnoticed: the run restores the machine and is marked incomplete."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class JobFailed(Exception):
    """A job's run failed or was stopped; the message is the reason ``mmbench jobs`` shows."""


class Lease:
    """The running agent's hold on its job (see the module docstring): ``check`` returns None while
    the job is still this agent's, else why the agent must stop."""

    def __init__(self, url: str, job_id: int, worker_id: int | None, attempts: int) -> None:
        self.url, self.job_id, self.worker_id, self.attempts = url, job_id, worker_id, attempts
        self.last_ok = time.monotonic()
        self.next_check = 0.0

    def check(self) -> str | None:
        now = time.monotonic()
        if now < self.next_check:
            return None
        self.next_check = now + HEARTBEAT_SECONDS / 2
        try:
            import psycopg

            with psycopg.connect(self.url, connect_timeout=max(2, int(HEARTBEAT_SECONDS))) as conn:
                row = conn.execute(
                    "SELECT status::text, worker_id, attempts FROM procrastinate_jobs WHERE id=%s", (self.job_id,)
                ).fetchone()
                if row is None or row[0] != "doing" or row[1] != self.worker_id or row[2] != self.attempts:
                    return (
                        f"job {self.job_id} is no longer this agent's (now {row and row[0]}, attempt "
                        f"{row and row[2] + 1}): another agent took it over"
                    )
                if self.worker_id is not None:
                    conn.execute(
                        "UPDATE procrastinate_workers SET last_heartbeat = now() WHERE id=%s", (self.worker_id,)
                    )
            self.last_ok = time.monotonic()
            return None
        except Exception as e:  # the database is out of reach: hold on until the fence
            if time.monotonic() - self.last_ok > FENCE_SECONDS:
                return f"lost the database for {time.monotonic() - self.last_ok:.0f} s ({type(e).__name__})"
            return None

    def confirm(self) -> str | None:
        """``check`` now, waiting out a short outage (up to the fence) for a definite answer."""
        asked = time.monotonic()
        while True:
            self.next_check = 0.0
            why = self.check()
            if why or self.last_ok >= asked:
                return why
            time.sleep(0.5)


def _lock_owner() -> int | None:
    """The pid holding mmbench's machine-wide lock (its lock file names it), if any."""
    from mmbench.run.journal import state_dir

    try:
        text = (state_dir() / "journal.lock").read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _fence(proc: subprocess.Popen | None, why: str) -> None:
    """Stop the job's run and this agent now, reporting nothing: the other agents re-queue the job."""
    print(
        f"mmbench agent: {why}; stopping the run and this agent (exit {EXIT_FENCED}) so the job is re-queued",
        file=sys.stderr,
        flush=True,
    )
    try:
        if proc is not None:
            proc.terminate()  # the run restores the machine and is marked incomplete
    except OSError:
        pass
    os._exit(EXIT_FENCED)


def _mmbench(
    argv: list[str],
    log: Any,
    results: str,
    *,
    limit: float | None = None,
    lease: Lease | None = None,
    stats: dict[str, float] | None = None,
) -> int:
    """``mmbench ARGV`` as a child writing to the store ``results``, named in its environment
    ($MMBENCH_RESULTS), never on its command line (which every local user sees in ``ps``).  It
    queues for the machine-wide lock; ``limit`` seconds after it holds the lock it is stopped
    (JobFailed).  ``stats["lock_wait"]`` adds up the time spent queueing."""
    env = {
        **os.environ,
        "MMBENCH_RESULTS": results,
        "MMBENCH_LOCK_WAIT": str(LOCK_WAIT_SECONDS),
        "MMBENCH_PG_RETRY_FIRST": "1",
    }  # the server was there when the job was taken: a restart passes
    spawned = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmbench", *argv],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
        env=env,
    )
    started: float | None = None
    try:
        while True:
            try:
                return proc.wait(timeout=min(1.0, HEARTBEAT_SECONDS / 4))
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if started is None and _lock_owner() == proc.pid:
                started = now
                if stats is not None:
                    stats["lock_wait"] = stats.get("lock_wait", 0.0) + (now - spawned)
            if lease is not None and (why := lease.check()):
                _fence(proc, why)
            if limit is not None and started is not None and now - started > limit:
                _stop(proc)
                raise JobFailed(
                    f"time limit exceeded: the run took more than {limit:.0f} s (its suite's "
                    f"budget plus {JOB_ALLOWANCE_SECONDS:.0f} s) and was stopped"
                )
    except BaseException:
        _stop(proc)
        raise


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.send_signal(signal.SIGCONT)  # a stopped (hung) child must run to act on SIGTERM
    except OSError:
        pass
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _run_argv(request: Any) -> list[str]:
    """The child's ``mmbench run`` command line: the request's own arguments, its store left to
    $MMBENCH_RESULTS."""
    return ["run", *request.argv(results=False)]


def time_limit(request: Any) -> float:
    """Seconds a run of this request may take once it holds the machine: every workload's
    iterations (warm-ups too) times its per-iteration timeout, plus ``JOB_ALLOWANCE_SECONDS``; in a
    VM the guest's own timeout and boot allowance when larger.  A suite that does not load gets the
    default timeout per iteration (its run fails at once anyway, saying why)."""
    try:
        from mmbench.config.load import load_suite

        suite = load_suite(request.config, list(request.sets), request.iterations)
        budget = sum((w.iterations + w.warmup) * (w.timeout or DEFAULT_ITERATION_TIMEOUT) for w in suite.workloads)
        if request.kernel is not None or suite.vm.get("kernel"):
            budget = max(budget, float(suite.vm.get("timeout_s") or DEFAULT_ITERATION_TIMEOUT)) + VM_BOOT_ALLOWANCE
    except Exception:
        budget = DEFAULT_ITERATION_TIMEOUT
    return budget + JOB_ALLOWANCE_SECONDS


def run_job(context: Any, job: dict[str, Any]) -> None:
    """The task an agent runs: one ``mmbench run`` (kind "run") or several interleaved ones."""
    url = context.additional_context["url"]
    results = job.get("results") or context.additional_context.get("results") or url
    job_id = context.job.id
    attempt = context.job.attempts + 1
    machine = context.additional_context["machine"]
    worker_id = _job_worker(url, job_id)
    _attempt_row(url, job_id, attempt, machine, start=True)
    lease = Lease(url, job_id, worker_id, context.job.attempts)
    logdir = Path(context.additional_context["logdir"])
    logdir.mkdir(parents=True, exist_ok=True)
    log_path = logdir / f"job-{job_id}-{attempt}.log"
    outcome, reason, stats = "failed", None, {"lock_wait": 0.0}
    try:
        # The job's scratch (suite text, interleaved parts) lives beside the agent's logs, named by
        # the agent's pid, so an agent killed mid-job leaves it where the next agent removes it.
        workroot = logdir.parent / "agent-work"
        _remove_dead_agents_work(workroot)
        with (
            open(log_path, "ab") as log,
            tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=_mkdir(workroot)) as tmp,
        ):
            work = Path(tmp)
            if job.get("kind", "run") == "run":
                from mmbench.driver.jobs import local_request

                request = local_request(job, work)
                rc = _mmbench(_run_argv(request), log, results, limit=time_limit(request), lease=lease, stats=stats)
            else:
                rc = _interleave(job, work, results, log, lease, stats)
        # the last word: a job taken over (or out of reach) while its run ended is not reported
        if why := lease.confirm():
            _fence(None, why)
        if rc != 0:
            raise JobFailed(f"mmbench run exited {rc}; see {log_path}")
        outcome = "complete"
    except JobFailed as e:
        reason = str(e)
        raise
    except Exception as e:
        reason = f"{type(e).__name__}: {e}"
        raise
    finally:
        # recorded only while the job is still this agent's, under the recovery lock: otherwise the
        # job was re-queued meanwhile and this agent stops without a word (the queue must not hear
        # "done" from two attempts)
        if not _attempt_row(
            url,
            job_id,
            attempt,
            machine,
            outcome=outcome,
            reason=reason,
            lock_wait=stats["lock_wait"],
            worker_id=worker_id,
            attempts=context.job.attempts,
        ):
            _fence(None, f"job {job_id} was re-queued while its run ended")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _remove_dead_agents_work(root: Path) -> None:
    """Scratch folders of agents that died mid-job (named ``<pid>-...``)."""
    if not root.is_dir():
        return
    for d in root.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)


def _interleave(
    job: dict[str, Any],
    work: Path,
    results: str,
    log: Any,
    lease: Lease | None = None,
    stats: dict[str, float] | None = None,
) -> int:
    """The driver's rounds (``rounds.measure``: one iteration of each configuration per round, in
    the order A B, B A, A B ..., so a position effect in the round hits every arm), each round a
    child ``mmbench run`` under the job's time limit and lease; every finished round is joined
    into the job's store at once, so a job stopped midway keeps its rounds (stored incomplete)."""
    from mmbench.config.load import load_suite
    from mmbench.driver.jobs import local_request
    from mmbench.driver.rounds import Arm, measure
    from mmbench.run.progress import PlainProgress
    from mmbench.store import open_store

    parts_dir = work / "parts"
    requests = [local_request(entry, work / f"config-{i}") for i, entry in enumerate(job["configs"])]
    arms = []
    for i, request in enumerate(requests):
        try:
            suite = load_suite(request.config, list(request.sets), request.iterations)
        except Exception as e:  # the child would refuse it the same way: said once, here
            raise JobFailed(f"configuration {i + 1} ({request.name}): {e}") from None
        arms.append(Arm(request.name, suite, _child_round(request, log, lease, stats), position=(i, len(requests))))
    text = io.TextIOWrapper(log, encoding="utf-8", line_buffering=True)
    try:
        got = measure(arms, open_store(results), int(job["rounds"]), progress=PlainProgress(text), parts_dir=parts_dir)
    finally:
        text.detach()  # the job's log stays open for run_job
    if got.status != "complete":
        raise JobFailed(got.note)
    return 0


def _child_round(request: Any, log: Any, lease: Lease | None, stats: dict[str, float] | None) -> Any:
    """An arm's round runner for ``rounds.measure``: the request's ``mmbench run`` as a child with
    one measured iteration and the round's warm-ups, into the rounds' own store; returns the
    stored round's status."""

    def run_round(round_suite: Any, part: str, parts_store: Any, *, force: bool, progress: Any) -> str:
        warmups = [f"{w.label}.warmup={w.warmup}" for w in round_suite.workloads]
        one = request.replace(name=part, iterations=1, sets=(*request.sets, *warmups))
        rc = _mmbench(_run_argv(one), log, str(parts_store.root), limit=time_limit(one), lease=lease, stats=stats)
        if rc != 0:
            raise JobFailed(f"mmbench run exited {rc} in round {part}")
        return parts_store.load_run(part).status

    return run_round


def _retrying(what: str, fn: Any, seconds: float = 60.0) -> Any:
    """``fn()``, tried again while the database is out of reach (a restart), up to ``seconds``."""
    deadline = time.monotonic() + seconds
    delay = 0.2
    while True:
        try:
            return fn()
        except Exception as e:
            if time.monotonic() > deadline or not _is_connection_error(e):
                raise
            print(f"mmbench agent: {what}: {type(e).__name__}; retrying", file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _is_connection_error(e: BaseException) -> bool:
    import psycopg

    return isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)) or (
        isinstance(e, UsageError) and "cannot connect" in str(e)
    )


def _job_worker(url: str, job_id: int) -> int | None:
    from mmbench.store.pg import connect

    def read() -> int | None:
        with connect(url) as conn, conn.cursor() as cur:
            cur.execute("SELECT worker_id FROM procrastinate_jobs WHERE id=%s", (job_id,))
            row = cur.fetchone()
            return row[0] if row else None

    return _retrying("reading the job's worker", read)


def _attempt_row(
    url: str,
    job_id: int,
    attempt: int,
    machine: str,
    *,
    start: bool = False,
    outcome: str | None = None,
    reason: str | None = None,
    lock_wait: float | None = None,
    worker_id: int | None = None,
    attempts: int | None = None,
) -> bool:
    """Record an attempt's start, or its end; the end only if the job is still the attempt's own
    (running, by ``worker_id``, ``attempts`` counted), checked under the recovery lock.  False when
    it is not."""
    from mmbench.store.pg import connect

    def write() -> bool:
        with connect(url) as conn, conn.cursor() as cur:
            if start:
                cur.execute(
                    "INSERT INTO mmbench_job_attempts (job_id, attempt, machine, agent_pid, started) "
                    "VALUES (%s,%s,%s,%s,%s) ON CONFLICT (job_id, attempt) DO UPDATE SET "
                    "machine=EXCLUDED.machine, started=EXCLUDED.started, agent_pid=EXCLUDED.agent_pid",
                    (job_id, attempt, machine, os.getpid(), time.time()),
                )
            else:
                cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_recover'))")
                cur.execute(
                    "SELECT 1 FROM procrastinate_jobs WHERE id=%s AND status='doing' AND attempts=%s "
                    "AND worker_id IS NOT DISTINCT FROM %s",
                    (job_id, attempts, worker_id),
                )
                if cur.fetchone() is None:
                    conn.rollback()
                    return False
                cur.execute(
                    "UPDATE mmbench_job_attempts SET finished=%s, outcome=%s, reason=%s, lock_wait=%s "
                    "WHERE job_id=%s AND attempt=%s",
                    (time.time(), outcome, reason, lock_wait, job_id, attempt),
                )
            conn.commit()
            return True

    return _retrying("recording the attempt", write)


async def recover_stalled(app: Any, url: str) -> list[str]:
    """Jobs whose agent stopped sending heartbeats: re-queued once, then failed.  Each decision is
    taken under one advisory lock, after checking again that the job is still stalled, so agents
    racing for it act on it once (a lost race is skipped, never an error)."""
    import psycopg
    from procrastinate.jobs import Status

    said = []
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_SECONDS, task_name=TASK):
        async with await psycopg.AsyncConnection.connect(url, connect_timeout=10) as conn:
            cur = conn.cursor()
            await cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_recover'))")
            await cur.execute(
                """SELECT a.outcome FROM procrastinate_jobs j
                                  LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
                                  LEFT JOIN mmbench_job_attempts a ON a.job_id = j.id AND a.attempt = j.attempts + 1
                                 WHERE j.id = %s AND j.status = 'doing' AND j.attempts = %s
                                   AND (w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => %s))""",
                (job.id, job.attempts, STALLED_SECONDS),
            )
            row = await cur.fetchone()
            if row is None:
                await conn.rollback()
                said.append(f"job {job.id}: already recovered by another agent (or its agent came back); skipped")
                continue
            if row[0] in ("complete", "failed"):
                # the attempt ended and said so; only the queue never heard (its agent lost the
                # database or died in between): finish the job as the attempt ended, never re-run it
                await app.job_manager.finish_job_by_id_async(
                    job.id, status=Status.SUCCEEDED if row[0] == "complete" else Status.FAILED, delete_job=False
                )
                await conn.commit()
                said.append(
                    f"job {job.id}: its attempt ended ({row[0]}) but its agent stopped before telling "
                    f"the queue; finished as {row[0]}"
                )
                continue
            await cur.execute(
                "SELECT string_agg(machine, ', ' ORDER BY attempt) FROM mmbench_job_attempts WHERE job_id=%s", (job.id,)
            )
            machines = (await cur.fetchone())[0] or "?"
            lost = job.attempts + 1 >= MAX_ATTEMPTS
            await cur.execute(
                "UPDATE mmbench_job_attempts SET finished=%s, outcome='lost', reason=%s "
                "WHERE job_id=%s AND attempt=%s AND finished IS NULL",
                (
                    time.time(),
                    f"its agent stopped (machines so far: {machines})"
                    + ("; not re-queued again" if lost else "; re-queued"),
                    job.id,
                    job.attempts + 1,
                ),
            )
            # procrastinate's calls use the worker's own connections; this transaction's advisory
            # lock keeps every other agent's recovery waiting until they are done
            if not lost:
                await app.job_manager.retry_job(job)
                said.append(f"job {job.id}: its agent stopped; re-queued")
            else:
                await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=False)
                said.append(f"job {job.id}: its agent stopped again; marked failed")
            await conn.commit()
    said += await _finish_unacknowledged(app, url)
    return said


async def _finish_unacknowledged(app: Any, url: str) -> list[str]:
    """Jobs whose attempt recorded its outcome but which the queue still shows running: the agent
    lost the database (or died) between the two.  The job gets the outcome its attempt recorded."""
    import psycopg
    from procrastinate.jobs import Status

    said = []
    async with await psycopg.AsyncConnection.connect(url, connect_timeout=10) as conn:
        cur = conn.cursor()
        await cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_recover'))")
        # attempt N of a job runs while procrastinate counts N - 1 attempts; allow the agent a
        # stalled period (and clock skew between machines) to acknowledge it itself
        await cur.execute(
            """SELECT j.id, a.outcome FROM procrastinate_jobs j
                               JOIN mmbench_job_attempts a ON a.job_id = j.id AND a.attempt = j.attempts + 1
                              WHERE j.task_name = %s AND j.status = 'doing' AND a.outcome IN ('complete', 'failed')
                                AND a.finished < extract(epoch FROM now()) - %s""",
            (TASK, 2 * STALLED_SECONDS + 30),
        )
        for job_id, outcome in await cur.fetchall():
            await app.job_manager.finish_job_by_id_async(
                job_id, status=Status.SUCCEEDED if outcome == "complete" else Status.FAILED, delete_job=False
            )
            said.append(f"job {job_id}: its attempt ended ({outcome}) but the queue was not told; now it is")
        await conn.commit()
    return said


async def recovery_loop(app: Any, url: str, say: Any, every: float | None = None) -> None:
    """``recover_stalled`` every ``every`` seconds (RECOVER_EVERY), for as long as the agent runs:
    an error (a lost race, the database away) is said and the loop goes on."""
    while True:
        try:
            for line in await recover_stalled(app, url):
                say(line)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            say(
                f"stalled-job recovery: {type(e).__name__}: {' '.join(str(e).split())[:200]}; "
                f"trying again in {every or RECOVER_EVERY:g} s"
            )
        await asyncio.sleep(every or RECOVER_EVERY)


def run_agent(url: str, tags: list[str], *, results: str | None = None, once: bool = False) -> None:
    """Take jobs from the tags' queues one at a time until stopped (SIGINT/SIGTERM).  A worker
    stopped by a lost database connection is started again; the recovery loop logs and survives
    every error."""
    ensure_schema(url)
    machine = socket.gethostname()
    logdir = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench") / "agent-logs"
    app = make_app(url)
    queues = [queue_name(t) for t in tags]

    def say(text: str) -> None:
        print(f"mmbench agent: {text}", file=sys.stderr, flush=True)

    async def main() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        worker: asyncio.Task | None = None

        def stop() -> None:
            stopping.set()
            if worker is not None:
                worker.cancel()  # procrastinate finishes the running job, then stops

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop)

        recovering: asyncio.Task | None = None
        while not stopping.is_set():
            try:
                async with app.open_async():
                    recovering = asyncio.create_task(recovery_loop(app, url, say))
                    worker = asyncio.create_task(
                        app.run_worker_async(
                            queues=queues,
                            concurrency=1,
                            wait=not once,
                            name=f"mmbench-agent@{machine}",
                            update_heartbeat_interval=HEARTBEAT_SECONDS,
                            stalled_worker_timeout=STALLED_SECONDS,
                            additional_context={
                                "url": url,
                                "machine": machine,
                                "logdir": str(logdir),
                                "results": results,
                            },
                            install_signal_handlers=False,
                            listen_notify=True,
                            fetch_job_polling_interval=2.0,
                        )
                    )
                    try:
                        await worker
                    except asyncio.CancelledError:
                        if not stopping.is_set():
                            raise
                    finally:
                        recovering.cancel()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                say(f"worker stopped: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
            if once or stopping.is_set():
                break
            say(f"worker stopped (database connection lost?); starting again in {HEARTBEAT_SECONDS:g} s")
            try:
                await asyncio.wait_for(stopping.wait(), timeout=HEARTBEAT_SECONDS)
            except asyncio.TimeoutError:
                pass

    say(f"on {machine}: queues {', '.join(queues)}")
    asyncio.run(main())


def fleet_rounds(
    url: str, tag: str, results: str, say: Callable[[str], None], poll: float = 2.0
) -> Callable[[list[Any]], dict[str, str]]:
    """``mmbench bisect --queue``'s rounds: requests run as fleet jobs (one each, for machines
    tagged ``tag``, into the store ``results``), waited for; returns {run name: reason} of the
    jobs that failed."""
    from mmbench.driver.jobs import job_entry

    def run(requests: list[Any]) -> dict[str, str]:
        ids = {
            submit(url, tag, {"kind": "run", **job_entry(r), "name": r.name, "results": results}): r.name
            for r in requests
        }
        say(
            f"fleet: queued job(s) {', '.join(str(i) for i in ids)} ({', '.join(ids.values())}) for machines "
            f"tagged {tag!r}"
        )
        while True:
            jobs = {j["id"]: j for j in list_jobs(url) if j["id"] in ids}
            if len(jobs) == len(ids) and all(j["status"] not in ("queued", "running") for j in jobs.values()):
                return {ids[i]: (j["reason"] or j["status"]) for i, j in jobs.items() if j["status"] != "done"}
            time.sleep(poll)

    return run
