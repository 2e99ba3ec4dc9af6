"""The store: completed iterations survive a kill; names are validated and not silently reused."""

from __future__ import annotations

import sqlite3

from conftest import mmbench, needs_root, start_mmbench, wait_for
from mmbench.store.fs import FileStore

SUITE = """
[suite]
iterations = {n}
budget = "64M"
[actions]
sync = false
[[workload]]
name = "faultin"
[workload.params]
size = "16M"
[[workload]]
name = "idle"
label = "wait"
[workload.params]
duration = "{d}"
"""


@needs_root
def test_completed_iterations_survive_sigkill(suite_file, results):
    proc = start_mmbench("run", "--config", str(suite_file(SUITE.format(n=3, d="60s"))),
                         "--results", str(results), "killed")
    try:
        # faultin's 3 iterations finish quickly; the first idle iteration then waits
        assert wait_for(lambda: (results / "killed" / "wait" / "iter-0" / "raw").exists(), 60)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    mmbench("restore", check=True)
    run = FileStore(results).load_run("killed")
    assert run.status == "incomplete"
    faultin = run.workload("faultin")
    assert [it.index for it in faultin.iterations] == [0, 1, 2]
    assert all(it.status == "ok" and it.samples["Fault throughput"] for it in faultin.iterations)
    assert run.workload("wait").iterations == []
    db = sqlite3.connect(results / "index.sqlite")
    assert db.execute("SELECT count(*) FROM iterations WHERE run='killed'").fetchone()[0] == 3
    assert db.execute("SELECT status FROM runs WHERE name='killed'").fetchone()[0] == "running"
    assert "incomplete" in mmbench("list", "--results", str(results), check=True).stdout


@needs_root
def test_name_reuse_needs_force(suite_file, results):
    path = str(suite_file(SUITE.format(n=1, d="0.1s")))
    assert mmbench("run", "--config", path, "--results", str(results), "r").returncode == 0
    again = mmbench("run", "--config", path, "--results", str(results), "r")
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    assert mmbench("run", "--config", path, "--results", str(results), "--force", "r").returncode == 0
    run = FileStore(results).load_run("r")
    assert run.status == "complete" and [w.label for w in run.workloads] == ["faultin", "wait"]


def test_results_env_variable(tmp_path):
    out = mmbench("list", env={"MMBENCH_RESULTS": str(tmp_path / "elsewhere")}, check=True)
    assert str(tmp_path / "elsewhere") in out.stdout
