"""vmscale: cases in the style of Intel's vm-scalability suite, with its throughput figure.

``vmscale.c`` runs one case per invocation with ``tasks`` processes that start together: anonymous
writes in address or random order, page cache read through mmap or read(2) from sparse files
larger than the budget, and an anonymous region swapped out and refaulted (which needs the suite's
``[swap]``).  It reports the machine's throughput (all bytes / time to the slowest task),
vm-scalability's sum of per-task throughputs, and the reclaim in the window.  Cases, parameters
and metrics: docs/workloads.md, "vmscale".
"""

from __future__ import annotations

from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext
from mmbench.workloads.usemem import swap_free_bytes

# case -> (size parameter, what it does)
CASES: dict[str, tuple[str, str]] = {
    "anon-w-seq": ("anon_size", "sequential anonymous writes"),
    "anon-w-rand": ("anon_size", "random-order anonymous page writes"),
    "lru-file-mmap-read": ("file_size", "mmap reads of sparse files larger than the budget"),
    "lru-file-readonce": ("file_size", "read(2) once of sparse files larger than the budget"),
    "anon-lru": ("lru_anon_size", "anonymous writes, two passes, larger than the budget (swap)"),
}
DEFAULT_CASES = ["anon-w-seq", "anon-w-rand", "lru-file-mmap-read", "lru-file-readonce"]


def parse_vmscale(text: str) -> dict[str, Any]:
    """The ``result`` line's fields, and ``task_ns``: each task's own time (the ``tasks`` line)."""
    rows = [S.parse_kv_line(line.split(None, 1)[1]) for line in text.splitlines() if line.startswith("result ")]
    if len(rows) != 1 or not {"bytes", "ns", "pgsteal", "pgpgout"} <= rows[0].keys():
        raise WorkloadError("vmscale printed no result line")
    tasks = [line.split()[1:] for line in text.splitlines() if line.startswith("tasks")]
    if len(tasks) != 1 or not tasks[0] or not all(t.isdigit() for t in tasks[0]):
        raise WorkloadError("vmscale printed no per-task times")
    return {**rows[0], "task_ns": [int(t) for t in tasks[0]]}


def reclaim_events(r: dict[str, int]) -> int | None:
    """v2 pgsteal, else v1 pgpgout, else None (no memory.stat)."""
    for key in ("pgsteal", "pgpgout"):
        if r.get(key, -1) >= 0:
            return r[key]
    return None


class Vmscale(Workload):
    name = "vmscale"
    summary = "vm-scalability cases (anon seq/rand write, LRU file mmap read/readonce, anon reclaim): KB/s"
    params = {
        "case": Param("str_list", DEFAULT_CASES, "cases to run, in order", choices=tuple(CASES)),
        "tasks": Param("int", None, "processes per case (default: number of CPUs)", minimum=1),
        "anon_size": Param("size", "0.5x", "anonymous region of anon-w-seq / anon-w-rand (all tasks)"),
        "file_size": Param("size", "2x", "sparse files read by the lru-file cases (all tasks): above the budget"),
        "lru_anon_size": Param("size", "1.5x", "anonymous region of anon-lru (all tasks): above the budget"),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"total-throughput-{case}" for case in params.get("case") or DEFAULT_CASES]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out: list[MetricDef] = []
        for case in params.get("case") or DEFAULT_CASES:
            what = CASES[case][1]
            out += [
                MetricDef(
                    f"total-throughput-{case}",
                    "KB/s",
                    "higher",
                    "rate",
                    description=f"{what}: all tasks' KB / time until the slowest task is done",
                ),
                MetricDef(
                    f"sum-task-throughput-{case}",
                    "KB/s",
                    "higher",
                    "rate",
                    description=f"{what}: sum of each task's KB / its own time (vm-scalability's throughput)",
                ),
                MetricDef(
                    f"reclaim-{case}",
                    "events",
                    "lower",
                    "count",
                    description=f"{what}: reclaim (memcg v2 pgsteal pages, v1 pgpgout folios; "
                    "whole machine: pgsteal_kswapd+direct)",
                ),
            ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        if not params["case"]:
            raise UsageError("workload.vmscale.params.case: no case given")
        if len(set(params["case"])) != len(params["case"]):
            raise UsageError("workload.vmscale.params.case: a case is listed twice")
        if params["anon_size"] > budget * 0.9:
            raise UsageError(
                f"workload.vmscale.params.anon_size: {params['anon_size']} bytes is more than "
                f"90% of the {budget} byte budget (the anon-w cases must not reclaim)"
            )
        for key in ("file_size", "lru_anon_size"):
            if params[key] < 4096:
                raise UsageError(f"workload.vmscale.params.{key}: {params[key]} bytes is less than a page")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        tasks = p["tasks"] or ctx.ncpus
        stat = ctx.sandbox.memory_path / "memory.stat"
        # whole-machine mode (a VM guest, sandbox = "none"): the machine's reclaim, /proc/vmstat
        stat_arg = (
            "/proc/vmstat" if getattr(ctx.sandbox, "whole_machine", False) else str(stat) if stat.exists() else "-"
        )
        if "anon-lru" in p["case"] and swap_free_bytes() == 0:
            raise WorkloadError(
                "vmscale anon-lru needs active swap (add a [swap] table to the suite): "
                "without it an anonymous region above the budget is OOM-killed"
            )
        samples: Samples = {}
        for case in p["case"]:
            size = p[CASES[case][0]]
            out = ctx.run(
                [ctx.binary("vmscale"), case, str(tasks), str(size), str(ctx.workdir), stat_arg],
                raw_name=f"vmscale-{case}.out",
            )
            r = parse_vmscale(out.stdout)
            if r["ns"] <= 0 or r["bytes"] <= 0:
                raise WorkloadError(f"vmscale {case} reported {r['bytes']} bytes in {r['ns']} ns")
            samples[f"total-throughput-{case}"] = [r["bytes"] / 1024 / (r["ns"] / 1e9)]
            per_task = r["bytes"] / len(r["task_ns"]) / 1024
            if any(ns <= 0 for ns in r["task_ns"]) or len(r["task_ns"]) != tasks:
                raise WorkloadError(f"vmscale {case} reported task times {r['task_ns'][:8]} for {tasks} tasks")
            samples[f"sum-task-throughput-{case}"] = [sum(per_task / (ns / 1e9) for ns in r["task_ns"])]
            reclaimed = reclaim_events(r)
            if reclaimed is not None:
                samples[f"reclaim-{case}"] = [float(reclaimed)]
            ctx.log(
                f"vmscale {case}: {tasks} tasks, {size >> 20} MiB, {r['ns'] / 1e9:.2f} s, reclaim events {reclaimed}"
            )
        return samples


Vmscale.metrics = Vmscale().metric_defs({})
