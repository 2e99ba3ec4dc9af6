"""The memory sandbox: a memory cgroup limited to the budget, so a big machine behaves like a small one.

Two modes (``[suite] sandbox``):

- ``memcg``: the leaf's memory limit is the budget.  All reclaim the workload causes is memcg
  limit reclaim: kswapd, global direct reclaim and compaction for free memory do not happen.
- ``none`` (whole-machine mode: a dedicated test machine, or inside an mmbench VM guest, where it
  is the default): the budget is the machine's MemTotal and no limit is written, so the kernel's
  own watermarks drive kswapd, direct reclaim and compaction.  The leaf cgroup is still created,
  without a limit, because it gives exact CPU accounting of every process the workload started
  and a way to kill them all; without a memory controller (a guest with only cgroup2 and no
  ``memory`` in ``cgroup.controllers``) a plain cgroup2 leaf does the same.  ``free()`` is then
  MemFree from /proc/meminfo and OOM kills are the /proc/vmstat ``oom_kill`` delta.

cgroup v2 (``memory.max``, what most users have) and cgroup v1 (``memory.limit_in_bytes``, the
only memory controller on hybrid hosts such as ours) are both supported.  On a hybrid host the
task is also placed in a leaf of the unified (v2) hierarchy when it exists, which gives per-cgroup
PSI and exact CPU accounting (``cpu.stat`` exists on every v2 cgroup).  Every cgroup is journaled
before it is created; mmbench itself never enters the sandbox.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from mmbench.model.kernel import meminfo_bytes, vmstat
from mmbench.model.quirks import cgroup_file
from mmbench.run.journal import Journal

CGROUP_ROOT = Path(os.environ.get("MMBENCH_CGROUP_ROOT", "/sys/fs/cgroup"))
PREFIX = "mmbench-"  # leaves sit directly under each hierarchy's root: no shared parent to race on
SANDBOX_MODES = ("auto", "memcg", "none")


def vmstat_value(key: str) -> int:
    return vmstat().get(key, 0)


def cgroup_version() -> int:
    """2 when the unified hierarchy at /sys/fs/cgroup has the memory controller, 1 when v1 has it."""
    ctrl = CGROUP_ROOT / "cgroup.controllers"
    if ctrl.exists() and "memory" in ctrl.read_text().split():
        return 2
    if (CGROUP_ROOT / "memory" / cgroup_file("limit", 1)).exists():
        return 1
    return 0


def _read_kv(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        k, _, v = line.partition(" ")
        try:
            out[k] = int(v)
        except ValueError:
            pass
    return out


class MemorySandbox:
    """One leaf memory cgroup (plus companions) for one workload iteration."""

    def __init__(self, name: str, limit: int, journal: Journal, *, whole_machine: bool = False) -> None:
        self.name = name
        self.whole_machine = whole_machine
        self.limit = meminfo_bytes("MemTotal") if whole_machine else int(limit)
        self.mode = "none" if whole_machine else "memcg"
        self.journal = journal
        self.version = cgroup_version()
        if self.version == 0 and whole_machine and (CGROUP_ROOT / "cgroup.subtree_control").exists():
            self.version = 2  # a cgroup2 root without the memory controller: accounting only
        if self.version == 0:
            raise RuntimeError(
                "no memory cgroup controller found (neither cgroup v2 memory.max nor v1 memory.limit_in_bytes)"
            )
        self.paths: dict[str, Path] = {}
        self.blkio_path: Path | None = None
        self._oom0 = vmstat_value("oom_kill") if whole_machine else 0

    # -- lifecycle ---------------------------------------------------------------------------
    def _mkdir(self, path: Path) -> None:
        if path.exists():
            return
        self.journal.record("cgroup", path=str(path))
        path.mkdir()

    def create(self) -> "MemorySandbox":
        if self.version == 2:
            enabled = (CGROUP_ROOT / "cgroup.subtree_control").read_text().split()
            if "memory" not in enabled and not self.whole_machine:
                raise RuntimeError(f"the memory controller is not enabled in {CGROUP_ROOT}/cgroup.subtree_control")
            leaf = CGROUP_ROOT / (PREFIX + self.name)
            self._mkdir(leaf)
            if not self.whole_machine:
                (leaf / cgroup_file("limit", 2)).write_text(str(self.limit))
            self.paths = {"memory": leaf, "unified": leaf}
            if "io" in enabled:
                self.blkio_path = leaf
        else:
            for ctrl in ("memory", "cpuacct", "blkio", "unified"):
                root = CGROUP_ROOT / ctrl
                if not (root / "cgroup.procs").exists():
                    continue
                leaf = root / (PREFIX + self.name)
                self._mkdir(leaf)
                self.paths[ctrl] = leaf
            if not self.whole_machine:  # a new v1 memcg starts unlimited
                (self.paths["memory"] / cgroup_file("limit", 1)).write_text(str(self.limit))
            self.blkio_path = self.paths.get("blkio")
        return self

    @property
    def memory_path(self) -> Path:
        return self.paths.get("memory", self.paths.get("unified", CGROUP_ROOT))

    def _has_memcg(self) -> bool:
        return (self.memory_path / cgroup_file("usage", self.version)).exists()

    def attach(self, pid: int) -> None:
        """Move ``pid`` into every hierarchy of the sandbox (called in the child before exec)."""
        for path in self.paths.values():
            with open(path / "cgroup.procs", "w") as fh:
                fh.write(str(pid))

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.memory_path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill_all(self) -> int:
        """SIGKILL every process left in the sandbox (all were started by this run)."""
        killed = 0
        for _ in range(100):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        return killed

    def destroy(self) -> None:
        self.kill_all()
        for path in self.paths.values():
            for _ in range(200):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.025)

    # -- readings ----------------------------------------------------------------------------
    def usage(self) -> int:
        """Bytes in use: the memcg's usage, or MemTotal − MemFree in whole-machine mode."""
        if self.whole_machine:
            return self.limit - meminfo_bytes("MemFree")
        return int((self.memory_path / cgroup_file("usage", self.version)).read_text())

    def free(self) -> int:
        """Bytes the workload can still get without reclaim: limit − usage, or MemFree."""
        if self.whole_machine:
            return meminfo_bytes("MemFree")
        return max(0, self.limit - self.usage())

    def oom_kills(self) -> int:
        if self.whole_machine:  # global OOM kills since the sandbox was made (this machine is ours)
            return vmstat_value("oom_kill") - self._oom0
        return _read_kv(self.memory_path / cgroup_file("events", self.version)).get("oom_kill", 0)

    def failcnt(self) -> int:
        if self.whole_machine:
            return 0
        path = self.memory_path / cgroup_file("limit_hits", self.version)
        if self.version == 2:
            return _read_kv(path).get("max", 0)
        return int(path.read_text())

    def max_usage(self) -> int | None:
        p = self.memory_path / cgroup_file("peak", self.version)
        return int(p.read_text()) if self._has_memcg() and p.exists() else None

    def stat(self) -> dict[str, int]:
        p = self.memory_path / cgroup_file("stat", self.version)
        return _read_kv(p) if self._has_memcg() and p.exists() else {}

    def cpu_times(self) -> tuple[float, float] | None:
        """(user, system) CPU seconds of everything that ran in the sandbox."""
        unified = self.paths.get("unified")
        if unified is not None and (unified / "cpu.stat").exists():
            kv = _read_kv(unified / "cpu.stat")
            return kv.get("user_usec", 0) / 1e6, kv.get("system_usec", 0) / 1e6
        cpuacct = self.paths.get("cpuacct")
        if cpuacct is not None:
            return (
                int((cpuacct / "cpuacct.usage_user").read_text()) / 1e9,
                int((cpuacct / "cpuacct.usage_sys").read_text()) / 1e9,
            )
        return None
