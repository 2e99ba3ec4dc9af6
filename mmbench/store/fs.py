"""The embedded store: a results directory with one folder per run, plus ``index.sqlite``.

Layout (docs/results-format.md)::

    <results>/index.sqlite                       runs, workloads, metrics, iterations, sample_means
    <results>/<run>/run.json                     name, status, times, pid, settings, version
    <results>/<run>/suite.toml, suite-effective.json, fingerprint.json
    <results>/<run>/<workload>/workload.json     plugin, params, metric definitions
    <results>/<run>/<workload>/iter-<N>/result.json, raw/, vmstat-before, vmstat-after, monitors/
    <results>/<run>/<workload>/iter-<N>/samples-<digest>.f8   packed samples (float64) result.json names

JSON files are the truth (written to a temporary name, fsynced, renamed) and are read through
the validated models of ``model/files.py``: a damaged file is one line naming it.  The SQLite
index is the store's index: ``list`` and ``history`` read it, and it is brought up to date from
the folders first (a run whose indexed files changed since it was indexed is indexed again, one
whose files only have new mtimes — a copied store — is not, a row whose folder is gone is
dropped); ``mmbench reindex`` rebuilds it whole, ``mmbench rm`` removes a run from folders and
index.  The writer indexes the run it wrote, once, when it finishes (best
effort: what it could not record, the next ``list`` indexes from the folder).  A store opens its
index once: one connection per process, so no read ever waits on a transaction the same process
holds open.
"""

from __future__ import annotations

import atexit
import errno
import itertools
import json
import math
import operator
import os
import shutil
import sqlite3
import stat
import sys
import time
from array import array
from contextlib import contextmanager
from hashlib import blake2b
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

from mmbench import __version__
from mmbench.model.kernel import proc_start_time
from mmbench.errors import UsageError
from mmbench.model.store import RunWriter, Store, durable_writes, reseal_documents, validate_run_name
from mmbench.model.store_format import STORE_FORMAT
from mmbench.model.files import (SAMPLES_FILE, VERIFY_HINT, StoreError, StoreFull, file_kind,
                                 iteration_index_problem, json_default, kernel_release, pack_iteration_samples,
                                 read_checked, read_json, read_object, read_regular, register_store_root,
                                 remember_checked_files, samples_from_json, seal, sidecar_reader)
from mmbench.model.results import OWNER_UNKNOWN, IterationResult, MetricDef, RunRecord, WorkloadRun

# result.json's keys that make an IterationResult (the rest are kept in the file, unread)
RESULT_FIELDS = tuple(f.name for f in fields(IterationResult))

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (name TEXT PRIMARY KEY, status TEXT, created REAL, finished REAL,
    suite_hash TEXT, kernel TEXT, description TEXT, path TEXT);
CREATE TABLE IF NOT EXISTS workloads (run TEXT, label TEXT, plugin TEXT, params TEXT,
    PRIMARY KEY (run, label));
CREATE TABLE IF NOT EXISTS metrics (run TEXT, workload TEXT, name TEXT, unit TEXT, better TEXT,
    kind TEXT, mean TEXT, PRIMARY KEY (run, workload, name));
CREATE TABLE IF NOT EXISTS iterations (run TEXT, workload TEXT, idx INTEGER, warmup INTEGER,
    status TEXT, reason TEXT, user_s REAL, system_s REAL, elapsed_s REAL, path TEXT,
    PRIMARY KEY (run, workload, idx));
CREATE TABLE IF NOT EXISTS sample_means (run TEXT, workload TEXT, idx INTEGER, metric TEXT, n INTEGER,
    mean REAL);
CREATE INDEX IF NOT EXISTS sample_means_by_run ON sample_means (run, workload, metric);
CREATE TABLE IF NOT EXISTS indexed (run TEXT PRIMARY KEY, mtime_ns INTEGER, host TEXT, suite TEXT,
    signature TEXT, digest TEXT, rows TEXT, means TEXT);
CREATE TABLE IF NOT EXISTS checked (run TEXT, path TEXT, digest TEXT, document TEXT, PRIMARY KEY (run, path));
"""


def write_json(path: Path, data: Any) -> None:
    """Durable write of a store document, sealed with its digest (model/files.py ``seal``):
    temporary file, fsync, rename, fsync of the directory (no fsync for an import: ``copied_runs``).
    A write that fails leaves no temporary file; a full filesystem is a ``StoreFull`` naming the folder."""
    doc = seal(data, path.name)
    _write_durably(path, lambda fh: json.dump(doc, fh, indent=1, default=json_default, allow_nan=False), "w")


def write_bytes(path: Path, data: bytes) -> None:
    """:func:`write_json`'s durable write, of bytes (an iteration's sidecar of samples)."""
    _write_durably(path, lambda fh: fh.write(data), "wb")


def _write_durably(path: Path, write: Any, mode: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    durable = durable_writes()   # (an import is a copy: model/store.py copied_runs)
    try:
        with open(tmp, mode) as fh:
            write(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            _fsync_dir(path.parent)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise store_write_error(e, path) from None


def store_write_error(e: OSError, path: Path) -> OSError | StoreError:
    """A failed write into the store as the one line a user can act on (ENOSPC/EDQUOT: the folder
    whose filesystem is full); any other error keeps its file name (the CLI prints it)."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreFull(f"no space left on {_mount_of(path)} (writing {path})")
    if e.filename is None:
        e.filename = str(path)
    return e


