"""pfscale: page-fault scalability in the style of will-it-scale's page_fault1/2/3.

``pfscale.c`` runs N tasks -- threads sharing one mm, or processes -- that each loop over mapping
``map_size``, writing one byte per 4 KiB page and unmapping: ``case = 1`` an anonymous private
mapping, ``2`` a private mapping of a file in the workdir (every write a COW fault of a page-cache
page), ``3`` a shared file mapping (write faults through ``page_mkwrite``).  Every task counts its
own pages touched and (getrusage RUSAGE_THREAD) its own faults; after ``warmup_time`` the parent
opens and closes a window of ``duration`` and sums them.  One invocation per rung of the task
ladder (``tasks``, default 1..ncpus; ``ladder = true``: MMTests' will-it-scale walk, 2..2xNCPU).

* ``faults/sec-N``: page faults the kernel took in all N tasks in the window / its length (named as
  pft's).
* ``pages/sec-N``: pages written per second, will-it-scale's own figure.  The same as faults/sec
  except where one fault maps several pages: since 6.x ``finish_fault()`` maps a whole large
  page-cache folio, so case 3 on ext4 (large folios since 6.16) takes fewer faults than pages.
  With ``sample`` (e.g. "1s", as will-it-scale prints a sum every second) the iteration has one
  ``pages/sec-N`` sample per interval of the window, read from the tasks' live counters, instead
  of one for the whole window: the spread within a run shows.
"""

from __future__ import annotations

from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads._topology import topology_of, topology_walk
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext
from mmbench.workloads.pft import client_ladder

CASES = {1: "anonymous private", 2: "file private (COW)", 3: "file shared"}


def task_ladder(params: dict[str, Any], ncpus: int | None = None) -> list[int]:
    """The task counts to run, in order: ``tasks``, or 1..ncpus, or with ``ladder`` MMTests'
    will-it-scale walk (configs/config-workload-will-it-scale-pf-*: WIS_MIN_THREADS=2 to
    WIS_MAX_THREADS=2xNCPU through ``threads_topology_walk``; 2, 3, 4 on 2 CPUs)."""
    if params.get("ladder"):
        topology = topology_of(ncpus)
        return topology_walk(2, 2 * topology[0], topology)
    return client_ladder({"clients": params.get("tasks")}, ncpus)


def parse_pfscale(text: str) -> dict[str, Any]:
    """The ``result`` line's fields and ``samples``: (ns, pages) of each ``sample`` line."""
    rows = [S.parse_kv_line(line.split(None, 1)[1]) for line in text.splitlines() if line.startswith("result ")]
    if len(rows) != 1 or not {"tasks", "faults", "pages", "ns"} <= rows[0].keys():
        raise WorkloadError("pfscale printed no result line")
    samples = [S.parse_kv_line(line.split(None, 1)[1]) for line in text.splitlines() if line.startswith("sample ")]
    return {**rows[0], "samples": [(r["ns"], r["pages"]) for r in samples]}


class Pfscale(Workload):
    name = "pfscale"
    summary = "will-it-scale page_fault1/2/3: faults/sec for 1..N tasks, anon/file-private/file-shared"
    params = {
        "case": Param("int", 1, "1 anonymous private, 2 file private (COW), 3 file shared", choices=(1, 2, 3)),
        "mode": Param("str", "processes", "tasks are processes or threads (one mm)", choices=("processes", "threads")),
        "tasks": Param("int_list", None, "task counts (default 1..number of CPUs)", minimum=1),
        "ladder": Param(
            "bool",
            False,
            "MMTests' will-it-scale task walk 2 ... 2xNCPU by the CPU topology (2, 3, 4 on 2 CPUs) instead of tasks",
        ),
        "map_size": Param("size", "32M", "mapping each task faults, unmaps and maps again", minimum=4096),
        "warmup_time": Param("duration", "0.5s", "run before the measured window, per rung"),
        "duration": Param("duration", "3s", "measured window per rung", minimum=0.01),
        "thp": Param("bool", False, "allow THP in case 1 (default MADV_NOHUGEPAGE: base-page faults)"),
        "sample": Param(
            "duration",
            "0s",
            "pages/sec samples per this interval of the window (will-it-scale: 1s); 0: one sample for the window",
        ),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"pages/sec-{n}" for n in task_ladder(params)]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        what = CASES.get(params.get("case", 1), "")
        out: list[MetricDef] = []
        for n in task_ladder(params):
            out += [
                MetricDef(
                    f"faults/sec-{n}",
                    "faults/s",
                    "higher",
                    "rate",
                    description=f"{what}: page faults per second (getrusage), {n} task(s)",
                ),
                MetricDef(
                    f"pages/sec-{n}",
                    "pages/s",
                    "higher",
                    "rate",
                    description=f"{what}: pages written per second (will-it-scale's count), {n} task(s)",
                ),
            ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params.get("ladder") and params.get("tasks"):
            raise UsageError("workload.pfscale.params: give tasks or ladder = true, not both")
        if params["map_size"] % 4096:
            raise UsageError(f"workload.pfscale.params.map_size: {params['map_size']} bytes is not a multiple of 4 KiB")
        top = max(task_ladder(params))
        # Case 2 holds the page cache and the private copy at once: twice the mapping per task.
        need = params["map_size"] * top * (2 if params["case"] == 2 else 1)
        if need > budget * 0.9:
            raise UsageError(
                f"workload.pfscale.params.map_size: {top} tasks x {params['map_size']} bytes "
                f"needs {need} bytes, more than 90% of the {budget} byte budget"
            )

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        samples: Samples = {}
        for n in task_ladder(p, ctx.ncpus):
            out = ctx.run(
                [
                    ctx.binary("pfscale"),
                    str(p["case"]),
                    p["mode"],
                    str(n),
                    str(p["map_size"]),
                    repr(float(p["warmup_time"])),
                    repr(float(p["duration"])),
                    str(ctx.workdir),
                    "1" if p["thp"] else "0",
                    repr(float(p.get("sample") or 0)),
                ],
                raw_name=f"pfscale-{n}.out",
            )
            r = parse_pfscale(out.stdout)
            if r["tasks"] != n or r["ns"] <= 0:
                raise WorkloadError(f"pfscale rung {n} reported tasks {r['tasks']} over {r['ns']} ns")
            samples[f"faults/sec-{n}"] = [r["faults"] / (r["ns"] / 1e9)]
            if r["samples"]:  # will-it-scale's per-second figures
                samples[f"pages/sec-{n}"] = [pg / (ns / 1e9) for ns, pg in r["samples"] if ns > 0]
            else:
                samples[f"pages/sec-{n}"] = [r["pages"] / (r["ns"] / 1e9)]
        return samples


Pfscale.metrics = Pfscale().metric_defs({})
