"""The workload plugin interface.

A workload is one module in ``mmbench/workloads/`` defining a ``Workload`` subclass (plus a C
source beside it where timing matters, compiled automatically: ``ctx.binary("name")`` builds
``name.c``).  It declares its parameters and metrics; ``run`` does the work through the context
the runner hands it, which places every process it spawns inside the memory sandbox, keeps raw
output, and cleans up what the workload created.  ``run`` returns the samples per metric; a metric
it returns must be declared (parser and metadata cannot drift apart).  A workload also declares
which of its metrics prove that an iteration did work (``work_metrics``): the runner fails an
iteration in which one of them is missing, has no samples or only zeros, with that reason, so an
iteration that did nothing is never a row of numbers.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol, Sequence

from mmbench.model.params import Param
from mmbench.model.results import MetricDef

Samples = dict[str, list[float]]
# A metric that proves work was done, or a group of metrics of which at least one must (e.g. THP
# and base-page fault latencies: either may be empty, not both).
WorkProof = str | tuple[str, ...]


class Sandbox(Protocol):
    """The memory cgroup a workload runs in (cgroup v1 or v2)."""

    version: int  # 1 or 2
    limit: int  # bytes
    memory_path: Path  # the memory cgroup directory
    blkio_path: Path | None  # v1 blkio (or v2 io) cgroup directory, for IO throttling

    def usage(self) -> int: ...
    def free(self) -> int: ...  # limit − usage
    def oom_kills(self) -> int: ...
    def stat(self) -> dict[str, int]: ...  # memory.stat
    def pids(self) -> list[int]: ...


class WorkloadContext(Protocol):
    """What the runner gives ``Workload.run``."""

    params: dict[str, Any]  # resolved: sizes in bytes, durations in seconds
    budget: int  # memory budget in bytes (the sandbox limit)
    ncpus: int
    workdir: Path  # scratch space on disk, removed after the iteration
    rawdir: Path  # kept in the result store: put raw output here
    sandbox: Sandbox
    stop_event: threading.Event  # set when a companion workload should finish

    def binary(self, name: str) -> str:
        """Path of the compiled C program ``mmbench/workloads/<name>.c`` (built on demand)."""

    def spawn(
        self,
        argv: Sequence[str],
        *,
        stdout: str | None = None,
        stderr: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        stdin: Any = None,
    ) -> subprocess.Popen:
        """Start a process inside the sandbox.  ``stdout``/``stderr`` name files in rawdir
        ("-" keeps stdout as a pipe).  The runner kills anything still running afterwards."""

    def run(
        self,
        argv: Sequence[str],
        *,
        raw_name: str | None = None,
        timeout: float | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        """Run a process inside the sandbox to completion, stdout captured as text (and saved
        to rawdir/raw_name).  Non-zero exit with ``check`` raises WorkloadError."""

    def stop(self, proc: subprocess.Popen, timeout: float = 5.0) -> int:
        """SIGTERM then SIGKILL a process this workload spawned (and its process group)."""

    def set_knob(self, path: str | Path, value: str) -> None:
        """Write a sysfs/procfs file, journaled: restored after the iteration, also after a crash."""

    def record_mount(self, target: Path) -> None:
        """Journal a mount made by the workload: unmounted after the iteration or by restore."""

    def record_loop_device(self, device: str) -> None:
        """Journal a loop device: detached after the iteration or by restore."""

    def log(self, message: str) -> None: ...


class Workload:
    """Base class of every workload plugin."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    metrics: ClassVar[list[MetricDef]] = []
    requires: ClassVar[list[str]] = []  # executables needed on PATH (Debian packages)
    packages: ClassVar[dict[str, str]] = {}  # executable → Debian package, named when it is missing
    companion: ClassVar[bool] = False  # runs beside another workload until stop_event
    # Size parameters of anonymous memory the sandbox must hold: above the budget (with no swap
    # configured) the iteration could only be OOM-killed, so the suite loader refuses it.
    resident: ClassVar[tuple[str, ...]] = ()

    # The metrics whose samples prove that an iteration did work (see ``work_metrics``).  None
    # means undeclared, and the runner fails the iteration saying so; () is for a workload that
    # measures nothing itself (idle).
    work: ClassVar[tuple[WorkProof, ...] | None] = None

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        """Metrics this configuration produces (override when they depend on params)."""
        return list(self.metrics)

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof] | None:
        """Metrics of this configuration that prove the iteration did work: each (or, for a
        tuple, one of its members) must have a sample that is not 0, else the runner fails the
        iteration (zero operations completed, no sample in the measurement window, a tool's
        report without figures).  Override when they depend on params."""
        return None if self.work is None else list(self.work)

    def check(self, params: dict[str, Any], budget: int) -> None:
        """Reject impossible parameter combinations with UsageError before anything runs."""

    def guest_trees(self, params: dict[str, Any], log: Callable[[str], None]) -> list[Path]:
        """Host directories this workload reads when it runs in a VM guest (``--kernel``),
        prepared here on the host (called before the guest boots).  The VM runner gives each to
        the guest as a read-only disk mounted at the same path, instead of through virtiofs,
        whose per-inode file descriptors a large tree exhausts (mmbench/vm/trees.py).  A tree
        must not change once made."""
        return []

    def run(self, ctx: WorkloadContext) -> Samples:
        raise NotImplementedError
