"""pft: anonymous page-fault scalability with 1..N threads or processes.

``pft.c`` splits a mapping of ``size`` bytes (relative to the budget) between C clients -- threads
sharing one mm (mmap_lock and page-table contention) or processes each with their own -- that
fault their share at the same time after a barrier, ``repeat`` times per client count.

* ``faults/sec-N``: faults of all N clients / wall-clock time of the touch loops.
* ``faults/cpu-N``: faults / CPU seconds the clients spent faulting (each client's own thread CPU
  time): stays flat when faulting scales, drops when clients contend.
"""

from __future__ import annotations

import os
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.kernel import page_size
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext


def client_ladder(params: dict[str, Any], ncpus: int | None = None) -> list[int]:
    ncpus = ncpus or os.cpu_count() or 1
    return sorted(set(params.get("clients") or range(1, ncpus + 1)))


def parse_pft(text: str) -> list[dict[str, int]]:
    rows = [S.parse_kv_line(" ".join(line.split()[1:])) for line in text.splitlines() if line.startswith("result ")]
    if not rows:
        raise WorkloadError("pft printed no result")
    return rows


class Pft(Workload):
    name = "pft"
    summary = "Anonymous page-fault scalability: faults/sec and faults per CPU-second for 1..N clients"
    resident = ("size",)
    params = {
        "size": Param("size", "0.5x", "total anonymous memory faulted per repeat, split between the clients"),
        "clients": Param("int_list", None, "client counts (default 1..number of CPUs)", minimum=1),
        "mode": Param("str", "threads", "clients are threads (one mm) or processes", choices=("threads", "processes")),
        "repeat": Param("int", 5, "repeats per client count (one sample each)", minimum=1),
        "thp": Param("bool", False, "allow THP (default: MADV_NOHUGEPAGE, every fault a base-page fault)"),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"faults/sec-{n}" for n in client_ladder(params)]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out: list[MetricDef] = []
        for n in client_ladder(params):
            out += [
                MetricDef(
                    f"faults/sec-{n}",
                    "faults/s",
                    "higher",
                    "rate",
                    description=f"anonymous faults per second, {n} client(s)",
                ),
                MetricDef(
                    f"faults/cpu-{n}",
                    "faults/cpu-s",
                    "higher",
                    "rate",
                    description=f"anonymous faults per CPU-second of the clients, {n} client(s)",
                ),
            ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["size"] >= budget:
            raise UsageError(
                f"workload.pft.params.size: {params['size']} bytes does not fit in the {budget} byte budget"
            )
        for n in client_ladder(params):
            if params["size"] // n < page_size():
                raise UsageError(f"workload.pft.params.size: too small for {n} clients")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        samples: Samples = {}
        for n in client_ladder(p, ctx.ncpus):
            out = ctx.run(
                [ctx.binary("pft"), str(p["size"]), str(n), p["mode"], str(p["repeat"]), "1" if p["thp"] else "0"],
                raw_name=f"pft-{n}.out",
            )
            rows = parse_pft(out.stdout)
            samples[f"faults/sec-{n}"] = [r["faults"] / (r["wall_ns"] / 1e9) for r in rows]
            samples[f"faults/cpu-{n}"] = [r["faults"] / (r["cpu_ns"] / 1e9) for r in rows if r["cpu_ns"] > 0]
        return {k: v for k, v in samples.items() if v}


Pft.metrics = Pft().metric_defs({})
