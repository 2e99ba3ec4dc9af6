"""The embedded store: a results directory with one folder per run, plus ``index.sqlite``.

Layout (docs/results-format.md)::

    <results>/index.sqlite                       runs, workloads, metrics, iterations, samples
    <results>/<run>/run.json                     name, status, times, pid, settings, version
    <results>/<run>/suite.toml, suite-effective.json, fingerprint.json
    <results>/<run>/<workload>/workload.json     plugin, params, metric definitions
    <results>/<run>/<workload>/iter-<N>/result.json, raw/, vmstat-before, vmstat-after, monitors/

JSON files are the truth (written to a temporary name, fsynced, renamed); the SQLite index is
updated after each and can be rebuilt from them.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

from mmbench import __version__
from mmbench.errors import UsageError
from mmbench.model.store import RunWriter, Store, validate_run_name
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

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
CREATE TABLE IF NOT EXISTS samples (run TEXT, workload TEXT, idx INTEGER, metric TEXT, seq INTEGER,
    value REAL);
CREATE INDEX IF NOT EXISTS samples_by_run ON samples (run, workload, metric);
"""


def write_json(path: Path, data: Any) -> None:
    """Durable write: temporary file, fsync, rename, fsync of the directory."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, default=_json_default, allow_nan=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(values: list[float]) -> list[float | None]:
    return [None if (isinstance(v, float) and not math.isfinite(v)) else v for v in values]


def pid_alive(pid: int) -> bool:
    return proc_start_time(pid) is not None


def _fsync_dir(path: Path) -> None:
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def proc_start_time(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (/proc/PID/stat field 22), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _owner_alive(meta: dict[str, Any]) -> bool:
    """Is the process that wrote this "running" run.json still that process?  A pid alone is not
    enough: after a reboot or pid reuse another process has it (the start time and boot id tell)."""
    try:
        pid = int(meta.get("pid", 0) or 0)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    if meta.get("boot_id") and meta["boot_id"] != _boot_id():
        return False
    start = proc_start_time(pid)
    if start is None:
        return False
    return not meta.get("pid_start") or meta["pid_start"] == start


class FileRunWriter(RunWriter):
    def __init__(self, store: "FileStore", name: str, path: Path, meta: dict[str, Any]) -> None:
        self.store = store
        self.name = name
        self.path = path
        self.meta = meta

    def add_workload(self, workload: WorkloadRun) -> None:
        wdir = self.path / workload.label
        wdir.mkdir(parents=True, exist_ok=True)
        write_json(wdir / "workload.json", {"label": workload.label, "plugin": workload.plugin,
                                            "params": workload.params,
                                            "metrics": [m.to_dict() for m in workload.metrics]})
        with self.store.db() as db:
            db.execute("INSERT OR REPLACE INTO workloads VALUES (?,?,?,?)",
                       (self.name, workload.label, workload.plugin, json.dumps(workload.params)))
            db.executemany("INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?)",
                           [(self.name, workload.label, m.name, m.unit, m.better, m.kind, m.mean_kind)
                            for m in workload.metrics])

    def iteration_dir(self, label: str, index: int) -> Path:
        return self.path / label / f"iter-{index}"

    def staging_dir(self, label: str, index: int) -> Path:
        """Where an iteration's files go while it runs; ``add_iteration`` renames it into place.
        Readers never look at it (its name starts with a dot)."""
        return self.path / label / f".iter-{index}.partial"

    def add_iteration(self, result: IterationResult) -> None:
        itdir = self.iteration_dir(result.workload, result.index)
        staging = self.staging_dir(result.workload, result.index)
        data = result.to_dict()
        data["samples"] = {k: _clean(v) for k, v in result.samples.items()}
        if staging.is_dir():   # result.json last, then one rename: the iteration appears whole
            write_json(staging / "result.json", data)
            if itdir.exists():
                shutil.rmtree(itdir)
            os.rename(staging, itdir)
            _fsync_dir(itdir.parent)
        else:
            itdir.mkdir(parents=True, exist_ok=True)
            write_json(itdir / "result.json", data)
        d = result.duration
        with self.store.db() as db:
            db.execute("INSERT OR REPLACE INTO iterations VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (self.name, result.workload, result.index, int(result.warmup), result.status,
                        result.reason, d.get("user"), d.get("system"), d.get("elapsed"), result.path))
            db.execute("DELETE FROM samples WHERE run=? AND workload=? AND idx=?",
                       (self.name, result.workload, result.index))
            db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?)",
                           [(self.name, result.workload, result.index, metric, seq, v)
                            for metric, vals in data["samples"].items() for seq, v in enumerate(vals)])

    def discard_staging(self) -> None:
        """Remove staging folders of iterations that were never stored (an interrupted run)."""
        for d in self.path.glob("*/.iter-*.partial"):
            shutil.rmtree(d, ignore_errors=True)

    def finish(self, status: str, note: str | None = None) -> None:
        self.meta.update(status=status, finished=time.time())
        if note:
            self.meta["note"] = note
        write_json(self.path / "run.json", self.meta)
        with self.store.db() as db:
            db.execute("UPDATE runs SET status=?, finished=? WHERE name=?", (status, self.meta["finished"], self.name))


class FileStore(Store):
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __str__(self) -> str:
        return str(self.root)

    def db(self) -> sqlite3.Connection:
        self.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.root / "index.sqlite", timeout=30)
        conn.executescript(SCHEMA)
        return conn

    def run_path(self, name: str) -> Path:
        return self.root / validate_run_name(name)

    def exists(self, name: str) -> bool:
        return (self.run_path(name) / "run.json").exists()

    def create_run(self, name: str, *, force: bool, suite_text: str, suite_hash: str,
                   suite_effective: dict[str, Any], fingerprint: dict[str, Any],
                   settings: dict[str, Any], status: str = "running",
                   description: str = "") -> FileRunWriter:
        path = self.run_path(name)
        if path.exists():
            if not force:
                raise UsageError(f"run {name!r} already exists in {self.root}; use --force to replace it "
                                 f"or pick another name")
            shutil.rmtree(path)
        path.mkdir(parents=True)
        (path / "suite.toml").write_text(suite_text)
        write_json(path / "suite-effective.json", suite_effective)
        write_json(path / "fingerprint.json", fingerprint)
        meta = {"name": name, "status": status, "created": time.time(), "finished": None, "pid": os.getpid(),
                "pid_start": proc_start_time(os.getpid()), "boot_id": _boot_id(),
                "suite_hash": suite_hash, "settings": settings, "mmbench_version": __version__,
                "description": description}
        write_json(path / "run.json", meta)
        with self.db() as db:
            for table in ("workloads", "metrics", "iterations", "samples"):
                db.execute(f"DELETE FROM {table} WHERE run=?", (name,))
            db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
                       (name, status, meta["created"], None, suite_hash,
                        str(fingerprint.get("kernel", {}).get("release", "")), description, str(path)))
        return FileRunWriter(self, name, path, meta)

    def _status(self, meta: dict[str, Any]) -> str:
        # A run whose process died without finishing (SIGKILL, power loss) is incomplete; the
        # index is corrected too, so nothing reading it sees "running" for a dead run.
        if meta.get("status") == "running" and not _owner_alive(meta):
            return "incomplete"
        return meta.get("status", "incomplete")

    def _sync_index(self, statuses: dict[str, str]) -> None:
        """run.json is the truth: an index row that disagrees (a run killed between writing
        run.json and the index, or whose owner died while "running") is corrected."""
        if not statuses or not (self.root / "index.sqlite").exists():
            return
        try:
            with self.db() as db:
                rows = dict(db.execute("SELECT name, status FROM runs").fetchall())
                db.executemany("UPDATE runs SET status=? WHERE name=?",
                               [(st, n) for n, st in statuses.items() if n in rows and rows[n] != st])
        except sqlite3.Error:
            pass   # a read-only or damaged index: the folders still answer

    def load_run(self, name: str) -> RunRecord:
        path = self.run_path(name)
        if not (path / "run.json").exists():
            known = [r["name"] for r in self.list_runs()]
            from mmbench.model.params import close_match
            raise UsageError(f"no run named {name!r} in {self.root}{close_match(name, known)}"
                             + (f"; runs: {', '.join(known)}" if known else " (it holds no runs)"))
        meta = json.loads((path / "run.json").read_text())
        self._sync_index({name: self._status(meta)})
        fp_path = path / "fingerprint.json"
        rec = RunRecord(name=name, status=self._status(meta), created=meta.get("created", 0.0),
                        finished=meta.get("finished"), suite_text=(path / "suite.toml").read_text()
                        if (path / "suite.toml").exists() else "",
                        suite_hash=meta.get("suite_hash", ""),
                        fingerprint=json.loads(fp_path.read_text()) if fp_path.exists() else {},
                        settings=meta.get("settings", {}), path=path,
                        mmbench_version=meta.get("mmbench_version", ""))
        for wfile in sorted(path.glob("*/workload.json"), key=lambda p: p.stat().st_mtime_ns):
            w = json.loads(wfile.read_text())
            wr = WorkloadRun(label=w["label"], plugin=w["plugin"], params=w["params"],
                             metrics=[MetricDef.from_dict(m) for m in w["metrics"]])
            its = []
            for rfile in wfile.parent.glob("iter-*/result.json"):
                d = json.loads(rfile.read_text())
                d["samples"] = {k: [math.nan if v is None else v for v in vals] for k, vals in d["samples"].items()}
                its.append(IterationResult.from_dict(d))
            wr.iterations = sorted(its, key=lambda it: it.index)
            rec.workloads.append(wr)
        order = meta.get("workload_order")
        if order:
            rec.workloads.sort(key=lambda w: order.index(w.label) if w.label in order else len(order))
        return rec

    def list_runs(self) -> list[dict[str, Any]]:
        out = []
        if not self.root.is_dir():
            return out
        for rj in sorted(self.root.glob("*/run.json")):
            try:
                meta = json.loads(rj.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            fp = rj.parent / "fingerprint.json"
            kernel = host = ""
            if fp.exists():
                try:
                    fpd = json.loads(fp.read_text())
                    kernel, host = fpd.get("kernel", {}).get("release", ""), fpd.get("host", "")
                except json.JSONDecodeError:
                    pass
            n_it = len(list(rj.parent.glob("*/iter-*/result.json")))
            out.append({"name": meta["name"], "status": self._status(meta), "created": meta.get("created"),
                        "kernel": kernel, "iterations": n_it, "description": meta.get("description", ""),
                        "host": host, "suite": meta.get("suite", "")})
        self._sync_index({r["name"]: r["status"] for r in out})
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
        """Store a whole run from its files: written beside, then renamed into place, then indexed."""
        path = self.run_path(name)
        if path.exists() and not force:
            raise UsageError(f"run {name!r} already exists in {self.root}; use --force to replace it")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{name}.incoming-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        for rel, data in files:
            target = (tmp / rel).resolve()
            if not str(target).startswith(str(tmp.resolve()) + os.sep):
                shutil.rmtree(tmp, ignore_errors=True)
                raise UsageError(f"run {name!r}: file {rel!r} would land outside the run folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        meta = json.loads((tmp / "run.json").read_text())
        if meta.get("status") == "running":  # a copy is never the live run
            meta["status"] = "incomplete"
        meta["name"] = name
        write_json(tmp / "run.json", meta)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
        self.index_run(name)

    def index_run(self, name: str) -> None:
        """(Re)write a run's rows of the SQLite index from its files."""
        rec = self.load_run(name)
        meta = json.loads((self.run_path(name) / "run.json").read_text())
        with self.db() as db:
            for table in ("workloads", "metrics", "iterations", "samples"):
                db.execute(f"DELETE FROM {table} WHERE run=?", (name,))
            db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
                       (name, rec.status, rec.created, rec.finished, rec.suite_hash,
                        str(rec.fingerprint.get("kernel", {}).get("release", "")),
                        meta.get("description", ""), str(self.run_path(name))))
            for w in rec.workloads:
                db.execute("INSERT OR REPLACE INTO workloads VALUES (?,?,?,?)",
                           (name, w.label, w.plugin, json.dumps(w.params)))
                db.executemany("INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?)",
                               [(name, w.label, m.name, m.unit, m.better, m.kind, m.mean_kind)
                                for m in w.metrics])
                for it in w.iterations:
                    d = it.duration
                    db.execute("INSERT OR REPLACE INTO iterations VALUES (?,?,?,?,?,?,?,?,?,?)",
                               (name, w.label, it.index, int(it.warmup), it.status, it.reason,
                                d.get("user"), d.get("system"), d.get("elapsed"), it.path))
                    db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?)",
                                   [(name, w.label, it.index, metric, seq, v)
                                    for metric, vals in it.samples.items()
                                    for seq, v in enumerate(_clean(vals))])

    def iteration_values(self, runs: list[str]) -> list[tuple[str, str, str, int, float | None]]:
        """(run, workload, metric, index, mean) of the measured, completed iterations of ``runs``."""
        if not runs:
            return []
        with self.db() as db:
            marks = ",".join("?" * len(runs))
            return db.execute(
                f"SELECT s.run, s.workload, s.metric, s.idx, avg(s.value) FROM samples s JOIN iterations i "
                f"ON i.run=s.run AND i.workload=s.workload AND i.idx=s.idx WHERE s.run IN ({marks}) "
                f"AND i.warmup=0 AND i.status='ok' GROUP BY s.run, s.workload, s.metric, s.idx "
                f"ORDER BY s.run, s.workload, s.metric, s.idx", runs).fetchall()

    def remove_run(self, name: str) -> None:
        shutil.rmtree(self.run_path(name), ignore_errors=True)
        with self.db() as db:
            for table in ("runs", "workloads", "metrics", "iterations", "samples"):
                db.execute(f"DELETE FROM {table} WHERE {'name' if table == 'runs' else 'run'}=?", (name,))
