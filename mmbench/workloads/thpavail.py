"""thpavail: THP availability and fault-in cost when memory is full of page cache under IO.

After seed 001 (Mel Gorman's THPAVAIL): a reader streams a large file to nowhere and a writer
streams zeros onto a throttled loop-mounted filesystem, standing in for the slow USB stick.  Once
dirty + writeback pages and free memory reach the seed's condition, ``faultin.c`` faults in an
anonymous mapping that must take its memory back from that page cache: where direct reclaim and
compaction stall.  Parameters, metrics and the limits of the write throttle: docs/workloads.md,
"thpavail".
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, Workload, WorkloadContext
from mmbench.workloads.faultin import parse_faultin


class ThpAvail(Workload):
    name = "thpavail"
    summary = "Fault in a large anon mapping while page cache and slow IO fill memory; THP success and cost"
    resident = ("size",)
    requires = ["losetup", "mount"]
    params = {
        "size": Param("size", "0.8x", "anonymous mapping faulted in (fits once page cache is reclaimed)"),
        "size_free": Param(
            "float",
            0.0,
            "if > 0: fault in this fraction of the memory free before the fill "
            "phase instead of size (1.0 = the seed's mapping the size of free memory)",
            minimum=0.0,
            maximum=1.0,
        ),
        "madvise": Param("bool", True, "madvise(MADV_HUGEPAGE) the mapping"),
        "read_size": Param("size", "2x", "size of the file the reader streams (created in the workdir)"),
        "read_file": Param("str", "", "stream this existing file instead of creating one"),
        "writer": Param(
            "str",
            "loop",
            "where the writer streams zeros: a throttled loop-mounted image, the workdir's filesystem, or no writer",
            choices=("loop", "workdir", "none"),
        ),
        "loop_fs": Param(
            "str",
            "auto",
            "filesystem of the loop image: auto = vfat if the kernel has it, else ext2",
            choices=("auto", "vfat", "ext2", "ext4", "xfs", "btrfs"),
        ),
        "loop_size": Param("size", "256M", "size of the loop-mounted image"),
        "write_bps": Param("size", "8M", "write bandwidth limit (bytes/s) of the loop device; 0 = none"),
        "sync_every": Param("size", "4M", "writer calls fdatasync after this many bytes (0 = never)"),
        "free_threshold": Param("size", "0.15x", "start the fault-in once sandbox free memory is below this"),
        "dirty_threshold": Param("size", "0", "also wait until dirty + writeback pages reach this (0: do not wait)"),
        "drop_read_cache": Param(
            "bool",
            True,
            "drop the pre-created read file's page cache before the reader "
            "starts, so the reader fills memory from the disk",
        ),
        "fill_timeout": Param("duration", "60s", "start anyway after waiting this long for memory to fill"),
    }
    metrics = [
        MetricDef(
            "System Time",
            "s",
            "lower",
            "time",
            description="system CPU time of the fault-in loop (getrusage)",
            resolution=0.01,
        ),
        MetricDef(
            "User Time",
            "s",
            "lower",
            "time",
            description="user CPU time of the fault-in loop (getrusage)",
            resolution=0.01,
        ),
        MetricDef("Elapsed Time", "s", "lower", "time", description="wall-clock time of the fault-in loop"),
        MetricDef(
            "THP Active",
            "pages",
            "higher",
            "count",
            description="huge pages backing the mapping afterwards (its smaps AnonHugePages / 2 MiB)",
        ),
        MetricDef(
            "Fault Alloc", "faults", "higher", "count", description="thp_fault_alloc delta around the touch loop"
        ),
        MetricDef(
            "Fault Fallback", "faults", "lower", "count", description="thp_fault_fallback delta around the touch loop"
        ),
        MetricDef(
            "Fault latency huge",
            "us",
            "lower",
            "latency",
            description="first-touch time of a 2 MiB unit backed by a THP",
        ),
        MetricDef(
            "Fault latency base", "us", "lower", "latency", description="first-touch time of a 2 MiB unit of base pages"
        ),
        MetricDef(
            "Percentage huge", "%", "higher", "percent", description="2 MiB units backed by a THP (pagemap+kpageflags)"
        ),
        MetricDef("Fill time", "s", "lower", "time", description="time until the background load filled the sandbox"),
        MetricDef(
            "Dirty at fault-in",
            "MiB",
            "higher",
            "count",
            description="dirty + writeback page cache when the fault-in started (the fill phase's condition)",
        ),
    ]

    work = (("Fault latency huge", "Fault latency base"),)  # units faulted, huge or base

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["size"] < S.UNIT:
            raise UsageError(f"workload.thpavail.params.size: {params['size']} bytes is below one 2 MiB unit")
        if params["size_free"] == 0 and params["size"] >= budget:
            raise UsageError(
                f"workload.thpavail.params.size: {params['size']} bytes does not fit in the "
                f"{budget} byte budget (without swap the fault-in would be OOM-killed)"
            )
        if params["writer"] == "loop" and params["loop_size"] < (64 << 20):
            raise UsageError("workload.thpavail.params.loop_size: at least 64M")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        procs: list[Any] = []
        info: dict[str, Any] = {}
        try:
            if p["read_file"]:
                rfile = Path(p["read_file"])
                if not rfile.is_file():
                    raise WorkloadError(f"read_file {rfile} does not exist")
            else:
                rfile = ctx.workdir / "thpavail-read"
                S.make_file(ctx, rfile, p["read_size"], raw="mkfile")
            if p["drop_read_cache"]:
                info["read_cache_dropped"] = S.drop_file_cache(rfile)
            free_before = ctx.sandbox.free()
            info["free_before_fill"] = free_before
            size = p["size"]
            if p["size_free"] > 0:
                size = int(free_before * p["size_free"]) // S.UNIT * S.UNIT
                if size < S.UNIT:
                    raise WorkloadError(
                        f"only {free_before >> 20} MiB free before the fill phase: no room for a mapping"
                    )
            info["mapping_bytes"] = size
            if p["writer"] == "loop":
                fs = S.pick_loop_fs(p["loop_fs"])
                target, dev = S.mount_loop_fs(ctx, p["loop_size"], fs)
                info["loop_device"], info["loop_fs"] = dev, fs
                info["throttled"] = S.throttle_writes(ctx, dev, p["write_bps"])
                wbytes = p["loop_size"]
            elif p["writer"] == "workdir":
                target = ctx.workdir / "writer"
                target.mkdir(exist_ok=True)
                wbytes = max(p["read_size"], 64 << 20)
            procs.append(S.start_bg(ctx, ["read", rfile], "reader"))
            if p["writer"] != "none":
                procs.append(S.start_bg(ctx, ["write", target, wbytes, p["sync_every"]], "writer"))
            t_fill = time.monotonic()
            if p["dirty_threshold"] > 0:
                info["dirty_wait_seconds"] = S.wait_dirty_above(ctx, p["dirty_threshold"], p["fill_timeout"])
                info["dirty_reached"] = S.dirty_bytes(ctx) >= p["dirty_threshold"]
            info["free_wait_seconds"] = S.wait_free_below(ctx, p["free_threshold"], p["fill_timeout"])
            fill = time.monotonic() - t_fill
            info["fill_seconds"] = fill
            info["free_at_start"] = ctx.sandbox.free()
            dirty = S.dirty_bytes(ctx)
            info["dirty_at_start"] = dirty
            ctx.log(
                f"thpavail: fill phase {fill:.1f} s: {info['free_at_start'] >> 20} MiB free, "
                f"{dirty >> 20} MiB dirty+writeback; faulting in {size >> 20} MiB"
            )
            for proc in procs:
                if proc.poll() is not None:
                    raise WorkloadError(f"background {proc.args[1]} exited early with status {proc.returncode}")
            out = ctx.run([ctx.binary("faultin"), str(size), "1" if p["madvise"] else "0"], raw_name="thpavail.out")
        finally:
            S.stop_all(ctx, procs)
            (ctx.rawdir / "thpavail-info.json").write_text(json.dumps(info, indent=1))
        r = parse_faultin(out.stdout)
        samples: Samples = {
            "System Time": [r["sys_us"] / 1e6],
            "User Time": [r["user_us"] / 1e6],
            "Elapsed Time": [r["total_ns"] / 1e9],
            "THP Active": [max(r["anon_huge_kb"], 0) / 2048],
            "Fill time": [fill],
            "Dirty at fault-in": [dirty / (1 << 20)],
        }
        if r["thp_fault_alloc"] >= 0:
            samples["Fault Alloc"] = [r["thp_fault_alloc"]]
            samples["Fault Fallback"] = [r["thp_fault_fallback"]]
        lat, huge = r["lat_us"], r["huge"]
        if all(h >= 0 for h in huge):
            samples["Fault latency huge"] = [x for x, h in zip(lat, huge) if h == 1]
            samples["Fault latency base"] = [x for x, h in zip(lat, huge) if h == 0]
            samples["Percentage huge"] = [100.0 * sum(huge) / len(huge)]
        return {k: v for k, v in samples.items() if v}
