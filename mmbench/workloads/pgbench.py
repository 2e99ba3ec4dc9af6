"""pgbench: PostgreSQL's TPC-B-like benchmark on Debian's server, started and stopped in the sandbox.

MMTests' pgbench: a throwaway cluster is made with ``initdb`` in the iteration's workdir and its
server started through the sandbox, so shared buffers, backends and page cache are all charged to
the memory budget; the database is sized relative to the budget.  The server listens only on a
Unix socket and is stopped however the iteration ends.  Parameters, metrics, MMTests' client walk
and batched TPS: docs/workloads.md, "pgbench".
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
from mmbench.workloads._topology import topology_of, topology_walk
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

SCALE_BYTES = 15 << 20
_TPS = re.compile(r"^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)", re.M)


BATCH = 4  # seconds per batch (extract-report.pl $batch_size)
SKIP = 2 * BATCH - 1  # one-second lines skipped before the first batch ($sample < $startSamples)


def batched_tps(text: str) -> list[float]:
    """MMTests' batched TPS samples from pgbench's ``--aggregate-interval=1`` log lines
    (``interval_start num_transactions sum_latency sum_latency_2 min max ...``)."""
    out: list[float] = []
    start = 0
    total = 0
    n_in = 0
    batches = 0
    for i, line in enumerate(l for l in text.splitlines() if l.strip()):
        f = line.split()
        if len(f) < 2 or not f[0].isdigit() or not f[1].isdigit():
            raise WorkloadError(f"pgbench aggregate log: line {i + 1} is not 'interval_start transactions ...'")
        t, n = int(f[0]), int(f[1])
        if start == 0:
            start = t
        if i < SKIP:
            continue
        n_in += 1
        total += n
        if n_in % BATCH == 0:
            if batches > 0 and t > start:
                out.append(total / (t - start))
            batches += 1
            start, n_in, total = t, 0, 0
    return out


def merge_aggregates(texts: list[str]) -> str:
    """Aggregate logs of several pgbench threads as one: per interval_start, transactions and
    summed latency added (the other columns are not used here and are dropped)."""
    if len(texts) == 1:
        return texts[0]
    per: dict[int, list[int]] = {}
    for text in texts:
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 3 and f[0].isdigit() and f[1].isdigit() and f[2].isdigit():
                row = per.setdefault(int(f[0]), [0, 0])
                row[0] += int(f[1])
                row[1] += int(f[2])
    return "".join(f"{t} {n} {lat}\n" for t, (n, lat) in sorted(per.items()))


def aggregate_latency_ms(text: str) -> float | None:
    """Mean transaction latency (ms) over the aggregate log: sum of sum_latency (µs) / transactions."""
    n = lat = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1].isdigit():
            n += int(f[1])
            lat += int(f[2])
    return lat / n / 1000.0 if n else None


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
        "mode": Param(
            "str", "read-only", "read-only (-S) or read-write (TPC-B-like)", choices=("read-only", "read-write")
        ),
        "clients": Param(
            "int_list",
            [0],
            "client connections (0: the number of CPUs); a list runs each in turn",
            minimum=0,
            maximum=90,
        ),
        "ladder": Param(
            "bool", False, "run MMTests' client walk 1 ... 2xNCPU in turn (its pgbench configs: 1, 2, 3, 4 on 2 CPUs)"
        ),
        "batched": Param(
            "bool",
            False,
            "per-second aggregate log and MMTests' batched TPS samples (no per-transaction latency percentiles)",
        ),
        "duration": Param("duration", "30s", "length of the measured pgbench run"),
        "shared_buffers": Param("size", "0.25x", "PostgreSQL shared_buffers", minimum=1 << 20),
        "fsync": Param("bool", False, "fsync and synchronous_commit on (off: the disk does not dominate)"),
        "run_timeout": Param("duration", "30m", "limit for initdb, the data load and the run"),
    }
    metrics = [
        MetricDef(
            "TPS", "transactions/s", "higher", "rate", description="pgbench tps, without initial connection time"
        ),
        MetricDef("Latency p50", "ms", "lower", "time", description="median transaction latency (per-transaction log)"),
        MetricDef("Latency p95", "ms", "lower", "time", description="95th percentile transaction latency"),
        MetricDef("Latency p99", "ms", "lower", "time", description="99th percentile transaction latency"),
    ]

    @staticmethod
    def client_counts(
        params: dict[str, Any], ncpus: int | None = None, topology: tuple[int, int, int, int] | None = None
    ) -> list[int]:
        """The client counts to run, in order (0 = the number of CPUs).  The ladder is MMTests'
        topology walk from 1 to 2xNCPU (``topology``: CPUs, SMT, LLC and node weights; default
        this machine's, or a flat one of ``ncpus`` CPUs when that differs from this machine's)."""
        ncpus = ncpus or len(os.sched_getaffinity(0))
        if params.get("ladder"):
            topology = topology or topology_of(ncpus)
            return topology_walk(1, 2 * topology[0], topology)
        counts = params.get("clients")
        counts = counts if isinstance(counts, list) else [counts or 0]
        return sorted({c or ncpus for c in counts}) or [ncpus]

    def per_count(self, params: dict[str, Any]) -> bool:
        """Metrics named per client count (a ladder, several counts, or batched TPS)."""
        counts = params.get("clients")
        return bool(params.get("ladder") or params.get("batched") or (isinstance(counts, list) and len(counts) > 1))

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        if not params or not self.per_count(params):
            return list(self.metrics)
        out: list[MetricDef] = []
        for c in self.client_counts(params):
            out.append(
                MetricDef(
                    f"TPS-{c}",
                    "transactions/s",
                    "higher",
                    "rate",
                    description=f"pgbench tps, {c} clients, without initial connection time",
                )
            )
            if params.get("batched"):
                out += [
                    MetricDef(
                        f"TPS batched-{c}",
                        "transactions/s",
                        "higher",
                        "rate",
                        description=f"MMTests' 4 s batches of the per-second log, {c} clients",
                    ),
                    MetricDef(
                        f"Latency mean-{c}",
                        "ms",
                        "lower",
                        "time",
                        description=f"mean transaction latency, {c} clients (aggregate log)",
                    ),
                ]
            else:
                out += [
                    MetricDef(
                        f"Latency p{q}-{c}",
                        "ms",
                        "lower",
                        "time",
                        description=f"{q}th percentile transaction latency, {c} clients",
                    )
                    for q in (50, 95, 99)
                ]
        return out

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        if not self.per_count(params):
            return ["TPS"]
        return [f"TPS-{c}" for c in self.client_counts(params)]

    def check(self, params: dict[str, Any], budget: int) -> None:
        if pg_bindir() is None:
            raise UsageError(
                "workload pgbench: no /usr/lib/postgresql/*/bin/pgbench: install Debian's postgresql package"
            )
        if params["duration"] < 1:
            raise UsageError("workload.pgbench.params.duration: must be at least 1s")
        if params["shared_buffers"] >= budget:
            raise UsageError(
                f"workload.pgbench.params.shared_buffers: {params['shared_buffers']} bytes "
                f"does not fit in the {budget} byte budget"
            )

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
            return [
                "setpriv",
                f"--reuid={user}",
                f"--regid={user}",
                "--init-groups",
                "--inh-caps=+dac_read_search",
                "--ambient-caps=+dac_read_search",
                "--",
                *argv,
            ]

        server: subprocess.Popen | None = None
        try:
            ctx.run(
                as_owner(
                    [str(bindir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "--no-sync", "-E", "UTF8"]
                ),
                raw_name="initdb.out",
                timeout=p["run_timeout"],
            )
            sync = "on" if p["fsync"] else "off"
            counts = self.client_counts(p, ctx.ncpus)
            server = ctx.spawn(
                as_owner(
                    [
                        str(bindir / "postgres"),
                        "-D",
                        str(data),
                        "-k",
                        str(sock),
                        "-c",
                        "listen_addresses=",
                        "-c",
                        f"shared_buffers={p['shared_buffers'] // 8192}",
                        "-c",
                        f"fsync={sync}",
                        "-c",
                        f"synchronous_commit={sync}",
                        "-c",
                        f"max_connections={max(counts) + 10}",
                    ]
                ),
                stdout="postgres.log",
                stderr="postgres.log",
            )
            (ctx.rawdir / "postgres.pid").write_text(f"{server.pid}\n")
            self._wait_ready(ctx, bindir, sock, user, server, p["run_timeout"])
            conn = ["-h", str(sock), "-U", user]
            scale = scale_for(p["database"])
            ctx.log(f"pgbench: loading scale {scale}")
            ctx.run(
                [str(bindir / "pgbench"), "-i", "-q", "-s", str(scale), *conn, "postgres"],
                raw_name="pgbench-init.out",
                timeout=p["run_timeout"],
            )
            named = self.per_count(p)
            samples: Samples = {}
            for clients in counts:
                samples.update(self._one(ctx, p, bindir, conn, clients, f"-{clients}" if named else ""))
            return samples
        finally:
            if server is not None:
                self._stop_server(ctx, server)
            shutil.rmtree(sock, ignore_errors=True)

    def _one(
        self, ctx: WorkloadContext, p: dict[str, Any], bindir: Path, conn: list[str], clients: int, tag: str
    ) -> Samples:
        """One pgbench run with ``clients`` connections; metric names end in ``tag``."""
        logdir = ctx.workdir / f"pglog{tag}"
        logdir.mkdir()
        raw = f"pgbench{tag}"
        # MMTests runs at most one pgbench thread per 8 CPUs (pgbench-bench: MAX_PGBENCH_THREADS)
        threads = max(1, min(clients, ctx.ncpus // 8)) if p.get("batched") else min(clients, ctx.ncpus)
        argv = [
            str(bindir / "pgbench"),
            *conn,
            "-c",
            str(clients),
            "-j",
            str(threads),
            "-T",
            str(max(1, round(p["duration"]))),
            "-l",
            f"--log-prefix={logdir}/tx",
            *(["--aggregate-interval=1"] if p.get("batched") else []),
            *(["-S"] if p["mode"] == "read-only" else []),
            "postgres",
        ]
        ctx.log(f"pgbench: {clients} clients for {p['duration']:g}s")
        out = ctx.run(argv, raw_name=f"{raw}.out", timeout=p["duration"] + p["run_timeout"])
        tps = parse_tps(out.stdout)
        texts = [f.read_text() for f in sorted(logdir.iterdir())]
        # one aggregate log per pgbench thread: the seconds of all threads added up
        text = merge_aggregates(texts) if p.get("batched") else "".join(texts)
        (ctx.rawdir / f"{raw}-tx.log").write_text(text)
        if p.get("batched"):
            batches = batched_tps(text)
            if not batches:
                raise WorkloadError(
                    f"pgbench ran too briefly for a batch of MMTests' batched TPS (4 s after "
                    f"the first {SKIP + BATCH} s; see raw/{raw}-tx.log): make duration longer"
                )
            mean = aggregate_latency_ms(text)
            out_s: Samples = {f"TPS{tag}": [tps], f"TPS batched{tag}": batches}
            if mean is not None:
                out_s[f"Latency mean{tag}"] = [mean]
            return out_s
        lat = parse_latencies(text)
        if not lat:
            raise WorkloadError(f"pgbench logged no transactions (see raw/{raw}-tx.log)")
        lat.sort()
        return {
            f"TPS{tag}": [tps],
            f"Latency p50{tag}": [percentile(lat, 50)],
            f"Latency p95{tag}": [percentile(lat, 95)],
            f"Latency p99{tag}": [percentile(lat, 99)],
        }

    def _wait_ready(
        self, ctx: WorkloadContext, bindir: Path, sock: Path, user: str, server: subprocess.Popen, timeout: float
    ) -> None:
        deadline = time.monotonic() + min(timeout, 120)
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise WorkloadError(f"postgres exited with status {server.returncode} at start (see raw/postgres.log)")
            r = subprocess.run(
                [str(bindir / "pg_isready"), "-q", "-h", str(sock), "-U", user],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
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
