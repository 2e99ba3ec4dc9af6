"""A store of a lab's size (issue 23 item 6): the writer indexes a run once, when it finishes; a
copied store needs no indexing again; indexing many runs never opens a second connection to the
index inside its own transaction (the cause of the hang); an import is not fsynced file by file.
Speed itself is measured by bench/store-scale."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
from pathlib import Path

from conftest import mmbench, stored_doc

from mmbench.importers.store import import_run
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
from mmbench.store.fs import FileStore


def workloads(seed: int, metrics: int = 10, iterations: int = 5, samples: int = 20) -> list[WorkloadRun]:
    rnd = random.Random(seed)
    mds = [MetricDef(f"latency{i}", "us", "lower", "latency") for i in range(metrics)]
    its = [
        IterationResult(
            "bench", k, False, "ok", samples={m.name: [rnd.gauss(100, 3) for _ in range(samples)] for m in mds}
        )
        for k in range(iterations)
    ]
    return [WorkloadRun("bench", "imported", {}, mds, its)]


def store_of(root: Path, runs: int) -> FileStore:
    store = FileStore(root)
    for i in range(runs):
        import_run(store, f"run{i:03d}", workloads(i), source="bench.csv")
    return store


def test_writer_indexes_each_run_once(tmp_path):
    root = tmp_path / "results"
    store_of(root, 5)
    db = sqlite3.connect(root / "index.sqlite")
    assert db.execute("SELECT count(*) FROM indexed").fetchone()[0] == 5
    # one (n, mean) row per iteration and metric, not one row per sample
    assert db.execute("SELECT count(*), sum(n) FROM sample_means WHERE run='run004'").fetchone() == (
        10 * 5,
        10 * 5 * 20,
    )
    assert FileStore(root).sync() == (0, 0, [])  # nothing to index again
    listed = mmbench("list", "--results", str(root), check=True).stdout
    assert all(f"run{i:03d}" in listed for i in range(5))


def test_a_copied_store_needs_no_indexing_but_a_changed_run_does(tmp_path):
    root = tmp_path / "results"
    store_of(root, 4)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(root), str(copy)], check=True)  # new mtimes, same bytes
    assert FileStore(copy).sync() == (0, 0, [])
    res = copy / "run002" / "bench" / "iter-1" / "result.json"
    doc = stored_doc(res)  # a hand edit inside a run (its digest dropped, as a user would)
    doc["status"] = "failed"
    res.write_text(json.dumps(doc))
    assert FileStore(copy).sync() == (1, 0, [])
    shutil.rmtree(copy / "run003")
    assert FileStore(copy).sync() == (0, 1, [])


def test_indexing_many_runs_uses_one_connection(tmp_path, monkeypatch):
    """60 runs needing indexing (an older index, a restored backup) made ``list`` wait 30 s per
    run for a lock its own transaction held; now every read goes through the one connection."""
    root = tmp_path / "results"
    store_of(root, 60)

    def forget() -> None:  # as an index no writer recorded (an older mmbench, a restored backup)
        with sqlite3.connect(root / "index.sqlite") as db:
            db.execute("DELETE FROM indexed")

    forget()
    proc = mmbench("list", "--results", str(root), timeout=120)  # as a user runs it: it used to hang
    assert proc.returncode == 0 and sum(line.startswith("run") for line in proc.stdout.splitlines()) == 60, proc.stderr
    forget()
    opened = []
    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    runs = FileStore(root).list_runs()
    assert len(runs) == 60 and all(r["iterations"] == 5 for r in runs)
    assert [Path(p).name for p in opened] == ["index.sqlite"]


def test_an_import_is_not_fsynced_file_by_file_but_a_measured_run_is(tmp_path, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd))
    store = FileStore(tmp_path / "results")
    import_run(store, "imported", workloads(1), source="bench.csv")
    assert calls == []
    writer = store.create_run(
        "measured", force=False, suite_text="", suite_hash="", suite_effective={}, fingerprint={}, settings={}
    )
    writer.add_workload(workloads(2)[0])
    before = len(calls)
    writer.add_iteration(workloads(2)[0].iterations[0])
    assert len(calls) > before  # each iteration durable before the next starts
    writer.finish("complete")


def test_history_reads_iteration_means_recorded_at_indexing(tmp_path):
    root = tmp_path / "results"
    store_of(root, 3)
    expected = sorted(
        (f"run{i:03d}", "bench", m.name, it.index, sum(it.samples[m.name]) / 20)
        for i in range(3)
        for w in workloads(i)
        for it in w.iterations
        for m in w.metrics
    )
    got = FileStore(root).iteration_values(["run000", "run001", "run002"])
    assert [g[:4] for g in got] == [e[:4] for e in expected]
    assert all(abs(g[4] - e[4]) < 1e-9 for g, e in zip(got, expected))
    with sqlite3.connect(root / "index.sqlite") as db:  # an index from before sample_means
        db.execute("CREATE TABLE samples (run TEXT, workload TEXT, idx INTEGER, metric TEXT, seq INTEGER, value REAL)")
        db.execute("CREATE TABLE means (run TEXT, workload TEXT, idx INTEGER, metric TEXT, value REAL)")
        db.execute("DELETE FROM sample_means")
        db.execute("PRAGMA user_version = 1")
    store = FileStore(root)
    assert len(store.list_runs()) == 3  # as history does: every run indexed again
    again = store.iteration_values(["run000", "run001", "run002"])
    with sqlite3.connect(root / "index.sqlite") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not {"samples", "means"} & tables
    assert [g[:4] for g in again] == [e[:4] for e in expected]
    assert all(abs(g[4] - e[4]) < 1e-9 for g, e in zip(again, expected))
