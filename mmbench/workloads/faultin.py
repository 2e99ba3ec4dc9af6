"""faultin: anonymous fault-in throughput and per-2MiB fault latency, split huge vs base.

The pipeline's proof workload and the core of the THP comparisons: map a region sized from the
budget, touch it (optionally after MADV_HUGEPAGE) and time every 2 MiB unit in C.  With
``thp.enabled=always`` most units are huge pages and fault much faster per byte than with
``never``.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.kernel import thp_size
from mmbench.model.results import MetricDef
from mmbench.workloads._support import parse_kv_line
from mmbench.workloads.base import Samples, Workload, WorkloadContext

UNIT = thp_size()  # a PMD-sized THP on this kernel


def parse_faultin(text: str) -> dict[str, Any]:
    """Parse faultin's output into per-unit latencies (µs), huge flags and the summary line."""
    lat: list[float] = []
    huge: list[int] = []
    summary: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "unit" and len(parts) == 4:
            lat.append(int(parts[2]) / 1000.0)
            huge.append(int(parts[3]))
        elif parts[0] == "total_ns":
            summary = parse_kv_line(line)
    if not summary or not lat:
        raise WorkloadError("faultin printed no result (see raw/faultin.out)")
    return {"lat_us": lat, "huge": huge, **summary}


class Faultin(Workload):
    name = "faultin"
    summary = "Fault in an anonymous mapping; fault throughput and per-2MiB latency, huge vs base"
    resident = ("size",)
    params = {
        "size": Param("size", "0.5x", "mapping size (absolute or relative to the budget)"),
        "madvise": Param("bool", True, "call madvise(MADV_HUGEPAGE) on the mapping first"),
        "passes": Param("int", 1, "map, touch and unmap the region this many times per iteration", minimum=1),
    }
    metrics = [
        MetricDef(
            "Fault throughput", "MB/s", "higher", "rate", description="bytes faulted per second of the touch loop"
        ),
        MetricDef("Fault latency", "us", "lower", "latency", description="time to fault one 2 MiB unit"),
        MetricDef(
            "Fault latency huge", "us", "lower", "latency", description="per-2MiB fault time, units backed by a THP"
        ),
        MetricDef(
            "Fault latency base", "us", "lower", "latency", description="per-2MiB fault time, units of base pages"
        ),
        MetricDef(
            "THP Active",
            "pages",
            "higher",
            "count",
            description="huge pages backing the mapping at the end (smaps AnonHugePages)",
        ),
        MetricDef(
            "Percentage huge", "%", "higher", "percent", description="2 MiB units backed by a THP (pagemap+kpageflags)"
        ),
    ]

    work = ("Fault throughput",)

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["size"] < UNIT:
            raise UsageError(f"workload.faultin.params.size: {params['size']} bytes is below one 2 MiB unit")

    def run(self, ctx: WorkloadContext) -> Samples:
        samples: Samples = {m.name: [] for m in self.metrics}
        for p in range(ctx.params["passes"]):
            out = ctx.run(
                [ctx.binary("faultin"), str(ctx.params["size"]), "1" if ctx.params["madvise"] else "0"],
                raw_name=f"faultin-{p}.out",
            )
            r = parse_faultin(out.stdout)
            lat, huge = r["lat_us"], r["huge"]
            samples["Fault throughput"].append(r["bytes"] / (1 << 20) / (r["total_ns"] / 1e9))
            samples["Fault latency"] += lat
            samples["THP Active"].append(max(r["anon_huge_kb"], 0) / 2048)
            if all(h >= 0 for h in huge):
                samples["Fault latency huge"] += [x for x, h in zip(lat, huge) if h == 1]
                samples["Fault latency base"] += [x for x, h in zip(lat, huge) if h == 0]
                samples["Percentage huge"].append(100.0 * sum(huge) / len(huge))
        return {k: v for k, v in samples.items() if v}
