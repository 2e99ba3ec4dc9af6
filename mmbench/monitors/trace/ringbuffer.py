"""Ring-buffer pages (``per_cpu/cpuN/trace_pipe_raw``) decoded into events: the page header,
each record's type/length word, lost-event flags, and the fields the event formats name.  The page
size is the recording kernel's (kept in ``capture.json``), not an assumed 4 KiB."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from mmbench.monitors.trace.formats import EventFormat

COMMIT_MASK = (1 << 27) - 1
MISSED_EVENTS = 1 << 31
PAGE_HEADER = 16          # u64 timestamp + local_t commit (64-bit kernels)

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HDR = struct.Struct("<QQ")


def iter_records(data: bytes, page_size: int) -> Iterator[tuple[int, int, int]]:
    """(timestamp ns, offset of the event payload in ``data``, payload length) for every record
    of a buffer of raw ring-buffer pages (as read from trace_pipe_raw)."""
    u32 = _U32.unpack_from
    n = len(data)
    page = 0
    while page + PAGE_HEADER <= n:
        ts, commit = _HDR.unpack_from(data, page)
        size = commit & COMMIT_MASK
        pos = page + PAGE_HEADER
        end = min(pos + size, page + page_size, n)
        while pos + 4 <= end:
            hdr = u32(data, pos)[0]
            tl = hdr & 31
            delta = hdr >> 5
            if tl == 0:
                length = u32(data, pos + 4)[0] - 4
                length = (length + 3) & ~3
                ts += delta
                yield ts, pos + 8, length
                pos += 8 + length
            elif tl <= 28:
                ts += delta
                length = tl << 2
                yield ts, pos + 4, length
                pos += 4 + length
            elif tl == 29:          # padding
                if delta == 0:
                    break           # the rest of the page is unused
                pos += 4 + u32(data, pos + 4)[0]
            elif tl == 30:          # time extend
                ts += (u32(data, pos + 4)[0] << 27) + delta
                pos += 8
            else:                   # absolute time stamp (59 bits)
                abs_ts = (u32(data, pos + 4)[0] << 27) | delta
                ts = abs_ts | (ts & ~((1 << 59) - 1))
                pos += 8
        page += page_size


def page_lost_events(data: bytes, page_size: int) -> int:
    """Pages whose header says events were dropped before them (ring buffer overrun)."""
    lost = 0
    for page in range(0, len(data) - PAGE_HEADER + 1, page_size):
        if _HDR.unpack_from(data, page)[1] & MISSED_EVENTS:
            lost += 1
    return lost


@dataclass
class Decoded:
    """Decoded events: name → list of tuples (ts_ns, cpu, pid, *fields); field names per event."""

    events: dict[str, list[tuple]] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    unknown: int = 0
    pages_with_loss: int = 0


def decode_files(files: dict[int, Path], formats: list[EventFormat], wanted_fields: dict[str, list[str]] | None = None,
                 *, page_size: int) -> Decoded:
    """Decode per-CPU raw capture files.  ``wanted_fields``: event name → fields to keep (all
    numeric fields when None)."""
    out = Decoded()
    by_id: dict[int, tuple[str, Callable, list[str], list]] = {}
    for fmt in formats:
        names = (wanted_fields or {}).get(fmt.name)
        if names is None:
            names = [n for n in fmt.fields if not n.startswith("common_")]
        st, cols = fmt.unpacker(names)
        pid_idx = cols.index("common_pid")
        rest = [c for c in cols if c != "common_pid"]
        lst: list = []
        out.events[fmt.name] = lst
        out.columns[fmt.name] = rest
        by_id[fmt.id] = (fmt.name, st.unpack_from, pid_idx, lst, st.size)
    u16 = struct.Struct("<H").unpack_from
    counts: dict[int, int] = {}
    for cpu, path in sorted(files.items()):
        data = path.read_bytes()
        out.pages_with_loss += page_lost_events(data, page_size)
        for ts, off, length in iter_records(data, page_size):
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
    for eid, c in counts.items():
        out.counts[by_id[eid][0]] = c
    return out

