"""The job queue of a test lab: PostgreSQL through procrastinate, one agent per test machine.

``submit`` queues a job on the queue of a machine tag (``mmbench:<tag>``); ``agent`` runs a
procrastinate worker with concurrency 1 on its tags' queues and runs each job with the normal
runner (``mmbench run`` as a child process: journal, restore, sandbox or VM all apply) writing to
the central store.  procrastinate takes jobs with ``SELECT ... FOR UPDATE SKIP LOCKED``, so a job
goes to exactly one agent.  Agents send heartbeats; every agent also looks for jobs whose agent
stopped sending them (killed, machine lost) and re-queues each such job once: a second loss marks
it failed.  The run a dead agent left is shown incomplete and replaced when the job runs again.
``mmbench_job_attempts`` records which machine ran which attempt, for ``mmbench jobs``.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mmbench.errors import EnvironmentUnsupported, UsageError

TASK = "mmbench.run_job"
# Agents' heartbeat period, how long without one means the agent is gone, and how often agents
# look for jobs of gone agents ($MMBENCH_AGENT_HEARTBEAT scales all three, for tests).
HEARTBEAT_SECONDS = float(os.environ.get("MMBENCH_AGENT_HEARTBEAT", "5"))
STALLED_SECONDS = 4 * HEARTBEAT_SECONDS
RECOVER_EVERY = 2 * HEARTBEAT_SECONDS
MAX_ATTEMPTS = 2                # a job is re-queued once after its agent died, then failed

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
)"""


def _procrastinate():
    try:
        import procrastinate
        from procrastinate import PsycopgConnector
    except ImportError:
        raise EnvironmentUnsupported("the job queue needs procrastinate: pip install 'mmbench[fleet]' "
                                     "(scripts/setup.sh --test installs it)") from None
    return procrastinate, PsycopgConnector


def queue_name(tag: str) -> str:
    if not tag or not all(c.isalnum() or c in "-_." for c in tag):
        raise UsageError(f"machine tag {tag!r}: use letters, digits, '-', '_' and '.'")
    return f"mmbench:{tag}"


def make_app(url: str):
    procrastinate, PsycopgConnector = _procrastinate()
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
        cur.execute("""
            SELECT j.id, j.queue_name, j.status::text, j.attempts, j.args,
                   a.machine, a.started, a.finished, a.outcome, a.attempt, a.agent_pid
              FROM procrastinate_jobs j
              LEFT JOIN LATERAL (SELECT * FROM mmbench_job_attempts x WHERE x.job_id = j.id
                                 ORDER BY x.attempt DESC LIMIT 1) a ON true
             WHERE j.task_name = %s ORDER BY j.id""", (TASK,))
        rows = cur.fetchall()
    out = []
    for jid, queue, status, attempts, args, machine, started, finished, outcome, attempt, pid in rows:
        job = (args or {}).get("job", {})
        shown = {"todo": "queued", "doing": "running", "succeeded": "done"}.get(status, status)
        out.append({"id": jid, "tag": queue.split(":", 1)[-1], "status": shown, "name": job.get("name", ""),
                    "kind": job.get("kind", "run"), "machine": machine or "", "agent_pid": pid, "attempt": attempt or 0,
                    "started": started, "finished": finished, "outcome": outcome or ""})
    return out


# -- the agent side --------------------------------------------------------------------------------

