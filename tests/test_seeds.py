"""The seed suites (configs/seeds/): shipped, valid in both modes, sized relative to the machine;
whole-machine mode resolves the budget to MemTotal; a suite aimed at kswapd/compaction warns when
it runs in a small memcg; seed 001 runs end to end at a tiny size on the host."""

from __future__ import annotations

import pytest

from conftest import mmbench, mmbench_cgroups, needs_root
from mmbench.config.aims import memcg_warning
from mmbench.config.load import load_suite, memtotal, shipped_suites
from mmbench.errors import UsageError
from mmbench.model.guest import GUEST_ENV
from mmbench.store.fs import FileStore

SEEDS = ["seed000-largecopy", "seed001-thpavail", "seed002-simoop", "seed003-compaction", "seed004-pagealloc"]


def test_seed_suites_are_shipped_and_documented():
    from pathlib import Path

    shipped = shipped_suites()
    docs = (Path(__file__).resolve().parents[1] / "docs" / "seeds.md").read_text()
    for name in SEEDS:
        assert name in shipped and shipped[name].parent.name == "seeds"
        assert name in docs


@pytest.mark.parametrize("name", SEEDS)
def test_seed_suite_loads_whole_machine_and_in_a_memcg(name, monkeypatch):
    monkeypatch.delenv(GUEST_ENV, raising=False)
    s = load_suite(name)
    assert s.sandbox == "none" and s.budget == memtotal()
    assert s.aims and s.monitors
    small = load_suite(name, ["sandbox=memcg", "budget=256M"])
    assert small.sandbox == "memcg" and small.budget == 256 << 20
    assert memcg_warning(small.aims, small.sandbox, small.budget, memtotal()) is not None or not set(small.aims) & {
        "kswapd",
        "direct-reclaim",
        "compaction",
        "fragmentation",
    }


def test_sandbox_auto_follows_the_guest(monkeypatch):
    monkeypatch.delenv(GUEST_ENV, raising=False)
    assert load_suite("thpavail").sandbox == "memcg"
    monkeypatch.setenv(GUEST_ENV, "1")
    s = load_suite("thpavail")  # budget "1G" written for a memcg: whole machine in the guest
    assert s.sandbox == "none" and s.budget == memtotal() and "applies only with sandbox" in s.notes[0]
    assert load_suite("thpavail", ["sandbox=memcg"]).budget == 1 << 30


def test_sandbox_typo_is_a_usage_error():
    with pytest.raises(UsageError, match="sandbox"):
        load_suite("smoke", ["sandbox=nope"])
    with pytest.raises(UsageError, match="aims"):
        load_suite("smoke", ['aims=["kswap"]'])


def test_memcg_warning_only_for_small_memcgs_and_whole_machine_aims():
    gib = 1 << 30
    assert memcg_warning(["kswapd"], "memcg", gib, 24 * gib) is not None
    assert memcg_warning(["kswapd"], "none", 24 * gib, 24 * gib) is None
    assert memcg_warning(["kswapd"], "memcg", 20 * gib, 24 * gib) is None
    assert memcg_warning(["swap", "latency"], "memcg", gib, 24 * gib) is None


@needs_root
def test_seed001_tiny_in_a_memcg_warns_and_fills_with_dirty_page_cache(tmp_path):
    res = str(tmp_path / "res")
    out = mmbench(
        "run",
        "--config",
        "seed001-thpavail",
        "--results",
        res,
        "--iterations",
        "1",
        "--set",
        "sandbox=memcg",
        "--set",
        "budget=128M",
        "--set",
        "thpavail.loop_size=64M",
        "--set",
        "thpavail.dirty_threshold=4M",
        "--set",
        "thpavail.fill_timeout=20s",
        "--set",
        "monitors.mm-trace=false",
        "seed001-tiny",
    )
    assert out.returncode == 0, out.stderr
    assert "aims at compaction, direct-reclaim" in out.stderr and "sandbox=none" in out.stderr
    run = FileStore(res).load_run("seed001-tiny")
    assert run.fingerprint["sandbox"]["mode"] == "memcg"
    it = run.workloads[0].iterations[0]
    assert it.status == "ok", it.reason
    assert it.samples["Dirty at fault-in"][0] >= 4
    assert it.samples["Fault Alloc"][0] + it.samples["Fault Fallback"][0] > 0
    text = mmbench("compare", "--results", res, "seed001-tiny", check=True).stdout
    assert "aims at compaction" in text
    assert [c for c in mmbench_cgroups() if "seed001-tiny" in c] == []


@pytest.mark.parametrize("name", SEEDS)
def test_seed_suite_sets_thp_explicitly(name):
    # the kernel's default depends on the machine: below 512 MiB of RAM it turns THP off
    assert "thp.enabled" in load_suite(name).settings


def test_seed004_measures_the_allocator_itself():
    s = load_suite("seed004-pagealloc")
    assert "kernel.numa_balancing" in s.settings
    assert [w.plugin for w in s.workloads][0] == "allocfree"
    assert "kthreads" in {m.name for m in s.monitors}  # kswapd CPU per node
