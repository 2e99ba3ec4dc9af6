"""stutter: latency of small mmap-fault-unmap operations while the sandbox is pushed into reclaim.

An anonymous memory hog (default 0.75x the budget, rewriting its pages every ``hog_pause``) and a
streaming file copy (a ``copy_size`` file, real data, copied over and over in the workdir) keep the
sandbox at its limit, so every new page the latency loop needs comes from reclaim.  ``stutter.c``
then times mmap + first write to every 4 KiB page + munmap of a ``map_size`` region for
``duration``; the pause between samples is outside the timed region.  The point is the tail: a
fault that should take microseconds stalling for milliseconds behind reclaim or writeback.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, Workload, WorkloadContext


def parse_stutter(text: str) -> tuple[list[float], dict[str, int]]:
    lat: list[float] = []
    summary: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("lat "):
            lat.append(int(line[4:]) / 1000.0)
        elif line.startswith("summary "):
            summary = S.parse_kv_line(line[8:])
    if not summary or not lat:
        raise WorkloadError("stutter printed no result")
    return lat, summary


class Stutter(Workload):
    name = "stutter"
    summary = "mmap+fault+munmap latency while an anon hog and a file copy keep the sandbox in reclaim"
    resident = ("hog_size",)
    params = {
        "duration": Param("duration", "30s", "how long the latency loop runs"),
        "map_size": Param("size", "1M", "bytes mapped, touched and unmapped per sample", minimum=4096),
        "interval": Param("duration", "5ms", "pause between samples (not timed)"),
        "thp": Param("bool", False, "allow THP for the sampled mapping (default MADV_NOHUGEPAGE)"),
        "hog_size": Param("size", "0.75x", "anonymous memory hog (0 = none)"),
        "hog_pause": Param("duration", "100ms", "pause between the hog's passes over its memory"),
        "copy_size": Param("size", "1x", "size of the file copied over and over (0 = no copy)"),
    }
    metrics = [
        MetricDef("mmap latency", "us", "lower", "latency", description="mmap + fault every page + munmap of map_size"),
        MetricDef("Samples", "ops", "higher", "count", description="latency samples taken in duration"),
    ]

    work = ("Samples",)

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["hog_size"] + params["map_size"] >= budget * 0.95:
            raise UsageError(
                f"workload.stutter.params.hog_size: {params['hog_size']} bytes leaves no room "
                f"in the {budget} byte budget (without swap the hog would be OOM-killed)"
            )

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        procs: list[Any] = []
        try:
            if p["copy_size"]:
                src = ctx.workdir / "stutter-src"
                S.make_file(ctx, src, p["copy_size"])
                procs.append(S.start_bg(ctx, ["copy", src, ctx.workdir / "stutter-dst"], "copy"))
            if p["hog_size"]:
                procs.append(S.start_hog(ctx, p["hog_size"], int(p["hog_pause"] * 1000)))
            out = ctx.run(
                [
                    ctx.binary("stutter"),
                    f"{p['duration']:.3f}",
                    str(p["map_size"]),
                    str(int(p["interval"] * 1e6)),
                    "1" if p["thp"] else "0",
                ],
                raw_name="stutter.out",
                timeout=p["duration"] + 120,
            )
            for proc in procs:
                if proc.poll() is not None:
                    raise WorkloadError(f"background load exited early with status {proc.returncode}")
        finally:
            S.stop_all(ctx, procs)
        lat, summary = parse_stutter(out.stdout)
        return {"mmap latency": lat, "Samples": [summary["samples"]]}