def _mount_of(path: Path) -> Path:
    """The folder a user would name for "the filesystem is full": the mount point holding ``path``
    (its nearest existing ancestor on the same device)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        dev = p.stat().st_dev
        while p != p.parent and p.parent.stat().st_dev == dev:
            p = p.parent
    except OSError:
        pass
    return p


def pid_alive(pid: int) -> bool:
    return proc_start_time(pid) is not None


def _fsync_dir(path: Path) -> None:
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def owner_check(meta: dict[str, Any]) -> tuple[str, str]:
    """(status, why) of a run whose run.json says "running": "running" only when its writer is
    proved alive on this machine — the same boot (boot id), its pid there, started at the recorded
    start time; "incomplete" when it is proved gone (same boot, and the pid is gone or is another
    process now); else OWNER_UNKNOWN, the why saying what cannot be told (a run.json without a
    boot id or start time, from an older mmbench or another tool, or from another boot or machine)."""
    pid = meta.get("pid")
    if type(pid) is not int or pid <= 0:
        return OWNER_UNKNOWN, "it records no writer's pid"
    boot, start = meta.get("boot_id"), meta.get("pid_start")
    if not boot or not start:
        missing = " or ".join(k for k, v in (("boot id", boot), ("process start time", start)) if not v)
        return OWNER_UNKNOWN, (f"it records pid {pid} but no {missing} (written by an older mmbench, or "
                               f"copied), so pid {pid} here may be any process")
    if boot != _boot_id():
        return OWNER_UNKNOWN, "it was written during another boot or on another machine (its boot id is not this one's)"
    now = proc_start_time(pid)
    if now is None:
        return "incomplete", f"its writer (pid {pid}) is gone"
    if now != start:
        return "incomplete", f"its writer (pid {pid}) is gone; that pid is another process now"
    return "running", f"its writer (pid {pid}) is alive"


def _owner_alive(meta: dict[str, Any]) -> bool:
    """Is the process that wrote this "running" run.json still that process (``owner_check``)?"""
    return owner_check(meta)[0] == "running"


class FileRunWriter(RunWriter):
    """Writes one run's folder as it happens (each iteration durable before the next starts) and
    indexes the run once, when it finishes: until then ``list`` indexes it from its folder."""

    def __init__(self, store: "FileStore", name: str, path: Path, meta: dict[str, Any],
                 fingerprint: dict[str, Any]) -> None:
        self.store = store
        self.name = name
        self.path = path
        self.meta = meta
        self.fingerprint = fingerprint
        self.workloads: dict[str, WorkloadRun] = {}   # what was written, indexed at finish

    def add_workload(self, workload: WorkloadRun) -> None:
        wdir = self.path / workload.label
        try:
            wdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise store_write_error(e, wdir) from None
        write_json(wdir / "workload.json", {"label": workload.label, "plugin": workload.plugin,
                                            "params": workload.params,
                                            "metrics": [m.to_dict() for m in workload.metrics]})
        self._check(wdir / "workload.json", "workload")
        self.workloads[workload.label] = WorkloadRun(label=workload.label, plugin=workload.plugin,
                                                     params=workload.params, metrics=list(workload.metrics))

    def iteration_dir(self, label: str, index: int) -> Path:
        return self.path / label / f"iter-{index}"

    def staging_dir(self, label: str, index: int) -> Path:
        """Where an iteration's files go while it runs; ``add_iteration`` renames it into place.
        Readers never look at it (its name starts with a dot)."""
        return self.path / label / f".iter-{index}.partial"

    def add_iteration(self, result: IterationResult) -> None:
        problem = iteration_index_problem(result.index)
        if problem:   # before anything is written: it could never be indexed
            raise UsageError(f"run {self.name!r}: workload {result.workload!r}: {problem}")
        itdir = self.iteration_dir(result.workload, result.index)
        staging = self.staging_dir(result.workload, result.index)
        data = result.to_dict()
        data["samples"], blob, sidecar = pack_iteration_samples(result.samples)
        try:
            if staging.is_dir():   # result.json last, then one rename: the iteration appears whole
                if blob:
                    write_bytes(staging / sidecar, blob)
                write_json(staging / "result.json", data)
                if itdir.exists():
                    shutil.rmtree(itdir)
                os.rename(staging, itdir)
                if durable_writes():
                    _fsync_dir(itdir.parent)
            else:
                itdir.mkdir(parents=True, exist_ok=True)
                if blob:           # before the result.json that points into it
                    write_bytes(itdir / sidecar, blob)
                write_json(itdir / "result.json", data)
                for old in itdir.glob("samples-*.f8"):     # an earlier write's, no longer read
                    if old.name != sidecar:
                        old.unlink(missing_ok=True)
        except OSError as e:
            raise store_write_error(e, itdir) from None
        self._check(itdir / "result.json", "result")
        w = self.workloads.get(result.workload)
        if w is not None:
            w.iterations = [it for it in w.iterations if it.index != result.index] + [result]

    def discard_staging(self) -> None:
        """Remove staging folders of iterations that were never stored (an interrupted run)."""
        for d in self.path.glob("*/.iter-*.partial"):
            shutil.rmtree(d, ignore_errors=True)

    def finish(self, status: str, note: str | None = None) -> None:
        self.meta.update(status=status, finished=time.time())
        if note:
            self.meta["note"] = note
        try:
            write_json(self.path / "run.json", self.meta)
        except StoreFull:
            # The spare file reserved at create_run makes room for this one small write, so even
            # a full filesystem leaves the run marked as what it is (not "running").
            if not self._release_spare():
                raise
            write_json(self.path / "run.json", self.meta)
        self._release_spare()
        self._check(self.path / "run.json", "run")
        self._index()

    def _release_spare(self) -> bool:
        spare = self.path / SPARE
        try:
            spare.unlink()
            return True
        except OSError:
            return False

    def _index(self) -> None:
        """The run's rows in the index, in one transaction, from what this writer wrote."""
        rec = RunRecord(name=self.name, status=self.meta["status"], created=self.meta["created"],
                        finished=self.meta["finished"], suite_text="", suite_hash=self.meta["suite_hash"],
                        fingerprint=self.fingerprint, settings=self.meta["settings"],
                        workloads=list(self.workloads.values()))
        files = indexed_files(self.path)
        if "run.json" not in files:
            return
        with self.store.index_quietly() as db:
            self.store.checked.flush(db)
            _drop(db, self.name, checked=False)
            _insert_run(db, self.name, rec, self.meta, str(self.path))
            db.execute("INSERT OR REPLACE INTO indexed (run, mtime_ns, host, suite, signature, digest) "
                       "VALUES (?,?,?,?,?,?)",
                       (self.name, files["run.json"][1], str(self.fingerprint.get("host", "")),
                        self.meta.get("suite", ""), _signature(files), _content_digest(self.path, files)))
            seal_rows(db, [self.name])

    def _check(self, path: Path, kind: str) -> None:
        """Validate what was just written (model/files.py), so the first ``compare`` need not;
        a file that fails is reported now and again by every reader, and the run goes on.
        Not for an import (``copied_runs``): it does not pay pydantic's import for it, and its
        first read validates instead."""
        if not durable_writes():
            return
        try:
            read_checked(path, kind)
        except StoreError as e:
            _warn(f"a stored file does not read back: {e}")


