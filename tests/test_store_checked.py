"""Stored files are validated once per content (model/files.py): later reads of the same bytes
skip pydantic, and any change to a file's bytes is validated again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmbench.errors import UsageError
from mmbench.model import files
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
from mmbench.store.fs import FileStore
from tests.conftest import stored_doc


def write_run(root: Path, name: str = "r1") -> FileStore:
    store = FileStore(root)
    w = store.create_run(
        name,
        force=False,
        suite_text="",
        suite_hash="h",
        suite_effective={},
        fingerprint={"kernel": {"release": "6.1"}},
        settings={},
    )
    w.add_workload(WorkloadRun("wl", "bench", {"size": 1}, [MetricDef("ops", "ops/s", "higher", "rate")]))
    for i in range(2):
        w.add_iteration(
            IterationResult(
                "wl",
                i,
                False,
                "ok",
                samples={"ops": [100.0 + i, float("nan")]},
                duration={"user": 1.0, "system": 2.0, "elapsed": 3.0},
            )
        )
    w.finish("complete")
    return store


def test_writer_records_verdicts_and_compare_skips_pydantic(tmp_path):
    root = tmp_path / "res"
    write_run(root)
    rows = FileStore(root).db().execute("SELECT path FROM checked WHERE run='r1' ORDER BY path").fetchall()
    assert [r[0] for r in rows] == [
        "r1/run.json",
        "r1/wl/iter-0/result.json",
        "r1/wl/iter-1/result.json",
        "r1/wl/workload.json",
    ]
    code = (
        "import sys; from mmbench.store.fs import FileStore; r = FileStore(sys.argv[1]).load_run('r1'); "
        "print(r.workload('wl').iterations[1].samples['ops'][0], 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["101.0", "False"]


def test_fast_and_validated_reads_agree(tmp_path, monkeypatch):
    root = tmp_path / "res"
    store = write_run(root)
    run = root / "r1" / "run.json"
    meta = stored_doc(run)
    del meta["description"]  # defaulted by validation: the stored document differs
    meta["created"] = 5  # an int where a float is meant: coerced
    run.write_text(json.dumps(meta))
    first = files.read_checked(run, "run")
    assert first["description"] == "" and isinstance(first["created"], float)
    store.checked.flush()
    calls = []
    monkeypatch.setattr(files, "validate", lambda *a: calls.append(a))
    fresh = FileStore(root)  # a new process would see only the index
    assert files.read_checked(run, "run") == first
    assert calls == []  # read from the recorded verdict
    assert fresh.load_run("r1").created == 5.0


def test_a_changed_file_is_validated_again(tmp_path):
    root = tmp_path / "res"
    write_run(root)
    result = root / "r1" / "wl" / "iter-0" / "result.json"
    data = stored_doc(result)
    data["status"] = "fine"  # valid JSON, not a status
    result.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"iter-0/result.json: status: "):
        FileStore(root).load_run("r1")


def test_a_changed_validator_does_not_trust_old_verdicts(tmp_path, monkeypatch):
    root = tmp_path / "res"
    write_run(root)
    calls = []
    real = files.validate
    monkeypatch.setattr(files, "validate", lambda *a: calls.append(a[2]) or real(*a))
    FileStore(root).load_run("r1")
    assert calls == []
    monkeypatch.setattr(files, "_validator_key", b"another validator")
    FileStore(root).load_run("r1")
    assert sorted(calls) == ["result", "result", "run", "workload"]


def test_removed_run_forgets_its_verdicts(tmp_path):
    root = tmp_path / "res"
    store = write_run(root)
    store.remove_run("r1")
    assert store.db().execute("SELECT count(*) FROM checked WHERE run='r1'").fetchone()[0] == 0


def test_reindex_keeps_verdicts_and_does_not_wait_for_its_own_lock(tmp_path):
    root = tmp_path / "res"
    write_run(root, "a")
    write_run(root, "b")
    (root / "index.sqlite").unlink()
    store = FileStore(root)
    assert store.sync()[0] == 2  # load_run inside the index transaction: no self-deadlock
    n = store.db().execute("SELECT count(*) FROM checked").fetchone()[0]
    assert n == 8


def test_compare_of_known_files_imports_neither_pydantic_nor_numpy(tmp_path):
    """The compare path's import budget (issue 13 item 9): stored files validated before and
    monitor summaries cached need neither library."""
    root = tmp_path / "res"
    store = FileStore(root)
    cols = ["pgfault", "pgscan_kswapd", "compact_stall"]
    for name in ("a", "b"):
        w = store.create_run(
            name, force=False, suite_text="", suite_hash="h", suite_effective={}, fingerprint={}, settings={}
        )
        w.add_workload(WorkloadRun("wl", "bench", {}, [MetricDef("ops", "ops/s", "higher", "rate")]))
        for i in range(3):
            d = w.iteration_dir("wl", i) / "monitors" / "proc-vmstat"
            d.mkdir(parents=True)
            rows = "".join(f"{t}.000\t{1000 * t}\t{10 * t}\t{t}\n" for t in range(5))
            (d / "proc-vmstat.tsv").write_text("time\t" + "\t".join(cols) + "\n" + rows)
            w.add_iteration(
                IterationResult(
                    "wl",
                    i,
                    False,
                    "ok",
                    samples={"ops": [100.0 + i]},
                    monitors={"proc-vmstat": {"dir": str(d.relative_to(w.path)), "files": ["proc-vmstat.tsv"]}},
                    path=f"wl/iter-{i}",
                )
            )
        w.finish("complete")
    code = (
        "import sys, io, contextlib; from mmbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try: main(['compare', '--results', sys.argv[1], 'a', 'b'])\n"
        "    except SystemExit: pass\n"
        "print('Kswapd' in out.getvalue() or 'kswapd' in out.getvalue(), "
        "sorted(m for m in ('numpy', 'pydantic') if m in sys.modules))"
    )
    first = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    assert first.stdout.startswith("True"), first.stdout + first.stderr  # summaries computed (numpy)
    again = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    assert again.stdout.split(" ", 1) == ["True", "[]\n"], again.stdout + again.stderr
