"""pagealloc: page allocator churn from page cache turnover plus anonymous fault/free (seed 004).

The fair zone allocation policy series was judged on System time of workloads dominated by page
allocation and freeing.  ``pagealloc.c`` writes ``jobs`` files totalling ``size`` (default 2x the
budget) with buffered writes in parallel, then reads them back ``passes`` times; with the total
above the budget the page cache turns over continuously, so every page is allocated and later
reclaimed.  Meanwhile ``anon_threads`` threads map ``chunk`` bytes of anonymous memory, fault
every page and unmap it, over and over.

The figure of merit is the System time in the runner's duration section (the sandbox's CPU
accounting, so it counts exactly this workload's processes); the workload itself reports its
throughput per activity and in total.
"""

from __future__ import annotations

import re
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.kernel import page_size
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

_LINE = re.compile(r"^(write|read|anon|total) bytes (\d+) seconds ([\d.]+)$", re.M)
_NAMES = {
    "write": "Write throughput",
    "read": "Read throughput",
    "anon": "Anon churn throughput",
    "total": "Total throughput",
}
_DESC = {
    "write": "buffered file writes (MB/s of the write phase)",
    "read": "sequential file reads (MB/s of the read phase)",
    "anon": "anonymous memory faulted and freed (MB/s over the whole run)",
    "total": "bytes written + read + anon faulted per second of the whole run",
}


def parse_pagealloc(text: str) -> Samples:
    out: Samples = {}
    for kind, nbytes, secs in _LINE.findall(text):
        if float(secs) > 0 and int(nbytes) > 0:
            out[_NAMES[kind]] = [int(nbytes) / (1 << 20) / float(secs)]
    if "Total throughput" not in out:
        raise WorkloadError("pagealloc printed no result (see raw/pagealloc.out)")
    return out


class Pagealloc(Workload):
    name = "pagealloc"
    summary = "Parallel buffered writes/reads of files larger than the budget plus anon fault/free churn"
    params = {
        "size": Param("size", "2x", "total size of the files written and read back"),
        "jobs": Param("int", 0, "parallel writer/reader threads, one file each (0: one per CPU)", minimum=0),
        "block": Param("size", "1M", "bytes per write/read call"),
        "passes": Param("int", 1, "times the files are read back", minimum=0),
        "anon_threads": Param("int", 1, "threads mapping, faulting and unmapping anonymous chunks", minimum=0),
        "chunk": Param("size", "8M", "anonymous chunk size"),
        "run_timeout": Param("duration", "30m", "limit for the run"),
    }
    metrics = [
        MetricDef(_NAMES[k], "MB/s", "higher", "rate", description=_DESC[k]) for k in ("write", "read", "anon", "total")
    ]

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [m.name for m in self.metric_defs(params)]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        skip = {_NAMES["read"]} if params["passes"] == 0 else set()
        if params["anon_threads"] == 0:
            skip.add(_NAMES["anon"])
        return [m for m in self.metrics if m.name not in skip]

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["size"] < (1 << 20):
            raise UsageError("workload.pagealloc.params.size: must be at least 1M")
        if params["chunk"] < page_size() or params["block"] < page_size():
            raise UsageError(
                f"workload.pagealloc.params: chunk and block must be at least one page ({page_size()} bytes)"
            )
        if params["chunk"] * params["anon_threads"] >= budget:
            raise UsageError("workload.pagealloc.params.chunk: anon threads would exceed the budget")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        d = ctx.workdir / "pagealloc"
        d.mkdir(parents=True, exist_ok=True)
        jobs = p["jobs"] or ctx.ncpus
        argv = [
            ctx.binary("pagealloc"),
            "-d",
            str(d),
            "-s",
            str(p["size"]),
            "-j",
            str(jobs),
            "-b",
            str(p["block"]),
            "-A",
            str(p["anon_threads"]),
            "-c",
            str(p["chunk"]),
            "-p",
            str(p["passes"]),
        ]
        (ctx.rawdir / "pagealloc.cmd").write_text(" ".join(argv) + "\n")
        out = ctx.run(argv, raw_name="pagealloc.out", timeout=p["run_timeout"])
        return parse_pagealloc(out.stdout)
