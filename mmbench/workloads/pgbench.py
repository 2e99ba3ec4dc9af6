"""pgbench: PostgreSQL's TPC-B-like benchmark on Debian's server, started and stopped in the sandbox.

MMTests' pgbench: a throwaway PostgreSQL cluster (Debian's ``/usr/lib/postgresql/N/bin``) is made
with ``initdb`` in the iteration's workdir and its ``postgres`` server started through the sandbox,
so shared buffers, backends and page cache are all charged to the memory budget.  The server
listens only on a Unix socket in a private directory (no TCP port) and runs as the ``postgres``
user when mmbench is root (the server refuses root); it keeps ``CAP_DAC_READ_SEARCH`` as an
ambient capability so it can reach a workdir below a root-only folder (it writes only its own data
directory).  The database is sized relative to the budget: ``database`` bytes give pgbench scale
``database / 15 MiB`` (one scale unit is 100000 ``pgbench_accounts`` rows, about 15 MiB on disk).
``mode`` is ``read-only`` (``-S``, SELECT only) or ``read-write`` (the TPC-B-like default script),
with ``clients`` connections for ``duration``.

Metrics: pgbench's ``tps`` (without the initial connection time) and the p50/p95/p99 latency in ms
of every transaction from pgbench's per-transaction log (``-l``), kept in rawdir.  The server is
stopped (fast shutdown, then SIGKILL of its process group) before the iteration ends, also when
something failed; its postmaster PID is kept in ``postgres.pid`` (rawdir).
"""

from __future__ import annotations

import glob
import math
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, Workload, WorkloadContext

SCALE_BYTES = 15 << 20
_TPS = re.compile(r"^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)",
                  re.M)


def pg_bindir() -> Path | None:
    """The newest Debian PostgreSQL server's bin directory."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def parse_tps(text: str) -> float:
    m = _TPS.search(text)
    if not m:
        raise WorkloadError("pgbench printed no tps line (see raw/pgbench.out)")
    return float(m.group(1))


def parse_latencies(text: str) -> list[float]:
    """Latencies in ms from pgbench's per-transaction log: ``client_id transaction_no time
    script_no time_epoch time_us [schedule_lag]``, ``time`` in µs (``skipped``/``failed`` lines
    carry no latency and are left out)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[2].isdigit():
            out.append(int(parts[2]) / 1000.0)
    return out


