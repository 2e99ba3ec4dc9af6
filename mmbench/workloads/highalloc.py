"""highalloc: high-order (huge page) allocation success under load and after it.

While a page-cache reader and an anonymous hog keep the sandbox full, pass 1 grows the hugetlb pool
(``/proc/sys/vm/nr_hugepages``, journaled through ``ctx.set_knob`` and put back after each pass)
by ``hugetlb_size`` worth of huge pages, ``step`` pages per write, timing every write; optionally
it also faults ``collapse_size`` of anon memory with base pages in the sandbox and MADV_COLLAPSEs
it to THPs one 2 MiB unit at a time.  Then the load stops and pass 2 repeats both.

hugetlb pages come from the whole machine, not the sandbox (its limit does not apply to them), so
the default request is small: 0.25x the budget.  On a machine with plenty of free memory pass 1
mostly succeeds; the interesting cases are machines where the load and fragmentation are global.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.kernel import meminfo_bytes, thp_size
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, Workload, WorkloadContext

NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


def hugepage_size() -> int:
    return meminfo_bytes("Hugepagesize", thp_size())


def parse_hugetlb(text: str) -> tuple[list[float], dict[str, int]]:
    lat: list[float] = []
    res: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step":
            lat.append(int(parts[3]) / 1000.0)
        elif parts and parts[0] == "hugetlb":
            res = S.parse_kv_line(" ".join(parts[1:]))
    if not res:
        raise WorkloadError("highalloc hugetlb printed no result")
    return lat, res


def parse_collapse(text: str) -> tuple[list[float], list[int]]:
    lat, ok = [], []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] == "collapse":
            ok.append(int(parts[2]))
            lat.append(int(parts[3]) / 1000.0)
    return lat, ok


class HighAlloc(Workload):
    name = "highalloc"
    summary = "Huge page allocation success (hugetlb pool, MADV_COLLAPSE) under page-cache + anon load and after"
    resident = ("load_anon", "collapse_size")
    params = {
        "hugetlb_size": Param("size", "0.25x", "memory requested as hugetlb pages (machine-wide, not the sandbox)"),
        "step": Param("int", 1, "huge pages requested per write to nr_hugepages", minimum=1),
        "collapse": Param("bool", True, "also MADV_COLLAPSE anon memory into THPs in the sandbox"),
        "collapse_size": Param("size", "0.1x", "anon memory faulted with base pages and collapsed"),
        "load_anon": Param("size", "0.4x", "anonymous hog running in the sandbox during pass 1"),
        "load_file": Param("size", "1x", "file streamed through the page cache during pass 1"),
        "load_warmup": Param("duration", "3s", "let the load run this long before pass 1"),
        "rest": Param("duration", "1s", "pause between stopping the load and pass 2"),
    }
    metrics = [
        MetricDef(
            "% Success pass 1", "%", "higher", "percent", description="hugetlb pages obtained under load / requested"
        ),
        MetricDef(
            "% Success pass 2",
            "%",
            "higher",
            "percent",
            description="hugetlb pages obtained after the load stopped / requested",
        ),
        MetricDef("Time pass 1", "s", "lower", "time", description="time spent in the nr_hugepages writes of pass 1"),
        MetricDef("Time pass 2", "s", "lower", "time", description="time spent in the nr_hugepages writes of pass 2"),
        MetricDef(
            "Latency pass 1",
            "us",
            "lower",
            "latency",
            description="time of each nr_hugepages write (step pages), pass 1",
        ),
        MetricDef(
            "Latency pass 2",
            "us",
            "lower",
            "latency",
            description="time of each nr_hugepages write (step pages), pass 2",
        ),
        MetricDef(
            "% Collapse pass 1",
            "%",
            "higher",
            "percent",
            description="2 MiB units MADV_COLLAPSE turned into THPs, under load",
        ),
        MetricDef(
            "% Collapse pass 2",
            "%",
            "higher",
            "percent",
            description="2 MiB units MADV_COLLAPSE turned into THPs, after the load",
        ),
        MetricDef(
            "Collapse latency pass 1",
            "us",
            "lower",
            "latency",
            description="time of one MADV_COLLAPSE call, under load",
        ),
        MetricDef(
            "Collapse latency pass 2",
            "us",
            "lower",
            "latency",
            description="time of one MADV_COLLAPSE call, after the load",
        ),
    ]

    work = ("Latency pass 1", "Latency pass 2")  # the nr_hugepages writes of both passes happened

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["hugetlb_size"] < hugepage_size():
            raise UsageError("workload.highalloc.params.hugetlb_size: less than one huge page")
        held = params["load_anon"] + (params["collapse_size"] if params["collapse"] else 0)
        if held >= budget * 0.9:
            raise UsageError(
                f"workload.highalloc.params: load_anon + collapse_size = {held} bytes leaves "
                f"no room in the {budget} byte budget"
            )

    def _pass(self, ctx: WorkloadContext, n: int, samples: Samples) -> None:
        p = ctx.params
        count = p["hugetlb_size"] // hugepage_size()
        orig = NR_HUGEPAGES.read_text().strip()
        ctx.set_knob(NR_HUGEPAGES, orig)  # journals the original value before the pool changes
        try:
            out = ctx.run(
                [ctx.binary("highalloc"), "hugetlb", orig, str(count), str(p["step"])], raw_name=f"hugetlb-pass{n}.out"
            )
        finally:
            ctx.set_knob(NR_HUGEPAGES, orig)
        lat, res = parse_hugetlb(out.stdout)
        samples[f"% Success pass {n}"] = [100.0 * max(0, res["got"]) / res["requested"]]
        samples[f"Time pass {n}"] = [res["ns"] / 1e9]
        samples[f"Latency pass {n}"] = lat
        if p["collapse"] and p["collapse_size"] >= S.UNIT:
            out = ctx.run(
                [ctx.binary("highalloc"), "collapse", str(p["collapse_size"])], raw_name=f"collapse-pass{n}.out"
            )
            clat, ok = parse_collapse(out.stdout)
            if ok:
                samples[f"% Collapse pass {n}"] = [100.0 * sum(ok) / len(ok)]
                samples[f"Collapse latency pass {n}"] = clat

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        samples: Samples = {}
        procs: list[Any] = []
        try:
            if p["load_file"]:
                f = ctx.workdir / "highalloc-file"
                S.make_file(ctx, f, p["load_file"])
                procs.append(S.start_bg(ctx, ["read", f], "reader"))
            if p["load_anon"]:
                procs.append(S.start_hog(ctx, p["load_anon"]))
            time.sleep(p["load_warmup"])
            for proc in procs:
                if proc.poll() is not None:
                    raise WorkloadError(f"background load exited early with status {proc.returncode}")
            self._pass(ctx, 1, samples)
        finally:
            S.stop_all(ctx, procs)
        time.sleep(p["rest"])
        self._pass(ctx, 2, samples)
        return samples
