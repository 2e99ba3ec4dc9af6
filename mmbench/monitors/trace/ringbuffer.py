"""Ring-buffer pages (``per_cpu/cpuN/trace_pipe_raw``) decoded into events in pure Python: the
reference reader.  ``trace_decode.c`` beside this module walks the same pages ~50x faster; tests
check that both give identical records on real captures (tests/data/trace/).

A page is a header (``events/header_page``: u64 timestamp at 0, ``local_t commit`` at 8, data at
16 on 64-bit kernels) and records whose 32-bit header holds a 5-bit ``type_len`` and a 27-bit time
delta (``events/header_event``): 1-28 a data record of ``type_len * 4`` bytes, 0 a larger data
record whose length is the next word, 29 padding (a discarded event; with delta 0 the unused
rest of the page), 30 a time extend (delta += next word << 27), 31 an absolute time stamp.  Bit
31 of ``commit`` says events were lost before the page (overrun); bit 30 that their count is
stored after the data (``ring_buffer_read_page``, kernel/trace/ring_buffer.c, since 3.x).  The
page size and header layout are the recording kernel's (``capture.json``, ``header_page``), not
an assumed 4 KiB.  Files are read a chunk of pages at a time, never whole.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from mmbench.monitors.trace.formats import EventFormat

COMMIT_MASK = (1 << 27) - 1
U64 = (1 << 64) - 1  # time stamps are u64 (they wrap as the C reader's do)
MISSED_EVENTS = 1 << 31
MISSED_STORED = 1 << 30
MAX_LOST = 1 << 48  # a stored count above this is damage, not a count
PAGE_HEADER = 16  # u64 timestamp + local_t commit (64-bit kernels)
CHUNK_PAGES = 256  # pages read at a time

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


@dataclass(frozen=True)
class PageLayout:
    """Where a page's header fields are (from ``events/header_page``)."""

    page_size: int = 4096
    data_offset: int = PAGE_HEADER
    commit_size: int = 8


def parse_header_page(text: str, page_size: int) -> PageLayout:
    """``events/header_page`` → layout; 64-bit defaults for fields it does not name."""
    data_offset, commit_size = PAGE_HEADER, 8
    for line in text.splitlines():
        parts = {k.strip(): v.strip() for k, _, v in (p.partition(":") for p in line.split(";")) if v}
        decl = parts.get("field", "")
        try:
            if decl.endswith(" commit"):
                commit_size = int(parts["size"])
            elif decl.endswith(" data"):
                data_offset = int(parts["offset"])
        except (KeyError, ValueError):
            continue
    return PageLayout(page_size, data_offset, commit_size)


@dataclass
class CpuStats:
    """What one CPU's pages held: record kinds, and where events were lost."""

    pages: int = 0
    records: int = 0  # data records of known events (decoded)
    padding: int = 0  # discarded-event records (type 29, delta != 0)
    time_extend: int = 0
    abs_timestamp: int = 0
    big_records: int = 0  # data records with type_len 0 (payload > 112 bytes)
    lost_pages: int = 0  # pages whose header says events were lost before them
    lost_events: int = 0  # events lost, as stored on those pages (a lower bound if not stored)
    lost_unstored: int = 0  # lossy pages with no room to store the count
    loss_windows: list[tuple[int, int]] = field(default_factory=list)  # (last ts before, page ts)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.pop("loss_windows")
        return d


def iter_pages(fh: BinaryIO, page_size: int) -> Iterator[bytes]:
    """The file's pages, ``CHUNK_PAGES`` read at a time (a trailing partial page is dropped)."""
    while True:
        chunk = fh.read(page_size * CHUNK_PAGES)
        if not chunk:
            return
        for off in range(0, len(chunk) - page_size + 1, page_size):
            yield chunk[off : off + page_size]
        if len(chunk) % page_size:
            return


def page_records(page: bytes, layout: PageLayout, st: CpuStats | None = None) -> Iterator[tuple[int, int, int]]:
    """(timestamp ns, payload offset in ``page``, payload length) of every data record."""
    u32 = _U32.unpack_from
    ts = _U64.unpack_from(page, 0)[0]
    commit = _commit(page, layout)
    pos = layout.data_offset
    end = min(pos + (commit & COMMIT_MASK), layout.page_size)
    size = layout.page_size
    while pos + 4 <= end:
        hdr = u32(page, pos)[0]
        tl = hdr & 31
        delta = hdr >> 5
        if 0 < tl <= 28:
            ts = (ts + delta) & U64
            length = tl << 2
            yield ts, pos + 4, length
            pos += 4 + length
            continue
        if pos + 8 > size:
            break
        if tl == 0:
            length = u32(page, pos + 4)[0] - 4
            length = (length + 3) & ~3
            ts = (ts + delta) & U64
            if st is not None:
                st.big_records += 1
            yield ts, pos + 8, length
            pos += 8 + length
        elif tl == 29:  # padding
            if delta == 0:
                break  # the rest of the page is unused
            if st is not None:
                st.padding += 1
            pos += 4 + u32(page, pos + 4)[0]
        elif tl == 30:  # time extend
            ts = (ts + (u32(page, pos + 4)[0] << 27) + delta) & U64
            if st is not None:
                st.time_extend += 1
            pos += 8
        else:  # absolute time stamp (59 bits)
            abs_ts = (u32(page, pos + 4)[0] << 27) | delta
            ts = abs_ts | (ts & ~((1 << 59) - 1))
            if st is not None:
                st.abs_timestamp += 1
            pos += 8


