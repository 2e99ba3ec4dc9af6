"""The run writer of the embedded store: a run's folder written as it happens, each file durably.

A document is written to a temporary name, fsynced and renamed, so a reader never sees half a
file; a full filesystem is one line naming the folder, and the spare file reserved when the run
was created leaves room for its last run.json.  The writer indexes its run once, when it
finishes.  ``owner_check`` tells whether the writer of a "running" run is still alive.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import time
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmbench.errors import UsageError
from mmbench.model.files import (
    StoreError,
    StoreFull,
    iteration_index_problem,
    json_default,
    pack_iteration_samples,
    read_checked,
    seal,
)
from mmbench.model.kernel import proc_start_time
from mmbench.model.results import OWNER_UNKNOWN, IterationResult, RunRecord, WorkloadRun
from mmbench.model.store import RunWriter, durable_writes
from mmbench.store.index import content_digest, drop_run_rows, files_signature, indexed_files, insert_run, seal_rows

if TYPE_CHECKING:
    from mmbench.store.fs import FileStore


# Reserved when a run is created, released when it finishes: room for the last run.json on a
# filesystem that filled up meanwhile.
SPARE = ".spare"


SPARE_BYTES = 64 << 10


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
    durable = durable_writes()  # (an import is a copy: model/store.py copied_runs)
    try:
        with open(tmp, mode) as fh:
            write(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise store_write_error(e, path) from None


def fsync_dir(path: Path) -> None:
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


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


def boot_id() -> str:
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
        return OWNER_UNKNOWN, (
            f"it records pid {pid} but no {missing} (written by an older mmbench, or "
            f"copied), so pid {pid} here may be any process"
        )
    if boot != boot_id():
        return OWNER_UNKNOWN, "it was written during another boot or on another machine (its boot id is not this one's)"
    now = proc_start_time(pid)
    if now is None:
        return "incomplete", f"its writer (pid {pid}) is gone"
    if now != start:
        return "incomplete", f"its writer (pid {pid}) is gone; that pid is another process now"
    return "running", f"its writer (pid {pid}) is alive"


def text_digest(raw: bytes) -> str:
    """The digest run.json's ``files`` keeps of a plain file of the run (suite.toml)."""
    return blake2b(raw, digest_size=16).hexdigest()


def warn(text: str) -> None:
    print(f"mmbench: warning: {' '.join(text.split())}", file=sys.stderr)


class FileRunWriter(RunWriter):
    """Writes one run's folder as it happens (each iteration durable before the next starts) and
    indexes the run once, when it finishes: until then ``list`` indexes it from its folder."""

    def __init__(
        self, store: "FileStore", name: str, path: Path, meta: dict[str, Any], fingerprint: dict[str, Any]
    ) -> None:
        self.store = store
        self.name = name
        self.path = path
        self.meta = meta
        self.fingerprint = fingerprint
        self.workloads: dict[str, WorkloadRun] = {}  # what was written, indexed at finish

    def add_workload(self, workload: WorkloadRun) -> None:
        wdir = self.path / workload.label
        try:
            wdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise store_write_error(e, wdir) from None
        write_json(
            wdir / "workload.json",
            {
                "label": workload.label,
                "plugin": workload.plugin,
                "params": workload.params,
                "metrics": [m.to_dict() for m in workload.metrics],
            },
        )
        self._check(wdir / "workload.json", "workload")
        self.workloads[workload.label] = WorkloadRun(
            label=workload.label, plugin=workload.plugin, params=workload.params, metrics=list(workload.metrics)
        )

    def iteration_dir(self, label: str, index: int) -> Path:
        return self.path / label / f"iter-{index}"

    def staging_dir(self, label: str, index: int) -> Path:
        """Where an iteration's files go while it runs; ``add_iteration`` renames it into place.
        Readers never look at it (its name starts with a dot)."""
        return self.path / label / f".iter-{index}.partial"

    def add_iteration(self, result: IterationResult) -> None:
        problem = iteration_index_problem(result.index)
        if problem:  # before anything is written: it could never be indexed
            raise UsageError(f"run {self.name!r}: workload {result.workload!r}: {problem}")
        itdir = self.iteration_dir(result.workload, result.index)
        staging = self.staging_dir(result.workload, result.index)
        data = result.to_dict()
        data["samples"], blob, sidecar = pack_iteration_samples(result.samples)
        try:
            if staging.is_dir():  # result.json last, then one rename: the iteration appears whole
                if blob:
                    write_bytes(staging / sidecar, blob)
                write_json(staging / "result.json", data)
                if itdir.exists():
                    shutil.rmtree(itdir)
                os.rename(staging, itdir)
                if durable_writes():
                    fsync_dir(itdir.parent)
            else:
                itdir.mkdir(parents=True, exist_ok=True)
                if blob:  # before the result.json that points into it
                    write_bytes(itdir / sidecar, blob)
                write_json(itdir / "result.json", data)
                for old in itdir.glob("samples-*.f8"):  # an earlier write's, no longer read
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
        rec = RunRecord(
            name=self.name,
            status=self.meta["status"],
            created=self.meta["created"],
            finished=self.meta["finished"],
            suite_text="",
            suite_hash=self.meta["suite_hash"],
            fingerprint=self.fingerprint,
            settings=self.meta["settings"],
            workloads=list(self.workloads.values()),
        )
        files = indexed_files(self.path)
        if "run.json" not in files:
            return
        with self.store.index_quietly() as db:
            self.store.checked.flush(db)
            drop_run_rows(db, self.name, checked=False)
            insert_run(db, self.name, rec, self.meta, str(self.path))
            db.execute(
                "INSERT OR REPLACE INTO indexed (run, mtime_ns, host, suite, signature, digest) VALUES (?,?,?,?,?,?)",
                (
                    self.name,
                    files["run.json"][1],
                    str(self.fingerprint.get("host", "")),
                    self.meta.get("suite", ""),
                    files_signature(files),
                    content_digest(self.path, files),
                ),
            )
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
            warn(f"a stored file does not read back: {e}")
