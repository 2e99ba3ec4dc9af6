"""The embedded store's SQLite index (``index.sqlite``): its schema, migrations and sealed rows.

The run folders are the truth; the index is what ``list`` and ``history`` read.  A run's rows are
made from its indexed files (``indexed_files``: their signature tells that a folder changed) and
sealed with digests, so rows that no longer match are indexed again from the folder.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import os
import sqlite3
from array import array
from hashlib import blake2b
from pathlib import Path
from typing import Any

from mmbench.model.files import SAMPLES_FILE, StoreError, kernel_release, read_regular
from mmbench.model.results import IterationResult, RunRecord


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


# 3: sample_means (n, mean of each iteration and metric) replaced the row-per-sample "samples" and
# the "means" tables; indexed has signature and digest
INDEX_VERSION = 3


def migrate(db: sqlite3.Connection) -> None:
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


class IndexDamaged(StoreError):
    """index.sqlite cannot be opened or read: the folders still answer; ``reindex`` rebuilds it."""


class IndexUnavailable(IndexDamaged):
    """index.sqlite is not there and cannot be created (a read-only folder, /proc): the folders
    still answer; nothing to rebuild."""


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


def files_signature(files: dict[str, tuple[int, int]]) -> str:
    """Names, sizes and mtimes of a run's indexed files: equal, and the index rows still hold."""
    return blake2b(repr(sorted(files.items())).encode(), digest_size=16).hexdigest()


def content_digest(run_dir: Path, files: dict[str, tuple[int, int]]) -> str | None:
    """A digest of the indexed files' names and bytes: a copied store (``cp -r``, a backup put
    back) has new mtimes but the same bytes, and needs no indexing again."""
    h = blake2b(digest_size=16)
    try:
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + read_regular(run_dir / rel, limit=1 << 62) + b"\0")
    except StoreError:  # (a FIFO, a symlink out: the run's reader names it)
        return None
    return h.hexdigest()


def mean_rows(run: str, it: IterationResult) -> list[tuple[str, str, int, str, int, float | None]]:
    """One index row per metric of an iteration: the number of samples and the mean of the finite
    ones (None when none is), what ``history`` reads; the samples themselves stay in result.json
    (a row per sample made a 1 M-sample import take 25 s)."""
    rows = []
    for metric, vals in it.samples.items():
        if isinstance(vals, (list, tuple)):  # numpy only for packed arrays: its import is ~50 ms
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


def insert_run(db: sqlite3.Connection, name: str, rec: RunRecord, meta: dict[str, Any], path: str) -> None:
    db.execute(
        "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?)",
        (
            name,
            rec.status,
            rec.created,
            rec.finished,
            rec.suite_hash,
            kernel_release(rec.fingerprint),
            meta["description"],
            path,
        ),
    )
    for w in rec.workloads:
        db.execute("INSERT OR REPLACE INTO workloads VALUES (?,?,?,?)", (name, w.label, w.plugin, json.dumps(w.params)))
        db.executemany(
            "INSERT OR REPLACE INTO metrics VALUES (?,?,?,?,?,?,?)",
            [(name, w.label, m.name, m.unit, m.better, m.kind, m.mean_kind) for m in w.metrics],
        )
        for it in w.iterations:
            d = it.duration
            db.execute(
                "INSERT OR REPLACE INTO iterations VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    name,
                    w.label,
                    it.index,
                    int(it.warmup),
                    it.status,
                    it.reason,
                    d.get("user"),
                    d.get("system"),
                    d.get("elapsed"),
                    it.path,
                ),
            )
            db.executemany("INSERT INTO sample_means VALUES (?,?,?,?,?,?)", mean_rows(name, it))


def drop_run_rows(db: sqlite3.Connection, name: str, *, checked: bool = True) -> None:
    for table in (
        "runs",
        "workloads",
        "metrics",
        "iterations",
        "sample_means",
        "indexed",
        *(("checked",) if checked else ()),
    ):
        db.execute(f"DELETE FROM {table} WHERE {'name' if table == 'runs' else 'run'}=?", (name,))


# The index rows of a run are sealed like its files: ``indexed.rows`` is a digest of the rows
# ``list`` shows (runs, iterations), ``indexed.means`` of those ``history`` reads (sample_means);
# rows that do not match are indexed again from the folder (a damaged index.sqlite never shows).
def _in(names: list[str] | None, column: str) -> tuple[str, list[str]]:
    return ("", []) if names is None else (f" WHERE {column} IN ({','.join('?' * len(names))})", names)


def _chunks(names: list[str] | None) -> list[list[str] | None]:
    return [None] if names is None else [names[i : i + 500] for i in range(0, len(names), 500)]


def list_rows(
    db: sqlite3.Connection, names: list[str] | None = None
) -> tuple[dict[str, tuple], dict[str, list[tuple]]]:
    """(run → its runs row with host and suite, run → its iterations (workload, idx, warmup, status))."""
    runs: dict[str, tuple] = {}
    its: dict[str, list[tuple]] = {}
    for part in _chunks(names):
        where, args = _in(part, "r.name")
        for row in db.execute(
            "SELECT r.name, r.status, r.created, r.kernel, r.description, x.host, x.suite "
            f"FROM runs r JOIN indexed x ON x.run=r.name{where}",
            args,
        ):
            runs[row[0]] = row
        where, args = _in(part, "run")
        for run, *rest in db.execute(
            f"SELECT run, workload, idx, warmup, status FROM iterations{where} ORDER BY run, workload, idx", args
        ):
            its.setdefault(run, []).append(tuple(rest))
    return runs, its


def mean_rows_of(db: sqlite3.Connection, names: list[str] | None = None) -> dict[str, list[tuple]]:
    """run → its sample_means rows (run, workload, idx, metric, n, mean), in order."""
    out: dict[str, list[tuple]] = {}
    for part in _chunks(names):
        where, args = _in(part, "run")
        rows = db.execute(
            f"SELECT run, workload, idx, metric, n, mean FROM sample_means{where} ORDER BY run, workload, idx, metric",
            args,
        ).fetchall()
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
    runs, its = list_rows(db, names)
    means = mean_rows_of(db, names)
    db.executemany(
        "UPDATE indexed SET rows=?, means=? WHERE run=?",
        [(_rows_digest(runs[n], its.get(n, [])), _means_digest(means.get(n, [])), n) for n in names if n in runs],
    )


def damaged_rows(
    db: sqlite3.Connection, runs: dict[str, tuple], rows: dict[str, list[tuple]], column: str
) -> list[str]:
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
