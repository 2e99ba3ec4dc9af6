"""allocfree: the page allocator's per-page cost of allocation and free, in ns per page (seed 004).

``allocfree.c`` allocates and frees pages in batches of ``batch`` pages for ``duration`` split
into ``rounds`` rounds, one sample per round, in each mode of ``modes``:

* ``pipe`` -- order-0 allocation and free with almost nothing else around them: 1-byte writes to
  a packet-mode pipe (``pipe2(O_DIRECT)``) each allocate a page of their own without zeroing it,
  1-byte reads free them.  Metric "Order-0 alloc+free (pipe)".
* ``anon`` -- order-0 anonymous memory: ``mmap``, ``MADV_POPULATE_WRITE`` (each page allocated,
  zeroed, charged and mapped, without a fault exception per page) and ``munmap`` (each page
  freed).  Metric "Order-0 alloc+zero+map+free (anon)"; zeroing is a large part of it.

The seed's regression (the fair zone allocation policy walking zones on every allocation) is a
per-allocation cost of ``get_page_from_freelist``: the pipe figure is where it shows most, since
little else is done per page.  With both modes, "Pipe/anon cost" is the iteration's pipe figure as a
percentage of its anon figure: a machine (or an emulator under a loaded host) that runs everything
slower moves both alike and leaves the ratio, while the allocator's share of the pipe figure (about
a fifth under TCG) is larger than of the anon one, so more allocator work raises it.  ``threads``
copies of each mode run at once (one per CPU by default, each with its own pipe or mappings), so the
per-CPU page lists of every CPU are used.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

from mmbench.errors import UsageError, WorkloadError
from mmbench.model.params import Param, check_name_list
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

MODES = {"pipe": "Order-0 alloc+free (pipe)", "anon": "Order-0 alloc+zero+map+free (anon)"}
RATIO = "Pipe/anon cost"
_DESC = {
    "pipe": "time per page to allocate it (a 1-byte packet written to a pipe) and free it (read back)",
    "anon": "time per page to allocate, zero and map it (MADV_POPULATE_WRITE) and unmap and free it",
}
_ROUND = re.compile(r"^round (\d+) mode (\w+) pages (\d+) seconds ([\d.]+) ns_per_page ([\d.]+)$", re.M)


def parse_allocfree(text: str, mode: str) -> list[float]:
    """ns per page of each round ``allocfree -m mode`` printed."""
    values = [float(m.group(5)) for m in _ROUND.finditer(text) if m.group(2) == mode and int(m.group(3)) > 0]
    if not values or "done rounds" not in text:
        raise WorkloadError(f"allocfree -m {mode} printed no complete result (see raw/allocfree-{mode}-*.out)")
    return values


class AllocFree(Workload):
    name = "allocfree"
    summary = "Page allocator per-page cost: order-0 alloc+free through a pipe, and anon populate+unmap (ns/page)"
    params = {
        "modes": Param("str_list", ["pipe", "anon"], "what allocates and frees the pages", choices=tuple(MODES)),
        "batch": Param(
            "int", 256, "pages allocated before they are freed (the pipe's size in pages)", minimum=1, maximum=1 << 20
        ),
        "threads": Param("int", 0, "copies of each mode running at once (0: one per CPU)", minimum=0),
        "duration": Param("duration", "10s", "time each mode runs"),
        "rounds": Param("int", 10, "samples per mode (duration split evenly)", minimum=1),
    }

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out = [
            MetricDef(MODES[m], "ns/page", "lower", "latency", mean="amean", description=_DESC[m])
            for m in params["modes"]
        ]
        if set(MODES) <= set(params["modes"]):
            out.append(
                MetricDef(
                    RATIO,
                    "%",
                    "lower",
                    "percent",
                    mean="amean",
                    description="the iteration's pipe figure as a percentage of its anon figure: "
                    "the allocator's share, unmoved when the whole machine runs slower "
                    "or faster",
                )
            )
        return out

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [MODES[m] for m in params["modes"]]

    def check(self, params: dict[str, Any], budget: int) -> None:
        where = "workload.allocfree.params"
        check_name_list(f"{where}.modes", params["modes"], f"one of {', '.join(MODES)}", "mode")
        if params["duration"] / params["rounds"] < 0.01:
            raise UsageError(f"{where}: duration / rounds must be at least 10ms")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        threads = p["threads"] or ctx.ncpus
        samples: Samples = {}
        for mode in p["modes"]:
            argv = [
                ctx.binary("allocfree"),
                "-m",
                mode,
                "-b",
                str(p["batch"]),
                "-T",
                repr(p["duration"]),
                "-r",
                str(p["rounds"]),
            ]
            ctx.log(f"allocfree {mode}: {threads} x {p['batch']} pages for {p['duration']:g}s")
            procs = [
                ctx.spawn(argv, stdout=f"allocfree-{mode}-{t}.out", stderr=f"allocfree-{mode}-{t}.err")
                for t in range(threads)
            ]
            for t, proc in enumerate(procs):
                try:
                    rc = proc.wait(timeout=p["duration"] + 300)
                except subprocess.TimeoutExpired:
                    ctx.stop(proc)
                    raise WorkloadError(
                        f"allocfree -m {mode} did not finish within {p['duration'] + 300:g} s"
                    ) from None
                if rc != 0:
                    err = (ctx.rawdir / f"allocfree-{mode}-{t}.err").read_text(errors="replace").strip()
                    raise WorkloadError(f"allocfree -m {mode} exited with status {rc}: {err[-300:]}")
            # rounds of the copies run side by side: their mean is the round's cost per page
            per = [
                parse_allocfree((ctx.rawdir / f"allocfree-{mode}-{t}.out").read_text(), mode) for t in range(threads)
            ]
            n = min(len(v) for v in per)
            samples[MODES[mode]] = [sum(v[i] for v in per) / len(per) for i in range(n)]
        if set(MODES) <= set(p["modes"]):
            pipe, anon = samples[MODES["pipe"]], samples[MODES["anon"]]
            samples[RATIO] = [100.0 * (sum(pipe) / len(pipe)) / (sum(anon) / len(anon))]
        return samples
