"""simoop: mixed server simulation; read, write and allocation latency percentiles per interval.

In the style of Chris Mason's simoop (seed 002), written from scratch in C (``simoop.c``): worker
threads keep an anonymous working set (``wss``, relative to the budget) hot by touching random
pages, reader and writer threads do ``read_size``/``write_size`` IO at random offsets of a set of
large files in the workdir, and allocator threads map, touch and unmap ``alloc_size`` over and
over.  After ``warmup``, every ``interval`` it prints p50/p95/p99/max of the Read, Write and
Allocation latencies (µs, CLOCK_MONOTONIC, log-linear histograms with ~3% resolution) plus the
workers' work/s and stalls/s (work units slower than ``stall``).

Each metric gets one sample per interval, so its mean is the Amean over intervals that simoop's
MMTests report showed (without MMTests' bug that dropped the last interval).  ``wss`` above the
budget works when swap is configured (``[swap]`` in the suite); the default fits without swap.
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
_OP_LINE = re.compile(r"^(Read|Write|Allocation) latency usec: \(p50: (-?\d+)\) \(p95: (-?\d+)\) "
                      r"\(p99: (-?\d+)\) \(max: (-?\d+)\) count (\d+)")
_RATES = re.compile(r"^rates work/s ([\d.]+) stalls/s ([\d.]+)")


def parse_simoop(text: str) -> Samples:
    """Per-interval samples from simoop's output (only lines after "warmup complete")."""
    samples: Samples = {}
    warm = False
    intervals = 0
    for line in text.splitlines():
        if line.startswith("warmup complete"):
            warm = True
            continue
        if not warm:
            continue
        if line.startswith("interval "):
            intervals += 1
        m = _OP_LINE.match(line)
        if m:
            if int(m.group(6)) == 0:
                continue  # no op of this kind completed in the interval
            for stat, val in zip(STATS, m.group(2, 3, 4, 5)):
                samples.setdefault(f"{stat}-{m.group(1)}", []).append(float(val))
            continue
        m = _RATES.match(line)
        if m:
            samples.setdefault("work/s", []).append(float(m.group(1)))
            samples.setdefault("stalls/s", []).append(float(m.group(2)))
    if not intervals:
        raise WorkloadError("simoop reported no interval after warm-up (see raw/simoop.out)")
    return samples


class Simoop(Workload):
    name = "simoop"
    summary = "Simulated server: anon working set, file readers/writers, allocators; latency percentiles"
    resident = ('wss',)
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
        "warmup_time": Param("duration", "5s", "time before measuring (working set fault-in happens here)"),
        "interval": Param("duration", "2s", "reporting interval; one sample per metric each"),
    }
    metrics = ([MetricDef(f"{s}-{op}", "us", "lower", "latency", mean="amean",
                          description=f"{s} of {op.lower()} latency within an interval")
                for op in OPS for s in STATS]
               + [MetricDef("work/s", "units/s", "higher", "rate", mean="amean",
                            description="work units (pages_per_op random page touches) per second"),
                  MetricDef("stalls/s", "stalls/s", "lower", "rate", mean="amean",
                            description="work units per second that took longer than the stall threshold")])

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        # the workers' units of work, and a completed op of each kind that has threads
        threads = {"Read": params["readers"], "Write": params["writers"], "Allocation": params["allocators"]}
        return ["work/s", *(f"p50-{op}" for op in OPS if threads[op])]

    def check(self, params: dict[str, Any], budget: int) -> None:
        for k in ("file_size", "read_size", "write_size", "alloc_size"):
            if params[k] < page_size():
                raise UsageError(f"workload.simoop.params.{k}: must be at least one page ({page_size()} bytes)")
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
        argv = [ctx.binary("simoop"), "-d", str(d), "-w", str(p["wss"]), "-t", str(workers),
                "-r", str(p["readers"]), "-W", str(p["writers"]), "-a", str(p["allocators"]),
                "-n", str(nfiles), "-f", str(p["file_size"]), "-R", str(p["read_size"]),
                "-X", str(p["write_size"]), "-M", str(p["alloc_size"]), "-p", str(p["pages_per_op"]),
                "-s", str(max(int(p["stall"] * 1e6), 1)), "-T", repr(p["runtime"]), "-u", repr(p["warmup_time"]),
                "-i", repr(p["interval"])]
        (ctx.rawdir / "simoop.cmd").write_text(" ".join(argv) + "\n")
        out = ctx.run(argv, raw_name="simoop.out", timeout=p["runtime"] + p["warmup_time"] + 1800)
        return parse_simoop(out.stdout)
