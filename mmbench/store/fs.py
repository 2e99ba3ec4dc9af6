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

import errno
import os
import shutil
import sqlite3
import stat
import time
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

from mmbench import __version__
from mmbench.errors import UsageError
from mmbench.model.files import (
    VERIFY_HINT,
    StoreError,
    file_kind,
    kernel_release,
    read_checked,
    read_json,
    read_object,
    read_regular,
    register_store_root,
    remember_checked_files,
    samples_from_json,
    sidecar_reader,
)
from mmbench.model.kernel import proc_start_time
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
from mmbench.model.store import Store, reseal_documents, validate_run_name
from mmbench.model.store_format import STORE_FORMAT
from mmbench.store.checked import IndexCheckedFiles
from mmbench.store.index import (
    INDEX_VERSION,
    SCHEMA,
    IndexDamaged,
    IndexUnavailable,
    content_digest,
    damaged_rows,
    drop_run_rows,
    files_signature,
    indexed_files,
    insert_run,
    list_rows,
    mean_rows_of,
    migrate,
    seal_rows,
)
from mmbench.store.writer import (
    SPARE,
    SPARE_BYTES,
    FileRunWriter,
    boot_id,
    owner_check,
    store_write_error,
    text_digest,
    warn,
    write_json,
)


# result.json's keys that make an IterationResult (the rest are kept in the file, unread)
RESULT_FIELDS = tuple(f.name for f in fields(IterationResult))


