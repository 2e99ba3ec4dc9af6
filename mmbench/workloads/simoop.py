"""simoop: mixed server simulation; read, write and allocation latency percentiles per interval.

In the style of Chris Mason's simoop (seed 002), written from scratch in C (``simoop.c``): worker
threads keep an anonymous working set (``wss``, relative to the budget) hot by touching random
pages, reader and writer threads do ``read_size``/``write_size`` IO at random offsets of a set of
large files in the workdir, and allocator threads map, touch and unmap ``alloc_size`` over and
over.  The warm-up lasts at least ``warmup_time`` and until every thread has done work (each
worker has faulted its share of the working set and finished a unit of work; each reader, writer
and allocator has completed an op), so the measurement never sees the fault-in; if that takes
longer than ``warmup_limit`` the iteration fails saying how many threads had done work.  Then,
every ``interval``, it prints p50/p95/p99/max of the Read, Write and Allocation latencies (µs,
CLOCK_MONOTONIC, log-linear histograms with ~3% resolution) with the op counts, plus the
workers' work/s and stalls/s (work units slower than ``stall``).

Each metric gets one sample per interval, so its mean is the Amean over intervals that simoop's
MMTests report showed (without MMTests' bug that dropped the last interval).  A percentile of an
interval is kept only when the interval had enough ops for it (``MIN_OPS``: 20 for p95, 100 for
p99; with fewer, p99 is the interval's maximum under another name); how many intervals were left
out is logged and kept in ``raw/simoop-notes.txt``.  "Read/Write/Allocation ops/s" say how many
ops each interval's percentiles come from.  ``wss`` above the budget works when swap is
configured (``[swap]`` in the suite); the default fits without swap.
"""

from __future__ import annotations

import re
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.kernel import page_size
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

OPS = ("Read", "Write", "Allocation")
STATS = ("p50", "p95", "p99", "max")
# Ops an interval needs for its percentile to be more than its largest values: the 99th
# percentile of fewer than 100 ops is (nearly) the maximum.
MIN_OPS = {"p50": 1, "p95": 20, "p99": 100, "max": 1}
_OP_LINE = re.compile(
    r"^(Read|Write|Allocation) latency usec: \(p50: (-?\d+)\) \(p95: (-?\d+)\) "
    r"\(p99: (-?\d+)\) \(max: (-?\d+)\) count (\d+)"
)
_RATES = re.compile(r"^rates work/s ([\d.]+) stalls/s ([\d.]+)")


def parse_simoop(text: str) -> Samples:
    """Per-interval samples from simoop's output (only lines after "warmup complete")."""
    return parse_simoop_notes(text)[0]


def parse_simoop_notes(text: str) -> tuple[Samples, list[str]]:
    """Per-interval samples from simoop's output (only lines after "warmup complete"), and notes
    on the percentiles left out of intervals with too few ops (``MIN_OPS``)."""
    samples: Samples = {}
    warm = False
    intervals = 0
    secs = 0.0
    left_out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("warmup incomplete"):
            raise WorkloadError(
                f"simoop {line.strip()}: no measurement (raise warmup_limit, or lower wss "
                f"so the working set faults in sooner)"
            )
        if line.startswith("warmup complete"):
            warm = True
            continue
        if not warm:
            continue
        if line.startswith("interval "):
            intervals += 1
            secs = float(line.split()[3])
        m = _OP_LINE.match(line)
        if m:
            op, count = m.group(1), int(m.group(6))
            samples.setdefault(f"{op} ops/s", []).append(count / secs if secs > 0 else 0.0)
            if count == 0:
                continue  # no op of this kind completed in the interval
            for stat, val in zip(STATS, m.group(2, 3, 4, 5)):
                if count < MIN_OPS[stat]:
                    left_out[f"{stat}-{op}"] = left_out.get(f"{stat}-{op}", 0) + 1
                    continue
                samples.setdefault(f"{stat}-{op}", []).append(float(val))
            continue
        m = _RATES.match(line)
        if m:
            samples.setdefault("work/s", []).append(float(m.group(1)))
            samples.setdefault("stalls/s", []).append(float(m.group(2)))
    if not warm:
        raise WorkloadError("simoop never completed its warm-up (see raw/simoop.out)")
    if not intervals:
        raise WorkloadError("simoop reported no interval after warm-up (see raw/simoop.out)")
    notes = [
        f"{name}: left out of {n} of {intervals} intervals (fewer than "
        f"{MIN_OPS[name.split('-')[0]]} {name.split('-', 1)[1].lower()} ops in the interval)"
        for name, n in sorted(left_out.items())
    ]
    return samples, notes


