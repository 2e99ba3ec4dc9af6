"""The memory sandbox: limits hold, OOM kills fail only their iteration, mmbench stays outside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import mmbench, mmbench_cgroups, needs_root
from workload_harness import run_workload
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
size = "1x"   # all of the budget (more is refused when the suite loads): the rest of the process tips it over
madvise = false
[[workload]]
name = "faultin"
label = "fits"
[workload.params]
size = "16M"
""")
    out = mmbench("run", "--config", str(suite), "--results", str(results), "oom")
    # later workload completed; the run is stored, with failed iterations: exit 5 (docs/cli.md)
    assert out.returncode == 5 and "2 of 4 iterations failed" in out.stderr, out.stderr
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
    assert 32 << 20 <= r.memcg["max_usage"] <= 64 << 20  # the workload's memory was charged to it
    own = Path(f"/proc/{os.getpid()}/cgroup").read_text()
    assert "mmbench" not in own
    assert r.duration["system"] > 0 and r.duration["elapsed"] > 0
    assert r.vmstat_delta["pgfault"] > 0


def test_cgroup_v2_layout(tmp_path, monkeypatch):
    """The cgroup v2 path (memory.max, memory.events, cpu.stat) on a directory laid out like
    /sys/fs/cgroup of a pure-v2 host; our machines only have v1 memory, so the files are
    written here in the kernel's format."""
    import mmbench.run.sandbox as sb
    from mmbench.run.journal import Journal

    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    monkeypatch.setattr(sb, "CGROUP_ROOT", root)
    assert sb.cgroup_version() == 2
    journal = Journal(tmp_path / "state")
    journal.acquire()
    box = sb.MemorySandbox("run-w-0-1", 256 << 20, journal).create()
    leaf = root / "mmbench-run-w-0-1"
    assert box.paths == {"memory": leaf, "unified": leaf} and box.blkio_path == leaf
    assert (leaf / "memory.max").read_text() == str(256 << 20)
    (leaf / "memory.current").write_text("1048576\n")
    (leaf / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n")
    (leaf / "memory.peak").write_text("2097152\n")
    (leaf / "cpu.stat").write_text("usage_usec 3000000\nuser_usec 1000000\nsystem_usec 2000000\n")
    (leaf / "cgroup.procs").write_text("")
    assert box.usage() == 1 << 20 and box.free() == (255 << 20)
    assert box.oom_kills() == 1 and box.failcnt() == 12 and box.max_usage() == 2 << 20
    assert box.cpu_times() == (1.0, 2.0)
    # a real cgroup directory has no files to delete; here the journal's undo removes the tree
    for f in leaf.iterdir():
        f.unlink()
    assert journal.restore() == [] and not leaf.exists()
    journal.release()


def test_whole_machine_mode_on_a_guest_cgroup2_without_memory_controller(tmp_path, monkeypatch):
    """Inside a VM guest whose cgroup2 root lacks the memory controller, whole-machine mode still
    makes an accounting leaf (cpu.stat, cgroup.procs) and writes no limit; free() is MemFree."""
    import mmbench.run.sandbox as sb
    from mmbench.run.journal import Journal

    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu io pids\n")
    (root / "cgroup.subtree_control").write_text("cpu io\n")
    monkeypatch.setattr(sb, "CGROUP_ROOT", root)
    assert sb.cgroup_version() == 0
    with pytest.raises(RuntimeError):
        sb.MemorySandbox("memcg-mode", 256 << 20, Journal(tmp_path / "s0"))
    journal = Journal(tmp_path / "state")
    journal.acquire()
    box = sb.MemorySandbox("run-w-0-2", 256 << 20, journal, whole_machine=True).create()
    leaf = root / "mmbench-run-w-0-2"
    assert box.mode == "none" and box.limit == sb.meminfo_bytes("MemTotal")
    assert leaf.is_dir() and not (leaf / "memory.max").exists()
    assert 0 < box.free() <= box.limit and box.stat() == {} and box.max_usage() is None
    assert box.oom_kills() == 0 and box.failcnt() == 0
    assert journal.restore() == [] and not leaf.exists()
    journal.release()


def test_sandbox_auto_is_whole_machine_only_in_a_guest(monkeypatch):
    from mmbench.model.guest import GUEST_ENV
    from mmbench.config.load import resolve_mode

    monkeypatch.delenv(GUEST_ENV, raising=False)
    assert resolve_mode("auto") == "memcg" and resolve_mode("none") == "none"
    monkeypatch.setenv(GUEST_ENV, "1")
    assert resolve_mode("auto") == "none" and resolve_mode("memcg") == "memcg"
