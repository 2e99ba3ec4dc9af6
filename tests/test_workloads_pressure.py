"""pft, usemem (with and without zram swap), stutter: real runs at a tiny size."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbench.errors import UsageError
from mmbench.run.journal import Journal
from mmbench.run.swap import setup_swap
from workload_harness import run_workload
from tests.conftest import needs_root

pytestmark = needs_root


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_pft_rates(mode):
    r = run_workload("pft", {"size": "0.5x", "clients": [1, 2], "mode": mode, "repeat": 3}, budget="128M")
    assert r.status == "ok", r.reason
    for n in (1, 2):
        assert len(r.samples[f"faults/sec-{n}"]) == 3
        assert all(1e3 < x < 1e9 for x in r.samples[f"faults/sec-{n}"])
        assert all(1e3 < x < 1e9 for x in r.samples[f"faults/cpu-{n}"])


def test_pft_refuses_too_big():
    with pytest.raises(UsageError):
        run_workload("pft", {"size": "2x"}, budget="128M")


def test_usemem_without_swap_fits_and_file_backed():
    r = run_workload("usemem", {"file_size": "0.5x", "passes": 2}, budget="128M")
    assert r.status == "ok", r.reason
    assert len(r.samples["Throughput"]) == 2 and all(x > 0 for x in r.samples["Throughput"])
    # 2 passes over 64M+ fault and write every page: kernel time is measurable
    assert r.samples["Elapsed"][0] > 0 and r.samples["System"][0] > 0
    assert r.memcg["oom_kills"] == 0


def test_usemem_past_budget_without_swap_is_refused():
    if "/" in "".join(Path("/proc/swaps").read_text().splitlines()[1:]):
        pytest.skip("swap is active on this machine")
    r = run_workload("usemem", {"anon_size": "1.5x"}, budget="128M")
    assert r.status == "failed" and "no swap" in r.reason


def test_usemem_swaps_to_zram(tmp_path):
    j = Journal(tmp_path / "journal")
    j.acquire()
    try:
        setup_swap({"type": "zram", "size": "1x"}, 128 << 20, j)
        r = run_workload("usemem", {"passes": 2}, budget="128M")  # default: 1.5x with swap
    finally:
        assert j.restore() == []
        j.release()
    assert r.status == "ok", r.reason
    assert r.vmstat_delta.get("pswpout", 0) > 0
    assert r.samples["Major faults"][0] > 0
    assert "/dev/zram0" not in Path("/proc/swaps").read_text()


def test_stutter_latencies():
    r = run_workload("stutter", {"duration": "2s", "copy_size": "0.5x"}, budget="128M")
    assert r.status == "ok", r.reason
    lat = r.samples["mmap latency"]
    assert len(lat) == r.samples["Samples"][0] > 50
    assert all(x > 0 for x in lat)
    assert r.memcg["failcnt"] > 0  # the sandbox really was at its limit
