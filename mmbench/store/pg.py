"""The shared store: runs in PostgreSQL, behind the same ``Store`` interface as the results folder.

Every file a run has in a results folder (run.json, fingerprint.json, workload.json, each
iteration's result.json, raw output, monitor series, traces) is one row of ``mmbench_files``,
zlib-compressed.  Readers materialise a run into a local cache folder (``$MMBENCH_CACHE/pg/...``)
and read it with the file store's own code, so a comparison from PostgreSQL is the comparison of
the same bytes from a folder.  ``mmbench_runs`` and ``mmbench_values`` (one mean per metric and
iteration) answer ``list`` and ``history`` without downloading anything.

The schema is versioned (``mmbench_schema``); ``MIGRATIONS`` holds one SQL script per version and
``PgStore`` applies the missing ones under an advisory lock, so several agents starting at once
migrate once.  Connection details come from the URL, libpq's environment (PGPASSWORD...) or a
service file (``postgresql:///?service=lab``); nothing secret is written into runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import socket
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

from mmbench.model.cache import cache_root
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.files import samples_from_json
from mmbench.model.store import RunWriter, Store, validate_run_name
from mmbench.store.fs import FileRunWriter, FileStore, pid_alive
from mmbench.model.results import IterationResult, RunRecord, WorkloadRun

SCHEMA_VERSION = 1

# One script per schema version; never edit a released one, append the next.
MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE mmbench_runs (
    name text PRIMARY KEY,
    status text NOT NULL,
    created double precision NOT NULL,
    finished double precision,
    updated double precision NOT NULL,   -- last write: a heartbeat for runs still going
    host text NOT NULL DEFAULT '',       -- machine that ran it (the fingerprint's host)
    owner text NOT NULL DEFAULT '',      -- host:pid of the process writing it
    kernel text NOT NULL DEFAULT '',
    suite text NOT NULL DEFAULT '',
    description text NOT NULL DEFAULT '',
    generation bigint NOT NULL DEFAULT 0 -- bumped on every write: local caches compare it
);
CREATE TABLE mmbench_files (
    run text NOT NULL REFERENCES mmbench_runs(name) ON DELETE CASCADE,
    path text NOT NULL,
    size bigint NOT NULL,
    data bytea NOT NULL,                 -- zlib-compressed content
    PRIMARY KEY (run, path)
);
CREATE TABLE mmbench_values (
    run text NOT NULL REFERENCES mmbench_runs(name) ON DELETE CASCADE,
    workload text NOT NULL,
    metric text NOT NULL,
    idx integer NOT NULL,
    warmup boolean NOT NULL,
    status text NOT NULL,
    value double precision,              -- mean of the iteration's samples; NULL when none is finite
    PRIMARY KEY (run, workload, metric, idx)
);
CREATE INDEX mmbench_runs_by_host_suite ON mmbench_runs (host, suite, created);
""",
}

# A running run whose owner on another machine has not written for this long is shown incomplete.
STALE_SECONDS = 6 * 3600


