"""irqsoff-sections: the kernel's hist text of every IRQs-off section, attributed to mm code, and the
monitor's tracefs commands (set in order, taken off in reverse, journaled for a killed run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbench.monitors.base import MonitorContext
from mmbench.monitors.irqsoff_sections import IrqsoffSections
from mmbench.monitors.trace import irqsoff_sections as sections
from mmbench.run.journal import Journal

DATA = Path(__file__).resolve().parent / "data" / "irqsoff-sections"


def test_attribution_skips_lock_helpers_and_names_interrupts():
    assert sections.who("_raw_spin_lock_irqsave", "compaction_alloc") == "compaction_alloc"
    assert sections.who("shrink_inactive_list", "shrink_lruvec") == "shrink_inactive_list"
    assert sections.who("irqentry_enter", "common_interrupt") == sections.UNATTRIBUTED
    assert sections.who("_raw_spin_lock_irq", "0xfe000000") == sections.UNATTRIBUTED
    assert sections.mm_class("compaction_alloc") == "compaction"
    assert sections.mm_class("free_pcppages_bulk") == "page-alloc"
    assert sections.mm_class("__remove_mapping") == "reclaim-lru"
    assert sections.mm_class("do_idle") == "other"


def test_s32_keys_printed_through_u64():
    text = (
        "# trigger info: hist:keys=caller,parent,lat.log2:vals=hitcount,lat:sort=caller,parent:size=16384 [active]\n"
        "{ caller:    4294967196, parent:        300, lat: ~ 2^3  } hitcount:          2  lat:         13\n"
    )
    h = sections.parse_hist(text)
    ((site, st),) = h.sites.items()
    assert site == (-100, 300) and st.count == 2 and st.total_us == 13 and st.buckets == {3: 2}
    assert not h.exact_max


def _fake_tracefs(tmp_path: Path) -> Path:
    root = tmp_path / "tracing"
    for d in ("events/preemptirq/irq_disable", "events/preemptirq/irq_enable", "instances"):
        (root / d).mkdir(parents=True)
    (root / "synthetic_events").write_text("")
    return root


def test_monitor_commands_in_order_and_undone(tmp_path, monkeypatch):
    """On files laid out like tracefs: the synthetic event and four triggers are written in order
    and their '!' forms in reverse at stop; a killed run's journal writes the same '!' forms."""
    root = _fake_tracefs(tmp_path)
    monkeypatch.setenv("MMBENCH_STATE_DIR", str(tmp_path / "state"))
    j = Journal()
    j.acquire()
    mon = IrqsoffSections()
    mon.root = root
    assert mon.unavailable_reason() is None
    ctx = MonitorContext(
        outdir=tmp_path / "out",
        interval=1.0,
        params={},
        sandbox_paths={},
        sandbox_pids=list,
        journal=j,
        log=lambda m: None,
    )

    def make_instance(inst: Path) -> None:  # what the kernel does on mkdir of an instance
        for d in ("events/preemptirq/irq_disable", "events/preemptirq/irq_enable", f"events/synthetic/{mon._event}"):
            (inst / d).mkdir(parents=True)
            (inst / d / "trigger").write_text("")

    mon._make_instance = make_instance
    mon.start(ctx)
    inst = mon._inst
    synth = (root / "synthetic_events").read_text()
    assert synth.startswith(f"{mon._event} u64 lat; s32 caller; s32 parent")
    dis = (inst / "events/preemptirq/irq_disable/trigger").read_text()
    en = (inst / "events/preemptirq/irq_enable/trigger").read_text()
    assert "ts0=common_timestamp.usecs" in dis and f"trace({mon._event},$lat,$dc,$dp)" in en
    # the kernel would have filled the synthetic event's hist: give it the real one
    (inst / "events/synthetic" / mon._event / "hist").write_text((DATA / "hist.txt").read_text())
    meta = mon.stop()
    assert (ctx.outdir / "hist.txt").exists() and (ctx.outdir / "symbols.tsv").exists()
    en_after = (inst / "events/preemptirq/irq_enable/trigger").read_text().splitlines()
    assert en_after[-1].startswith("!hist:keys=common_cpu:lat=")
    assert (root / "synthetic_events").read_text().splitlines()[-1] == f"!{mon._event}"
    kinds = [e["kind"] for e in j.entries]
    assert kinds.count("tracefs-line") == 5 and kinds.index("remove") < kinds.index("tracefs-line")
    j.release()
    del meta


def test_journal_undoes_a_listed_trigger_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MMBENCH_STATE_DIR", str(tmp_path / "state"))
    trig = tmp_path / "trigger"
    trig.write_text("hist:keys=common_cpu:vals=hitcount:ts0=common_timestamp.usecs [active]\n")
    j = Journal()
    j.acquire()
    j.record("tracefs-line", path=str(trig), undo="!hist:keys=common_cpu:ts0=common_timestamp.usecs", present="ts0=")
    assert j.restore() == []
    assert trig.read_text().splitlines()[-1] == "!hist:keys=common_cpu:ts0=common_timestamp.usecs"
    j.release()
    gone = tmp_path / "gone" / "trigger"
    j2 = Journal()
    j2.acquire()
    j2.record("tracefs-line", path=str(gone), undo="!x", present="x")
    assert j2.restore() == []  # the instance went with the run: nothing to undo
    j2.release()