class FileStore(Store):
    def __init__(self, root: str | Path, option: str = "--results") -> None:
        self.root = Path(root)
        self.option = option  # the argument that named it, for messages (--to, --from)
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
                raise StoreError(
                    f"{self.option} {self.root}: the results directory is a symlink to "
                    f"{os.readlink(self.root)!r}, which does not exist"
                ) from None
            return
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StoreError(
                    f"{self.option} {self.root}: the results directory is a symlink loop "
                    f"(too many levels of symbolic links)"
                ) from None
            raise StoreError(
                f"{self.option} {self.root}: the results directory cannot be read: {e.strerror or e}"
            ) from None
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
        if existed:  # SQLite would follow a symlink and wait on a FIFO for ever
            mode = os.lstat(index).st_mode
            if not stat.S_ISREG(mode):
                raise IndexDamaged(
                    f"{index}: {file_kind(mode)}, not a regular file (move it away, or run "
                    f"'mmbench reindex' to replace it)"
                )
        try:
            conn = sqlite3.connect(index, timeout=30, check_same_thread=False)
            conn.executescript(SCHEMA)
            migrate(conn)
        except sqlite3.Error as e:
            if not existed:  # nothing to rebuild: the folder does not take a new file
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
            warn(f"index not updated ({e})")
            conn = sqlite3.connect(":memory:")  # the update goes nowhere; the folder is written
            conn.executescript(SCHEMA)
        try:
            with conn:
                yield conn
        except sqlite3.Error as e:
            warn(f"index not updated ({self.root / 'index.sqlite'}: {e})")

    def run_path(self, name: str) -> Path:
        return self.root / validate_run_name(name)

    def exists(self, name: str) -> bool:
        self._check_root()
        return (self.run_path(name) / "run.json").exists()

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
    ) -> FileRunWriter:
        path = self.run_path(name)
        if path.exists() or path.is_symlink():
            if not force:
                raise UsageError(
                    f"run {name!r} already exists in {self.root}; use --force to replace it or pick another name"
                )
            self.refuse_if_running(name, "replace")
            self.remove_run(name)
        meta = {
            "name": name,
            "format": STORE_FORMAT,
            "status": status,
            "created": time.time(),
            "finished": None,
            "pid": os.getpid(),
            "pid_start": proc_start_time(os.getpid()),
            "boot_id": boot_id(),
            "suite_hash": suite_hash,
            "settings": settings,
            "mmbench_version": __version__,
            "description": description,
            # digests of the run's files that are not sealed JSON documents (model/files.py)
            "files": {"suite.toml": text_digest(suite_text.encode())},
        }
        try:
            path.mkdir(parents=True)
            # room for the final run.json should the filesystem fill up during the run
            (path / SPARE).write_bytes(bytes(SPARE_BYTES))
            (path / "suite.toml").write_bytes(suite_text.encode())
            write_json(path / "suite-effective.json", suite_effective)
            write_json(path / "fingerprint.json", fingerprint)
            write_json(path / "run.json", meta)
        except (OSError, StoreError) as e:
            shutil.rmtree(path, ignore_errors=True)  # not a run yet: nothing half-made is left
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
            warn(why)

    def stale_running(self, name: str, verb: str) -> str | None:
        """For a run whose run.json says running: a UsageError when its writer is alive on this
        machine; else the line that says why it is taken as not running (None for any other run)."""
        path = self.run_path(name)
        try:
            meta = read_json(path / "run.json")
        except UsageError:
            return None  # damaged or absent: nobody is writing it
        if not isinstance(meta, dict) or meta.get("status") != "running":
            return None
        status, why = owner_check(meta)
        if status == "running":
            raise UsageError(
                f"run {name!r} in {self.root} is still being written (mmbench pid "
                f"{meta.get('pid')}); cannot {verb} it until that run ends"
            )
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
            for i in range(0, len(names), 500):  # SQLite's limit on host parameters
                part = names[i : i + 500]
                rows.update(
                    db.execute(
                        f"SELECT name, status FROM runs WHERE name IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                )
            wrong = [(st, n) for n, st in statuses.items() if n in rows and rows[n] != st]
            if wrong:
                with db:
                    db.executemany("UPDATE runs SET status=? WHERE name=?", wrong)
                    seal_rows(db, [n for _, n in wrong])
        except (sqlite3.Error, IndexDamaged):
            pass  # a read-only or damaged index: the folders still answer

    def load_run(self, name: str) -> RunRecord:
        self._check_root()
        path = self.run_path(name)
        if not (path / "run.json").exists():
            known = sorted(p.parent.name for p in self.root.glob("*/run.json")) if self.root.is_dir() else []
            from mmbench.model.params import close_match

            raise UsageError(
                f"no run named {name!r} in {self.root}{close_match(name, known)}"
                + (f"; runs: {', '.join(known)}" if known else " (it holds no runs)")
            )
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
        rec = RunRecord(
            name=name,
            status=status,
            created=meta["created"],  # type: ignore[arg-type]
            finished=meta["finished"],
            suite_text=self._suite_text(path, meta),
            suite_hash=meta["suite_hash"],
            fingerprint=read_object(fp_path) if _lexists(fp_path) else {},
            settings=meta["settings"],
            path=path,
            mmbench_version=meta["mmbench_version"],
        )
        if _lexists(path / "suite-effective.json"):  # analysis reads it: its digest is checked here
            read_object(path / "suite-effective.json")
        for wfile in sorted(path.glob("*/workload.json"), key=_mtime):
            w = read_checked(wfile, "workload")
            if w["label"] != wfile.parent.name:
                raise StoreError(
                    f"{wfile}: label {w['label']!r} but its folder is {wfile.parent.name!r} (a copied or foreign file)"
                )
            wr = WorkloadRun(
                label=w["label"],
                plugin=w["plugin"],
                params=w["params"],
                metrics=[MetricDef.from_dict(m) for m in w["metrics"]],
            )
            its = []
            for rfile in wfile.parent.glob("iter-*/result.json"):
                d = read_checked(rfile, "result")
                if rfile.parent.name != f"iter-{d['index']}" or d["workload"] != w["label"]:
                    raise StoreError(
                        f"{rfile}: says workload {d['workload']!r} iteration {d['index']}, but it "
                        f"is in {w['label']}/{rfile.parent.name} (a copied or foreign file)"
                    )
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
            raise StoreError(
                f"{f}: its bytes do not match the BLAKE2b digest run.json holds for it (damaged on "
                f"disk, or edited by hand; {VERIFY_HINT})"
            )
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
                raise StoreError(
                    f"{self.option} {self.root}: not a results directory: it holds no run, and "
                    f"index.sqlite {str(e).rsplit(': ', 1)[-1]}"
                ) from None
            warn(f"{e}; listing from the run folders")
            return self._runs_from_folders()
        except sqlite3.Error as e:  # read-only or locked: the folders still answer
            warn(f"{self.root / 'index.sqlite'}: {e}; listing from the run folders")
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
                conn.execute(f"PRAGMA user_version = {INDEX_VERSION}")  # (sample_means filled as each run is indexed)
                damaged = [n for n in sorted(folders) if not self._index_one(conn, n)]
                conn.commit()
                conn.close()
                os.replace(tmp, target)
                if self._conn is not None:  # it reads the file just replaced
                    self._conn.close()
                    self._conn = None
            finally:
                tmp.unlink(missing_ok=True)
            return len(folders) - len(damaged), 0, damaged
        indexed = dropped = 0
        damaged = []
        db = self.db()
        with db:
            known = {
                run: (signature, digest)
                for run, signature, digest in db.execute("SELECT run, signature, digest FROM indexed").fetchall()
            }
            rows = dict(db.execute("SELECT name, status FROM runs").fetchall())
            started = time.monotonic()
            for name in sorted(folders):
                seen = known.get(name)
                files = indexed_files(self.run_path(name))
                signature = files_signature(files)
                # A run that is still being written is indexed again (its writer indexes it when
                # it finishes).  Files with new mtimes but the same bytes (a copied store, a
                # restored backup) need no indexing, only their new signature.
                if seen is not None and rows.get(name, "running") != "running":
                    if seen[0] == signature:
                        continue
                    if seen[1] is not None and seen[1] == content_digest(self.run_path(name), files):
                        db.execute(
                            "UPDATE indexed SET signature=?, mtime_ns=? WHERE run=?",
                            (signature, files.get("run.json", (0, 0))[1], name),
                        )
                        continue
                if self._index_one(db, name, files):
                    indexed += 1
                else:
                    damaged.append(name)
                if time.monotonic() - started > 0.5:  # a long sync lets a running writer in between
                    db.commit()
                    started = time.monotonic()
            for name in (set(known) | set(rows)) - set(folders):
                drop_run_rows(db, name)
                dropped += 1
        return indexed, dropped, damaged

    def _index_one(self, db: sqlite3.Connection, name: str, files: dict[str, tuple[int, int]] | None = None) -> bool:
        """Index one run folder; a damaged one is dropped from the index with a warning."""
        try:
            validate_run_name(name)
            if files is None:
                files = indexed_files(self.run_path(name))
            # what the files were before reading them: a change after that is seen next time
            signature, digest = files_signature(files), content_digest(self.run_path(name), files)
            rec = self._load_run(name, self.run_path(name))
            meta = read_checked(self.run_path(name) / "run.json", "run")
        except UsageError as e:
            warn(f"skipping run {name}: {e}")
            drop_run_rows(db, name)
            return False
        drop_run_rows(db, name, checked=False)  # verdicts are by content: the unchanged files keep theirs
        self.checked.flush(db)
        try:
            insert_run(db, name, rec, meta, str(self.run_path(name)))
        except (OverflowError, sqlite3.InterfaceError) as e:  # a number no index column holds
            warn(f"skipping run {name}: {self.run_path(name)}: cannot be indexed ({e})")
            drop_run_rows(db, name)
            return False
        db.execute(
            "INSERT OR REPLACE INTO indexed (run, mtime_ns, host, suite, signature, digest) VALUES (?,?,?,?,?,?)",
            (
                name,
                files.get("run.json", (0, 0))[1],
                str(rec.fingerprint.get("host", "")),
                meta["suite"],
                signature,
                digest,
            ),
        )
        seal_rows(db, [name])
        return True

    def _runs_from_index(self) -> list[dict[str, Any]]:
        self.sync()
        db = self.db()
        with db:
            runs, its = list_rows(db)
            damaged = damaged_rows(db, runs, its, "rows")
            if damaged:
                self._reindex_damaged(db, damaged)
                runs, its = list_rows(db)
        out = []
        for name, (_, st, c, k, d, h, su) in runs.items():
            mine = its.get(name, [])
            out.append(
                {
                    "name": name,
                    "status": st,
                    "created": c,
                    "kernel": k or "",
                    "description": d or "",
                    "host": h or "",
                    "suite": su or "",
                    "iterations": sum(not w for _, _, w, _ in mine),
                    "warmup": sum(bool(w) for _, _, w, _ in mine),
                    "failed": sum(not w and s != "ok" for _, _, w, s in mine),
                }
            )
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
            warn(
                f"{self.root / 'index.sqlite'}: the rows of run {name} do not match their digest (a damaged "
                f"index); indexed again from its folder"
            )
            if not self._index_one(db, name):
                drop_run_rows(db, name)

    def _runs_from_folders(self) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self._folders()):
            try:
                rec = self.load_run(name)
                meta = read_checked(self.run_path(name) / "run.json", "run")
            except UsageError as e:
                warn(f"skipping run {name}: {e}")
                continue
            its = [it for w in rec.workloads for it in w.iterations]
            out.append(
                {
                    "name": name,
                    "status": rec.status,
                    "created": rec.created,
                    "kernel": kernel_release(rec.fingerprint),
                    "iterations": sum(not i.warmup for i in its),
                    "warmup": sum(i.warmup for i in its),
                    "failed": sum(not i.warmup and i.status != "ok" for i in its),
                    "description": meta["description"],
                    "host": str(rec.fingerprint.get("host", "")),
                    "suite": meta["suite"],
                }
            )
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
                    raise StoreError(
                        f"{self.option} {self.root}: cannot store run {name!r} there: {e.strerror or e}"
                    ) from None
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
            listed, its = list_rows(db, runs)
            means = mean_rows_of(db, runs)
            damaged = sorted(set(damaged_rows(db, listed, its, "rows")) | set(damaged_rows(db, listed, means, "means")))
            if damaged:
                self._reindex_damaged(db, damaged)
                _, its = list_rows(db, runs)
                means = mean_rows_of(db, runs)
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
                docs = {
                    rel: read_object(path / rel) if _lexists(path / rel) else {}
                    for rel in ("run.json", "fingerprint.json", "suite-effective.json")
                }
                workloads = [read_object(w) for w in sorted(path.glob("*/workload.json"))]
            except StoreError as e:  # one damaged run: named, the others still answer
                warn(f"skipping run {name}: {e}")
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
            drop_run_rows(db, name)
            db.execute("DELETE FROM checked WHERE run=?", (name,))


def _lexists(path: Path) -> bool:
    """Is there anything at ``path`` (a dangling symlink or a FIFO too: the reader names it)?"""
    return os.path.lexists(path)


def _mtime(path: Path) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0