# Reserved when a run is created, released when it finishes: room for the last run.json on a
# filesystem that filled up meanwhile.
SPARE = ".spare"
SPARE_BYTES = 64 << 10


def indexed_files(run_dir: Path) -> dict[str, tuple[int, int]]:
    """The files a run's index rows are made from — run.json, fingerprint.json, each workload's
    workload.json and each iteration's result.json — as relative path → (size, mtime in ns).
    About a dozen stat calls a run: what ``list`` looks at to tell that a run folder changed."""
    out: dict[str, tuple[int, int]] = {}

    def note(entry: os.DirEntry, rel: str) -> None:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return
        out[rel] = (st.st_size, st.st_mtime_ns)

    def scan(folder: str | Path) -> list[os.DirEntry]:
        try:
            with os.scandir(folder) as it:
                return list(it)
        except OSError:
            return []

    for e in scan(run_dir):
        if e.name in ("run.json", "fingerprint.json"):
            note(e, e.name)
        elif not e.name.startswith(".") and e.is_dir(follow_symlinks=False):
            for w in scan(e.path):
                if w.name == "workload.json":
                    note(w, f"{e.name}/workload.json")
                elif w.name.startswith("iter-") and w.is_dir(follow_symlinks=False):
                    for r in scan(w.path):
                        if r.name == "result.json" or SAMPLES_FILE.fullmatch(r.name):
                            note(r, f"{e.name}/{w.name}/{r.name}")
    return out


def _signature(files: dict[str, tuple[int, int]]) -> str:
    """Names, sizes and mtimes of a run's indexed files: equal, and the index rows still hold."""
    return blake2b(repr(sorted(files.items())).encode(), digest_size=16).hexdigest()


def _content_digest(run_dir: Path, files: dict[str, tuple[int, int]]) -> str | None:
    """A digest of the indexed files' names and bytes: a copied store (``cp -r``, a backup put
    back) has new mtimes but the same bytes, and needs no indexing again."""
    h = blake2b(digest_size=16)
    try:
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + read_regular(run_dir / rel, limit=1 << 62) + b"\0")
    except StoreError:   # (a FIFO, a symlink out: the run's reader names it)
        return None
    return h.hexdigest()


class IndexCheckedFiles:
    """The index's ``checked`` table: stored files that passed validation, by content digest
    (model/files.py).  Read a run at a time; new verdicts are written when a run has been read
    (``flush``).  Best effort both ways: without a usable index every read validates."""

    def __init__(self, store: "FileStore") -> None:
        self.store = store
        self.runs: dict[str, dict[str, tuple[str, str | None]]] = {}
        self.pending: list[tuple[str, str, str, str | None]] = []

    def _where(self, path: Path) -> tuple[str, str] | None:
        text, root = str(path), str(self.store.root)
        if not text.startswith(root + os.sep):
            return None
        rel = text[len(root) + 1:]
        run, sep, _ = rel.partition(os.sep)
        # (a folder whose name starts with a dot is no run: a run being received, a staging copy)
        return (run, rel) if sep and run and not run.startswith(".") else None

    def lookup(self, path: Path) -> tuple[str, str | None] | None:
        where = self._where(path)
        if where is None:
            return None
        run, rel = where
        if run not in self.runs:
            self.runs[run] = {}
            if (self.store.root / "index.sqlite").exists():
                try:   # the store's one connection: never a second one waiting on our own transaction
                    self.runs[run] = {p: (d, doc) for p, d, doc in self.store.db().execute(
                        "SELECT path, digest, document FROM checked WHERE run=?", (run,))}
                except (sqlite3.Error, StoreError):
                    pass
        return self.runs[run].get(rel)

    def remember(self, path: Path, digest: str, document: str | None) -> None:
        where = self._where(path)
        if where is not None:
            self.runs.setdefault(where[0], {})[where[1]] = (digest, document)
            if not self.pending:    # files read after the last run (monitor summaries) are kept too
                atexit.register(self.flush)
            self.pending.append((*where, digest, document))

    def flush(self, db: sqlite3.Connection | None = None) -> None:
        """Write the new verdicts, through ``db`` when the caller holds the index open."""
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        atexit.unregister(self.flush)
        try:
            if db is not None:
                db.executemany("INSERT OR REPLACE INTO checked VALUES (?,?,?,?)", rows)
                return
            with self.store.db() as own:
                own.executemany("INSERT OR REPLACE INTO checked VALUES (?,?,?,?)", rows)
        except (sqlite3.Error, StoreError, OSError):
            pass   # a read-only or busy index: the next read validates again

    def forget(self, run: str) -> None:
        self.runs.pop(run, None)
        self.pending = [r for r in self.pending if r[0] != run]