@pytest.mark.skipif(not (DATA / "hist.txt").exists(), reason="no guest capture yet")
def test_real_guest_hist_is_read_and_attributed():
    """hist.txt and symbols.tsv as the monitor saved them in a 6.1.192 guest (NOTE in DATA)."""
    hist, symbols = sections.load(DATA)
    assert hist.sites and hist.exact_max and hist.dropped == 0
    offs = sections.offenders(hist, symbols)
    assert all(not o.who.startswith("_raw_spin") for o in offs)
    classes = {o.mm_class for o in offs}
    assert "compaction" in classes and "interrupts" in classes
    s = IrqsoffSections.summarise(DATA, {})
    names = {d.name for d, _ in s.metrics}
    assert {"IRQs-off sections", "IRQs-off time (ms)", "IRQs-off longest compaction section (us)"} <= names


def test_report_lists_each_mm_class_leaders():
    """Under TCG the whole-machine top 25 are interrupt and scheduler sections; each mm class's own
    leaders are listed after them (the real capture: compaction_alloc holds zone->lock)."""
    hist, symbols = sections.load(DATA)
    rep = sections.report(sections.offenders(hist, symbols), hist)
    tail = rep.split("Top functions of each class of mm code:\n")[1].splitlines()
    comp = [l for l in tail if " compaction " in l]
    assert 1 <= len(comp) <= 3 and any("compaction_alloc (_raw_spin_lock_irqsave<-compaction_alloc)" in l for l in comp)
    longest = [int(l.split()[0]) for l in comp]
    assert longest == sorted(longest, reverse=True)


def test_analyze_refuses_what_is_not_a_monitor_folder(tmp_path):
    from mmbench.errors import UsageError

    with pytest.raises(UsageError, match="not a folder"):
        sections.analyze_dirs([tmp_path / "missing"])
    with pytest.raises(UsageError, match="no hist.txt and symbols.tsv"):
        sections.analyze_dirs([tmp_path])
    out = sections.analyze_dirs([DATA, DATA])  # two iterations merged: counts add up
    one = sections.analyze_dirs([DATA])
    n1 = int(one.splitlines()[1].split()[2].rstrip(","))
    assert int(out.splitlines()[1].split()[2].rstrip(",")) == 2 * n1


def test_long_sections_are_counted_from_log2_buckets():
    """Bucket b holds (2^(b-1), 2^b] us: a 32 us section is in bucket 5 and is not over 32 us."""
    assert sections.sections_over({5: 3, 6: 2, 9: 1}) == 3
    assert sections.sections_over({5: 3, 6: 2, 9: 1}, 64) == 1
    assert sections.sections_over({}) == 0
    assert sections.mm_path("compaction_alloc") == "free scanner"
    assert sections.mm_path("isolate_migratepages_block") == "migrate scanner"
    assert sections.mm_path("compact_zone") is None and sections.mm_path("rmqueue_bulk") is None


def test_free_scanner_rows_match_the_raw_hist():
    """The real capture's free scanner (compaction_alloc, into which 6.1 inlines the scan, and
    isolate_freepages_block): its long-section row equals the sections over 32 us of the hist
    entries whose disabling site lies in those two, counted here straight from the kernel's text."""
    import re

    starts = sorted(
        (int(off), name)
        for off, name in (l.split("\t") for l in (DATA / "symbols.tsv").read_text().splitlines() if "\t" in l)
    )
    # this build keeps isolate_freepages_block() out of line (CMA calls it too)
    spans = [
        (off, min(o for o, _ in starts if o > off))
        for off, name in starts
        if name in ("compaction_alloc", "isolate_freepages_block")
    ]
    assert len(spans) == 2
    n_long = 0
    for caller, parent, b, hits in re.findall(
        r"\{ caller:\s*(\d+), parent:\s*(\d+), lat: ~ 2\^(\d+)\s*\} hitcount:\s*(\d+)", (DATA / "hist.txt").read_text()
    ):
        # the scanner disabled IRQs, or called the lock helper that did
        if any(lo <= int(x) < hi for x in (caller, parent) for lo, hi in spans):
            n_long += int(hits) if int(b) > 5 else 0
    rows = {d.name: v[0] for d, v in IrqsoffSections.summarise(DATA, {}).metrics}
    assert n_long > 0
    assert rows["IRQs-off free scanner sections over 32 us"] == n_long
    assert (
        rows["IRQs-off free scanner sections over 32 us"] + rows["IRQs-off migrate scanner sections over 32 us"]
        <= rows["IRQs-off compaction sections over 32 us"]
    )
