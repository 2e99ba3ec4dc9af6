"""A throw-away memory cgroup for monitor tests and the monitor benches, built on the runner's own
``MemorySandbox`` (cgroup v1 or v2, whatever the machine has) and journaled through the journal
the caller passes, so a killed test leaves nothing ``mmbench restore`` cannot remove.

Only processes started through ``spawn`` are placed in it; ``close`` kills what is left in it
(all ours) and removes it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Sequence

from mmbench.run.journal import Journal
from mmbench.run.sandbox import MemorySandbox


class TestMemcg:
    __test__ = False

    def __init__(self, tag: str, limit: int, journal: Journal) -> None:
        assert limit <= 256 << 20, "tests stay at or under 256M"
        self.box = MemorySandbox(f"test-{tag}-{os.getpid()}", limit, journal)
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "TestMemcg":
        try:
            self.box.create()
        except Exception:
            self.box.destroy()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def spawn(self, argv: Sequence[str], **kw: Any) -> subprocess.Popen:
        box = self.box
        proc = subprocess.Popen(list(argv), preexec_fn=lambda: box.attach(os.getpid()), start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def pids(self) -> list[int]:
        return self.box.pids()

    def sandbox_paths(self) -> dict[str, Path]:
        return dict(self.box.paths)

    def close(self) -> None:
        self.box.destroy()  # SIGKILLs what is left inside: only what spawn started
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def thrash_command(workdir: Path, file_mb: int = 300, passes: int = 3, anon_mb: int = 48) -> list[str]:
    """A shell loop that writes a file inside the cgroup, then re-reads it ``passes`` times
    (page-cache reclaim against the memcg limit) and faults ``anon_mb`` of anonymous memory in
    between (minor faults)."""
    f = workdir / "thrash.dat"
    page = os.sysconf("SC_PAGE_SIZE")
    py = (
        f"import mmap\nfor _ in range(4):\n m=mmap.mmap(-1,{anon_mb}<<20)\n"
        f" for i in range(0,{anon_mb}<<20,{page}): m[i]=1\n m.close()"
    )
    script = (
        f"dd if=/dev/zero of={f} bs=1M count={file_mb} status=none; "
        f"for i in $(seq {passes}); do cat {f} > /dev/null; python3 -c '{py}'; done; rm -f {f}"
    )
    return ["sh", "-c", script]
