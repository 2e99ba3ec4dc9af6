"""The C ring-buffer decoder against the pure-Python reference, on real captures from our kernels
(tests/data/trace/: the host's 6.18, a Debian 6.1 guest) and on synthesised pages for the record
kinds no real capture holds; mm-trace's host-side decoding of a VM guest's capture."""

from __future__ import annotations

import filecmp
import json
import re
import shutil
import struct
from pathlib import Path

import pytest

from mmbench.monitors.mm_trace import MmTrace
from mmbench.monitors.trace import decode as D
from mmbench.monitors.trace import stalls as sa
from mmbench.monitors.trace.ringbuffer import decode_files
from mmbench.cbuild import binary_for

DATA = Path(__file__).parent / "data" / "trace"
CAPTURES = sorted(p.name for p in DATA.iterdir() if (p / "capture.json").exists())


@pytest.fixture(scope="module")
def prog() -> str:
    return binary_for(D.SOURCE)


def _both(cap: D.Capture, prog: str, tmp: Path) -> tuple[dict, dict]:
    c = D.run_c(cap, prog, tmp / "c.tsv")
    c.pop("kept")
    assert c.pop("peak_rss_kb") > 0 and set(c.pop("phases_s")) == {"walk", "pair", "write"}
    table = c.pop("table")
    cols = sa.read_stall_columns(tmp / "c.tsv")
    assert sa.report(table) == sa.report(cols)
    ref = D.run_reference(cap, tmp / "py.tsv")
    ref["windows"] = [list(w) for w in ref["windows"]]
    c["windows"] = [list(w) for w in c["windows"]]
    return c, ref


def test_real_captures_cover_the_kernels_and_record_kinds():
    """The committed captures hold what the decoders must agree on: both kernels, padding,
    time extends and lost-event pages (absolute time stamps: none in any real capture, see below)."""
    kinds: dict[str, int] = {}
    releases = set()
    for name in CAPTURES:
        cap = D.Capture(DATA / name)
        releases.add(cap.meta.get("kernel_release", name.split("-")[1]))
        st = D.run_reference(cap, None)
        for cs in st["cpus"].values():
            for k in ("padding", "time_extend", "lost_pages", "abs_timestamp", "big_records"):
                kinds[k] = kinds.get(k, 0) + cs[k]
    assert any(r.startswith("6.18") for r in releases) and any(r.startswith("6.1.") for r in releases), releases
    assert kinds["padding"] and kinds["time_extend"] and kinds["lost_pages"], kinds


@pytest.mark.parametrize("name", CAPTURES)
def test_c_records_identical_to_reference(name, prog, tmp_path):
    cap = D.Capture(DATA / name)
    ref = decode_files(cap.files, cap.formats, page_size=cap.layout.page_size, layout=cap.layout)
    got = D.c_records(cap, prog, tmp_path)
    assert set(got) == set(ref.events)
    total = 0
    for ev, rows in ref.events.items():
        assert got[ev] == rows, ev
        total += len(rows)
    assert total > 500


@pytest.mark.parametrize("name", CAPTURES)
def test_c_stalls_and_counts_identical_to_reference(name, prog, tmp_path):
    cap = D.Capture(DATA / name)
    c, ref = _both(cap, prog, tmp_path)
    assert c == ref
    assert filecmp.cmp(tmp_path / "c.tsv", tmp_path / "py.tsv", shallow=False)
    assert c["stalls"] > 0


# (wake requests, high-order requests, high-order kswapd wakes) per real capture: the one
# high-order request is a GFP_NOWAIT slab attempt (gfp 0x52810: COMP|NORETRY|NOWARN|KSWAPD_RECLAIM)
KSWAPD_WAKES = {
    "guest-6.1-overrun": (51, 1, 0),
    "guest-6.1-seed001": (26, 0, 0),
    "guest-6.12-seed001": (12, 0, 0),
    "host-6.18-overrun": (0, 0, 0),
    "host-6.18-thrash": (0, 0, 0),
}