def _die_with_parent() -> None:
    """Child processes get SIGTERM when the agent dies (even by SIGKILL), so a run never outlives
    its agent unnoticed: the run restores the machine and is marked incomplete."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _mmbench(argv: list[str], log: Any, results: str) -> int:
    """``mmbench ARGV`` as a child writing to the store ``results``, named in its environment
    ($MMBENCH_RESULTS), never on its command line (which every local user sees in ``ps``)."""
    proc = subprocess.Popen([sys.executable, "-m", "mmbench", *argv], stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=_die_with_parent, env={**os.environ, "MMBENCH_RESULTS": results})
    try:
        return proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise


def _suite_arg(spec: dict[str, Any], workdir: Path) -> str:
    """A shipped suite travels by name; a suite file travels as its text (the agent may not have it)."""
    if spec.get("text") is None:
        return spec["config"]
    stem = Path(spec["config"]).stem or "suite"
    path = workdir / f"{stem}.toml"
    path.write_text(spec["text"])
    return str(path)


def _run_argv(spec: dict[str, Any], workdir: Path, name: str, extra: list[str]) -> list[str]:
    argv = ["run", "--config", _suite_arg(spec, workdir), "--force", "--quiet"]
    for s in spec.get("set", []):
        argv += ["--set", s]
    if spec.get("kernel"):
        argv += ["--kernel", spec["kernel"]]
    return argv + extra + [name]


def run_job(context: Any, job: dict[str, Any]) -> None:
    """The task an agent runs: one ``mmbench run`` (kind "run") or several interleaved ones."""
    url = context.additional_context["url"]
    results = job.get("results") or context.additional_context.get("results") or url
    job_id = context.job.id
    attempt = context.job.attempts + 1
    machine = context.additional_context["machine"]
    _attempt_row(url, job_id, attempt, machine, start=True)
    logdir = Path(context.additional_context["logdir"])
    logdir.mkdir(parents=True, exist_ok=True)
    outcome = "failed"
    try:
        # The job's scratch (suite text, interleaved parts) lives beside the agent's logs, named by
        # the agent's pid, so an agent killed mid-job leaves it where the next agent removes it.
        workroot = logdir.parent / "agent-work"
        _remove_dead_agents_work(workroot)
        with open(logdir / f"job-{job_id}-{attempt}.log", "ab") as log, \
                tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=_mkdir(workroot)) as tmp:
            work = Path(tmp)
            if job.get("kind", "run") == "run":
                argv = _run_argv(job, work, job["name"],
                                 ["--iterations", str(job["iterations"])] if job.get("iterations") else [])
                rc = _mmbench(argv, log, results)
            else:
                rc = _interleave(job, work, results, log)
        outcome = "complete" if rc == 0 else "failed"
        if rc != 0:
            raise RuntimeError(f"mmbench run exited {rc}; see {logdir}/job-{job_id}-{attempt}.log")
    finally:
        _attempt_row(url, job_id, attempt, machine, outcome=outcome)


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


def _interleave(job: dict[str, Any], work: Path, results: str, log: Any) -> int:
    """Rounds of one iteration of each configuration, A B A B ..., then one run per configuration."""
    from mmbench.store import open_store
    from mmbench.store.transfer import join_interleaved
    parts_dir = work / "parts"
    parts: dict[str, list[str]] = {c["name"]: [] for c in job["configs"]}
    for rnd in range(int(job["rounds"])):
        for spec in job["configs"]:
            part = f"{spec['name']}.round{rnd}"
            extra = ["--iterations", "1"] + ([] if rnd == 0 else ["--set", "warmup=0"])
            rc = _mmbench(_run_argv(spec, work, part, extra), log, str(parts_dir))
            if rc != 0:
                return rc
            parts[spec["name"]].append(part)
    local, central = open_store(parts_dir), open_store(results)
    for name, names in parts.items():
        join_interleaved(local, names, central, name, force=True)
    return 0


def _attempt_row(url: str, job_id: int, attempt: int, machine: str, *, start: bool = False,
                 outcome: str | None = None) -> None:
    from mmbench.store.pg import connect
    with connect(url) as conn, conn.cursor() as cur:
        if start:
            cur.execute("INSERT INTO mmbench_job_attempts VALUES (%s,%s,%s,%s,%s,NULL,NULL) ON CONFLICT "
                        "(job_id, attempt) DO UPDATE SET machine=EXCLUDED.machine, started=EXCLUDED.started",
                        (job_id, attempt, machine, os.getpid(), time.time()))
        else:
            cur.execute("UPDATE mmbench_job_attempts SET finished=%s, outcome=%s WHERE job_id=%s AND attempt=%s",
                        (time.time(), outcome, job_id, attempt))
        conn.commit()


async def recover_stalled(app: Any, url: str) -> list[str]:
    """Jobs whose agent stopped sending heartbeats: re-queued once, then failed."""
    from procrastinate.jobs import Status
    from mmbench.store.pg import connect
    said = []
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_SECONDS, task_name=TASK):
        with connect(url) as conn, conn.cursor() as cur:
            cur.execute("UPDATE mmbench_job_attempts SET finished=%s, outcome='lost' WHERE job_id=%s AND "
                        "finished IS NULL", (time.time(), job.id))
            conn.commit()
        if job.attempts + 1 < MAX_ATTEMPTS:
            await app.job_manager.retry_job(job)
            said.append(f"job {job.id}: its agent stopped; re-queued")
        else:
            await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=False)
            said.append(f"job {job.id}: its agent stopped again; marked failed")
    return said


def run_agent(url: str, tags: list[str], *, results: str | None = None, once: bool = False) -> None:
    """Take jobs from the tags' queues one at a time until stopped (SIGINT/SIGTERM)."""
    ensure_schema(url)
    machine = socket.gethostname()
    logdir = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench") / "agent-logs"
    app = make_app(url)
    queues = [queue_name(t) for t in tags]

    async def main() -> None:
        async with app.open_async():
            async def recover_loop() -> None:
                while True:
                    for line in await recover_stalled(app, url):
                        print(f"mmbench agent: {line}", file=sys.stderr, flush=True)
                    await asyncio.sleep(RECOVER_EVERY)
            recovering = asyncio.create_task(recover_loop())
            try:
                await app.run_worker_async(
                    queues=queues, concurrency=1, wait=not once, name=f"mmbench-agent@{machine}",
                    update_heartbeat_interval=HEARTBEAT_SECONDS, stalled_worker_timeout=STALLED_SECONDS,
                    additional_context={"url": url, "machine": machine, "logdir": str(logdir),
                                        "results": results},
                    install_signal_handlers=True, listen_notify=True, fetch_job_polling_interval=2.0)
            finally:
                recovering.cancel()
    print(f"mmbench agent on {machine}: queues {', '.join(queues)}", file=sys.stderr, flush=True)
    asyncio.run(main())


def job_for_suite(config: str, sets: list[str], kernel: str | None, name: str,
                  iterations: int | None = None) -> dict[str, Any]:
    """The job description for one configuration: shipped suites by name, files by content."""
    from mmbench.config.load import find_suite, shipped_suites
    path = find_suite(config)
    shipped = path in shipped_suites().values() and not Path(config).exists()
    return {"config": path.stem if shipped else str(path), "text": None if shipped else path.read_text(),
            "set": list(sets), "kernel": kernel, "name": name, "iterations": iterations}

