"""IRQs-off offenders: analysis of the kernel's irqsoff trace format, and the monitor."""

from __future__ import annotations

import fnmatch
import shutil
import time
from pathlib import Path

import pytest

from mmbench.monitors.trace.irqsoff_trace import (
    Attribution,
    analyze,
    attribute,
    is_helper,
    is_irq_entry,
    offenders,
    parse,
)
from mmbench.model.results import MetricDef
from mmbench.monitors.base import MonitorContext
from mmbench.monitors.irqsoff import UNAVAILABLE, Irqsoff
from mmbench.run.journal import Journal

DATA = Path(__file__).parent / "data" / "irqsoff"


def test_parse_real_format():
    traces = parse((DATA / "sample-compaction.txt").read_text())
    assert [(t.started, t.ended, t.latency_us, t.cpu) for t in traces] == [
        ("compaction_alloc", "compaction_alloc", 3014, 0),
        ("split_huge_page", "add_to_swap", 583, 1),
        ("split_huge_page", "add_to_swap", 583, 1),
    ]
    assert traces[0].task == "kswapd0-45" and traces[0].time == 10.002
    assert traces[0].stack[2] == "compaction_alloc" and traces[0].stack[-1] == "page_fault"
    modern = parse((DATA / "sample-modern.txt").read_text())
    assert modern[0].stack == [
        "shrink_lruvec",
        "shrink_node",
        "balance_pgdat",
        "kswapd",
        "kthread",
        "ret_from_fork",
        "ret_from_fork_asm",
    ]


def test_analyze_seed_form():
    report = analyze([DATA / "sample-compaction.txt", DATA / "sample-modern.txt"])
    lines = report.splitlines()
    assert lines[0] == "Total sampled time IRQs off (not real total time): 4291 us"
    assert lines[1:5] == [
        "Event compaction_alloc (compaction_alloc..compaction_alloc) 3014 us count 1",
        "Event add_to_swap (split_huge_page..add_to_swap) 583 us count 2",
        "Event shrink_inactive_list (shrink_inactive_list..shrink_inactive_list) 85 us count 1",
        "Event cache_reap (drain_array..cache_reap) 26 us count 1",
    ]
    stack_at = report.index("\nEvent compaction_alloc (compaction_alloc..compaction_alloc) 3014 us count 1\n")
    assert "=> isolate_freepages" not in report
    assert "     => compact_zone_order" in report[stack_at:]


# -- attribution: the code that held IRQs off, not the spinlock helper ------------------------------


def _sections(path: Path) -> list[str]:
    """The dumps of a monitor file, each with its ``time:`` line."""
    return ["time:" + part for part in path.read_text().split("time:")[1:]]


def _blk_section() -> str:
    """The real 6.1.192 guest section ``_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore``."""
    (sec,) = [s for s in _sections(DATA / "sample-6.1-guest.txt") if "latency: 2634 us" in s]
    return sec


def test_real_61_guest_sections_are_attributed():
    traces = parse((DATA / "sample-6.1-guest.txt").read_text())
    got = {t.latency_us: attribute(t) for t in traces}
    assert [t.sites for t in traces][0] == "_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore"
    assert (got[2634].caller, got[2634].source) == ("blk_mq_dispatch_rq_list", "stack")
    assert (got[2997].caller, got[2997].source) == ("charge_memcg", "end site")  # not the stack's __filemap_add_folio
    # interrupt entry held IRQs off: the stack below it is the interrupted code (kswapd's
    # shrink_folio_list, the idle loop), which had IRQs on, so no name is given
    for lat in (16699, 13349, 2660):
        assert got[lat].caller is None and "interrupt entry/exit" in got[lat].source
    kswapd = next(t for t in traces if t.latency_us == 2660)
    assert kswapd.stack[0] == "shrink_folio_list" and kswapd.ended == "asm_sysvec_apic_timer_interrupt"
    report = analyze([DATA / "sample-6.1-guest.txt"])
    assert "Event unattributed (irqentry_enter..irqentry_exit) 16699 us count 1" in report.splitlines()
    assert (
        "Event blk_mq_dispatch_rq_list (_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore) 2634 us count 1"
        in report.splitlines()
    )
    assert "shrink_folio_list (" not in report


