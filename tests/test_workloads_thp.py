"""thpavail, thpfault, highalloc: each runs for real at a tiny size and gives plausible metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbench.errors import UsageError
from workload_harness import run_workload
from mmbench.plugins import workloads as registry
from tests.conftest import needs_root

pytestmark = needs_root

ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def _mounted_loops() -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines() if "loopfs.mnt" in line]


def test_thpavail_under_io():
    before = Path("/proc/sys/vm/nr_hugepages").read_text()
    r = run_workload(
        "thpavail", {"size": "0.5x", "read_size": "1x", "loop_size": "64M"}, budget="128M", settings={ENABLED: "always"}
    )
    assert r.status == "ok", r.reason
    s = r.samples
    for m in (
        "System Time",
        "User Time",
        "Elapsed Time",
        "THP Active",
        "Fault Alloc",
        "Fault Fallback",
        "Percentage huge",
    ):
        assert m in s, m
    units = 64 // 2 * 1  # 0.5x of 128M = 64M = 32 units
    assert 0 < s["Elapsed Time"][0] < 30
    # thp=always with half the budget free: most 2 MiB units are huge (and were faulted as THPs)
    assert 0 < s["THP Active"][0] <= units
    assert s["Fault Alloc"][0] >= s["THP Active"][0] / 2
    lat = s.get("Fault latency huge", []) + s.get("Fault latency base", [])
    assert len(lat) == units
    assert _mounted_loops() == []  # unmounted and (autoclear) detached
    assert Path("/proc/sys/vm/nr_hugepages").read_text() == before


def test_thpavail_rejects_mapping_larger_than_budget():
    with pytest.raises(UsageError, match=r"size.*budget|budget.*size"):
        run_workload("thpavail", {"size": "1.2x"}, budget="128M")


@pytest.mark.parametrize("fragment", ["none", "anon-holes"])
def test_thpfault_always_gets_huge_pages(fragment):
    r = run_workload(
        "thpfault",
        {"size": "0.4x", "threads": [1, 2], "fragment": fragment},
        budget="128M",
        settings={ENABLED: "always"},
    )
    assert r.status == "ok", r.reason
    for t in (1, 2):
        assert r.samples[f"Percentage huge-{t}"][0] > 0
        assert len(r.samples[f"fault-both-{t}"]) >= 24
        assert all(x > 0 for x in r.samples[f"fault-both-{t}"])


def test_thpfault_never_gets_none_and_pagecache_fragmentation_runs():
    r = run_workload(
        "thpfault",
        {"size": "0.3x", "threads": [2], "fragment": "pagecache", "cache_size": "0.5x"},
        budget="128M",
        settings={ENABLED: "never"},
    )
    assert r.status == "ok", r.reason
    assert r.samples["Percentage huge-2"] == [0.0]
    assert "fault-huge-2" not in r.samples and len(r.samples["fault-base-2"]) >= 18


def test_thpfault_metric_names_follow_the_ladder():
    wl = registry()["thpfault"]()
    names = {m.name for m in wl.metric_defs({"threads": [1, 4]})}
    assert {"fault-huge-1", "fault-base-4", "fault-both-4", "Percentage huge-1"} <= names
    with pytest.raises(UsageError):
        run_workload("thpfault", {"size": "4M", "threads": [4]}, budget="128M")


def test_highalloc_two_passes_and_pool_restored():
    pool = Path("/proc/sys/vm/nr_hugepages").read_text()
    r = run_workload(
        "highalloc",
        {"hugetlb_size": "16M", "load_warmup": "0.5s", "rest": "0.1s", "collapse_size": "8M", "load_file": "0.5x"},
        budget="128M",
    )
    assert r.status == "ok", r.reason
    for n in (1, 2):
        assert 0 <= r.samples[f"% Success pass {n}"][0] <= 100
        assert r.samples[f"Time pass {n}"][0] > 0
        assert len(r.samples[f"Latency pass {n}"]) == 8
        assert 0 <= r.samples[f"% Collapse pass {n}"][0] <= 100
        assert len(r.samples[f"Collapse latency pass {n}"]) == 4
    assert Path("/proc/sys/vm/nr_hugepages").read_text() == pool


def test_thpavail_fill_phase_dirty_threshold_and_size_of_free_memory(tmp_path):
    """Seed 001's fill phase: the read file's cache is dropped, the fault-in waits for dirty +
    writeback page cache, and with size_free the mapping is the memory free before the fill."""
    import json

    r = run_workload(
        "thpavail",
        {
            "size_free": 0.9,
            "read_size": "1x",
            "loop_size": "64M",
            "sync_every": "0",
            "dirty_threshold": "4M",
            "fill_timeout": "20s",
        },
        budget="128M",
        settings={ENABLED: "always"},
        outdir=tmp_path,
    )
    assert r.status == "ok", r.reason
    info = json.loads((tmp_path / r.path / "raw" / "thpavail-info.json").read_text())
    assert info["read_cache_dropped"] is True
    assert info["dirty_reached"] is True and info["dirty_at_start"] >= 4 << 20
    assert 0 < info["mapping_bytes"] <= info["free_before_fill"] * 0.9 + 1
    assert info["mapping_bytes"] % (2 << 20) == 0
    units = info["mapping_bytes"] // (2 << 20)
    assert r.samples["Dirty at fault-in"][0] >= 4
    assert len(r.samples.get("Fault latency huge", []) + r.samples.get("Fault latency base", [])) == units
    assert _mounted_loops() == []


def test_whole_machine_mode_has_no_memcg_limit():
    """sandbox="none": no limit is written, the limit reported is MemTotal, free() is MemFree."""
    r = run_workload("faultin", {"size": "32M"}, budget="64M", sandbox="none")
    assert r.status == "ok", r.reason
    total = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]) * 1024
    assert r.memcg["mode"] == "none"
    assert r.memcg["limit"] == total
    assert r.memcg["oom_kills"] == 0
