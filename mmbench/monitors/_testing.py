"""A throw-away cgroup v1 memory cgroup for monitor tests and the monitor-overhead bench.

Only processes started through ``spawn`` are placed in it, only those are killed (by pid), and
the directory is removed on exit, also after a failure.  Not a monitor (leading underscore).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

MEMCG_ROOT = Path("/sys/fs/cgroup/memory")
UNIFIED_ROOT = Path("/sys/fs/cgroup/unified")


class TestMemcg:
    __test__ = False
    def __init__(self, tag: str, limit: int = 128 << 20, unified: bool = False) -> None:
        assert limit <= 256 << 20, "tests stay at or under 256M"
        name = f"mmbench-test-{tag}-{os.getpid()}"
        self.path = MEMCG_ROOT / name
        self.unified = UNIFIED_ROOT / name if unified and UNIFIED_ROOT.is_dir() else None
        self.limit = limit
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "TestMemcg":
        self.path.mkdir()
        try:
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit))
            if self.unified is not None:
                self.unified.mkdir()
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def spawn(self, argv: Sequence[str], **kw) -> subprocess.Popen:
        paths = [self.path / "cgroup.procs"]
        if self.unified is not None:
            paths.append(self.unified / "cgroup.procs")

        def enter() -> None:
            for p in paths:
                with open(p, "w") as fh:
                    fh.write(str(os.getpid()))
        proc = subprocess.Popen(list(argv), preexec_fn=enter, start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def sandbox_paths(self) -> dict[str, Path | None]:
        return {"memory": self.path, "unified": self.unified, "cpuacct": None}

    def close(self) -> None:
        mine = {p.pid for p in self.procs}
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)   # its own session: only what it started
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        # children of our processes that are still in the cgroup (same session ids)
        for pid in self.pids():
            try:
                if os.getsid(pid) in mine:
                    os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for d in (self.unified, self.path):
            if d is None or not d.exists():
                continue
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def thrash_command(workdir: Path, file_mb: int = 300, passes: int = 3, anon_mb: int = 48) -> list[str]:
    """A shell loop that writes a file inside the cgroup, then re-reads it ``passes`` times
    (page-cache reclaim against the memcg limit) and faults ``anon_mb`` of anonymous memory in
    between (minor faults)."""
    f = workdir / "thrash.dat"
    py = (f"import mmap\nfor _ in range(4):\n m=mmap.mmap(-1,{anon_mb}<<20)\n"
          f" for i in range(0,{anon_mb}<<20,4096): m[i]=1\n m.close()")
    script = (f"dd if=/dev/zero of={f} bs=1M count={file_mb} status=none; "
              f"for i in $(seq {passes}); do cat {f} > /dev/null; python3 -c '{py}'; done; rm -f {f}")
    return ["sh", "-c", script]