def test_compaction_free_scanner_is_attributed_to_isolate_freepages_block(tmp_path):
    """The seed-003 section as a 6.1 guest records it: helper sites, the holder in the stack."""
    head = _blk_section().partition("\n => ")[0] + "\n"
    head = head.replace("__raw_spin_unlock_irqrestore", "_raw_spin_unlock_irqrestore")
    stack = [
        "_raw_spin_unlock_irqrestore",
        "isolate_freepages_block",
        "isolate_freepages",
        "compaction_alloc",
        "migrate_pages",
        "compact_zone",
        "compact_zone_order",
        "try_to_compact_pages",
        "__alloc_pages_direct_compact",
        "__alloc_pages",
        "__folio_alloc",
        "vma_alloc_folio",
        "do_huge_pmd_anonymous_page",
        "handle_mm_fault",
    ]
    text = "".join(
        head.replace("2634 us", f"{lat} us") + "".join(f" => {f}\n" for f in stack) for lat in (6780, 5120, 4001)
    )
    (tmp_path / "irqsoff.txt").write_text(text + _blk_section())
    t = parse(text)[0]
    assert t.sites == "_raw_spin_lock_irqsave.._raw_spin_unlock_irqrestore"
    assert attribute(t) == Attribution("isolate_freepages_block", "stack")
    offs = offenders([tmp_path / "irqsoff.txt"])
    assert [(o.caller, o.sites, o.worst_us, o.count) for o in offs] == [
        ("isolate_freepages_block", "_raw_spin_lock_irqsave.._raw_spin_unlock_irqrestore", 6780, 3),
        ("blk_mq_dispatch_rq_list", "_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore", 2634, 1),
    ]
    report = analyze([tmp_path / "irqsoff.txt"]).splitlines()
    assert report[1] == (
        "Event isolate_freepages_block (_raw_spin_lock_irqsave.._raw_spin_unlock_irqrestore) 6780 us count 3"
    )
    assert "  caller: isolate_freepages_block (stack)" in report and "     => compaction_alloc" in report


def test_irq_entry_only_stack_is_unattributed():
    """Lock sites, but the stack is interrupt exit then the interrupted code: never that code's name."""
    head = _blk_section().partition("\n => ")[0] + "\n"
    irq = [
        "irq_exit_rcu",
        "sysvec_apic_timer_interrupt",
        "asm_sysvec_apic_timer_interrupt",
        "isolate_freepages_block",
        "compaction_alloc",
    ]
    t = parse(head + "".join(f" => {f}\n" for f in irq))[0]
    a = attribute(t)
    assert a.caller is None and "interrupt entry/exit" in a.source
    only_locks = parse(head + " => _raw_spin_unlock_irqrestore\n")[0]
    assert attribute(only_locks).caller is None
    no_stack = parse(head)[0]
    assert no_stack.stack == [] and attribute(no_stack) == Attribution(
        None, "only locking code at the sites and no stack trace"
    )
    assert analyze_text(head).splitlines()[1] == (
        "Event unattributed (_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore) 2634 us count 1"
    )


def analyze_text(text: str) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "t.txt").write_text(text)
        return analyze([Path(d) / "t.txt"])


def test_function_trace_caller_when_the_stack_is_missing():
    """No stack: the ``<-caller`` of the opening ``_raw_spin_lock_irq`` line names the holder."""
    sec = (DATA / "sample-modern.txt").read_text().split("time: 2.001")[0]
    sec = sec.replace("started at: shrink_inactive_list", "started at: _raw_spin_lock_irq")
    sec = sec.replace("ended at:   shrink_inactive_list", "ended at:   _raw_spin_unlock_irq")
    sec = sec.replace("tracer_hardirqs_on <-shrink_inactive_list", "tracer_hardirqs_on <-_raw_spin_unlock_irq")
    sec = sec.split("<stack trace>")[0].rsplit("\n", 1)[0] + "\n"
    t = parse(sec)[0]
    assert t.stack == [] and t.entries[0] == ("_raw_spin_lock_irq", "shrink_inactive_list")
    assert attribute(t) == Attribution("shrink_inactive_list", "function trace")


