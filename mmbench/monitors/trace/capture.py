"""Raw ring-buffer capture for mm-trace: a private trace instance, its events enabled, and the
per-CPU pages copied to files.

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
import threading
import time
from pathlib import Path
from typing import Any, Callable

from mmbench.monitors.trace.formats import EventFormat, read_format
from mmbench.monitors.trace.tracefs import TRACEFS, ensure_mounted, unmount

WRITE_BUFFER = 1 << 20


class RawCapture:
    """A private trace instance with some events enabled, copied raw to per-CPU files."""

    def __init__(
        self,
        journal: Any,
        outdir: Path,
        events: list[tuple[str, str]],
        buffer_kb: int,
        poll: float = 0.1,
        log: Callable[[str], None] = print,
        on_poll: Callable[[], None] | None = None,
    ) -> None:
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
        for name in ("header_page", "header_event"):  # the page and record header layouts
            try:
                (self.outdir / name).write_text((TRACEFS / "events" / name).read_text())
            except OSError:
                pass
        size_path = inst / "buffer_size_kb"
        cur = size_path.read_text().strip()
        if "expanded" in cur:  # "7 (expanded: 1408)": make the journal's original a plain number
            with open(size_path, "w") as fh:
                fh.write(cur.split("expanded:")[1].strip(" )"))
        self.journal.set_value(size_path, str(self.buffer_kb))
        cpus = sorted(int(d.name[3:]) for d in (inst / "per_cpu").iterdir() if d.name[3:].isdigit())
        for cpu in cpus:
            fd = os.open(inst / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
            self._fds[cpu] = fd
            # written 1 MiB at a time: in a VM guest the files are on the host's share (virtiofs),
            # where every write is a round trip to the host
            self._outs[cpu] = open(self.outdir / f"cpu{cpu}.raw", "wb", buffering=WRITE_BUFFER)
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
            self.reader_cpu_s = time.thread_time() - t0  # the observer's cost while the workload runs

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
        stats: dict[str, int] = {}
        per_cpu: dict[str, dict[str, int]] = {}
        for cpu in self._fds:
            try:
                txt = (self.inst / "per_cpu" / f"cpu{cpu}" / "stats").read_text()
                for line in txt.splitlines():
                    k, _, v = line.partition(":")
                    if k.strip() in ("overrun", "dropped events"):
                        n = int(float(v.split()[0]))
                        stats[k.strip()] = stats.get(k.strip(), 0) + n
                        per_cpu.setdefault(str(cpu), {})[k.strip()] = n
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
        unmount(self.mounted)
        meta = {
            "bytes": self.bytes,
            "cpus": sorted(self._outs),
            "page_size": self.page_size,
            "reader_cpu_s": round(getattr(self, "reader_cpu_s", 0.0), 4),
            "ring_buffer": stats,
            "ring_buffer_per_cpu": per_cpu,
            "instance": self.inst.name,
            "mounted_tracefs": self.mounted,
            "events": [f.full for f in self.formats],
            "kernel_release": os.uname().release,
            "errors": self.errors + problems,
        }
        (self.outdir / "capture.json").write_text(json.dumps(meta, indent=1))
        return meta