def _commit(page: bytes, layout: PageLayout) -> int:
    return int.from_bytes(page[8 : 8 + layout.commit_size], "little")


def page_loss(page: bytes, layout: PageLayout) -> tuple[bool, int | None]:
    """(events were lost before this page, how many if the kernel stored the count)."""
    commit = _commit(page, layout)
    if not commit & MISSED_EVENTS:
        return False, None
    if commit & MISSED_STORED:
        at = layout.data_offset + (commit & COMMIT_MASK)
        if at + 8 <= len(page):
            n = _U64.unpack_from(page, at)[0]
            if n <= MAX_LOST:
                return True, n
    return True, None


def iter_records(data: bytes, page_size: int) -> Iterator[tuple[int, int, int]]:
    """(timestamp, payload offset in ``data``, length) for a buffer of whole pages (64-bit layout)."""
    layout = PageLayout(page_size)
    for base in range(0, len(data) - PAGE_HEADER + 1, page_size):
        page = data[base : base + page_size]
        for ts, off, length in page_records(page, layout):
            yield ts, base + off, length


@dataclass
class Decoded:
    """Decoded events: name → list of tuples (ts_ns, cpu, pid, *fields); field names per event."""

    events: dict[str, list[tuple]] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    unknown: int = 0
    truncated: int = 0  # records whose payload runs past their page
    pages_with_loss: int = 0
    cpus: dict[int, CpuStats] = field(default_factory=dict)

    def loss_windows(self) -> list[tuple[int, int]]:
        """Every CPU's loss windows, (earlier, later) and sorted."""
        return sorted((min(w), max(w)) for st in self.cpus.values() for w in st.loss_windows)


def event_table(
    formats: list[EventFormat], wanted_fields: dict[str, list[str]] | None = None
) -> list[tuple[EventFormat, struct.Struct, list[str]]]:
    """Per format: the struct reading its numeric fields (the reference's record layout) and
    their names in offset order (``common_pid`` first among them where it sorts)."""
    out = []
    for fmt in formats:
        names = (wanted_fields or {}).get(fmt.name)
        if names is None:
            names = [n for n in fmt.fields if not n.startswith("common_")]
        st, cols = fmt.unpacker(names)
        out.append((fmt, st, cols))
    return out


def decode_files(
    files: dict[int, Path],
    formats: list[EventFormat],
    wanted_fields: dict[str, list[str]] | None = None,
    *,
    page_size: int,
    layout: PageLayout | None = None,
) -> Decoded:
    """Decode per-CPU raw capture files, page by page.  ``wanted_fields``: event name → fields to
    keep (all numeric fields when None)."""
    layout = layout or PageLayout(page_size)
    out = Decoded()
    by_id: dict[int, tuple[str, Callable, int, list, int]] = {}
    for fmt, st, cols in event_table(formats, wanted_fields):
        pid_idx = cols.index("common_pid")
        lst: list = []
        out.events[fmt.name] = lst
        out.columns[fmt.name] = [c for c in cols if c != "common_pid"]
        by_id[fmt.id] = (fmt.name, st.unpack_from, pid_idx, lst, st.size)
    u16 = struct.Struct("<H").unpack_from
    counts: dict[int, int] = {}
    for cpu, path in sorted(files.items()):
        cst = out.cpus[cpu] = CpuStats()
        last_ts: int | None = None
        with open(path, "rb") as fh:
            for data in iter_pages(fh, layout.page_size):
                cst.pages += 1
                lost, n = page_loss(data, layout)
                if lost:
                    cst.lost_pages += 1
                    if n is None:
                        cst.lost_unstored += 1
                    else:
                        cst.lost_events += n
                    cst.loss_windows.append((last_ts if last_ts is not None else 0, _U64.unpack_from(data, 0)[0]))
                for ts, off, length in page_records(data, layout, cst):
                    last_ts = ts
                    if off + length > layout.page_size:  # runs past the page: damaged
                        out.truncated += length >= 8
                        continue
                    if length < 8:
                        continue
                    eid = u16(data, off)[0]
                    ent = by_id.get(eid)
                    if ent is None:
                        out.unknown += 1
                        continue
                    name, unpack, pid_idx, lst, size = ent
                    if size > length:
                        continue
                    vals = unpack(data, off)
                    if pid_idx == 0:
                        lst.append((ts, cpu) + vals)
                    else:
                        v = list(vals)
                        pid = v.pop(pid_idx)
                        lst.append((ts, cpu, pid, *v))
                    counts[eid] = counts.get(eid, 0) + 1
                    cst.records += 1
        out.pages_with_loss += cst.lost_pages
    for eid, c in counts.items():
        out.counts[by_id[eid][0]] = c
    return out


def page_lost_events(data: bytes, page_size: int) -> int:
    """Pages whose header says events were dropped before them (ring buffer overrun)."""
    layout = PageLayout(page_size)
    return sum(page_loss(data[p : p + page_size], layout)[0] for p in range(0, len(data) - PAGE_HEADER + 1, page_size))