@pytest.mark.parametrize("name", CAPTURES)
def test_kswapd_wake_counts_from_the_records(name, prog, tmp_path):
    """The kswapd wake-up rows' counts, by the C decoder and by the reference, against the decoded
    records themselves: every mm_vmscan_wakeup_kswapd, and the wakeup_kswapd and kswapd_wake
    records whose ``order`` field is above 0."""
    cap = D.Capture(DATA / name)
    dec = decode_files(cap.files, cap.formats, page_size=cap.layout.page_size, layout=cap.layout)

    def high(ev: str) -> int:
        i = dec.columns[ev].index("order") + 3
        return sum(r[i] > 0 for r in dec.events[ev])

    want = {
        "requests": len(dec.events[sa.WAKEUP_KSWAPD]),
        "requests_high_order": high(sa.WAKEUP_KSWAPD),
        "requests_speculative": 0,
        "wakes_high_order": high(sa.KSWAPD_WAKE),
    }
    c, ref = _both(cap, prog, tmp_path)
    assert sa.kswapd_wakes(c["events"], c["high_order"], c["speculative"]) == (want, [])
    assert sa.kswapd_wakes(ref["events"], ref["high_order"], ref["speculative"]) == (want, [])
    assert (want["requests"], want["requests_high_order"], want["wakes_high_order"]) == KSWAPD_WAKES[name]
    # no speculative attempt in any: the one high-order request (guest-6.1-overrun) has no
    # __GFP_NOMEMALLOC; a kernel's masks come from its own print fmt (6.1: hex, 6.18: shifts)
    assert D.speculative_masks(cap) == {sa.WAKEUP_KSWAPD: (0x10000 | 0x80000 | 0x40, 0x400)}


def test_overrun_capture_flags_stalls_in_the_loss(prog, tmp_path):
    cap = D.Capture(DATA / "host-6.18-overrun")
    c, _ = _both(cap, prog, tmp_path)
    lost = {cpu: s["lost_events"] for cpu, s in c["cpus"].items() if s["lost_pages"]}
    assert lost and all(n > 0 for n in lost.values())
    # the kernel's own per-CPU overrun count is what the pages say was lost
    rb = cap.meta["ring_buffer_per_cpu"]
    assert sum(lost.values()) <= sum(v.get("overrun", 0) for v in rb.values())
    cols = sa.read_stall_columns(tmp_path / "c.tsv")
    flagged = cols["lost"] == 1
    assert flagged.any() and c["lost_stalls"] == int(flagged.sum())
    windows = sa.merge_windows(map(tuple, c["windows"]))
    for s, d, lo in zip(cols["start_ns"], cols["dur_ns"], cols["lost"]):
        inside = any(w_lo < s + d and w_hi > s for w_lo, w_hi in windows)
        assert bool(lo) == inside


# -- synthesised pages: the record kinds real captures lack ---------------------------------

FMT = """name: mm_vmscan_direct_reclaim_{which}
ID: {id}
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long nr_reclaimed;\toffset:8;\tsize:8;\tsigned:0;
"""


