"""The shared store: runs in PostgreSQL, behind the same ``Store`` interface as the results folder.

Every file a run has in a results folder (run.json, fingerprint.json, workload.json, each
iteration's result.json, raw output, monitor series, traces) is one row of ``mmbench_files``,
zlib-compressed.  Readers materialise a run into a local cache folder and read it with the file
store's own code, so a comparison from PostgreSQL is the comparison of the same bytes from a
folder.  ``mmbench_runs`` (with the run's fingerprint, metadata and effective suite as JSON),
``mmbench_iterations``, ``mmbench_metrics`` and ``mmbench_values`` (one mean per metric and
iteration) answer ``list`` and ``history`` without downloading anything.

A cached copy is never served stale: every write gives the run a new ``version`` (a random UUID,
never reused, even after a database is restored from a backup), the cache keeps one folder per
version, and the version and the files are read in one snapshot.  The cache is keyed by the
server's identity (system identifier, database OID and the store's own UUID), not by the URL, so
two databases reached through one service name never share cached runs.  A writer owns its run by
the run's ``uid`` (set when the run is created): if the run is replaced or removed while it is
being written, the writer's next write fails instead of mixing two runs.

The schema is versioned (``mmbench_schema``); ``MIGRATIONS`` holds one SQL script per version
(plus ``_backfill_2`` for what SQL cannot compute) and ``PgStore`` applies the missing ones under
an advisory lock, so several agents starting at once migrate once.  Connection details come from
the URL, libpq's environment (PGPASSWORD...) or a service file (``postgresql:///?service=lab``);
a password given in a URL is never written into runs, the cache or messages (``redact``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import socket
import sys
import time
import uuid
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mmbench.model.cache import cache_root
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.files import SEAL, StoreError, check_document, samples_from_bytes, samples_from_json
from mmbench.model.store import RunWriter, Store, is_store_document, reseal_documents, run_summary, validate_run_name
from mmbench.store.fs import FileStore
from mmbench.store.writer import FileRunWriter, owner_check, pid_alive
from mmbench.model.results import IterationResult, RunRecord, WorkloadRun

SCHEMA_VERSION = 2

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
    # 2: a run's identity (uid) and content version (a replaced run had generation 0 again, so a
    # cache holding generation 0 served the old copy); iterations and metric units for list and
    # history; the documents history keys its series by; the store's own identity for the cache.
    2: """