class FileStore(Store):
    def __init__(self, root: str | Path, option: str = "--results") -> None:
        self.root = Path(root)
        self.option = option   # the argument that named it, for messages (--to, --from)
        self.checked = IndexCheckedFiles(self)
        remember_checked_files(self.root, self.checked)
        register_store_root(self.root)
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0

    def __str__(self) -> str:
        return str(self.root)

    def _check_root(self) -> None:
        """The results directory is a directory, or not there yet; anything else is one line
        naming it (a symlink loop or a dangling link is never "no runs")."""
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            if self.root.is_symlink():
                raise StoreError(f"{self.option} {self.root}: the results directory is a symlink to "
                                 f"{os.readlink(self.root)!r}, which does not exist") from None
            return
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StoreError(f"{self.option} {self.root}: the results directory is a symlink loop "
                                 f"(too many levels of symbolic links)") from None
            raise StoreError(f"{self.option} {self.root}: the results directory cannot be read: {e.strerror or e}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise StoreError(f"{self.option} {self.root}: the results directory is not a directory")

    def db(self) -> sqlite3.Connection:
        """The index, opened (and created) once per store and process; a damaged one is a
        StoreError naming it.  One connection: a read inside a transaction (``sync``) reads
        through it instead of waiting for that transaction's lock on a second one."""
        if self._conn is not None and self._conn_pid == os.getpid():
            return self._conn
        self._check_root()
        self.root.mkdir(parents=True, exist_ok=True)
        index = self.root / "index.sqlite"
        existed = os.path.lexists(index)
        if existed:   # SQLite would follow a symlink and wait on a FIFO for ever
            mode = os.lstat(index).st_mode
            if not stat.S_ISREG(mode):
                raise IndexDamaged(f"{index}: {file_kind(mode)}, not a regular file (move it away, or run "
                                   f"'mmbench reindex' to replace it)")
        try:
            conn = sqlite3.connect(index, timeout=30, check_same_thread=False)
            conn.executescript(SCHEMA)
            _migrate(conn)
        except sqlite3.Error as e:
            if not existed:   # nothing to rebuild: the folder does not take a new file
                raise IndexUnavailable(f"{index}: cannot be created there ({e})") from None
            raise IndexDamaged(f"{index}: {e} (run 'mmbench reindex' to rebuild it from the run folders)") from None
        self._conn, self._conn_pid = conn, os.getpid()
        return conn

    @contextmanager
    def index_quietly(self) -> Iterator[Any]:
        """A writer's index update: if the index is damaged or busy, the run folder (the truth)
        is still written and the next ``list`` or ``mmbench reindex`` brings the index up to date."""
        try:
            conn = self.db()
        except IndexDamaged as e:
            _warn(f"index not updated ({e})")
            conn = sqlite3.connect(":memory:")   # the update goes nowhere; the folder is written
            conn.executescript(SCHEMA)
        try:
            with conn:
                yield conn
        except sqlite3.Error as e:
            _warn(f"index not updated ({self.root / 'index.sqlite'}: {e})")

    def run_path(self, name: str) -> Path:
        return self.root / validate_run_name(name)

    def exists(self, name: str) -> bool:
        self._check_root()
        return (self.run_path(name) / "run.json").exists()

    def create_run(self, name: str, *, force: bool, suite_text: str, suite_hash: str,
                   suite_effective: dict[str, Any], fingerprint: dict[str, Any],
                   settings: dict[str, Any], status: str = "running",
                   description: str = "") -> FileRunWriter:
        path = self.run_path(name)
        if path.exists() or path.is_symlink():
            if not force:
                raise UsageError(f"run {name!r} already exists in {self.root}; use --force to replace it "
                                 f"or pick another name")
            self.refuse_if_running(name, "replace")
            self.remove_run(name)
        meta = {"name": name, "format": STORE_FORMAT, "status": status, "created": time.time(), "finished": None,
                "pid": os.getpid(), "pid_start": proc_start_time(os.getpid()), "boot_id": _boot_id(),
                "suite_hash": suite_hash, "settings": settings, "mmbench_version": __version__,
                "description": description,
                # digests of the run's files that are not sealed JSON documents (model/files.py)
                "files": {"suite.toml": text_digest(suite_text.encode())}}
        try:
            path.mkdir(parents=True)
            # room for the final run.json should the filesystem fill up during the run
            (path / SPARE).write_bytes(bytes(SPARE_BYTES))
            (path / "suite.toml").write_bytes(suite_text.encode())
            write_json(path / "suite-effective.json", suite_effective)
            write_json(path / "fingerprint.json", fingerprint)
            write_json(path / "run.json", meta)
        except (OSError, StoreError) as e:
            shutil.rmtree(path, ignore_errors=True)   # not a run yet: nothing half-made is left
            if isinstance(e, OSError):
                raise store_write_error(e, path) from None
            raise
        return FileRunWriter(self, name, path, meta, fingerprint)

    def refuse_if_running(self, name: str, verb: str) -> None:
        """A run that an ``mmbench run`` (or import) is still writing is never replaced or
        removed under it: its finished iterations would be lost and its folder half another run.
        One that says running but whose writer is not proved alive is let go, with a warning why."""
        why = self.stale_running(name, verb)
        if why is not None:
            _warn(why)

    def stale_running(self, name: str, verb: str) -> str | None:
        """For a run whose run.json says running: a UsageError when its writer is alive on this
        machine; else the line that says why it is taken as not running (None for any other run)."""
        path = self.run_path(name)
        try:
            meta = read_json(path / "run.json")
        except UsageError:
            return None   # damaged or absent: nobody is writing it
        if not isinstance(meta, dict) or meta.get("status") != "running":
            return None
        status, why = owner_check(meta)
        if status == "running":
            raise UsageError(f"run {name!r} in {self.root} is still being written (mmbench pid "
                             f"{meta.get('pid')}); cannot {verb} it until that run ends")
        return f"run {name!r} says running, but {why}: taken as {status} and {verb}d"

    def run_status(self, name: str) -> str | None:
        """A run's status from its run.json alone: None if there is no such run folder,
        "damaged" if run.json cannot be read (``mmbench rm`` can still remove it)."""
        path = self.run_path(name)
        if not path.is_dir():
            return None
        try:
            return self._status(read_checked(path / "run.json", "run"))
        except UsageError:
            return "damaged"

    def _status(self, meta: dict[str, Any]) -> str:
        # A run whose process died without finishing (SIGKILL, power loss) is incomplete, one whose
        # writer cannot be proved alive or dead is OWNER_UNKNOWN; the index is corrected too, so
        # nothing reading it sees "running" for a run nobody writes.
        if meta.get("status") == "running":
            return owner_check(meta)[0]
        return meta.get("status", "incomplete")

    def _sync_index(self, statuses: dict[str, str]) -> None:
        """run.json is the truth: an index row that disagrees (a run killed between writing
        run.json and the index, or whose owner died while "running") is corrected."""
        if not statuses or not (self.root / "index.sqlite").exists():
            return
        try:
            db = self.db()
            names = list(statuses)
            rows: dict[str, str] = {}
            for i in range(0, len(names), 500):    # SQLite's limit on host parameters
                part = names[i:i + 500]
                rows.update(db.execute(f"SELECT name, status FROM runs WHERE name IN ({','.join('?' * len(part))})",
                                       part).fetchall())
            wrong = [(st, n) for n, st in statuses.items() if n in rows and rows[n] != st]
            if wrong:
                with db:
                    db.executemany("UPDATE runs SET status=? WHERE name=?", wrong)
                    seal_rows(db, [n for _, n in wrong])
        except (sqlite3.Error, IndexDamaged):
            pass   # a read-only or damaged index: the folders still answer

    def load_run(self, name: str) -> RunRecord:
        self._check_root()
        path = self.run_path(name)
        if not (path / "run.json").exists():
            known = sorted(p.parent.name for p in self.root.glob("*/run.json")) if self.root.is_dir() else []
            from mmbench.model.params import close_match
            raise UsageError(f"no run named {name!r} in {self.root}{close_match(name, known)}"
                             + (f"; runs: {', '.join(known)}" if known else " (it holds no runs)"))
        try:
            return self._load_run(name, path)
        finally:
            self.checked.flush()

    def _load_run(self, name: str, path: Path, *, sync_index: bool = True) -> RunRecord:
        meta = read_checked(path / "run.json", "run")
        status = self._status(meta)
        if sync_index:
            self._sync_index({name: status})
        fp_path = path / "fingerprint.json"
        rec = RunRecord(name=name, status=status, created=meta["created"],  # type: ignore[arg-type]
                        finished=meta["finished"], suite_text=self._suite_text(path, meta), suite_hash=meta["suite_hash"],
                        fingerprint=read_object(fp_path) if _lexists(fp_path) else {},
                        settings=meta["settings"], path=path, mmbench_version=meta["mmbench_version"])
        if _lexists(path / "suite-effective.json"):   # analysis reads it: its digest is checked here
            read_object(path / "suite-effective.json")
        for wfile in sorted(path.glob("*/workload.json"), key=_mtime):
            w = read_checked(wfile, "workload")
            if w["label"] != wfile.parent.name:
                raise StoreError(f"{wfile}: label {w['label']!r} but its folder is {wfile.parent.name!r} "
                                 f"(a copied or foreign file)")
            wr = WorkloadRun(label=w["label"], plugin=w["plugin"], params=w["params"],
                             metrics=[MetricDef.from_dict(m) for m in w["metrics"]])
            its = []
            for rfile in wfile.parent.glob("iter-*/result.json"):
                d = read_checked(rfile, "result")
                if rfile.parent.name != f"iter-{d['index']}" or d["workload"] != w["label"]:
                    raise StoreError(f"{rfile}: says workload {d['workload']!r} iteration {d['index']}, but it "
                                     f"is in {w['label']}/{rfile.parent.name} (a copied or foreign file)")
                fields = {k: d[k] for k in RESULT_FIELDS}
                fields["samples"] = samples_from_json(d["samples"], sidecar_reader(rfile.parent), str(rfile))
                its.append(IterationResult(**fields))
            wr.iterations = sorted(its, key=lambda it: it.index)
            rec.workloads.append(wr)
        order = meta["workload_order"]
        if order:
            rec.workloads.sort(key=lambda w: order.index(w.label) if w.label in order else len(order))
        return rec

    @staticmethod
    def _suite_text(path: Path, meta: dict[str, Any]) -> str:
        """suite.toml as the run stored it ("" when it has none), checked against its digest in run.json."""
        f = path / "suite.toml"
        if not _lexists(f):
            return ""
        raw = read_regular(f)
        want = (meta.get("files") or {}).get("suite.toml") if isinstance(meta.get("files"), dict) else None
        if want is not None and want != text_digest(raw):
            raise StoreError(f"{f}: its bytes do not match the BLAKE2b digest run.json holds for it (damaged on "
                             f"disk, or edited by hand; {VERIFY_HINT})")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise StoreError(f"{f}: not UTF-8 text (damaged or foreign)") from None

    def list_runs(self) -> list[dict[str, Any]]:
        """Every run, through the index (brought up to date from the folders first).  A damaged run
        is skipped with a one-line warning; a damaged index falls back to reading the folders."""
        self._check_root()
        if not self.root.is_dir():
            return []
        try:
            return self._runs_from_index()
        except IndexDamaged as e:
            if isinstance(e, IndexUnavailable) and not self._folders():
                raise StoreError(f"{self.option} {self.root}: not a results directory: it holds no run, and "
                                 f"index.sqlite {str(e).rsplit(': ', 1)[-1]}") from None
            _warn(f"{e}; listing from the run folders")
            return self._runs_from_folders()
        except sqlite3.Error as e:   # read-only or locked: the folders still answer
            _warn(f"{self.root / 'index.sqlite'}: {e}; listing from the run folders")
            return self._runs_from_folders()

    def _folders(self) -> dict[str, int]:
        """Run folders: name → run.json's mtime (ns)."""
        out = {}
        for rj in self.root.glob("*/run.json"):
            if rj.parent.name.startswith("."):
                continue
            try:
                out[rj.parent.name] = rj.stat().st_mtime_ns
            except OSError:
                continue
        return out

    def sync(self, *, rebuild: bool = False) -> tuple[int, int, list[str]]:
        """Bring the index up to date with the folders: (runs indexed, rows dropped, damaged runs).

        ``rebuild`` builds a new index from every folder beside the old one and renames it into
        place (``mmbench reindex``): a damaged index file is replaced, never patched."""
        folders = self._folders()
        if rebuild:
            target = self.root / "index.sqlite"
            if target.is_dir() and not target.is_symlink():
                raise StoreError(f"{target}: a directory; move it away first")
            tmp = self.root / f".index.sqlite.new-{os.getpid()}"
            tmp.unlink(missing_ok=True)
            try:
                conn = sqlite3.connect(tmp)
                conn.executescript(SCHEMA)
                conn.execute(f"PRAGMA user_version = {INDEX_VERSION}")   # (sample_means filled as each run is indexed)
                damaged = [n for n in sorted(folders) if not self._index_one(conn, n)]
                conn.commit()
                conn.close()
                os.replace(tmp, target)
                if self._conn is not None:   # it reads the file just replaced
                    self._conn.close()
                    self._conn = None
            finally:
                tmp.unlink(missing_ok=True)
            return len(folders) - len(damaged), 0, damaged
        indexed = dropped = 0
        damaged = []
        db = self.db()
        with db:
            known = {run: (signature, digest) for run, signature, digest in
                     db.execute("SELECT run, signature, digest FROM indexed").fetchall()}
            rows = dict(db.execute("SELECT name, status FROM runs").fetchall())
            started = time.monotonic()
            for name in sorted(folders):
                seen = known.get(name)
                files = indexed_files(self.run_path(name))
                signature = _signature(files)
                # A run that is still being written is indexed again (its writer indexes it when
                # it finishes).  Files with new mtimes but the same bytes (a copied store, a
                # restored backup) need no indexing, only their new signature.
                if seen is not None and rows.get(name, "running") != "running":
                    if seen[0] == signature:
                        continue
                    if seen[1] is not None and seen[1] == _content_digest(self.run_path(name), files):
                        db.execute("UPDATE indexed SET signature=?, mtime_ns=? WHERE run=?",
                                   (signature, files.get("run.json", (0, 0))[1], name))
                        continue
                if self._index_one(db, name, files):
                    indexed += 1
                else:
                    damaged.append(name)
                if time.monotonic() - started > 0.5:   # a long sync lets a running writer in between
                    db.commit()
                    started = time.monotonic()
            for name in (set(known) | set(rows)) - set(folders):
                _drop(db, name)
                dropped += 1
        return indexed, dropped, damaged

    def _index_one(self, db: sqlite3.Connection, name: str,
                   files: dict[str, tuple[int, int]] | None = None) -> bool:
        """Index one run folder; a damaged one is dropped from the index with a warning."""
        try:
            validate_run_name(name)
            if files is None:
                files = indexed_files(self.run_path(name))
            # what the files were before reading them: a change after that is seen next time
            signature, digest = _signature(files), _content_digest(self.run_path(name), files)
            rec = self._load_run(name, self.run_path(name))
            meta = read_checked(self.run_path(name) / "run.json", "run")
        except UsageError as e:
            _warn(f"skipping run {name}: {e}")
            _drop(db, name)
            return False
        _drop(db, name, checked=False)   # verdicts are by content: the unchanged files keep theirs
        self.checked.flush(db)
        try:
            _insert_run(db, name, rec, meta, str(self.run_path(name)))
        except (OverflowError, sqlite3.InterfaceError) as e:   # a number no index column holds
            _warn(f"skipping run {name}: {self.run_path(name)}: cannot be indexed ({e})")
            _drop(db, name)
            return False
        db.execute("INSERT OR REPLACE INTO indexed (run, mtime_ns, host, suite, signature, digest) "
                   "VALUES (?,?,?,?,?,?)",
                   (name, files.get("run.json", (0, 0))[1], str(rec.fingerprint.get("host", "")), meta["suite"],
                    signature, digest))
        seal_rows(db, [name])
        return True

    def _runs_from_index(self) -> list[dict[str, Any]]:
        self.sync()
        db = self.db()
        with db:
            runs, its = _list_rows(db)
            damaged = _damaged_rows(db, runs, its, "rows")
            if damaged:
                self._reindex_damaged(db, damaged)
                runs, its = _list_rows(db)
        out = []
        for name, (_, st, c, k, d, h, su) in runs.items():
            mine = its.get(name, [])
            out.append({"name": name, "status": st, "created": c, "kernel": k or "", "description": d or "",
                        "host": h or "", "suite": su or "", "iterations": sum(not w for _, _, w, _ in mine),
                        "warmup": sum(bool(w) for _, _, w, _ in mine),
                        "failed": sum(not w and s != "ok" for _, _, w, s in mine)})
        # a "running" row whose process has died is incomplete (and corrected in the index)
        for r in out:
            if r["status"] == "running":
                try:
                    r["status"] = self._status(read_checked(self.run_path(r["name"]) / "run.json", "run"))
                except UsageError:
                    r["status"] = "incomplete"
        self._sync_index({r["name"]: r["status"] for r in out})
        return sorted(out, key=lambda r: r["created"] or 0)

    def _reindex_damaged(self, db: sqlite3.Connection, names: list[str]) -> None:
        """Index again, from their folders, runs whose index rows no longer match their digests
        (a damaged index.sqlite): the folder is the truth, and no damaged row is shown."""
        for name in names:
            _warn(f"{self.root / 'index.sqlite'}: the rows of run {name} do not match their digest (a damaged "
                  f"index); indexed again from its folder")
            if not self._index_one(db, name):
                _drop(db, name)

    def _runs_from_folders(self) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self._folders()):
            try:
                rec = self.load_run(name)
                meta = read_checked(self.run_path(name) / "run.json", "run")
            except UsageError as e:
                _warn(f"skipping run {name}: {e}")
                continue
            its = [it for w in rec.workloads for it in w.iterations]
            out.append({"name": name, "status": rec.status, "created": rec.created,
                        "kernel": kernel_release(rec.fingerprint), "iterations": sum(not i.warmup for i in its),
                        "warmup": sum(i.warmup for i in its),
                        "failed": sum(not i.warmup and i.status != "ok" for i in its),
                        "description": meta["description"], "host": str(rec.fingerprint.get("host", "")),
                        "suite": meta["suite"]})
        return sorted(out, key=lambda r: r["created"] or 0)

    # -- whole-run transfer (push/pull) and history ----------------------------------------------
    def run_files(self, name: str) -> Iterator[tuple[str, bytes]]:
        """Every file of a run as (path relative to the run folder, content)."""
        path = self.run_path(name)
        for f in sorted(path.rglob("*")):
            rel = f.relative_to(path)
            if f.is_file() and not f.is_symlink() and not any(part.startswith(".") for part in rel.parts):
                yield rel.as_posix(), f.read_bytes()

    def put_run_files(self, name: str, files: list[tuple[str, bytes]], *, force: bool) -> None:
        """Store a whole run from its files: written beside, read back whole (every document and
        sidecar checked, as a reader would), then renamed into place and indexed.  A run that does
        not read back is not stored, and the run it would replace stays."""
        path = self.run_path(name)
        if path.exists() and not force:
            raise UsageError(f"run {name!r} already exists in {self.root}; use --force to replace it")
        if path.exists():
            self.refuse_if_running(name, "replace")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{name}.incoming-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            for rel, data in reseal_documents(files):
                target = (tmp / rel).resolve()
                if not str(target).startswith(str(tmp.resolve()) + os.sep):
                    raise UsageError(f"run {name!r}: file {rel!r} would land outside the run folder")
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                except OSError as e:
                    if e.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise store_write_error(e, target) from None
                    raise StoreError(f"{self.option} {self.root}: cannot store run {name!r} there: "
                                     f"{e.strerror or e}") from None
            meta = {k: v for k, v in read_checked(tmp / "run.json", "run").items() if v is not None}
            if meta.get("status") == "running":  # a copy is never the live run
                meta["status"] = "incomplete"
            meta["name"] = name
            write_json(tmp / "run.json", meta)
            self._load_run(name, tmp, sync_index=False)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
        self.index_run(name)

    def index_run(self, name: str) -> None:
        """(Re)write a run's rows of the SQLite index from its files."""
        with self.db() as db:
            if not self._index_one(db, name):
                raise StoreError(f"run {name!r} could not be indexed (see the warning above)")

    def iteration_values(self, runs: list[str]) -> list[tuple[str, str, str, int, float | None]]:
        """(run, workload, metric, index, mean) of the measured, completed iterations of ``runs``."""
        if not runs:
            return []
        # from the iteration means recorded when each run was indexed: 50,000 rows for 1,000 runs
        # of 10 metrics x 5 iterations, where averaging their samples read a million
        # (each run's rows checked against their digests first: a damaged one is indexed again)
        db = self.db()
        with db:
            listed, its = _list_rows(db, runs)
            means = _mean_rows_of(db, runs)
            damaged = sorted(set(_damaged_rows(db, listed, its, "rows")) | set(_damaged_rows(db, listed, means, "means")))
            if damaged:
                self._reindex_damaged(db, damaged)
                _, its = _list_rows(db, runs)
                means = _mean_rows_of(db, runs)
        out: list[tuple[str, str, str, int, float | None]] = []
        for run, rows in means.items():
            good = {(w, i) for w, i, warmup, status in its.get(run, []) if not warmup and status == "ok"}
            out += [(run, w, m, i, mean) for _, w, i, m, _, mean in rows if (w, i) in good]
        return sorted(out, key=lambda r: r[:4])

    def run_summaries(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """``run_summary`` of each run from its small documents only (history's series keys, point
        labels and units); a run with a damaged document is left out with a warning naming it."""
        from mmbench.model.store import run_summary
        out = {}
        for name in names:
            path = self.run_path(name)
            try:
                docs = {rel: read_object(path / rel) if _lexists(path / rel) else {}
                        for rel in ("run.json", "fingerprint.json", "suite-effective.json")}
                workloads = [read_object(w) for w in sorted(path.glob("*/workload.json"))]
            except StoreError as e:   # one damaged run: named, the others still answer
                _warn(f"skipping run {name}: {e}")
                continue
            out[name] = run_summary(docs["run.json"], docs["fingerprint.json"], docs["suite-effective.json"], workloads)
        return out

    def remove_run(self, name: str) -> None:
        """Remove a run from the folders and from the index (``mmbench rm``)."""
        path = self.run_path(name)
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
        else:
            shutil.rmtree(path, ignore_errors=True)
        if path.exists():
            raise StoreError(f"{path}: could not be removed completely")
        self.checked.forget(name)
        with self.index_quietly() as db:
            _drop(db, name)
            db.execute("DELETE FROM checked WHERE run=?", (name,))


def _lexists(path: Path) -> bool:
    """Is there anything at ``path`` (a dangling symlink or a FIFO too: the reader names it)?"""
    return os.path.lexists(path)


def _mtime(path: Path) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def text_digest(raw: bytes) -> str:
    """The digest run.json's ``files`` keeps of a plain file of the run (suite.toml)."""
    return blake2b(raw, digest_size=16).hexdigest()


def _warn(text: str) -> None:
    print(f"mmbench: warning: {' '.join(text.split())}", file=sys.stderr)


# 3: sample_means (n, mean of each iteration and metric; issue 25: a row per sample made a 1 M-sample
# import take 25 s) replaced the row-per-sample "samples" and the "means" tables; indexed has
# signature and digest
INDEX_VERSION = 3


def _migrate(db: sqlite3.Connection) -> None:
    """What an index made by an older mmbench lacks (its tables exist, so SCHEMA left them as they
    were): the ``indexed`` columns; an index written before INDEX_VERSION has its old sample tables
    dropped and forgets what was indexed, so every run is indexed again (from its folder, the
    truth) on the next read."""
    have = {row[1] for row in db.execute("PRAGMA table_info(indexed)")}
    for column in ("signature", "digest", "rows", "means"):
        if column not in have:
            with db:
                db.execute(f"ALTER TABLE indexed ADD COLUMN {column} TEXT")
    if db.execute("PRAGMA user_version").fetchone()[0] < INDEX_VERSION:
        with db:
            db.execute("DROP TABLE IF EXISTS samples")
            db.execute("DROP TABLE IF EXISTS means")
            db.execute("DELETE FROM indexed")
            db.execute(f"PRAGMA user_version = {INDEX_VERSION}")


def _mean_rows(run: str, it: IterationResult) -> list[tuple[str, str, int, str, int, float | None]]:
    """One index row per metric of an iteration: the number of samples and the mean of the finite
    ones (None when none is), what ``history`` reads; the samples themselves stay in result.json
    (issue 25: a row per sample made a 1 M-sample import take 25 s)."""
    rows = []
    for metric, vals in it.samples.items():
        if isinstance(vals, (list, tuple)):   # numpy only for packed arrays: its import is ~50 ms
            finite = [float(v) for v in vals if math.isfinite(v)]
            mean = math.fsum(finite) / len(finite) if finite else None
            rows.append((run, it.workload, it.index, metric, len(vals), mean))
            continue
        import numpy as np
        a = np.asarray(vals, dtype=np.float64)
        fin = a[np.isfinite(a)]
        # the same correctly rounded sum as a list's: an iteration indexed as it is written (lists)
        # and again from its sidecar (arrays) must give the same bytes (numpy's pairwise mean can
        # differ in the last place, which verify then calls a damaged index)
        mean = math.fsum(fin.tolist()) / fin.size if fin.size else None
        rows.append((run, it.workload, it.index, metric, int(a.size), mean))
    return rows


def _drop(db: sqlite3.Connection, name: str, *, checked: bool = True) -> None:
    for table in ("runs", "workloads", "metrics", "iterations", "sample_means", "indexed",
                  *(("checked",) if checked else ())):
        db.execute(f"DELETE FROM {table} WHERE {'name' if table == 'runs' else 'run'}=?", (name,))


# The index rows of a run are sealed like its files: ``indexed.rows`` is a digest of the rows
# ``list`` shows (runs, iterations), ``indexed.means`` of those ``history`` reads (sample_means);
# rows that do not match are indexed again from the folder (a damaged index.sqlite never shows).
def _in(names: list[str] | None, column: str) -> tuple[str, list[str]]:
    return ("", []) if names is None else (f" WHERE {column} IN ({','.join('?' * len(names))})", names)


def _chunks(names: list[str] | None) -> list[list[str] | None]:
    return [None] if names is None else [names[i:i + 500] for i in range(0, len(names), 500)]


def _list_rows(db: sqlite3.Connection, names: list[str] | None = None
               ) -> tuple[dict[str, tuple], dict[str, list[tuple]]]:
    """(run → its runs row with host and suite, run → its iterations (workload, idx, warmup, status))."""
    runs: dict[str, tuple] = {}
    its: dict[str, list[tuple]] = {}
    for part in _chunks(names):
        where, args = _in(part, "r.name")
        for row in db.execute("SELECT r.name, r.status, r.created, r.kernel, r.description, x.host, x.suite "
                              f"FROM runs r JOIN indexed x ON x.run=r.name{where}", args):
            runs[row[0]] = row
        where, args = _in(part, "run")
        for run, *rest in db.execute(f"SELECT run, workload, idx, warmup, status FROM iterations{where} "
                                     "ORDER BY run, workload, idx", args):
            its.setdefault(run, []).append(tuple(rest))
    return runs, its


def _mean_rows_of(db: sqlite3.Connection, names: list[str] | None = None) -> dict[str, list[tuple]]:
    """run → its sample_means rows (run, workload, idx, metric, n, mean), in order."""
    out: dict[str, list[tuple]] = {}
    for part in _chunks(names):
        where, args = _in(part, "run")
        rows = db.execute(f"SELECT run, workload, idx, metric, n, mean FROM sample_means{where} "
                          "ORDER BY run, workload, idx, metric", args).fetchall()
        for run, group in itertools.groupby(rows, key=operator.itemgetter(0)):
            out[run] = list(group)
    return out


def _rows_digest(*parts: Any) -> str:
    return blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def _means_digest(rows: list[tuple]) -> str:
    """The digest of sample_means rows: the means as their float64 bytes (50,000 of them would
    spend most of history's read in float repr)."""
    h = blake2b(repr([r[:5] for r in rows]).encode(), digest_size=16)
    h.update(array("d", [math.nan if r[5] is None else r[5] for r in rows]).tobytes())
    h.update(bytes(r[5] is None for r in rows))
    return h.hexdigest()


def seal_rows(db: sqlite3.Connection, names: list[str]) -> None:
    """Record the digests of runs' index rows as they are now (after they were written)."""
    runs, its = _list_rows(db, names)
    means = _mean_rows_of(db, names)
    db.executemany("UPDATE indexed SET rows=?, means=? WHERE run=?",
                   [(_rows_digest(runs[n], its.get(n, [])), _means_digest(means.get(n, [])), n)
                    for n in names if n in runs])


def _damaged_rows(db: sqlite3.Connection, runs: dict[str, tuple], rows: dict[str, list[tuple]],
                  column: str) -> list[str]:
    """Runs whose ``column`` digest (rows, means) does not match their rows; a run indexed before
    digests were kept gets them now."""
    sealed = dict(db.execute(f"SELECT run, {column} FROM indexed").fetchall()) if runs else {}
    bad, unsealed = [], []
    for name, row in runs.items():
        want = sealed.get(name)
        have = _rows_digest(row, rows.get(name, [])) if column == "rows" else _means_digest(rows.get(name, []))
        if want is None:
            unsealed.append(name)
        elif want != have:
            bad.append(name)
    if unsealed:
        seal_rows(db, unsealed)
    return bad


def _insert_run(db: sqlite3.Connection, name: str, rec: RunRecord, meta: dict[str, Any], path: str) -> None:
    db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
               (name, rec.status, rec.created, rec.finished, rec.suite_hash, kernel_release(rec.fingerprint),
                meta["description"], path))
    for w in rec.workloads:
        db.execute("INSERT OR REPLACE INTO workloads VALUES (?,?,?,?)", (name, w.label, w.plugin, json.dumps(w.params)))
        db.executemany("INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?)",
                       [(name, w.label, m.name, m.unit, m.better, m.kind, m.mean_kind) for m in w.metrics])
        for it in w.iterations:
            d = it.duration
            db.execute("INSERT OR REPLACE INTO iterations VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (name, w.label, it.index, int(it.warmup), it.status, it.reason,
                        d.get("user"), d.get("system"), d.get("elapsed"), it.path))
            db.executemany("INSERT INTO sample_means VALUES (?,?,?,?,?,?)", _mean_rows(name, it))


class IndexDamaged(StoreError):
    """index.sqlite cannot be opened or read: the folders still answer; ``reindex`` rebuilds it."""


class IndexUnavailable(IndexDamaged):
    """index.sqlite is not there and cannot be created (a read-only folder, /proc): the folders
    still answer; nothing to rebuild."""
