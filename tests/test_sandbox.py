"""The memory sandbox: limits hold, OOM kills fail only their iteration, mmbench stays outside."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import mmbench, mmbench_cgroups, needs_root
from mmbench.run.testing import run_workload
from mmbench.store.fs import FileStore

pytestmark = needs_root


def test_oom_fails_iteration_and_run_goes_on(suite_file, results):
    suite = suite_file("""
[suite]
iterations = 2
budget = "64M"
[actions]
sync = false
[[workload]]
name = "faultin"
label = "too-big"
[workload.params]
size = "2x"
madvise = false
[[workload]]
name = "faultin"
label = "fits"
[workload.params]
size = "16M"
""")
    out = mmbench("run", "--config", str(suite), "--results", str(results), "oom")
    assert out.returncode == 0, out.stderr   # later workload completed
    run = FileStore(results).load_run("oom")
    big = run.workload("too-big")
    assert [it.status for it in big.iterations] == ["oom", "oom"]
    assert "OOM kill in the sandbox" in big.iterations[0].reason
    assert big.iterations[0].memcg["oom_kills"] >= 1
    assert [it.status for it in run.workload("fits").iterations] == ["ok", "ok"]
    assert mmbench_cgroups() == []


def test_sandbox_holds_the_workload_not_mmbench():
    r = run_workload("faultin", {"size": "32M", "madvise": False}, budget="64M")
    assert r.status == "ok", r.reason
    assert r.memcg["limit"] == 64 << 20
    assert 32 << 20 <= r.memcg["max_usage"] <= 64 << 20   # the workload's memory was charged to it
    own = Path(f"/proc/{os.getpid()}/cgroup").read_text()
    assert "mmbench" not in own
    assert r.duration["system"] > 0 and r.duration["elapsed"] > 0
    assert r.vmstat_delta["pgfault"] > 0
