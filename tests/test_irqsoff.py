"""IRQs-off offenders: analysis of the kernel's irqsoff trace format, and the monitor."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mmbench.monitors.trace.irqsoff_trace import analyze, parse
from mmbench.monitors.base import MonitorContext
from mmbench.monitors.irqsoff import UNAVAILABLE, Irqsoff
from mmbench.run.journal import Journal

DATA = Path(__file__).parent / "data" / "irqsoff"


def test_parse_real_format():
    traces = parse((DATA / "sample-compaction.txt").read_text())
    assert [(t.started, t.ended, t.latency_us, t.cpu) for t in traces] == [
        ("compaction_alloc", "compaction_alloc", 3014, 0),
        ("split_huge_page", "add_to_swap", 583, 1), ("split_huge_page", "add_to_swap", 583, 1)]
    assert traces[0].task == "kswapd0-45" and traces[0].time == 10.002
    assert traces[0].stack[2] == "compaction_alloc" and traces[0].stack[-1] == "page_fault"
    modern = parse((DATA / "sample-modern.txt").read_text())
    assert modern[0].stack == ["shrink_lruvec", "shrink_node", "balance_pgdat", "kswapd", "kthread",
                               "ret_from_fork", "ret_from_fork_asm"]


def test_analyze_seed_form():
    report = analyze(sorted(DATA.glob("*.txt")))
    lines = report.splitlines()
    assert lines[0] == "Total sampled time IRQs off (not real total time): 4291 us"
    assert lines[1:5] == ["Event compaction_alloc..compaction_alloc 3014 us count 1",
                          "Event split_huge_page..add_to_swap 583 us count 2",
                          "Event shrink_inactive_list..shrink_inactive_list 85 us count 1",
                          "Event drain_array..cache_reap 26 us count 1"]
    stack_at = report.index("\nEvent compaction_alloc..compaction_alloc 3014 us count 1\n")
    assert "=> isolate_freepages" not in report
    assert "     => compact_zone_order" in report[stack_at:]


def test_unavailable_on_this_kernel():
    tracers = Path("/sys/kernel/tracing/available_tracers")
    if tracers.exists() and "irqsoff" in tracers.read_text().split():
        pytest.skip("this kernel has the irqsoff tracer")
    assert Irqsoff().unavailable_reason() == UNAVAILABLE


def test_monitor_against_a_fake_tracefs(tmp_path, monkeypatch):
    """The sampling loop on files laid out like tracefs: tracer set, trace saved, max reset, put back."""
    root = tmp_path / "tracing"
    root.mkdir()
    (root / "available_tracers").write_text("irqsoff function nop\n")
    (root / "current_tracer").write_text("nop\n")
    (root / "tracing_max_latency").write_text("1234\n")
    (root / "trace").write_text((DATA / "sample-modern.txt").read_text().split("time: 2.001\n")[0]
                                .split("time: 1.000\n")[1])
    monkeypatch.setenv("MMBENCH_STATE_DIR", str(tmp_path / "state"))
    j = Journal()
    j.acquire()
    mon = Irqsoff()
    mon.root = root
    assert mon.unavailable_reason() is None
    ctx = MonitorContext(outdir=tmp_path / "out", interval=0.2, params={}, sandbox_paths={},
                         sandbox_pids=list, journal=j, log=lambda m: None)
    mon.start(ctx)
    assert (root / "current_tracer").read_text() == "irqsoff"
    time.sleep(0.5)
    meta = mon.stop()
    assert meta["errors"] == [] and meta["samples"] >= 2
    assert (root / "current_tracer").read_text() == "nop"
    assert (root / "tracing_max_latency").read_text() == "0"
    assert j.restore() == []
    assert (root / "tracing_max_latency").read_text() == "1234"
    j.release()
    rep = (ctx.outdir / "irqsoff-report.txt").read_text()
    assert "Event shrink_inactive_list..shrink_inactive_list 85 us count" in rep
    s = Irqsoff.summarise(ctx.outdir, meta)
    (d, v), = s.metrics
    assert d.kind == "latency" and set(v) == {85.0}