def is_pg_url(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """The URL without its password, for messages and cache folder names."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    return f"{scheme}://{creds.split(':', 1)[0]}@{host}"


def connect(url: str):
    try:
        import psycopg
    except ImportError:
        raise EnvironmentUnsupported("a PostgreSQL store needs psycopg: pip install 'mmbench[fleet]' "
                                     "(scripts/setup.sh --test installs it)") from None
    try:
        return psycopg.connect(url, autocommit=False, connect_timeout=10)
    except psycopg.OperationalError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"--results {redact(url)}: cannot connect: {first}") from None


def migrate(conn: Any) -> int:
    """Create or upgrade mmbench's tables; returns the schema version now in place."""
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_schema'))")
        cur.execute("CREATE TABLE IF NOT EXISTS mmbench_schema (version integer NOT NULL)")
        cur.execute("SELECT max(version) FROM mmbench_schema")
        current = cur.fetchone()[0] or 0
        if current > SCHEMA_VERSION:
            conn.rollback()
            raise UsageError(f"the PostgreSQL store has schema version {current}; this mmbench knows "
                             f"up to {SCHEMA_VERSION}: upgrade mmbench")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            cur.execute(MIGRATIONS[version])
            cur.execute("INSERT INTO mmbench_schema VALUES (%s)", (version,))
    conn.commit()
    return SCHEMA_VERSION


def _iteration_means(result: IterationResult) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for metric, values in result.samples.items():
        finite = [v for v in (values.tolist() if hasattr(values, "tolist") else values)
                  if v is not None and math.isfinite(v)]
        out[metric] = sum(finite) / len(finite) if finite else None
    return out


class PgRunWriter(RunWriter):
    """Writes a run into a local staging folder (the file store's writer) and uploads each part as
    it becomes durable there: a finished iteration is in PostgreSQL before the next one starts."""

    def __init__(self, store: "PgStore", name: str, local: FileRunWriter) -> None:
        self.store = store
        self.name = name
        self.local = local
        self.path = local.path
        self.meta = local.meta

    def _upload(self, paths: list[Path], extra_sql: list[tuple[str, tuple]] = ()) -> None:
        with self.store.conn() as conn, conn.cursor() as cur:
            for p in paths:
                files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
                for f in files:
                    rel = f.relative_to(self.path).as_posix()
                    data = f.read_bytes()
                    cur.execute("INSERT INTO mmbench_files VALUES (%s,%s,%s,%s) ON CONFLICT (run, path) "
                                "DO UPDATE SET size=EXCLUDED.size, data=EXCLUDED.data",
                                (self.name, rel, len(data), zlib.compress(data, 6)))
            for sql, params in extra_sql:
                cur.execute(sql, params)
            cur.execute("UPDATE mmbench_runs SET updated=%s, generation=generation+1 WHERE name=%s "
                        "RETURNING generation", (time.time(), self.name))
            generation = cur.fetchone()[0]
            conn.commit()
        self.store.mark_cached(self.name, generation)

    def add_workload(self, workload: WorkloadRun) -> None:
        self.local.add_workload(workload)
        self._upload([self.path / workload.label / "workload.json"])

    def iteration_dir(self, label: str, index: int) -> Path:
        return self.local.iteration_dir(label, index)

    def staging_dir(self, label: str, index: int) -> Path:
        return self.local.staging_dir(label, index)

    def discard_staging(self) -> None:
        self.local.discard_staging()

    def add_iteration(self, result: IterationResult) -> None:
        self.local.add_iteration(result)
        rows = [("INSERT INTO mmbench_values VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT "
                 "(run, workload, metric, idx) DO UPDATE SET value=EXCLUDED.value, status=EXCLUDED.status",
                 (self.name, result.workload, metric, result.index, result.warmup, result.status, mean))
                for metric, mean in _iteration_means(result).items()]
        self._upload([self.iteration_dir(result.workload, result.index)], rows)

    def finish(self, status: str, note: str | None = None) -> None:
        self.local.finish(status, note)
        self._upload([self.path / "run.json"],
                     [("UPDATE mmbench_runs SET status=%s, finished=%s, suite=%s WHERE name=%s",
                       (status, self.meta.get("finished"), self.meta.get("suite", ""), self.name))])


class PgStore(Store):
    """Runs in PostgreSQL; ``url`` is a libpq URL (``postgresql://user@host/db``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        cache = cache_root()
        key = hashlib.sha256(redact(url).encode()).hexdigest()[:16]
        self.cache_root = cache / "pg" / key
        self._migrated = False
        self.root = self.cache_root  # where materialised runs live (reports read raw files there)

    def __str__(self) -> str:
        return redact(self.url)

    def conn(self):
        c = connect(self.url)
        if not self._migrated:
            migrate(c)
            self._migrated = True
        return c

    # -- local materialisation -------------------------------------------------------------
    def _local(self) -> FileStore:
        return FileStore(self.cache_root)

    def _marker(self, name: str) -> Path:
        return self.cache_root / validate_run_name(name) / ".pg-generation"

    def mark_cached(self, name: str, generation: int) -> None:
        self._marker(name).write_text(str(generation))

    def _materialise(self, name: str, generation: int) -> Path:
        path = self.cache_root / validate_run_name(name)
        marker = self._marker(name)
        if marker.exists() and marker.read_text() == str(generation):
            return path
        tmp = self.cache_root / f".{name}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT path, data FROM mmbench_files WHERE run=%s", (name,))
            for rel, data in cur:
                target = (tmp / rel).resolve()
                if not str(target).startswith(str(tmp.resolve()) + os.sep):
                    raise UsageError(f"PostgreSQL store {self}: run {name!r} holds a file outside its "
                                     f"folder ({rel!r}); refusing it")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zlib.decompress(data))
        (tmp / ".pg-generation").write_text(str(generation))
        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, path)
        return path

    # -- Store interface ---------------------------------------------------------------------
    def exists(self, name: str) -> bool:
        validate_run_name(name)
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM mmbench_runs WHERE name=%s", (name,))
            return cur.fetchone() is not None

    def create_run(self, name: str, *, force: bool, suite_text: str, suite_hash: str,
                   suite_effective: dict[str, Any], fingerprint: dict[str, Any],
                   settings: dict[str, Any], status: str = "running",
                   description: str = "") -> PgRunWriter:
        validate_run_name(name)
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"mmbench_run:{name}",))
            cur.execute("SELECT 1 FROM mmbench_runs WHERE name=%s", (name,))
            if cur.fetchone() is not None:
                if not force:
                    raise UsageError(f"run {name!r} already exists in {self}; use --force to replace it "
                                     f"or pick another name")
                cur.execute("DELETE FROM mmbench_runs WHERE name=%s", (name,))
            now = time.time()
            cur.execute("INSERT INTO mmbench_runs (name, status, created, updated, host, owner, kernel, "
                        "description) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                        (name, status, now, now, str(fingerprint.get("host", "")),
                         f"{socket.gethostname()}:{os.getpid()}",
                         str(fingerprint.get("kernel", {}).get("release", "")), description))
            conn.commit()
        local = self._local().create_run(name, force=True, suite_text=suite_text, suite_hash=suite_hash,
                                         suite_effective=suite_effective, fingerprint=fingerprint,
                                         settings=settings, status=status, description=description)
        writer = PgRunWriter(self, name, local)
        writer._upload([local.path])  # suite, fingerprint, run.json
        return writer

    def _row_status(self, status: str, owner: str, updated: float) -> str:
        if status != "running":
            return status
        host, _, pid = owner.rpartition(":")
        if host == socket.gethostname():
            return status if pid.isdigit() and pid_alive(int(pid)) else "incomplete"
        return "incomplete" if time.time() - updated > STALE_SECONDS else status

    def load_run(self, name: str) -> RunRecord:
        validate_run_name(name)
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT generation, status, owner, updated FROM mmbench_runs WHERE name=%s", (name,))
            row = cur.fetchone()
        if row is None:
            from mmbench.model.params import close_match
            known = [r["name"] for r in self.list_runs()]
            raise UsageError(f"no run named {name!r} in {self}{close_match(name, known)}"
                             + (f"; runs: {', '.join(known[:20])}" if known else " (it holds no runs)"))
        generation, status, owner, updated = row
        self._materialise(name, generation)
        rec = self._local().load_run(name)
        rec.status = self._row_status(status, owner, updated)
        return rec

    def list_runs(self) -> list[dict[str, Any]]:
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT r.name, r.status, r.created, r.kernel, r.description, r.owner, r.updated, "
                        "r.host, r.suite, (SELECT count(*) FROM mmbench_files f WHERE f.run=r.name AND "
                        "f.path ~ '^[^/]+/iter-[0-9]+/result.json$') FROM mmbench_runs r ORDER BY r.created")
            rows = cur.fetchall()
        return [{"name": n, "status": self._row_status(s, o, u), "created": c, "kernel": k,
                 "iterations": it, "description": d, "host": h, "suite": su}
                for n, s, c, k, d, o, u, h, su, it in rows]

    # -- whole-run transfer (push/pull) and history ----------------------------------------------
    def run_files(self, name: str) -> Iterator[tuple[str, bytes]]:
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT path, data FROM mmbench_files WHERE run=%s ORDER BY path", (name,))
            for rel, data in cur:
                yield rel, zlib.decompress(data)

    def put_run_files(self, name: str, files: list[tuple[str, bytes]], *, force: bool) -> None:
        """Store a whole run from its files (as a results folder holds them), in one transaction."""
        validate_run_name(name)
        by_path = dict(files)
        meta = json.loads(by_path["run.json"])
        fp = json.loads(by_path.get("fingerprint.json", b"{}"))
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM mmbench_runs WHERE name=%s", (name,))
            if cur.fetchone() is not None:
                if not force:
                    raise UsageError(f"run {name!r} already exists in {self}; use --force to replace it")
                cur.execute("DELETE FROM mmbench_runs WHERE name=%s", (name,))
            status = meta.get("status", "incomplete")
            cur.execute("INSERT INTO mmbench_runs (name, status, created, finished, updated, host, owner, "
                        "kernel, suite, description) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                        (name, "incomplete" if status == "running" else status, meta.get("created") or 0.0,
                         meta.get("finished"), time.time(), str(fp.get("host", "")), "",
                         str(fp.get("kernel", {}).get("release", "")), meta.get("suite", ""),
                         meta.get("description", "")))
            with cur.copy("COPY mmbench_files (run, path, size, data) FROM STDIN") as copy:
                for rel, data in files:
                    copy.write_row((name, rel, len(data), zlib.compress(data, 6)))
            values = []
            for rel, data in files:
                if rel.endswith("/result.json") and rel.count("/") == 2:
                    d = json.loads(data)
                    it = IterationResult.from_dict({**d, "samples": samples_from_json(d.get("samples", {}))})
                    values += [(name, it.workload, m, it.index, it.warmup, it.status, v)
                               for m, v in _iteration_means(it).items()]
            if values:
                cur.executemany("INSERT INTO mmbench_values VALUES (%s,%s,%s,%s,%s,%s,%s)", values)
            conn.commit()

    def iteration_values(self, runs: list[str]) -> list[tuple[str, str, str, int, float | None]]:
        """(run, workload, metric, index, mean) of the measured, completed iterations of ``runs``."""
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT run, workload, metric, idx, value FROM mmbench_values WHERE run = ANY(%s) "
                        "AND NOT warmup AND status='ok' ORDER BY run, workload, metric, idx", (runs,))
            return cur.fetchall()

    def remove_run(self, name: str) -> None:
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("DELETE FROM mmbench_runs WHERE name=%s", (validate_run_name(name),))
            conn.commit()
        shutil.rmtree(self.cache_root / name, ignore_errors=True)
