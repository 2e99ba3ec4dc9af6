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
    proc = start_mmbench(
        "run", "--config", str(suite_file(SUITE.format(n=3, d="60s"))), "--results", str(results), "killed"
    )
    try:
        # faultin's 3 iterations finish quickly; the first idle iteration then waits
        # (a running iteration writes into a staging folder, renamed to iter-N once stored)
        assert wait_for(lambda: (results / "killed" / "wait" / ".iter-0.partial" / "raw").exists(), 60)
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
    # the unsaved iteration left no folder (the journal removed its staging folder)
    assert sorted(p.name for p in (results / "killed" / "wait").iterdir()) == ["workload.json"]
    # the writer indexes a run when it finishes: a killed one is indexed by the next list
    assert "incomplete" in mmbench("list", "--results", str(results), check=True).stdout
    db = sqlite3.connect(results / "index.sqlite")
    assert db.execute("SELECT count(*) FROM iterations WHERE run='killed'").fetchone()[0] == 3
    # the index never says "running" for a run whose owner is dead
    assert db.execute("SELECT status FROM runs WHERE name='killed'").fetchone()[0] == "incomplete"


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


def test_import_csv_then_compare(tmp_path):
    csvfile = tmp_path / "samples.csv"
    rows = ["workload,metric,unit,better,iteration,value"]
    for it, (a, b) in enumerate([(10.0, 20.0), (11.0, 21.0), (12.0, 22.0)]):
        rows.append(f"tool,Latency,ms,lower,{it},{a}")
        rows.append(f"tool,Ops,ops/s,higher,{it},{b}")
    csvfile.write_text("\n".join(rows) + "\n")
    other = tmp_path / "other.csv"
    other.write_text("\n".join(r.replace(",10.0", ",15.0") for r in rows) + "\n")
    res = str(tmp_path / "res")
    assert mmbench("import", "--results", res, str(csvfile), "base").returncode == 0
    assert mmbench("import", "--results", res, str(other), "new").returncode == 0
    out = mmbench("compare", "--results", res, "--format", "json", "base", "new", check=True).stdout
    import json

    data = json.loads(out)
    rows = {(r["metric"], r["stat"]): r for s in data["sections"] for r in s["rows"]}
    lat = rows[("Latency", "Amean")]
    assert lat["values"] == {"base": 11.0, "new": 38 / 3}
    assert lat["pct"]["new"] < 0  # lower is better and it went up
    assert mmbench("import", "--results", res, str(csvfile), "base").returncode == 2  # name taken
    bad = tmp_path / "bad.csv"
    bad.write_text("workload,metric,unit,better,iteration,value\ntool,L,ms,sideways,0,1\n")
    proc = mmbench("import", "--results", res, str(bad), "bad")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "better" in proc.stderr
