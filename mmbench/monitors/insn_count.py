"""insn-count: the instructions executed during an iteration, in kernel and in user mode, per CPU,
per kernel subsystem and per unit of mm work.

Two sources, whichever the machine has:

* **A TCG guest** booted by mmbench with its instruction plugin (vm/insn_plugin.c, loaded when the
  suite names this monitor).  The plugin counts every instruction each vCPU executes, user or
  kernel, and for a kernel mmbench built, per group of kernel functions (kbuild/symbols.py: page
  allocator, reclaim, compaction, ...).  At start and stop this monitor asks the plugin for its
  counts by calling into a page of ``ret`` instructions at the address the plugin watches; the
  plugin writes the counts to a log on the host, and the host reads the two lines after the
  guest powers off (``finish_deferred``).  The counts are exact and independent of the host's load.
* **A PMU** (a run on hardware, a KVM guest with ``-cpu host``): ``perf stat -a -A -e
  instructions:k,instructions:u`` for the iteration, per CPU.  No per-subsystem split.

Anywhere else the monitor is unavailable and says why; it never reports zeros.  Per-work rows
divide by /proc/vmstat deltas read at the same two moments: kernel and page-allocator
instructions per page allocated (pgalloc_*), kernel instructions per page fault (pgfault), reclaim
instructions per page scanned (pgscan_*), compaction instructions per page scanned
(compact_*_scanned).  A row whose divisor is 0 is left out, with a note.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable

from mmbench.model.guest import INSN_GROUPS_ENV, INSN_LOG_ENV, INSN_MARK_SLOTS, INSN_MARK_STRIDE, INSN_MARKS_ENV
from mmbench.model.results import MetricDef
from mmbench.monitors._common import stop_process
from mmbench.monitors.base import SUMMARY_CACHE, Monitor, MonitorContext, MonitorSummary, load_summary

ENV_LOG, ENV_MARKS, ENV_GROUPS = INSN_LOG_ENV, INSN_MARKS_ENV, INSN_GROUPS_ENV
MARK_STRIDE, MARK_SLOTS = INSN_MARK_STRIDE, INSN_MARK_SLOTS

# /proc/vmstat counters read at both marks: the work the per-work rows divide by
WORK_COUNTERS = (
    "pgalloc_dma",
    "pgalloc_dma32",
    "pgalloc_normal",
    "pgalloc_movable",
    "pgalloc_high",
    "pgfault",
    "pgmajfault",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgscan_khugepaged",
    "compact_migrate_scanned",
    "compact_free_scanned",
    "thp_fault_alloc",
)


def _vmstat_work() -> dict[str, int]:
    out: dict[str, int] = {}
    with open("/proc/vmstat") as fh:
        for line in fh:
            name, _, value = line.partition(" ")
            if name in WORK_COUNTERS:
                out[name] = int(value)
    return out


class _Marker:
    """Calls into the plugin's watched page: each call is one request for the counts (an ID)."""

    _calls: list[Callable[[], None]] = []
    _base: int = 0
    issued = 0  # requests issued by this process, in order

    @classmethod
    def request(cls, base: int) -> int:
        if cls._base != base:
            cls._map(base)
        seq = cls.issued
        cls.issued += 1
        cls._calls[seq % MARK_SLOTS]()
        return seq

    @classmethod
    def _map(cls, base: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        size = MARK_STRIDE * MARK_SLOTS
        prot_rw, prot_rx = 0x1 | 0x2, 0x1 | 0x4
        map_private_anon_fixed_noreplace = 0x02 | 0x20 | 0x100000
        addr = libc.mmap(base, size, prot_rw, map_private_anon_fixed_noreplace, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value) or addr != base:
            raise OSError(ctypes.get_errno(), f"cannot map the instruction plugin's page at {base:#x}")
        ctypes.memset(addr, 0xC3, size)  # every byte `ret`: each slot is a one-instruction call
        if libc.mprotect(addr, size, prot_rx) != 0:
            raise OSError(ctypes.get_errno(), "mprotect of the instruction plugin's page failed")
        proto = ctypes.CFUNCTYPE(None)
        cls._calls = [proto(addr + MARK_STRIDE * i) for i in range(MARK_SLOTS)]
        cls._base = base


def pmu_counts_supported() -> bool:
    """perf can count instructions:k and instructions:u on this machine (a hardware PMU)."""
    try:
        p = subprocess.run(
            ["perf", "stat", "-x,", "-e", "instructions:k,instructions:u", "true"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and "<not supported>" not in p.stderr and "instructions" in p.stderr


class InsnCount(Monitor):
    name = "insn-count"
    summary = "instructions executed in kernel and user mode, per CPU, per kernel subsystem and per page of mm work"
    innermost = True  # started after and stopped before the others: the counts bracket the workload
    row_patterns = ("Kernel instructions*", "User instructions*", "* instructions per *", "Instructions*")

    def unavailable_reason(self) -> str | None:
        if os.environ.get(ENV_LOG):
            return None
        if pmu_counts_supported():
            return None
        return (
            "no instruction counts here: this is not a TCG guest booted by mmbench with its counting "
            "plugin, and perf finds no hardware counters (instructions:k/u not supported)"
        )

    def start(self, ctx: MonitorContext) -> None:
        self._ctx = ctx
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self._log = os.environ.get(ENV_LOG)
        self._work0 = _vmstat_work()
        if self._log:
            self._base = int(os.environ.get(ENV_MARKS, "0"), 16)
            self._seq0 = _Marker.request(self._base)
            return
        self._perf = subprocess.Popen(
            [
                "perf",
                "stat",
                "-a",
                "-A",
                "-x,",
                "-e",
                "instructions:k,instructions:u",
                "-o",
                str(ctx.outdir / "perf-insn.csv"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ctx.journal.record("process", pid=self._perf.pid)

    def stop(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"files": ["work.json"], "errors": []}
        if self._log:
            seq1 = _Marker.request(self._base)
            work1 = _vmstat_work()
            meta.update(
                source="tcg-plugin",
                deferred="counts",
                log=self._log,
                marks=[self._seq0, seq1],
                groups=[g for g in os.environ.get(ENV_GROUPS, "").split(";") if g],
            )
        else:
            stop_process(self._perf, signal.SIGINT)
            work1 = _vmstat_work()
            meta.update(source="perf", files=["work.json", "perf-insn.csv"])
        delta = {k: work1.get(k, 0) - self._work0.get(k, 0) for k in WORK_COUNTERS if k in work1}
        (self._ctx.outdir / "work.json").write_text(json.dumps(delta))
        if meta["source"] == "perf":
            _write_counts(self._ctx.outdir, _perf_counts(self._ctx.outdir / "perf-insn.csv"))
            meta["files"].append("counts.json")
        return meta

    @classmethod
    def finish_deferred(
        cls, outdir: Path, meta: dict[str, Any], binary: Callable[[Path], str] | None
    ) -> dict[str, Any]:
        """Read the plugin's two log lines of this iteration (on the host, after the guest powered off)."""
        if meta.get("deferred") != "counts":
            return meta
        out = {k: v for k, v in meta.items() if k != "deferred"}
        try:
            start, end = read_plugin_marks(Path(meta["log"]), [int(s) for s in meta["marks"]])
            _write_counts(Path(outdir), counts_between(start, end, meta.get("groups") or []))
            out["files"] = [*meta.get("files", []), "counts.json"]
        except (OSError, ValueError, KeyError) as e:
            out["errors"] = [*meta.get("errors", []), f"instruction counts: {e}"]
        (Path(outdir) / SUMMARY_CACHE).unlink(missing_ok=True)
        load_summary(cls, Path(outdir), out)
        return out

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary(notes=[str(e) for e in meta.get("errors", [])])
        path = Path(outdir) / "counts.json"
        if not path.exists():
            if meta.get("deferred") == "counts":
                out.notes.append("the counts were taken in a VM guest and are read on the host after it powers off")
            else:
                out.notes.append("no instruction counts were recorded for this iteration")
            return out
        counts = json.loads(path.read_text())
        work_path = Path(outdir) / "work.json"
        work = json.loads(work_path.read_text()) if work_path.exists() else {}
        out.metrics, notes = insn_metrics(counts, work)
        out.notes += notes
        return out


def read_plugin_marks(log: Path, seqs: list[int]) -> tuple[list[int], list[int]]:
    """The plugin's counts at two requests of one guest boot (sequence numbers as the guest issued
    them; the log names each by slot, seq % 4096, in order)."""
    want = {s: None for s in seqs}
    seen: dict[int, int] = {}
    with open(log) as fh:
        header = fh.readline()
        if not header.startswith("mmbench-insn 1"):
            raise ValueError(f"{log}: not an instruction plugin log")
        for line in fh:
            parts = line.split()
            if not parts or parts[0] != "mark":
                continue
            slot = int(parts[1])
            seq = slot + MARK_SLOTS * seen.get(slot, 0)
            seen[slot] = seen.get(slot, 0) + 1
            if seq in want:
                want[seq] = [int(x) for x in parts[3:]]
    missing = [s for s, v in want.items() if v is None]
    if missing:
        raise ValueError(f"{log} has no counts for request(s) {missing}: the plugin did not see them")
    return want[seqs[0]], want[seqs[-1]]


def counts_between(start: list[int], end: list[int], groups: list[str]) -> dict[str, Any]:
    """Per-vCPU user/kernel/group counts between two plugin lines ("N  U K g1..gG  U K ...")."""
    n = start[0]
    width = (len(start) - 1) // max(n, 1)
    if end[0] != n or len(end) != len(start) or width < 2 or width - 2 != len(groups):
        raise ValueError("the plugin's two lines do not match (vCPUs or groups differ)")
    cpus = []
    for v in range(n):
        a = start[1 + v * width : 1 + (v + 1) * width]
        b = end[1 + v * width : 1 + (v + 1) * width]
        d = [y - x for x, y in zip(a, b)]
        cpus.append({"user": d[0], "kernel": d[1], "groups": dict(zip(groups, d[2:]))})
    return {"source": "tcg-plugin", "cpus": cpus, "groups": groups}


def _perf_counts(csv: Path) -> dict[str, Any]:
    """Per-CPU instructions:k/u from `perf stat -a -A -x,` (CPU,value,unit,event,...)."""
    per: dict[str, dict[str, int]] = {}
    for line in csv.read_text().splitlines():
        p = line.split(",")
        if len(p) < 4 or not p[0].startswith("CPU"):
            continue
        try:
            value = int(float(p[1]))
        except ValueError:
            raise ValueError(f"perf could not count {p[3]} on {p[0]}: {p[1]}") from None
        mode = "kernel" if p[3].endswith(":k") else "user"
        per.setdefault(p[0], {})[mode] = value
    return {
        "source": "perf",
        "groups": [],
        "cpus": [
            {"user": c.get("user", 0), "kernel": c.get("kernel", 0), "groups": {}}
            for _, c in sorted(per.items(), key=lambda kv: int(kv[0][3:]))
        ],
    }


def _write_counts(outdir: Path, counts: dict[str, Any]) -> None:
    (outdir / "counts.json").write_text(json.dumps(counts))


def _count(name: str, description: str) -> MetricDef:
    return MetricDef(name, "instructions", "lower", kind="count", mean="amean", description=description)


def _per(name: str, unit: str, description: str) -> MetricDef:
    # a ratio, not whole events: "size" makes it a continuous row (Welch's test), not a count
    return MetricDef(name, unit, "lower", kind="size", mean="amean", description=description)


def insn_metrics(counts: dict[str, Any], work: dict[str, int]) -> tuple[list[tuple[MetricDef, list[float]]], list[str]]:
    """Rows from one iteration's counts and the vmstat work done meanwhile."""
    cpus = counts.get("cpus") or []
    if not cpus:
        return [], ["the counts name no CPU"]
    where = "vCPU" if counts.get("source") == "tcg-plugin" else "CPU"
    kernel = sum(c["kernel"] for c in cpus)
    user = sum(c["user"] for c in cpus)
    rows: list[tuple[MetricDef, list[float]]] = [
        (_count("Kernel instructions", "instructions executed in kernel mode, all CPUs"), [float(kernel)]),
        (_count("User instructions", "instructions executed in user mode, all CPUs"), [float(user)]),
    ]
    if len(cpus) > 1:
        for i, c in enumerate(cpus):
            rows.append(
                (_count(f"Kernel instructions, {where} {i}", f"kernel mode, {where} {i}"), [float(c["kernel"])])
            )
            rows.append((_count(f"User instructions, {where} {i}", f"user mode, {where} {i}"), [float(c["user"])]))
    groups = counts.get("groups") or []
    by_group = {g: float(sum(c["groups"].get(g, 0) for c in cpus)) for g in groups}
    for g in groups:
        rows.append(
            (
                _count(
                    f"Kernel instructions: {g}",
                    f"kernel instructions in the {g} functions (kbuild/symbols.py lists their objects)",
                ),
                [by_group[g]],
            )
        )
    notes: list[str] = []
    if not groups and counts.get("source") == "tcg-plugin":
        notes.append("no per-subsystem split: the kernel was not built by mmbench (no System.map and objects)")
    pages = sum(v for k, v in work.items() if k.startswith("pgalloc_"))
    scanned = work.get("pgscan_kswapd", 0) + work.get("pgscan_direct", 0) + work.get("pgscan_khugepaged", 0)
    compact = work.get("compact_migrate_scanned", 0) + work.get("compact_free_scanned", 0)
    ratios = [
        ("Kernel instructions per page allocated", kernel, pages, "pages allocated (pgalloc_*)"),
        ("Kernel instructions per fault", kernel, work.get("pgfault", 0), "page faults (pgfault)"),
    ]
    if "page allocator" in by_group:
        ratios.append(
            (
                "Page allocator instructions per page allocated",
                by_group["page allocator"],
                pages,
                "pages allocated (pgalloc_*)",
            )
        )
    if "reclaim" in by_group:
        ratios.append(
            (
                "Reclaim instructions per page scanned",
                by_group["reclaim"],
                scanned,
                "pages scanned by reclaim (pgscan_*)",
            )
        )
    if "compaction" in by_group:
        ratios.append(
            (
                "Compaction instructions per page scanned",
                by_group["compaction"],
                compact,
                "pages scanned by compaction (compact_*_scanned)",
            )
        )
    for name, num, den, what in ratios:
        if den > 0:
            rows.append((_per(name, "instructions", f"{name.split(' per ')[0]} / {what}"), [num / den]))
        elif work:
            notes.append(f"{name}: no {what} in this iteration")
    return rows, notes
