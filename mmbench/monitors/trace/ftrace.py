"""tracefs access for mm-trace: mount, a private trace instance, event formats, raw ring-buffer
capture and decoding.

Capture copies the binary pages of ``per_cpu/cpuN/trace_pipe_raw`` to files without looking at
them (a few reads of 4 KiB per CPU every 100 ms); decoding happens after the workload, using the
field layouts read from each event's ``format`` file on this kernel (saved beside the data, so a
later report does not depend on the machine that runs it).

Every change goes through the journal before it is made: the tracefs mount, the instance
directory (a ``remove`` entry: ``rmdir`` of an instance drops its buffers and events), each event's
``enable`` and the instance's ``buffer_size_kb``.  Using an instance of our own leaves the top-level
buffer, tracer and events of anybody else untouched.
"""

from __future__ import annotations

import errno
import json
import os
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

TRACEFS = Path("/sys/kernel/tracing")
COMMIT_MASK = (1 << 27) - 1
MISSED_EVENTS = 1 << 31
PAGE_HEADER = 16          # u64 timestamp + local_t commit (64-bit kernels)

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HDR = struct.Struct("<QQ")


def is_mounted(target: Path = TRACEFS) -> bool:
    t = os.path.realpath(target)
    with open("/proc/mounts") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 2 and parts[1] == t and parts[2] == "tracefs":
                return True
    return False


def ensure_mounted(journal: Any, target: Path = TRACEFS) -> bool:
    """Mount tracefs at ``target`` if needed (journaled first).  True if we mounted it."""
    if is_mounted(target):
        return False
    import subprocess
    journal.record("mount", target=str(target))
    proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"could not mount tracefs at {target}: {proc.stderr.strip()}")
    return True


# -- event formats ---------------------------------------------------------------------------

_STRUCT_CODES = {(1, False): "B", (1, True): "b", (2, False): "H", (2, True): "h",
                 (4, False): "I", (4, True): "i", (8, False): "Q", (8, True): "q"}


@dataclass
class EventFormat:
    system: str
    name: str
    id: int
    fields: dict[str, tuple[int, int, bool]]   # name → (offset, size, signed)
    text: str = ""

    @property
    def full(self) -> str:
        return f"{self.system}:{self.name}"

    def unpacker(self, names: Iterable[str]) -> tuple[struct.Struct, list[str]]:
        """A struct reading ``common_pid`` then the named numeric fields (missing ones skipped)."""
        cols = ["common_pid"] + [n for n in names if n in self.fields and n != "common_pid"]
        fmt = "<"
        pos = 0
        for c in sorted(cols, key=lambda c: self.fields[c][0]):
            off, size, signed = self.fields[c]
            code = _STRUCT_CODES.get((size, signed))
            if code is None:
                cols.remove(c)
                continue
            if off > pos:
                fmt += f"{off - pos}x"
            fmt += code
            pos = off + size
        order = sorted(cols, key=lambda c: self.fields[c][0])
        return struct.Struct(fmt), order


def parse_format(system: str, name: str, text: str) -> EventFormat:
    ev_id = -1
    fields: dict[str, tuple[int, int, bool]] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ID:"):
            ev_id = int(line[3:])
        elif line.startswith("field:"):
            parts = [p.strip() for p in line.split(";") if p.strip()]
            decl = parts[0][len("field:"):].strip()
            fname = decl.split()[-1]
            if "[" in fname:
                fname = fname.split("[")[0]
            kv = {}
            for p in parts[1:]:
                if ":" in p:
                    k, v = p.split(":", 1)
                    kv[k.strip()] = v.strip()
            try:
                fields[fname] = (int(kv["offset"]), int(kv["size"]), kv.get("signed", "0") == "1")
            except (KeyError, ValueError):
                continue
    return EventFormat(system, name, ev_id, fields, text)


def read_format(system: str, name: str, root: Path = TRACEFS) -> EventFormat:
    text = (root / "events" / system / name / "format").read_text()
    return parse_format(system, name, text)


def expand_events(specs: Iterable[str], root: Path = TRACEFS) -> tuple[list[tuple[str, str]], list[str]]:
    """``system`` or ``system:event`` (or ``system:*``) → existing (system, event) pairs; unknowns."""
    found: list[tuple[str, str]] = []
    missing: list[str] = []
    for spec in specs:
        system, _, ev = spec.partition(":")
        sdir = root / "events" / system
        if not sdir.is_dir():
            missing.append(spec)
            continue
        if ev in ("", "*"):
            for d in sorted(sdir.iterdir()):
                if (d / "format").exists():
                    found.append((system, d.name))
        elif (sdir / ev / "format").exists():
            found.append((system, ev))
        else:
            missing.append(spec)
    seen = set()
    out = []
    for pair in found:
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out, missing


# -- raw page decoding -----------------------------------------------------------------------

def iter_records(data: bytes, page_size: int = 4096) -> Iterator[tuple[int, int, int]]:
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


def page_lost_events(data: bytes, page_size: int = 4096) -> int:
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
                 page_size: int = 4096) -> Decoded:
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


# -- capture ---------------------------------------------------------------------------------