def test_skip_lists_are_patterns():
    for name in (
        "_raw_spin_lock_irqsave",
        "__raw_spin_unlock_irqrestore",
        "_raw_read_lock_irqsave",
        "_raw_write_unlock_irq",
        "folio_lruvec_lock_irqsave",
        "trace_hardirqs_on",
        "tracer_hardirqs_on",
        "check_critical_timing",
        "__trace_stack",
        "_raw_spin_unlock_irqrestore+0x1a/0x40",
    ):
        assert is_helper(name), name
    for name in (
        "isolate_freepages_block",
        "compaction_alloc",
        "shrink_inactive_list",
        "charge_memcg",
        "irqentry_exit",
        "finish_task_switch.isra.0",
    ):
        assert not is_helper(name), name
    for name in (
        "irq_exit_rcu",
        "__irq_exit_rcu",
        "asm_sysvec_apic_timer_interrupt",
        "sysvec_apic_timer_interrupt",
        "asm_common_interrupt",
        "common_interrupt",
        "handle_softirqs",
        "__do_softirq",
        "do_softirq",
        "local_bh_enable",
        "irqentry_enter",
        "ret_from_fork_asm",
    ):
        assert is_irq_entry(name), name
    assert not is_irq_entry("isolate_freepages_block") and not is_irq_entry("native_safe_halt")


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
    (root / "trace").write_text(
        (DATA / "sample-modern.txt").read_text().split("time: 2.001\n")[0].split("time: 1.000\n")[1]
    )
    monkeypatch.setenv("MMBENCH_STATE_DIR", str(tmp_path / "state"))
    j = Journal()
    j.acquire()
    mon = Irqsoff()
    mon.root = root
    assert mon.unavailable_reason() is None
    ctx = MonitorContext(
        outdir=tmp_path / "out",
        interval=0.2,
        params={},
        sandbox_paths={},
        sandbox_pids=list,
        journal=j,
        log=lambda m: None,
    )
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
    assert "Event shrink_inactive_list (shrink_inactive_list..shrink_inactive_list) 85 us count" in rep
    s = Irqsoff.summarise(ctx.outdir, meta)
    ((d, v),) = s.metrics
    assert d.kind == "latency" and set(v) == {85.0}


def test_report_shows_the_caller_column(tmp_path):
    """HTML report: a Caller column before the tracer's raw sites, unattributed sections named so."""
    from mmbench.model.results import IterationResult, RunRecord, WorkloadRun
    from mmbench.report import figures
    from mmbench.report.html import render_report

    mon = tmp_path / "w" / "iter-0" / "monitors" / "irqsoff"
    mon.mkdir(parents=True)
    shutil.copy(DATA / "sample-6.1-guest.txt", mon / "irqsoff.txt")
    it = IterationResult(
        workload="w",
        index=0,
        warmup=False,
        status="ok",
        samples={"t": [1.0]},
        monitors={"irqsoff": {"dir": "w/iter-0/monitors/irqsoff"}},
    )
    run = RunRecord(
        name="guest61",
        status="complete",
        created=0.0,
        finished=1.0,
        suite_text="",
        suite_hash="",
        fingerprint={},
        settings={},
        path=tmp_path,
        workloads=[
            WorkloadRun(label="w", plugin="w", params={}, metrics=[MetricDef("t", "s", "lower")], iterations=[it])
        ],
    )
    (table,) = figures.irqsoff_tables([run], ["guest61"])
    assert [(o.name, o.worst_us) for o in table["rows"]][:2] == [("unattributed", 16699), ("unattributed", 13349)]
    html = render_report([run])
    section = html[html.index('<section id="irqsoff">') :]
    section = section[: section.index("</section>")]
    assert "<th>caller</th><th>tracer sites (started..ended)</th>" in section
    assert (
        "<td><code>blk_mq_dispatch_rq_list</code></td><td><code>_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore"
        '</code></td><td class="num">2634</td><td class="num">1</td>'
    ) in section
    assert section.count(">unattributed</span>") == 3 and "shrink_folio_list" not in section


def test_summary_metric_and_note_name_the_caller(tmp_path):
    """compare's IRQs-off row (the worst section per interval) is unchanged; the note names the caller."""
    shutil.copy(DATA / "sample-6.1-guest.txt", tmp_path / "irqsoff.txt")
    s = Irqsoff.summarise(tmp_path, {})
    ((d, v),) = s.metrics
    assert d.name == "IRQs-off worst section (us)" and sorted(v) == [2634.0, 2660.0, 2997.0, 13349.0, 16699.0]
    assert s.notes == ["worst: unattributed (irqentry_enter..irqentry_exit) 16699 us"]
    assert any(fnmatch.fnmatchcase(d.name, p) for p in Irqsoff.row_patterns)