ALTER TABLE mmbench_runs ADD COLUMN uid text NOT NULL DEFAULT gen_random_uuid()::text;
ALTER TABLE mmbench_runs ADD COLUMN version text NOT NULL DEFAULT gen_random_uuid()::text;
ALTER TABLE mmbench_runs ADD COLUMN meta jsonb NOT NULL DEFAULT '{}';
ALTER TABLE mmbench_runs ADD COLUMN fingerprint jsonb NOT NULL DEFAULT '{}';
ALTER TABLE mmbench_runs ADD COLUMN effective jsonb NOT NULL DEFAULT '{}';
CREATE TABLE mmbench_iterations (
    run text NOT NULL REFERENCES mmbench_runs(name) ON DELETE CASCADE,
    workload text NOT NULL,
    idx integer NOT NULL,
    warmup boolean NOT NULL,
    status text NOT NULL,
    PRIMARY KEY (run, workload, idx)
);
CREATE TABLE mmbench_metrics (
    run text NOT NULL REFERENCES mmbench_runs(name) ON DELETE CASCADE,
    workload text NOT NULL,
    metric text NOT NULL,
    unit text NOT NULL,
    PRIMARY KEY (run, workload, metric)
);
CREATE TABLE mmbench_store (id text NOT NULL);
INSERT INTO mmbench_store VALUES (gen_random_uuid()::text);
""",
}

# How long an operation is tried again while the server is out of reach ($MMBENCH_PG_RETRY s).
RETRY_SECONDS = float(os.environ.get("MMBENCH_PG_RETRY", "60"))
RETRY_FIRST = os.environ.get("MMBENCH_PG_RETRY_FIRST") == "1"
# A running run whose owner on another machine has not written for this long is shown incomplete.
STALE_SECONDS = 6 * 3600
# Cached versions of a run other than the newest are removed once unread this long (a reader may
# still be reading one a moment after it was superseded).
OLD_VERSION_SECONDS = 600
NEW_VERSION = "gen_random_uuid()::text"


def _sidecar_in(files: dict[str, bytes], folder: str, where: str = "") -> Any:
    """Reads an iteration's sidecar of samples from a run's files (store/writer.py writes them), checked
    against its references and its digest."""
    return lambda file, count: samples_from_bytes(files.get(f"{folder}/{file}"), f"{where}{folder}/{file}", file, count)


# the model each of a run's sealed documents is checked against (model/stored.py), by file name
_KINDS = {"run.json": "run", "workload.json": "workload", "result.json": "result"}


class Unreachable(UsageError):
    """The PostgreSQL server cannot be reached (one line, exit 2)."""


def is_pg_url(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def url_password(url: str) -> str | None:
    """The password a URL carries (``user:PASSWORD@`` or ``?password=``), or None."""
    parts = urlsplit(url)
    if parts.password:
        return parts.password
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if k == "password":
            return v
    return None


def redact(url: str) -> str:
    """The URL without its password, for messages, logs, job descriptions and cache keys."""
    if not is_pg_url(url) or url_password(url) is None:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        creds, _, hosts = netloc.rpartition("@")
        netloc = f"{creds.split(':', 1)[0]}@{hosts}"
    query = parts.query
    if "password" in {k for k, _ in parse_qsl(query, keep_blank_values=True)}:
        query = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "password"])
    out = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return out if netloc else out.replace(":", "://", 1)  # urlunsplit drops an empty "//"


def require_psycopg() -> Any:
    """psycopg, or an EnvironmentUnsupported naming the extra that installs it (exit 3)."""
    try:
        import psycopg
    except ImportError:
        raise EnvironmentUnsupported(
            "a PostgreSQL store needs psycopg, which the 'fleet' extra installs: "
            "pip install 'mmbench[fleet]' (scripts/setup.sh --test installs it)"
        ) from None
    return psycopg


def _hide_password(text: str) -> str:
    """``text`` without any password a PostgreSQL URL in it carries (a malformed URL too)."""
    text = re.sub(r"(postgres(?:ql)?://[^:/@\s\[]*):[^@\s]*@", r"\1:***@", text)
    return re.sub(r"(password=)[^&\s'\"]*", r"\1***", text)


def check_url(url: str, option: str = "--results") -> None:
    """A PostgreSQL URL libpq can parse, or one UsageError naming ``option`` (exit 2); psycopg
    missing is an EnvironmentUnsupported naming the extra to install (exit 3)."""
    shown = _hide_password(url)
    try:
        urlsplit(url).port  # (a port that is no number, a malformed IPv6 host)
    except ValueError as e:
        raise UsageError(f"{option} {shown}: not a valid PostgreSQL URL ({_hide_password(str(e))})") from None
    psycopg = require_psycopg()
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except psycopg.Error as e:
        why = " ".join(str(e).split()) or type(e).__name__
        raise UsageError(f"{option} {shown}: not a valid PostgreSQL URL ({_hide_password(why)})") from None


def connect(url: str, option: str = "--results"):
    psycopg = require_psycopg()
    try:
        return psycopg.connect(url, autocommit=False, connect_timeout=10)
    except psycopg.OperationalError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        secret = url_password(url)
        if secret:
            first = first.replace(secret, "***")
        raise Unreachable(f"{option} {redact(url)}: cannot connect: {first}") from None
    except psycopg.ProgrammingError as e:  # a URL libpq cannot parse (check_url says so earlier)
        raise UsageError(
            f"{option} {_hide_password(url)}: not a valid PostgreSQL URL ({_hide_password(' '.join(str(e).split()))})"
        ) from None


def migrate(conn: Any) -> int:
    """Create or upgrade mmbench's tables; returns the schema version now in place."""
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('mmbench_schema'))")
        cur.execute("CREATE TABLE IF NOT EXISTS mmbench_schema (version integer NOT NULL)")
        cur.execute("SELECT max(version) FROM mmbench_schema")
        current = cur.fetchone()[0] or 0
        if current > SCHEMA_VERSION:
            conn.rollback()
            raise UsageError(
                f"the PostgreSQL store has schema version {current}; this mmbench knows "
                f"up to {SCHEMA_VERSION}: upgrade mmbench"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            cur.execute(MIGRATIONS[version])
            if version == 2 and current >= 1:
                _backfill_2(cur)
            cur.execute("INSERT INTO mmbench_schema VALUES (%s)", (version,))
    conn.commit()
    return SCHEMA_VERSION


def _backfill_2(cur: Any) -> None:
    """Version 2's tables and columns for runs stored by version 1, from the runs' own files."""
    from psycopg.types.json import Jsonb

    cur.execute("SELECT name FROM mmbench_runs")
    for (name,) in cur.fetchall():
        cur.execute(
            "SELECT path, data FROM mmbench_files WHERE run=%s AND (path IN ('run.json', "
            "'fingerprint.json', 'suite-effective.json') OR path ~ '^[^/]+/workload.json$' "
            "OR path ~ '^[^/]+/iter-[0-9]+/result.json$')",
            (name,),
        )
        docs = {rel: json.loads(zlib.decompress(data)) for rel, data in cur.fetchall()}
        s = run_summary(
            docs.get("run.json", {}),
            docs.get("fingerprint.json", {}),
            docs.get("suite-effective.json", {}),
            [d for rel, d in docs.items() if rel.endswith("/workload.json")],
        )
        cur.execute(
            "UPDATE mmbench_runs SET meta=%s, fingerprint=%s, effective=%s WHERE name=%s",
            (Jsonb(s["meta"]), Jsonb(s["fingerprint"]), Jsonb(s["effective"]), name),
        )
        _insert_details(
            cur,
            name,
            [d for rel, d in docs.items() if rel.endswith("/workload.json")],
            [d for rel, d in docs.items() if rel.endswith("/result.json")],
        )


def _insert_details(cur: Any, name: str, workloads: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """mmbench_metrics and mmbench_iterations rows from workload.json and result.json documents."""
    metrics = [(name, w["label"], m["name"], m.get("unit", "")) for w in workloads for m in w.get("metrics", [])]
    if metrics:
        cur.executemany("INSERT INTO mmbench_metrics VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING", metrics)
    its = [(name, d["workload"], d["index"], bool(d.get("warmup")), d.get("status", "ok")) for d in results]
    if its:
        cur.executemany("INSERT INTO mmbench_iterations VALUES (%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING", its)


def _iteration_means(result: IterationResult) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for metric, values in result.samples.items():
        finite = [
            v for v in (values.tolist() if hasattr(values, "tolist") else values) if v is not None and math.isfinite(v)
        ]
        out[metric] = sum(finite) / len(finite) if finite else None
    return out


class PgRunWriter(RunWriter):
    """Writes a run into a private local staging folder (the file store's writer) and uploads each
    part as it becomes durable there: a finished iteration is in PostgreSQL before the next one
    starts.  Every upload is one transaction that first checks the run is still this writer's."""

    def __init__(self, store: "PgStore", name: str, uid: str, local: FileRunWriter, staging_root: Path) -> None:
        self.store = store
        self.name = name
        self.uid = uid
        self.local = local
        self.path = local.path
        self.meta = local.meta
        self.staging_root = staging_root

    def _upload(self, paths: list[Path], extra_sql: list[tuple[str, tuple]] = ()) -> None:
        files = []
        for p in paths:
            for f in [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file()):
                data = f.read_bytes()
                files.append((self.name, f.relative_to(self.path).as_posix(), len(data), zlib.compress(data, 6)))

        def work(conn: Any) -> None:  # every statement an upsert: safe to repeat after a lost commit
            with conn.cursor() as cur:
                cur.execute(
                    f"UPDATE mmbench_runs SET updated=%s, generation=generation+1, version={NEW_VERSION} "
                    f"WHERE name=%s AND uid=%s RETURNING 1",
                    (time.time(), self.name, self.uid),
                )
                if cur.fetchone() is None:
                    conn.rollback()
                    raise StoreError(
                        f"run {self.name!r} in {self.store} was replaced or removed while this run "
                        f"was writing it; nothing more is written"
                    )
                cur.executemany(
                    "INSERT INTO mmbench_files VALUES (%s,%s,%s,%s) ON CONFLICT (run, path) "
                    "DO UPDATE SET size=EXCLUDED.size, data=EXCLUDED.data",
                    files,
                )
                for sql, params in extra_sql:
                    cur.execute(sql, params)
                conn.commit()

        self.store.transaction(work)

    def add_workload(self, workload: WorkloadRun) -> None:
        self.local.add_workload(workload)
        rows = [
            (
                "INSERT INTO mmbench_metrics VALUES (%s,%s,%s,%s) ON CONFLICT (run, workload, metric) "
                "DO UPDATE SET unit=EXCLUDED.unit",
                (self.name, workload.label, m.name, m.unit),
            )
            for m in workload.metrics
        ]
        self._upload([self.path / workload.label / "workload.json"], rows)

    def iteration_dir(self, label: str, index: int) -> Path:
        return self.local.iteration_dir(label, index)

    def staging_dir(self, label: str, index: int) -> Path:
        return self.local.staging_dir(label, index)

    def discard_staging(self) -> None:
        self.local.discard_staging()

    def add_iteration(self, result: IterationResult) -> None:
        self.local.add_iteration(result)
        rows = [
            (
                "INSERT INTO mmbench_values VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT "
                "(run, workload, metric, idx) DO UPDATE SET value=EXCLUDED.value, status=EXCLUDED.status, "
                "warmup=EXCLUDED.warmup",
                (self.name, result.workload, metric, result.index, result.warmup, result.status, mean),
            )
            for metric, mean in _iteration_means(result).items()
        ]
        rows.append(
            (
                "INSERT INTO mmbench_iterations VALUES (%s,%s,%s,%s,%s) ON CONFLICT (run, workload, idx) "
                "DO UPDATE SET warmup=EXCLUDED.warmup, status=EXCLUDED.status",
                (self.name, result.workload, result.index, result.warmup, result.status),
            )
        )
        self._upload([self.iteration_dir(result.workload, result.index)], rows)

    def finish(self, status: str, note: str | None = None) -> None:
        from psycopg.types.json import Jsonb

        self.local.finish(status, note)
        self._upload(
            [self.path / "run.json"],
            [
                (
                    "UPDATE mmbench_runs SET status=%s, finished=%s, suite=%s, meta=%s WHERE name=%s",
                    (status, self.meta.get("finished"), self.meta.get("suite", ""), Jsonb(self.meta), self.name),
                )
            ],
        )
        shutil.rmtree(self.staging_root, ignore_errors=True)  # readers materialise from the database


class PgStore(Store):
    """Runs in PostgreSQL; ``url`` is a libpq URL (``postgresql://user@host/db``)."""

    def __init__(self, url: str, option: str = "--results") -> None:
        check_url(url, option)
        self.url = url
        self.option = option
        self._migrated = False
        self._identity: str | None = None

    def __str__(self) -> str:
        return redact(self.url)

    def transaction(self, work: Any) -> Any:
        """``work(conn)`` on a fresh connection; done again while the server is out of reach (a
        restart, a dropped connection) for up to ``RETRY_SECONDS``, so a run survives a database
        restart.  A server never reached by this process fails at once, unless
        $MMBENCH_PG_RETRY_FIRST is 1 (agents set it for their runs: the server was there when the job
        was taken).  ``work`` must be safe to repeat (one transaction, or idempotent)."""
        psycopg = require_psycopg()
        deadline = time.monotonic() + RETRY_SECONDS
        delay, said = 0.2, False
        while True:
            try:
                with self.conn() as conn:
                    return work(conn)
            except (psycopg.OperationalError, psycopg.InterfaceError, Unreachable) as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                if self._identity is None and not RETRY_FIRST:
                    raise  # never reached yet (a wrong URL, no server): say so at once
                if time.monotonic() > deadline:
                    raise Unreachable(
                        f"PostgreSQL store {self}: lost the server for {RETRY_SECONDS:g} s: {first}"
                    ) from None
                if not said:
                    print(
                        f"mmbench: warning: PostgreSQL store {self}: {first}; trying again for up to "
                        f"{RETRY_SECONDS:g} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    said = True
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def conn(self):
        c = connect(self.url, self.option)
        try:
            if not self._migrated:
                migrate(c)
                self._migrated = True
            if self._identity is None:
                self._identity = _server_identity(c)
        except BaseException:
            c.close()
            raise
        return c

    # -- local materialisation -------------------------------------------------------------
    @property
    def cache_root(self) -> Path:
        """This database's cache folder, named by the server's identity (never the URL)."""
        if self._identity is None:
            self.conn().close()
        return cache_root() / "pg" / str(self._identity)

    @property
    def root(self) -> Path:
        return self.cache_root

    def _version_root(self, name: str, version: str) -> Path:
        return self.cache_root / "runs" / validate_run_name(name) / version

    def _materialise(self, cur: Any, name: str, version: str, fetched: list[bool] | None = None) -> Path:
        """The cached copy of ``version`` of run ``name`` (a FileStore root), fetched if missing
        (then True is appended to ``fetched``).  ``cur`` is in the snapshot that read ``version``,
        so the files are that version's."""
        root = self._version_root(name, version)
        if (root / name / "run.json").exists():
            try:
                os.utime(root)  # in use: kept while it is read (see _drop_old_versions)
            except OSError:
                pass
            return root
        if fetched is not None:
            fetched.append(True)
        tmp = root.parent / f".{version}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        base = (tmp / name).resolve()
        cur.execute("SELECT path, data FROM mmbench_files WHERE run=%s", (name,))
        for rel, data in cur:
            target = (base / rel).resolve()
            if not str(target).startswith(str(base) + os.sep):
                shutil.rmtree(tmp, ignore_errors=True)
                raise StoreError(
                    f"PostgreSQL store {self}: run {name!r} holds a file outside its folder ({rel!r}); refusing it"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zlib.decompress(data))
        try:
            os.rename(tmp, root)
        except OSError:  # another process cached the same version first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
            if not (root / name / "run.json").exists():
                raise
        self._drop_old_versions(name, version)
        return root

    def _drop_old_versions(self, name: str, keep: str) -> None:
        """Cached versions other than ``keep`` not read for ``OLD_VERSION_SECONDS``."""
        now = time.time()
        for d in (self.cache_root / "runs" / name).iterdir():
            try:
                if d.name != keep and now - d.stat().st_mtime > OLD_VERSION_SECONDS:
                    shutil.rmtree(d, ignore_errors=True)
            except OSError:
                pass

    # -- Store interface ---------------------------------------------------------------------
    def exists(self, name: str) -> bool:
        validate_run_name(name)

        def work(conn: Any) -> bool:
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM mmbench_runs WHERE name=%s", (name,))
                return cur.fetchone() is not None

        return self.transaction(work)

    def _claim_name(
        self, cur: Any, name: str, uid: str, force: bool, on_refuse: Callable[[], None] | None = None
    ) -> bool:
        """Under the run's advisory lock, make room for run ``name`` with ``uid``: False when that uid is
        there already (a retry after a commit whose answer was lost), else True, the old run deleted
        with ``force`` or refused without it."""
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"mmbench_run:{name}",))
        cur.execute("SELECT uid FROM mmbench_runs WHERE name=%s", (name,))
        row = cur.fetchone()
        if row is not None and row[0] == uid:
            return False
        if row is not None:
            if not force:
                if on_refuse:
                    on_refuse()
                raise UsageError(
                    f"run {name!r} already exists in {self}; use --force to replace it or pick another name"
                )
            cur.execute("DELETE FROM mmbench_runs WHERE name=%s", (name,))
        return True

    def create_run(
        self,
        name: str,
        *,
        force: bool,
        suite_text: str,
        suite_hash: str,
        suite_effective: dict[str, Any],
        fingerprint: dict[str, Any],
        settings: dict[str, Any],
        status: str = "running",
        description: str = "",
    ) -> PgRunWriter:
        from psycopg.types.json import Jsonb

        validate_run_name(name)
        writing = self.cache_root / "writing"
        _remove_dead_writers(writing)
        staging_root = writing / f"{os.getpid()}-{name}"
        shutil.rmtree(staging_root, ignore_errors=True)
        local = FileStore(staging_root).create_run(
            name,
            force=True,
            suite_text=suite_text,
            suite_hash=suite_hash,
            suite_effective=suite_effective,
            fingerprint=fingerprint,
            settings=settings,
            status=status,
            description=description,
        )
        uid = str(uuid.uuid4())
        summary = run_summary(local.meta, fingerprint, suite_effective, [])
        files = []
        for f in sorted(p for p in local.path.rglob("*") if p.is_file()):
            data = f.read_bytes()
            files.append((name, f.relative_to(local.path).as_posix(), len(data), zlib.compress(data, 6)))

        # the row and the first files in one transaction: a run is never there without its run.json
        def work(conn: Any) -> None:
            with conn.cursor() as cur:
                if not self._claim_name(
                    cur, name, uid, force, on_refuse=lambda: shutil.rmtree(staging_root, ignore_errors=True)
                ):
                    return
                now = time.time()
                cur.execute(
                    "INSERT INTO mmbench_runs (name, status, created, updated, host, owner, kernel, "
                    "description, meta, fingerprint, effective, uid) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (
                        name,
                        status,
                        now,
                        now,
                        str(fingerprint.get("host", "")),
                        f"{socket.gethostname()}:{os.getpid()}",
                        str(fingerprint.get("kernel", {}).get("release", "")),
                        description,
                        Jsonb(summary["meta"]),
                        Jsonb(summary["fingerprint"]),
                        Jsonb(summary["effective"]),
                        uid,
                    ),
                )
                cur.executemany("INSERT INTO mmbench_files VALUES (%s,%s,%s,%s)", files)
                conn.commit()

        self.transaction(work)
        return PgRunWriter(self, name, uid, local, staging_root)

    def _row_status(
        self, status: str, owner: str, updated: float, boot_id: str | None = None, pid_start: str | None = None
    ) -> str:
        """A row that says running: on this machine, running only when its writer is proved alive
        (writer.py ``owner_check``: boot id, pid and start time); on another machine, running while it
        has written within ``STALE_SECONDS``."""
        if status != "running":
            return status
        host, _, pid = owner.rpartition(":")
        if host == socket.gethostname():
            return owner_check(
                {"pid": int(pid) if pid.isdigit() else None, "boot_id": boot_id, "pid_start": pid_start}
            )[0]
        return "incomplete" if time.time() - updated > STALE_SECONDS else status

    def load_run(self, name: str) -> RunRecord:
        """The run, read from its cached copy (fetched first when there is none).  A cached copy that
        does not read back (a damaged file, a flipped bit) is dropped and fetched again, with a
        warning; what the database itself holds damaged is a StoreError naming the run and file."""
        validate_run_name(name)
        fetched: list[bool] = []

        def work(conn: Any) -> tuple[Any, Path | None]:
            # the version and the files it names from one snapshot
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT version, status, owner, updated, meta->>'boot_id', meta->>'pid_start' "
                    "FROM mmbench_runs WHERE name=%s",
                    (name,),
                )
                row = cur.fetchone()
                root = self._materialise(cur, name, row[0], fetched) if row is not None else None
            conn.rollback()
            return row, root

        row, root = self.transaction(work)
        if row is None or root is None:
            from mmbench.model.params import close_match

            known = [r["name"] for r in self.list_runs()]
            raise UsageError(
                f"no run named {name!r} in {self}{close_match(name, known)}"
                + (f"; runs: {', '.join(known[:20])}" if known else " (it holds no runs)")
            )
        try:
            rec = FileStore(root).load_run(name)
        except StoreError as e:
            if fetched:  # what the database holds is damaged: said, and never served from the cache
                shutil.rmtree(root, ignore_errors=True)
                raise StoreError(f"PostgreSQL store {self}: run {name!r}: {e}") from None
            print(
                f"mmbench: warning: the cached copy of run {name!r} in {root} does not read back ({e}); "
                f"dropped and fetched again from {self}",
                file=sys.stderr,
                flush=True,
            )
            shutil.rmtree(root, ignore_errors=True)
            row, root = self.transaction(work)
            if row is None or root is None:
                raise UsageError(f"no run named {name!r} in {self} (removed while it was read)") from None
            try:
                rec = FileStore(root).load_run(name)
            except StoreError as again:
                shutil.rmtree(root, ignore_errors=True)  # never served again; the database is the truth
                raise StoreError(f"PostgreSQL store {self}: run {name!r}: {again}") from None
        _, status, owner, updated, boot_id, pid_start = row
        rec.status = self._row_status(status, owner, updated, boot_id, pid_start)
        return rec

    def list_runs(self) -> list[dict[str, Any]]:
        def work(conn: Any) -> list[tuple]:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT r.name, r.status, r.created, r.kernel, r.description, r.owner, r.updated, "
                    "r.meta->>'boot_id', r.meta->>'pid_start', "
                    "r.host, r.suite, count(i.idx) FILTER (WHERE NOT i.warmup), "
                    "count(i.idx) FILTER (WHERE i.warmup), "
                    "count(i.idx) FILTER (WHERE NOT i.warmup AND i.status <> 'ok') "
                    "FROM mmbench_runs r LEFT JOIN mmbench_iterations i ON i.run = r.name "
                    "GROUP BY r.name ORDER BY r.created"
                )
                return cur.fetchall()

        rows = self.transaction(work)
        return [
            {
                "name": n,
                "status": self._row_status(s, o, u, b, ps),
                "created": c,
                "kernel": k,
                "iterations": it,
                "warmup": wu,
                "failed": bad,
                "description": d,
                "host": h,
                "suite": su,
            }
            for n, s, c, k, d, o, u, b, ps, h, su, it, wu, bad in rows
        ]

    # -- whole-run transfer (push/pull) and history ----------------------------------------------
    def run_files(self, name: str) -> Iterator[tuple[str, bytes]]:
        with self.conn() as conn, conn.cursor() as cur:
            cur.execute("SELECT path, data FROM mmbench_files WHERE run=%s ORDER BY path", (name,))
            for rel, data in cur:
                yield rel, zlib.decompress(data)

    def put_run_files(self, name: str, files: list[tuple[str, bytes]], *, force: bool) -> None:
        """Store a whole run from its files (as a results folder holds them), in one transaction;
        it gets a new uid and version, so no cache anywhere serves the run it replaces."""
        from psycopg.types.json import Jsonb

        validate_run_name(name)
        # checked as a reader checks them (JSON, digests, models, sidecars) before anything is written
        files = reseal_documents(files)
        by_path = dict(files)
        if "run.json" not in by_path:
            raise StoreError(f"run {name!r}: no run.json among its files; not stored in {self}")
        checked = {
            rel: check_document(Path(name) / rel, data, _KINDS.get(rel.rsplit("/", 1)[-1]))
            for rel, data in files
            if is_store_document(rel)
        }
        # the documents as stored (their digest aside): what list and history read
        docs = {rel: {k: v for k, v in json.loads(by_path[rel]).items() if k != SEAL} for rel in checked}
        meta = docs["run.json"]
        fp = docs.get("fingerprint.json", {})
        workloads = [d for rel, d in docs.items() if rel.count("/") == 1 and rel.endswith("/workload.json")]
        s = run_summary(meta, fp, docs.get("suite-effective.json", {}), workloads)
        uid = str(uuid.uuid4())
        values, results = [], []
        for rel, d in checked.items():
            if rel.endswith("/result.json") and rel.count("/") == 2:
                results.append(d)
                folder = rel.rsplit("/", 1)[0]
                it = IterationResult.from_dict(
                    {
                        **d,
                        "samples": samples_from_json(
                            d.get("samples", {}), _sidecar_in(by_path, folder, f"{name}/"), f"{name}/{rel}"
                        ),
                    }
                )
                values += [
                    (name, it.workload, m, it.index, it.warmup, it.status, v) for m, v in _iteration_means(it).items()
                ]
        status = meta.get("status", "incomplete")

        def work(conn: Any) -> None:
            with conn.cursor() as cur:
                if not self._claim_name(cur, name, uid, force):
                    return
                cur.execute(
                    "INSERT INTO mmbench_runs (name, status, created, finished, updated, host, owner, "
                    "kernel, suite, description, meta, fingerprint, effective, uid) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (
                        name,
                        "incomplete" if status == "running" else status,
                        meta.get("created") or 0.0,
                        meta.get("finished"),
                        time.time(),
                        str(fp.get("host", "")),
                        "",
                        str(fp.get("kernel", {}).get("release", "")),
                        meta.get("suite", ""),
                        meta.get("description", ""),
                        Jsonb(s["meta"]),
                        Jsonb(s["fingerprint"]),
                        Jsonb(s["effective"]),
                        uid,
                    ),
                )
                with cur.copy("COPY mmbench_files (run, path, size, data) FROM STDIN") as copy:
                    for rel, data in files:
                        copy.write_row((name, rel, len(data), zlib.compress(data, 6)))
                if values:
                    cur.executemany("INSERT INTO mmbench_values VALUES (%s,%s,%s,%s,%s,%s,%s)", values)
                _insert_details(cur, name, workloads, results)
                conn.commit()

        self.transaction(work)

    def iteration_values(self, runs: list[str]) -> list[tuple[str, str, str, int, float | None]]:
        """(run, workload, metric, index, mean) of the measured, completed iterations of ``runs``."""

        def work(conn: Any) -> list[tuple]:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT run, workload, metric, idx, value FROM mmbench_values WHERE run = ANY(%s) "
                    "AND NOT warmup AND status='ok' ORDER BY run, workload, metric, idx",
                    (runs,),
                )
                return cur.fetchall()

        return self.transaction(work)

    def run_summaries(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """``run_summary`` of each run, from the columns that hold it (no file is read)."""

        def work(conn: Any) -> dict[str, dict[str, Any]]:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT name, meta, fingerprint, effective FROM mmbench_runs WHERE name = ANY(%s)", (names,)
                )
                out = {n: {"meta": m, "fingerprint": f, "effective": e, "units": {}} for n, m, f, e in cur.fetchall()}
                cur.execute("SELECT run, workload, metric, unit FROM mmbench_metrics WHERE run = ANY(%s)", (names,))
                for run, workload, metric, unit in cur.fetchall():
                    out[run]["units"][f"{workload}.{metric}"] = unit
            return out

        return self.transaction(work)

    def remove_run(self, name: str) -> None:
        def work(conn: Any) -> None:
            conn.execute("DELETE FROM mmbench_runs WHERE name=%s", (validate_run_name(name),))
            conn.commit()

        self.transaction(work)
        shutil.rmtree(self.cache_root / "runs" / name, ignore_errors=True)


def _server_identity(conn: Any) -> str:
    """The server's system identifier, the database's OID and the store's own UUID, hashed: the name
    of this database's cache folder (a service name or URL may point at another database later)."""
    import psycopg

    sysid = ""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT system_identifier FROM pg_control_system()")
            sysid = str(cur.fetchone()[0])
        conn.commit()
    except psycopg.Error:  # not allowed to every role: the OID and store UUID still tell
        conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        oid = cur.fetchone()[0]
        cur.execute("SELECT id FROM mmbench_store")
        store_id = cur.fetchone()[0]
    conn.commit()
    return hashlib.sha256(f"{sysid}/{oid}/{store_id}".encode()).hexdigest()[:16]


def _remove_dead_writers(root: Path) -> None:
    """Staging folders of writers on this machine that died (named ``<pid>-<run>``)."""
    if not root.is_dir():
        return
    for d in root.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