def _rec(delta: int, payload: bytes, big: bool = False) -> bytes:
    if big or len(payload) > 112:
        return struct.pack("<II", delta << 5, len(payload) + 4) + payload
    return struct.pack("<I", (delta << 5) | (len(payload) // 4)) + payload


def _page(records: list[bytes], ts: int, flags: int = 0, lost: int | None = None, size: int = 4096) -> bytes:
    body = b"".join(records)
    commit = len(body) | flags
    page = struct.pack("<QQ", ts, commit) + body
    if lost is not None:
        page += struct.pack("<Q", lost)
    assert len(page) <= size
    return page + b"\0" * (size - len(page))


def _synth_capture(d: Path, pages: dict[int, bytes], formats: dict[str, str] | None = None) -> D.Capture:
    """A capture of ``pages`` per CPU; ``formats``: full event name → format text (default: direct
    reclaim begin (ID 700) and end (ID 701))."""
    if formats is None:
        formats = {
            f"vmscan:mm_vmscan_direct_reclaim_{which}": FMT.format(which=which, id=i)
            for which, i in (("begin", 700), ("end", 701))
        }
    (d / "formats").mkdir(parents=True)
    for full, text in formats.items():
        (d / "formats" / full).write_text(text)
    for cpu, data in pages.items():
        (d / f"cpu{cpu}.raw").write_bytes(data)
    (d / "capture.json").write_text(
        json.dumps({"page_size": 4096, "cpus": sorted(pages), "bytes": 0, "events": list(formats)})
    )
    (d / "tasks.json").write_text(
        json.dumps({"comms": {"50": "usemem", "51": "kswapd0"}, "workload_pids": [50], "pageblock_order": 9})
    )
    return D.Capture(d)


def _ev(eid: int, pid: int, val: int) -> bytes:
    return struct.pack("<HBBiQ", eid, 0, 0, pid, val)


def test_synthesised_absolute_timestamps_big_records_and_losses(prog, tmp_path):
    """Absolute time stamps (type 31) appear only when an event interrupts another's time-stamp
    update: no real capture of ours holds one, so this page is synthesised (as are a data record
    with type_len 0 and a lossy page with no room to store the count)."""
    abs_ts = struct.pack("<II", ((5_000_000 & ((1 << 27) - 1)) << 5) | 31, 5_000_000 >> 27)
    pad = struct.pack("<II", (1 << 5) | 29, 12) + b"\0" * 8
    cpu0 = (
        _page(
            [_rec(10, _ev(700, 50, 0)), abs_ts, _rec(7, _ev(701, 50, 33), big=True), pad, _rec(3, _ev(700, 51, 0))],
            ts=1_000,
        )
        + _page([_rec(2, _ev(701, 51, 4))], ts=9_000_000, flags=1 << 31 | 1 << 30, lost=17)
        # a full page (204 records of 20 bytes): no room to store how many were lost
        + _page([_rec(1, _ev(700, 50, 0))] + [_rec(1, _ev(701, 50, 1))] * 203, ts=20_000_000, flags=1 << 31)
    )
    cap = _synth_capture(tmp_path / "cap", {0: cpu0})
    c, ref = _both(cap, prog, tmp_path)
    assert c == ref
    assert filecmp.cmp(tmp_path / "c.tsv", tmp_path / "py.tsv", shallow=False)
    cs = c["cpus"][0]
    assert (cs["abs_timestamp"], cs["big_records"], cs["padding"]) == (1, 1, 1)
    assert (cs["lost_pages"], cs["lost_events"], cs["lost_unstored"]) == (2, 17, 1)
    rows = D.c_records(cap, prog, tmp_path)
    assert rows["mm_vmscan_direct_reclaim_end"][0] == (5_000_007, 0, 50, 33)  # after the absolute stamp
    st = sa.read_stalls(tmp_path / "c.tsv")
    first = st[0]
    assert (first.who, first.start_ns, first.dur_ns, first.reclaimed, first.lost) == (
        "workload",
        1_010,
        4_998_997,
        33,
        0,
    )
    # kswapd0's begin before the loss, its end after it: paired, and flagged
    ks = [s for s in st if s.pid == 51]
    assert len(ks) == 1 and ks[0].who == "kswapd" and ks[0].lost == 1
    assert c["unpaired"] == {"begins": 0, "ends": 202}


def test_unsorted_cpu_and_equal_timestamps_match_the_reference(prog, tmp_path):
    """Ties in time and a CPU whose stamps go backwards keep the reference's order."""
    cpu0 = _page([_rec(5, _ev(701, 50, 1)), _rec(0, _ev(700, 50, 0)), _rec(0, _ev(701, 50, 2))], ts=100)
    cpu1 = (
        _page([_rec(5, _ev(700, 50, 0)), _rec(0, _ev(701, 50, 3))], ts=100)
        + _page([_rec(1, _ev(700, 50, 0))], ts=50)
        + _page([_rec(1, _ev(701, 50, 9))], ts=60)
    )
    cap = _synth_capture(tmp_path / "cap", {0: cpu0, 1: cpu1})
    c, ref = _both(cap, prog, tmp_path)
    assert c == ref and c["stalls"] >= 2
    assert filecmp.cmp(tmp_path / "c.tsv", tmp_path / "py.tsv", shallow=False)


def _wake_formats(order: bool) -> dict[str, str]:
    """mm_vmscan_wakeup_kswapd (ID 710) and mm_vmscan_kswapd_wake (ID 711) with an int ``order``
    at offset 8 (``_ev``'s value), or, as a kernel without the field would have, ``nid`` there."""
    field = "int order;\toffset:8;\tsize:4;\tsigned:1;" if order else "int nid;\toffset:8;\tsize:4;\tsigned:1;"
    out = {}
    for name, i in ((sa.WAKEUP_KSWAPD, 710), (sa.KSWAPD_WAKE, 711)):
        text = FMT.format(which="x", id=i).replace("mm_vmscan_direct_reclaim_x", name)
        out[f"vmscan:{name}"] = text.replace("unsigned long nr_reclaimed;\toffset:8;\tsize:8;\tsigned:0;", field)
    return out


@pytest.mark.parametrize("order", [True, False])
def test_synthesised_kswapd_wakes_by_order(order, tmp_path):
    """Orders 0, 1, 3 and -1 (0xffffffff: read signed, not high-order) in both decoders, through
    decode_capture to the summary's rows; a format without ``order``: those rows absent, a note."""
    reqs = [_rec(1, _ev(710, 50, o)) for o in (0, 1, 3, 0, 0xFFFF_FFFF)]
    wakes = [_rec(1, _ev(711, 51, o)) for o in (0, 2)]
    rows = {}
    for reference in (False, True):
        d = tmp_path / f"ref{int(reference)}"
        _synth_capture(d, {0: _page(reqs + wakes, ts=100)}, _wake_formats(order))
        meta = D.decode_capture(d, binary_for, reference=reference)
        assert meta["decoder"] == ("python" if reference else "c")
        summary = MmTrace.summarise(d, meta)
        rows[reference] = {md.name: v for md, v in summary.metrics if md.name.startswith("Kswapd wake")}
        assert rows[reference]["Kswapd wake requests"] == [5.0]
        if order:
            assert rows[reference]["Kswapd wake requests, high-order"] == [2.0]
            assert rows[reference]["Kswapd wakes, high-order"] == [1.0]
            # this synthesised format has no gfp_flags: the speculative row is absent, and said so
            assert summary.notes == [
                "this kernel's mm_vmscan_wakeup_kswapd tracepoint has no gfp_flags field naming __GFP_NORETRY, "
                "__GFP_NOMEMALLOC, __GFP_IO, __GFP_DIRECT_RECLAIM: "
                "no 'Kswapd wake requests, speculative high-order' row"
            ]
        else:
            assert set(rows[reference]) == {"Kswapd wake requests"}
            assert [n for n in summary.notes if "no order field" in n] == [
                "this kernel's mm_vmscan_wakeup_kswapd tracepoint has no order field: no "
                "'Kswapd wake requests, high-order' row",
                "this kernel's mm_vmscan_wakeup_kswapd tracepoint has no order field: no "
                "'Kswapd wake requests, speculative high-order' row",
                "this kernel's mm_vmscan_kswapd_wake tracepoint has no order field: no 'Kswapd wakes, high-order' row",
            ]
    assert rows[False] == rows[True]
    # a suite's primary list may name them (checked against the monitor's row patterns)
    from mmbench.config.primary import pattern_match

    assert all(pattern_match(MmTrace.row_patterns, n) for _, _, n, _ in sa.KSWAPD_WAKE_ROWS.values())


# (order, gfp_flags) of synthesised mm_vmscan_wakeup_kswapd records in a real kernel's format; 6.1's
# bits: NORETRY 0x10000, NOMEMALLOC 0x80000, DIRECT_RECLAIM 0x400, KSWAPD_RECLAIM 0x800, IO 0x40,
# FS 0x80, NOWARN 0x2000, COMP 0x40000, HIGH 0x20 (the same in 6.18)
SLUB_SPECULATIVE = 0x10000 | 0x80000 | 0x2000 | 0x40000 | 0x800 | 0x40 | 0x80  # GFP_KERNEL's attempt, patched
WAKE_RECORDS = [
    (3, SLUB_SPECULATIVE, True),
    (2, 0xD2850, True),  # patched guest: a GFP_NOFS slab attempt (tar)
    (1, 0x10000 | 0x80000 | 0x20 | 0x800, False),  # atomic, same signature but no __GFP_IO
    (3, 0xD2800, False),  # vanilla guest: mempool's first attempt (flusher)
    (3, SLUB_SPECULATIVE | 0x400, False),  # may reclaim directly
    (0, SLUB_SPECULATIVE, False),  # order 0
    (3, 0x52810, False),  # GFP_NOWAIT slab attempt: no NOMEMALLOC
    (3, 0x10000 | 0x2000 | 0x40000 | 0x800 | 0x40 | 0x80, False),  # TCP's page-frag refill: no NOMEMALLOC
]


@pytest.mark.parametrize("kernel", ["guest-6.1-overrun", "host-6.18-thrash"])
def test_speculative_wake_requests_by_gfp_flags(kernel, tmp_path):
    """The speculative high-order row counts order > 0 requests with __GFP_NORETRY and
    __GFP_NOMEMALLOC and __GFP_IO and without __GFP_DIRECT_RECLAIM (the gfp values the seed000
    guests recorded among them), with the bits read from the kernel's own
    format file (6.1 and 6.18 write them differently), in both decoders, to the summary's row."""
    fmt_name = f"vmscan:{sa.WAKEUP_KSWAPD}"
    text = (DATA / kernel / "formats" / fmt_name).read_text()
    eid = int(text.split("ID:")[1].split()[0])
    recs = [_rec(1, struct.pack("<HBBiiiiiQ", eid, 0, 0, 50, 0, 1, o, 0, g)) for o, g, _ in WAKE_RECORDS]
    want = sum(s for _, _, s in WAKE_RECORDS)
    rows = {}
    for reference in (False, True):
        d = tmp_path / f"ref{int(reference)}"
        _synth_capture(d, {0: _page(recs, ts=100)}, {fmt_name: text})
        meta = D.decode_capture(d, binary_for, reference=reference)
        summary = MmTrace.summarise(d, meta)
        rows[reference] = {md.name: v for md, v in summary.metrics if md.name.startswith("Kswapd wake")}
        assert not summary.notes
    assert (
        rows[False]
        == rows[True]
        == {
            "Kswapd wake requests": [8.0],
            "Kswapd wake requests, high-order": [7.0],
            "Kswapd wake requests, speculative high-order": [float(want)],
        }
    )
    assert want == 2
    # a format whose print fmt names no gfp flags: no row, and a note saying why
    d = tmp_path / "noflags"
    bare = text.split("print fmt:")[0] + 'print fmt: "order=%d", REC->order\n'
    _synth_capture(d, {0: _page(recs, ts=100)}, {fmt_name: bare})
    summary = MmTrace.summarise(d, D.decode_capture(d, binary_for))
    assert "Kswapd wake requests, speculative high-order" not in {md.name for md, _ in summary.metrics}
    assert any("no gfp_flags field naming __GFP_NORETRY" in n for n in summary.notes), summary.notes


def test_memory_grows_with_paired_events_not_with_the_capture(prog, tmp_path):
    """64 MiB of pages (3.3 M events the pairing does not need, a few it does): read a chunk of
    pages at a time, only the paired events kept, so the program's peak RSS stays a few MiB."""
    cap = _synth_capture(tmp_path / "cap", {0: b""})
    folio = FMT.format(which="x", id=702).replace("mm_vmscan_direct_reclaim_x", "mm_vmscan_write_folio")
    (tmp_path / "cap" / "formats" / "vmscan:mm_vmscan_write_folio").write_text(folio)
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    meta["events"].append("vmscan:mm_vmscan_write_folio")
    (tmp_path / "cap" / "capture.json").write_text(json.dumps(meta))
    full = _page([_rec(1, _ev(702, 60, 1))] * 204, ts=1)
    pages = 16384
    with open(tmp_path / "cap" / "cpu0.raw", "wb") as fh:
        fh.write(_page([_rec(1, _ev(700, 50, 0)), _rec(1, _ev(701, 50, 3))], ts=0))
        for _ in range(pages // 256):
            fh.write(full * 256)
    cap = D.Capture(tmp_path / "cap")
    st = D.run_c(cap, prog, tmp_path / "c.tsv")
    assert st["events"]["mm_vmscan_write_folio"] == 204 * pages
    assert st["kept"]["pairing"] == 2 and st["stalls"] == 1
    assert st["peak_rss_kb"] < 16 << 10, st["peak_rss_kb"]  # the capture is 64 MiB


def test_bad_spec_and_missing_file_are_errors(prog, tmp_path):
    cap = _synth_capture(tmp_path / "cap", {0: _page([], ts=1)})
    (tmp_path / "cap" / "cpu0.raw").unlink()
    with pytest.raises(RuntimeError, match="cannot open a capture file"):
        D.run_c(cap, prog, tmp_path / "x.tsv")


# -- the monitor: decoding in place, and a guest's capture decoded on the host ---------------


def test_decode_capture_writes_summary_files(tmp_path):
    src = DATA / "host-6.18-overrun"
    d = tmp_path / "mon"
    shutil.copytree(src, d)
    meta = D.decode_capture(d, binary_for, keep_raw=False)
    assert meta["decoder"] == "c" and meta["events"] > 0 and meta["lost_events"] > 0
    assert not list(d.glob("cpu*.raw"))
    counts = json.loads((d / "counts.json").read_text())
    assert set(counts["cpus"]) == {"0", "1"} and counts["stalls_in_loss"] == meta["stalls_in_loss"] > 0
    assert "overlap a window where the ring buffer lost events" in (d / "stalls.txt").read_text()
    summary = MmTrace.summarise(d, {"notes": []})
    m = {md.name: v for md, v in summary.metrics}
    cpu_rows = [k for k in m if k.startswith("Trace events lost, CPU ")]
    assert len(cpu_rows) == 2
    assert m["Trace events lost"] == [sum(m[k][0] for k in cpu_rows)] and m["Trace events lost"][0] > 0
    # per CPU the larger of what the pages stored and the kernel's own overrun count
    rb = json.loads((d / "capture.json").read_text())["ring_buffer_per_cpu"]
    for cpu, c in counts["cpus"].items():
        assert c["overrun"] == rb[cpu]["overrun"]
        assert m[f"Trace events lost, CPU {cpu}"] == [float(max(c["lost_events"], c["overrun"]))]
    assert m["Stalls overlapping a trace loss"] == [float(meta["stalls_in_loss"])]


def test_guest_capture_is_decoded_on_the_host(tmp_path):
    """What a guest's stop() leaves (raw pages and what decoding needs, meta ``deferred``) is
    decoded by finish_deferred: same stalls as the reference, raw pages removed, summary rebuilt."""
    d = tmp_path / "mon"
    shutil.copytree(DATA / "host-6.18-thrash", d)
    (d / "summary.json").write_text("{}")  # the guest's summary said "not decoded"
    meta = {
        "dir": "x",
        "files": ["capture.json", "cpu0.raw", "cpu1.raw"],
        "deferred": "decode",
        "notes": [],
        "keep_raw": False,
    }
    pending = MmTrace.summarise(d, meta)
    assert not pending.metrics and "not yet decoded" in pending.notes[0]
    ref = D.run_reference(D.Capture(d), tmp_path / "ref.tsv")
    new = MmTrace.finish_deferred(d, meta, binary_for)
    assert "deferred" not in new and new["decoded_on_host"] and new["decoder"] == "c"
    assert new["events"] == sum(ref["events"].values()) and new["stalls"] == ref["stalls"]
    assert filecmp.cmp(d / "stalls.tsv", tmp_path / "ref.tsv", shallow=False)
    assert "cpu0.raw" not in new["files"] and not (d / "cpu0.raw").exists()
    assert json.loads((d / "summary.json").read_text())["metrics"]


def test_compaction_rows_say_runs_and_split_kcompactd():
    """Issue 22: compact_zone() runs are not vmstat's compact_stall; named for what they count."""
    st = [
        sa.Stall("compaction", "kcompactd", 40, "kcompactd0", 0, 5000),
        sa.Stall("compaction", "workload", 50, "thp", 10, 7000),
        sa.Stall("compaction", "workload", 50, "thp", 20, 9000),
    ]
    m = {md.name: v for md, v in sa.metrics(st)}
    assert m["Compaction runs (trace)"] == [3.0]
    assert m["Compaction runs, direct (trace)"] == [2.0]
    assert m["Compaction runs, kcompactd (trace)"] == [1.0]
    assert m["Compaction run time (us)"] == [5.0, 7.0, 9.0]
    assert not any("Compaction stall" in k for k in m)


def test_vm_runner_finishes_what_the_guest_left(tmp_path):
    """The VM runner's host step: every stored iteration's deferred mm-trace capture decoded and
    its result.json updated; an unfinished (staging) iteration is left alone."""
    from mmbench.vm.runner import finish_deferred_monitors

    run = tmp_path / "run"
    for it in ("iter-0", ".iter-1.partial"):
        mon = run / "usemem" / it / "monitors" / "mm-trace"
        shutil.copytree(DATA / "host-6.18-overrun", mon)
        meta = {
            "dir": f"usemem/{it}/monitors/mm-trace",
            "deferred": "decode",
            "notes": [],
            "keep_raw": False,
            "files": ["capture.json", "cpu0.raw", "cpu1.raw"],
        }
        (run / "usemem" / it / "result.json").write_text(json.dumps({"monitors": {"mm-trace": meta, "psi": {}}}))
    said: list[str] = []
    finish_deferred_monitors(run, said.append)
    res = json.loads((run / "usemem" / "iter-0" / "result.json").read_text())
    meta = res["monitors"]["mm-trace"]
    assert meta["decoded_on_host"] and meta["events"] > 0 and "deferred" not in meta and res["monitors"]["psi"] == {}
    assert any("overran" in n for n in meta["notes"])
    assert said and "1 iteration(s) finished on the host" in said[0]
    staged = json.loads((run / "usemem" / ".iter-1.partial" / "result.json").read_text())
    assert staged["monitors"]["mm-trace"]["deferred"] == "decode"


def test_damaged_pages_neither_crash_nor_disagree(prog, tmp_path):
    """Random bytes after real page headers (a torn or damaged capture): both readers stay inside
    each page and give the same records and stalls."""
    import random

    rnd = random.Random(24)
    d = tmp_path / "cap"
    shutil.copytree(DATA / "host-6.18-thrash", d)
    real = (d / "cpu0.raw").read_bytes()
    ids = [f.id for f in D.Capture(d).formats]
    pages = []
    for i in range(64):
        body = bytearray(rnd.randbytes(4080))
        for _ in range(40):  # plant plausible records among the noise
            at = rnd.randrange(0, 4000) & ~3
            body[at : at + 8] = struct.pack(
                "<IH", (rnd.randrange(0, 1 << 27) << 5) | rnd.randrange(0, 32), rnd.choice(ids)
            )
        commit = rnd.randrange(0, 4200) | (rnd.choice([0, 1 << 31, 3 << 30]))
        pages.append(struct.pack("<QQ", rnd.randrange(0, 1 << 40), commit) + bytes(body))
    (d / "cpu0.raw").write_bytes(real[:8192] + b"".join(pages))
    cap = D.Capture(d)
    c, ref = _both(cap, prog, tmp_path)
    assert c == ref
    assert filecmp.cmp(tmp_path / "c.tsv", tmp_path / "py.tsv", shallow=False)
    ref_rows = decode_files(cap.files, cap.formats, page_size=4096, layout=cap.layout)
    assert D.c_records(cap, prog, tmp_path) == ref_rows.events


def test_an_event_the_kernel_lacks_is_named_in_the_notes(tmp_path):
    """Where a whole vmscan group was recorded without mm_vmscan_reclaim_pages (6.1.192) the notes
    say the kernel has no such tracepoint (model.quirks.TRACEPOINT_CHANGES); where the kernel has
    it (6.18) or the suite left it out, nothing is said."""
    groups = {"groups": ["vmscan", "compaction", "huge_memory", "oom"], "excluded": ["vmscan:mm_vmscan_write_folio"]}
    notes = {}
    for name in ("guest-6.1-seed001", "host-6.18-thrash"):
        d = tmp_path / name
        shutil.copytree(DATA / name, d)
        meta = {**D.decode_capture(d, binary_for, keep_raw=True), **groups}
        summary = MmTrace.summarise(d, meta)
        notes[name] = [n for n in summary.notes if "tracepoint (" in n]
        rows = {md.name for md, _ in summary.metrics}
        assert "mm_vmscan_reclaim_pages events" not in rows  # none recorded in either capture
        assert "mm_vmscan_write_folio events" not in rows  # excluded: no note either
    assert notes["guest-6.1-seed001"] == [
        "this kernel has no vmscan:mm_vmscan_reclaim_pages tracepoint (present in 6.18; absent in 6.1.192, "
        "6.12.117): no 'mm_vmscan_reclaim_pages events' row"
    ]
    assert notes["host-6.18-thrash"] == []
    d = tmp_path / "guest-6.1-seed001"
    assert not [n for n in MmTrace.summarise(d, {"notes": []}).notes if "tracepoint (" in n]


def _formats(name: str) -> dict[str, list[str]]:
    """A capture's events → their field declarations (``type name``), common fields left out."""
    out = {}
    for f in (DATA / name / "formats").iterdir():
        decl = re.findall(r"field:([^;]+);", f.read_text())
        out[f.name] = [d.strip() for d in decl if not d.strip().split()[-1].startswith("common_")]
    return out


def test_tracepoint_changes_match_the_real_formats():
    """Each model.quirks.TRACEPOINT_CHANGES entry against the captures of the kernels it names:
    the event (or field) is in the formats of the kernels it says, not in the others'."""
    from mmbench.model.quirks import TRACEPOINT_CHANGES

    by_release = {}
    for name in CAPTURES:
        rel = D.Capture(DATA / name).meta.get("kernel_release") or name.split("-")[1]
        key = "6.18" if rel.startswith("6.18") else "6.12.117" if rel.startswith("6.12.") else "6.1.192"
        by_release.setdefault(key, {}).update(_formats(name))
    assert set(by_release) == {"6.1.192", "6.12.117", "6.18"}
    for ch in TRACEPOINT_CHANGES:
        for rel in ch.present + ch.absent:
            fmts = by_release[rel]
            have = (
                ch.event in fmts
                if ch.field is None
                else any(d == ch.field or d.endswith(" " + ch.field) for d in fmts.get(ch.event, []))
            )
            if ch.field is not None:
                assert ch.event in fmts, (ch.event, rel)
            assert have == (rel in ch.present), (ch.event, ch.field, rel)