class RawCapture:
    """A private trace instance with some events enabled, copied raw to per-CPU files."""

    def __init__(self, journal: Any, outdir: Path, events: list[tuple[str, str]], buffer_kb: int,
                 poll: float = 0.1, log: Callable[[str], None] = print,
                 on_poll: Callable[[], None] | None = None) -> None:
        self.journal = journal
        self.outdir = outdir
        self.events = events
        self.buffer_kb = buffer_kb
        self.poll = poll
        self.log = log
        self.on_poll = on_poll
        self.mounted = False
        self.inst: Path | None = None
        self._fds: dict[int, int] = {}
        self._outs: dict[int, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.bytes = 0
        self.formats: list[EventFormat] = []
        self.page_size = os.sysconf("SC_PAGE_SIZE")
        self.errors: list[str] = []

    def start(self) -> None:
        self.mounted = ensure_mounted(self.journal)
        inst = TRACEFS / "instances" / f"mmbench-{os.getpid()}-{int(time.time() * 1000) % 100000000}"
        self.journal.record("remove", path=str(inst))
        inst.mkdir()
        self.inst = inst
        self.formats = [read_format(s, e, inst) for s, e in self.events]
        (self.outdir / "formats").mkdir(parents=True, exist_ok=True)
        for f in self.formats:
            (self.outdir / "formats" / f"{f.system}:{f.name}").write_text(f.text)
        size_path = inst / "buffer_size_kb"
        cur = size_path.read_text().strip()
        if "expanded" in cur:   # "7 (expanded: 1408)": make the journal's original a plain number
            with open(size_path, "w") as fh:
                fh.write(cur.split("expanded:")[1].strip(" )"))
        self.journal.set_value(size_path, str(self.buffer_kb))
        cpus = sorted(int(d.name[3:]) for d in (inst / "per_cpu").iterdir() if d.name[3:].isdigit())
        for cpu in cpus:
            fd = os.open(inst / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
            self._fds[cpu] = fd
            self._outs[cpu] = open(self.outdir / f"cpu{cpu}.raw", "wb")
        for s, e in self.events:
            self.journal.set_value(inst / "events" / s / e / "enable", "1")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="mm-trace-reader", daemon=True)
        self._thread.start()

    def _drain(self) -> int:
        got = 0
        ps = self.page_size
        for cpu, fd in self._fds.items():
            out = self._outs[cpu]
            while True:
                try:
                    buf = os.read(fd, ps)
                except BlockingIOError:
                    break
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EINTR):
                        break
                    raise
                if not buf:
                    break
                out.write(buf)
                got += len(buf)
        self.bytes += got
        return got

    def _loop(self) -> None:
        t0 = time.thread_time()
        self.reader_cpu_s = 0.0
        while not self._stop.is_set():
            try:
                self._drain()
                if self.on_poll:
                    self.on_poll()
            except Exception as e:
                if len(self.errors) < 5:
                    self.errors.append(f"{type(e).__name__}: {e}")
            self._stop.wait(self.poll)
            self.reader_cpu_s = time.thread_time() - t0   # the observer's cost while the workload runs

    def stop(self) -> dict[str, Any]:
        """Disable events, read what is left, close, remove the instance (and unmount)."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        assert self.inst is not None
        for s, e in self.events:
            try:
                with open(self.inst / "events" / s / e / "enable", "w") as fh:
                    fh.write("0")
            except OSError as ex:
                self.errors.append(f"disable {s}:{e}: {ex}")
        try:
            self._drain()
        except OSError as ex:
            self.errors.append(f"final read: {ex}")
        stats = {}
        for cpu in self._fds:
            try:
                txt = (self.inst / "per_cpu" / f"cpu{cpu}" / "stats").read_text()
                for line in txt.splitlines():
                    k, _, v = line.partition(":")
                    if k.strip() in ("overrun", "dropped events"):
                        stats[k.strip()] = stats.get(k.strip(), 0) + int(float(v.split()[0]))
            except (OSError, ValueError, IndexError):
                pass
        for fd in self._fds.values():
            os.close(fd)
        for out in self._outs.values():
            out.close()
        self._fds.clear()
        # put everything back in the journal's reverse order: values, instance, mount
        problems: list[str] = []
        for attempt in range(50):
            try:
                self.inst.rmdir()
                break
            except OSError as ex:
                if ex.errno != errno.EBUSY or attempt == 49:
                    problems.append(f"rmdir {self.inst}: {ex}")
                    break
                time.sleep(0.05)
        if self.mounted:
            import subprocess
            subprocess.run(["umount", str(TRACEFS)], capture_output=True)
        meta = {"bytes": self.bytes, "cpus": sorted(self._outs), "page_size": self.page_size,
                "reader_cpu_s": round(getattr(self, "reader_cpu_s", 0.0), 4),
                "ring_buffer": stats, "instance": self.inst.name, "mounted_tracefs": self.mounted,
                "errors": self.errors + problems}
        (self.outdir / "capture.json").write_text(json.dumps(meta, indent=1))
        return meta


def load_formats(outdir: Path) -> list[EventFormat]:
    fmts = []
    d = outdir / "formats"
    if d.is_dir():
        for p in sorted(d.iterdir()):
            system, _, name = p.name.partition(":")
            fmts.append(parse_format(system, name, p.read_text()))
    return fmts
