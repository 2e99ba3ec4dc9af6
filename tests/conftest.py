"""Shared fixtures: CLI runner, root check, temporary results directories."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# helpers the tests share with the measurements of bench/ (a private PostgreSQL server, a throw-away
# memory cgroup, fault trials, a generated MMTests tree)
sys.path.insert(0, str(REPO / "bench" / "lib"))
# Tests queue behind any other mmbench run on the machine instead of failing.
os.environ.setdefault("MMBENCH_LOCK_WAIT", "900")
THP = Path("/sys/kernel/mm/transparent_hugepage")


def stored_doc(path: Path) -> dict:
    """A stored JSON document without its digest ("blake2b", model/files.py), for a test that edits
    it by hand as a user may: an edited document that keeps its digest reads as damaged."""
    import json

    doc = json.loads(Path(path).read_text())
    doc.pop("blake2b", None)
    return doc


def store_records(root: Path, *runs) -> str:
    """Write in-memory RunRecords (mmbench.model.results) as complete runs of a results directory
    at ``root``; returns the directory as ``--results`` takes it."""
    from mmbench.model.results import WorkloadRun
    from mmbench.store import open_store

    store = open_store(root)
    for run in runs:
        w = store.create_run(
            run.name,
            force=True,
            suite_text=run.suite_text,
            suite_hash="x",
            suite_effective={},
            fingerprint={},
            settings={},
        )
        for wr in run.workloads:
            w.add_workload(WorkloadRun(wr.label, wr.plugin, {}, wr.metrics, []))
            for it in wr.iterations:
                w.add_iteration(it)
        w.finish("complete")
    return str(root)


def is_root() -> bool:
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root: changes sysctls and creates cgroups")


def mmbench(
    *args: str, check: bool = False, timeout: float = 300, env: dict | None = None, **kw
) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a subprocess."""
    proc = subprocess.run(
        [sys.executable, "-m", "mmbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        **kw,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"mmbench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    return proc


def start_mmbench(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mmbench", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def mmbench_cgroups() -> list[str]:
    """Sandboxes of `mmbench run` still present (the in-process test helpers' own cgroups,
    mmbench-test-*, belong to whichever test session made them and are not counted)."""
    found = []
    for root in [Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").glob("*")]:
        if root.is_dir():
            found += [str(p) for p in root.glob("mmbench-*") if not p.name.startswith("mmbench-test-")]
    return sorted(set(found))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def suite_file(tmp_path: Path):
    """Write a suite file from text; returns its path."""

    def write(text: str, name: str = "suite.toml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return write


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for this test session (see bench/lib/pgserver.py)."""
    from pgserver import PgServer, pg_bindir

    if pg_bindir() is None:
        pytest.skip("PostgreSQL server is not installed (scripts/setup.sh --test installs Debian's postgresql)")
    server = PgServer()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server, tmp_path, monkeypatch) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL server (runs read from it
    are materialised under this test's temporary directory, not the user's cache)."""
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    return pg_server.new_database()