class Simoop(Workload):
    name = "simoop"
    summary = "Simulated server: anon working set, file readers/writers, allocators; latency percentiles"
    resident = ("wss",)
    params = {
        "wss": Param("size", "0.5x", "anonymous working set of the worker threads (above 1x needs swap)"),
        "workers": Param("int", 0, "worker threads (0: one per CPU)", minimum=0),
        "readers": Param("int", 2, "reader threads", minimum=0),
        "writers": Param("int", 2, "writer threads", minimum=0),
        "allocators": Param("int", 1, "allocation threads", minimum=0),
        "files": Param("size", "0.5x", "total size of the data files"),
        "file_size": Param("size", "32M", "size of one data file"),
        "read_size": Param("size", "1M", "bytes per read"),
        "write_size": Param("size", "1M", "bytes per write"),
        "alloc_size": Param("size", "16M", "bytes per allocation (mapped and touched)"),
        "pages_per_op": Param("int", 256, "random pages one unit of work touches", minimum=1),
        "stall": Param("duration", "10ms", "a work unit slower than this is a stall"),
        "runtime": Param("duration", "30s", "measured time after the warm-up"),
        "warmup_time": Param(
            "duration",
            "5s",
            "least time before measuring; the warm-up also lasts until "
            "every thread has done work (the working set is faulted in)",
        ),
        "warmup_limit": Param(
            "duration", "10m", "longest warm-up: an iteration whose threads have not all done work by then fails"
        ),
        "interval": Param("duration", "2s", "reporting interval; one sample per metric each"),
    }
    metrics = (
        [
            MetricDef(
                f"{s}-{op}",
                "us",
                "lower",
                "latency",
                mean="amean",
                description=f"{s} of {op.lower()} latency within an interval",
            )
            for op in OPS
            for s in STATS
        ]
        + [
            MetricDef(
                f"{op} ops/s",
                "ops/s",
                "higher",
                "rate",
                mean="amean",
                description=f"{op.lower()} ops completed per second of an interval (the ops its percentiles come from)",
            )
            for op in OPS
        ]
        + [
            MetricDef(
                "work/s",
                "units/s",
                "higher",
                "rate",
                mean="amean",
                description="work units (pages_per_op random page touches) per second",
            ),
            MetricDef(
                "stalls/s",
                "stalls/s",
                "lower",
                "rate",
                mean="amean",
                description="work units per second that took longer than the stall threshold",
            ),
        ]
    )

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        # the workers' units of work, and a completed op of each kind that has threads
        threads = {"Read": params["readers"], "Write": params["writers"], "Allocation": params["allocators"]}
        return ["work/s", *(f"p50-{op}" for op in OPS if threads[op])]

    def check(self, params: dict[str, Any], budget: int) -> None:
        for k in ("file_size", "read_size", "write_size", "alloc_size"):
            if params[k] < page_size():
                raise UsageError(f"workload.simoop.params.{k}: must be at least one page ({page_size()} bytes)")
        if params["warmup_limit"] < params["warmup_time"]:
            raise UsageError("workload.simoop.params.warmup_limit: must be at least warmup_time")
        if params["interval"] <= 0 or params["runtime"] < params["interval"]:
            raise UsageError("workload.simoop.params: runtime must be at least one interval (> 0)")
        if params["alloc_size"] * params["allocators"] >= budget:
            raise UsageError("workload.simoop.params.alloc_size: allocators would exceed the budget")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        d = ctx.workdir / "simoop"
        d.mkdir(parents=True, exist_ok=True)
        workers = p["workers"] or ctx.ncpus
        nfiles = max(1, p["files"] // p["file_size"])
        argv = [
            ctx.binary("simoop"),
            "-d",
            str(d),
            "-w",
            str(p["wss"]),
            "-t",
            str(workers),
            "-r",
            str(p["readers"]),
            "-W",
            str(p["writers"]),
            "-a",
            str(p["allocators"]),
            "-n",
            str(nfiles),
            "-f",
            str(p["file_size"]),
            "-R",
            str(p["read_size"]),
            "-X",
            str(p["write_size"]),
            "-M",
            str(p["alloc_size"]),
            "-p",
            str(p["pages_per_op"]),
            "-s",
            str(max(int(p["stall"] * 1e6), 1)),
            "-T",
            repr(p["runtime"]),
            "-u",
            repr(p["warmup_time"]),
            "-L",
            repr(p["warmup_limit"]),
            "-i",
            repr(p["interval"]),
        ]
        (ctx.rawdir / "simoop.cmd").write_text(" ".join(argv) + "\n")
        out = ctx.run(
            argv,
            raw_name="simoop.out",
            check=False,
            timeout=p["runtime"] + max(p["warmup_time"], p["warmup_limit"]) + 1800,
        )
        if out.returncode != 0 and "warmup incomplete" not in out.stdout:
            raise WorkloadError(f"simoop exited with status {out.returncode} (see raw/simoop.out and simoop.out.err)")
        samples, notes = parse_simoop_notes(out.stdout)  # "warmup incomplete" (status 3) raises here
        (ctx.rawdir / "simoop-notes.txt").write_text("".join(n + "\n" for n in notes))
        for n in notes:
            ctx.log(f"simoop: {n}")
        return samples