def percentile(sorted_vals: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of sorted values."""
    k = max(1, math.ceil(q / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def scale_for(database: int) -> int:
    return max(1, database // SCALE_BYTES)


class Pgbench(Workload):
    name = "pgbench"
    summary = "PostgreSQL pgbench (read-only or read-write) on a throwaway server in the sandbox: TPS, latency"
    requires = ["setpriv"]
    params = {
        "database": Param("size", "0.5x", "size of the pgbench database (scale = database / 15 MiB)"),
        "mode": Param("str", "read-only", "read-only (-S) or read-write (TPC-B-like)", choices=("read-only", "read-write")),
        "clients": Param("int", 0, "client connections (0: the number of CPUs)", minimum=0, maximum=90),
        "duration": Param("duration", "30s", "length of the measured pgbench run"),
        "shared_buffers": Param("size", "0.25x", "PostgreSQL shared_buffers", minimum=1 << 20),
        "fsync": Param("bool", False, "fsync and synchronous_commit on (off: the disk does not dominate)"),
        "run_timeout": Param("duration", "30m", "limit for initdb, the data load and the run"),
    }
    metrics = [
        MetricDef("TPS", "transactions/s", "higher", "rate", description="pgbench tps, without initial connection time"),
        MetricDef("Latency p50", "ms", "lower", "time", description="median transaction latency (per-transaction log)"),
        MetricDef("Latency p95", "ms", "lower", "time", description="95th percentile transaction latency"),
        MetricDef("Latency p99", "ms", "lower", "time", description="99th percentile transaction latency"),
    ]

    work = ("TPS",)

    def check(self, params: dict[str, Any], budget: int) -> None:
        if pg_bindir() is None:
            raise UsageError("workload pgbench: no /usr/lib/postgresql/*/bin/pgbench: install Debian's "
                             "postgresql package")
        if params["duration"] < 1:
            raise UsageError("workload.pgbench.params.duration: must be at least 1s")
        if params["shared_buffers"] >= budget:
            raise UsageError(f"workload.pgbench.params.shared_buffers: {params['shared_buffers']} bytes "
                             f"does not fit in the {budget} byte budget")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        bindir = pg_bindir()
        assert bindir is not None
        root = os.geteuid() == 0
        user = "postgres" if root else pwd.getpwuid(os.geteuid()).pw_name
        data = ctx.workdir / "pgdata"
        # a Unix socket path is limited to 107 bytes: a short private folder, not the workdir
        sock = Path(tempfile.mkdtemp(prefix="mmbench-pg-"))
        if root:
            pw = pwd.getpwnam(user)
            os.chown(sock, pw.pw_uid, pw.pw_gid)
            data.mkdir()
            os.chown(data, pw.pw_uid, pw.pw_gid)

        def as_owner(argv: list[str]) -> list[str]:
            if not root:
                return argv
            return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups",
                    "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--", *argv]

        server: subprocess.Popen | None = None
        try:
            ctx.run(as_owner([str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "--no-sync",
                              "-E", "UTF8"]), raw_name="initdb.out", timeout=p["run_timeout"])
            sync = "on" if p["fsync"] else "off"
            clients = p["clients"] or ctx.ncpus
            server = ctx.spawn(as_owner([
                str(bindir / "postgres"), "-D", str(data), "-k", str(sock), "-c", "listen_addresses=",
                "-c", f"shared_buffers={p['shared_buffers'] // 8192}", "-c", f"fsync={sync}",
                "-c", f"synchronous_commit={sync}", "-c", f"max_connections={clients + 10}"]),
                stdout="postgres.log", stderr="postgres.log")
            (ctx.rawdir / "postgres.pid").write_text(f"{server.pid}\n")
            self._wait_ready(ctx, bindir, sock, user, server, p["run_timeout"])
            conn = ["-h", str(sock), "-U", user]
            scale = scale_for(p["database"])
            ctx.log(f"pgbench: loading scale {scale}")
            ctx.run([str(bindir / "pgbench"), "-i", "-q", "-s", str(scale), *conn, "postgres"],
                    raw_name="pgbench-init.out", timeout=p["run_timeout"])
            logdir = ctx.workdir / "pglog"
            logdir.mkdir()
            argv = [str(bindir / "pgbench"), *conn, "-c", str(clients), "-j", str(min(clients, ctx.ncpus)),
                    "-T", str(max(1, round(p["duration"]))), "-l", f"--log-prefix={logdir}/tx",
                    *(["-S"] if p["mode"] == "read-only" else []), "postgres"]
            out = ctx.run(argv, raw_name="pgbench.out", timeout=p["duration"] + p["run_timeout"])
            tps = parse_tps(out.stdout)
            lat: list[float] = []
            with open(ctx.rawdir / "pgbench-tx.log", "w") as keep:
                for f in sorted(logdir.iterdir()):
                    text = f.read_text()
                    keep.write(text)
                    lat += parse_latencies(text)
            if not lat:
                raise WorkloadError("pgbench logged no transactions (see raw/pgbench-tx.log)")
            lat.sort()
            return {"TPS": [tps], "Latency p50": [percentile(lat, 50)], "Latency p95": [percentile(lat, 95)],
                    "Latency p99": [percentile(lat, 99)]}
        finally:
            if server is not None:
                self._stop_server(ctx, server)
            shutil.rmtree(sock, ignore_errors=True)

    def _wait_ready(self, ctx: WorkloadContext, bindir: Path, sock: Path, user: str,
                    server: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + min(timeout, 120)
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise WorkloadError(f"postgres exited with status {server.returncode} at start (see raw/postgres.log)")
            r = subprocess.run([str(bindir / "pg_isready"), "-q", "-h", str(sock), "-U", user],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                return
            time.sleep(0.1)
        raise WorkloadError("postgres did not accept connections within 120 s (see raw/postgres.log)")

    def _stop_server(self, ctx: WorkloadContext, server: subprocess.Popen) -> None:
        """Fast shutdown (SIGINT to the postmaster: backends end, a checkpoint is written), then
        the process group is killed if it is still there after 30 s."""
        if server.poll() is None:
            try:
                os.kill(server.pid, signal.SIGINT)
                server.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        # SIGTERM then SIGKILL to the postmaster's process group (its backends) if still running
        ctx.stop(server)
