"""Each sampling monitor on this kernel's real /proc files: start, ~1.5 s at 0.5 s, stop, check."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mmbench.plugins import monitors as registry
from mmbench.monitors._common import load_tsv
from memcg_helper import TestMemcg
from mmbench.cbuild import binary_for
from mmbench.monitors.base import MonitorContext
from mmbench.run.journal import Journal

SAMPLERS = ["proc-vmstat", "meminfo", "buddyinfo", "pagetypeinfo", "slabinfo", "psi", "kthreads", "memcg"]
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups, /proc/pagetypeinfo)")


@pytest.fixture
def journal(tmp_path, monkeypatch):
    monkeypatch.setenv("MMBENCH_STATE_DIR", str(tmp_path / "state"))
    j = Journal()
    j.acquire()
    try:
        yield j
    finally:
        assert j.restore() == []
        j.release()


@pytest.fixture
def memcg(journal):
    with TestMemcg("mon", 64 << 20, journal) as cg:
        yield cg


def _ctx(tmp_path: Path, name: str, journal, cg, interval=0.5, params=None) -> MonitorContext:
    return MonitorContext(
        outdir=tmp_path / "monitors" / name,
        interval=interval,
        params=params or {},
        sandbox_paths=cg.sandbox_paths(),
        sandbox_pids=cg.pids,
        journal=journal,
        log=lambda m: None,
        binary=binary_for,
    )


def test_registry_has_all():
    names = set(registry())
    for n in SAMPLERS + ["read-latency", "mm-trace", "irqsoff", "perf-stat"]:
        assert n in names


@root_only
@pytest.mark.parametrize("name", SAMPLERS)
def test_sampler(name, tmp_path, journal, memcg):
    cls = registry()[name]
    mon = cls()
    assert mon.unavailable_reason() is None
    worker = memcg.spawn(["python3", "-c", "import time\nb=bytearray(16<<20)\ntime.sleep(3)"])
    ctx = _ctx(tmp_path, name, journal, memcg)
    mon.start(ctx)
    time.sleep(1.5)
    meta = mon.stop()
    worker.kill()
    assert meta["errors"] == []
    cols, arr = load_tsv(ctx.outdir / f"{name}.tsv")
    assert cols and len(arr) >= 3, (cols, arr)
    assert meta["samples"] == len(arr)
    summary = cls.summarise(ctx.outdir, meta)
    assert summary.metrics, summary
    for mdef, values in summary.metrics:
        assert mdef.name and mdef.better in ("higher", "lower")
        assert all(v == v for v in values)  # no NaN


@root_only
def test_vmstat_derived(tmp_path, journal, memcg):
    from mmbench.monitors.proc_vmstat import ProcVmstat

    mon = ProcVmstat()
    ctx = _ctx(tmp_path, "proc-vmstat", journal, memcg)
    mon.start(ctx)
    time.sleep(1.2)
    meta = mon.stop()
    summary = dict((m.name, v) for m, v in ProcVmstat.summarise(ctx.outdir, meta).metrics)
    assert {
        "Direct scan (pages/s)",
        "Kswapd scan (pages/s)",
        "Memcg limit scan (pages/s)",
        "Reclaim efficiency",
        "Free memory (MiB)",
        "Page faults (/s)",
        "THP fault alloc (/s)",
    } <= set(summary)
    assert all(v > 0 for v in summary["Free memory (MiB)"])
    assert len(summary["Page faults (/s)"]) == meta["samples"] - 1  # one rate per interval


@root_only
def test_memcg_sees_usage_and_psi_sees_cgroup(tmp_path, journal, memcg):
    from mmbench.monitors.memcg import Memcg
    from mmbench.monitors.psi import Psi

    w = memcg.spawn(["python3", "-c", "import time\nb=bytearray(32<<20)\ntime.sleep(3)"])
    time.sleep(0.5)
    m, p = Memcg(), Psi()
    cm, cp = _ctx(tmp_path, "memcg", journal, memcg), _ctx(tmp_path, "psi", journal, memcg)
    m.start(cm)
    p.start(cp)
    time.sleep(1.0)
    m.stop()  # what it returns is not checked here: the memcg side is read from its tsv below
    pm = p.stop()
    w.kill()
    cols, arr = load_tsv(cm.outdir / "memcg.tsv")
    assert arr[:, cols.index("usage") + 1].max() > 30 << 20
    cols, _ = load_tsv(cp.outdir / "psi.tsv")
    assert "cg.memory.some.total" in cols and "sys.memory.full.avg10" in cols
    assert any(d.name == "PSI sandbox memory some stall %" for d, _ in Psi.summarise(cp.outdir, pm).metrics)


@root_only
def test_read_latency(tmp_path, journal, memcg):
    cls = registry()["read-latency"]
    mon = cls()
    assert mon.unavailable_reason() is None
    ctx = _ctx(
        tmp_path,
        "read-latency",
        journal,
        memcg,
        interval=0.3,
        params={"file_size": 16 << 20, "read_size": 1 << 20, "workdir": str(tmp_path)},
    )
    mon.start(ctx)
    time.sleep(1.5)
    meta = mon.stop()
    assert meta["errors"] == [] and meta["samples"] >= 3
    assert not any(p.name.startswith("mmbench-read-latency-") for p in tmp_path.iterdir())
    s = cls.summarise(ctx.outdir, meta)
    ((mdef, vals),) = s.metrics
    assert mdef.kind == "latency" and len(vals) >= 3 and all(v > 0 for v in vals)


@root_only
def test_perf_stat_counts_the_sandbox(tmp_path, journal, memcg):
    import shutil

    if not shutil.which("perf"):
        pytest.skip("no perf")
    cls = registry()["perf-stat"]
    mon = cls()
    ctx = _ctx(tmp_path, "perf-stat", journal, memcg)
    was_mounted = open("/proc/mounts").read().count(" tracefs ")
    mon.start(ctx)
    time.sleep(0.5)
    w = memcg.spawn(
        [
            "python3",
            "-c",
            "import mmap\nfor _ in range(8):\n m=mmap.mmap(-1,16<<20)\n"
            " for i in range(0,16<<20,4096): m[i]=1\n m.close()",
        ]
    )
    w.wait()
    time.sleep(0.7)
    meta = mon.stop()
    assert meta["errors"] == [], meta
    assert meta["cgroup"] == memcg.sandbox_paths()["unified"].name
    s = cls.summarise(ctx.outdir, meta)
    totals = {d.name: v[0] for d, v in s.metrics if d.name.endswith(" total")}
    assert totals["page-faults total"] > 8 * 4096 * 0.9
    assert open("/proc/mounts").read().count(" tracefs ") == was_mounted
