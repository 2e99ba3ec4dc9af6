"""thpchallenge: THP faults while a kernel build fragments memory (MMTests' thpchallenge pattern).

MMTests' thpchallenge runs a kernel build in the background until memory is full of its page
cache, slab and short-lived anon pages, then measures THP fault latency and success with
thpscale.  Here the build is the ``kernbench`` companion in the same sandbox
(``[workload.with.kernbench]`` with ``builds = 0``, so it rebuilds until this workload ends) and
the faults are thpfault's (``thpfault.c``: per-2 MiB fault time, huge or base).  This workload
waits until the companion's first ``make -jN`` has started (its ``kernbench.log`` in rawdir) and
then ``delay`` more, so the build has filled the budget, and faults ``rounds`` times,
``interval`` apart, each round the whole thread ladder.  Metrics are thpfault's, all rounds
pooled: ``fault-huge-T``, ``fault-base-T``, ``fault-both-T`` (µs per 2 MiB unit) and
``Percentage huge-T`` (the fallback rate is its complement); the runner's vmstat delta has the
kernel's own thp_fault_alloc/thp_fault_fallback counts.  Without a kernbench companion it fails
at once, saying so.
"""

from __future__ import annotations

import time
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.workloads.base import Samples, WorkloadContext
from mmbench.workloads.kernbench import PROGRESS_LOG
from mmbench.workloads.thpfault import ThpFault


class ThpChallenge(ThpFault):
    name = "thpchallenge"
    summary = "THP fault latency and success while a kernbench companion build fragments memory"
    params = {
        **{k: v for k, v in ThpFault.params.items() if k in ("size", "threads", "madvise")},
        "delay": Param("duration", "20s", "time the build runs before the first faults"),
        "rounds": Param("int", 3, "fault rounds (each the whole thread ladder)", minimum=1),
        "interval": Param("duration", "5s", "build time between rounds"),
        "build_timeout": Param("duration", "10m", "limit for the companion's first build to start"),
    }

    def check(self, params: dict[str, Any], budget: int) -> None:
        super().check({**params, "fragment": "none", "holes_size": 0}, budget)
        if params["rounds"] > 1 and params["interval"] < 0:
            raise UsageError("workload.thpchallenge.params.interval: must not be negative")

    def _wait_build(self, ctx: WorkloadContext) -> None:
        log = ctx.rawdir / PROGRESS_LOG
        t0 = time.monotonic()
        while not log.exists():
            if time.monotonic() - t0 > 5:  # the companion writes it first thing
                raise WorkloadError(
                    "thpchallenge needs a kernel build beside it: add [workload.with.kernbench] "
                    "with builds = 0 to the suite"
                )
            if ctx.stop_event.wait(0.1):
                return
        while "building" not in log.read_text():
            if time.monotonic() - t0 > ctx.params["build_timeout"]:
                raise WorkloadError(
                    f"the kernbench companion did not start building within "
                    f"{ctx.params['build_timeout']:g} s (see raw/{PROGRESS_LOG})"
                )
            if ctx.stop_event.wait(0.2):
                return

    def run(self, ctx: WorkloadContext) -> Samples:
        self._wait_build(ctx)
        ctx.stop_event.wait(ctx.params["delay"])
        inner = {**ctx.params, "fragment": "none"}
        samples: Samples = {}
        for r in range(ctx.params["rounds"]):
            if r:
                ctx.stop_event.wait(ctx.params["interval"])
            if ctx.stop_event.is_set():
                break
            usage = ctx.sandbox.usage()
            with open(ctx.rawdir / "thpchallenge.log", "a") as fh:
                fh.write(f"round {r} sandbox_usage {usage} budget {ctx.budget}\n")
            for k, v in self._round(ctx, inner, r).items():
                samples.setdefault(k, []).extend(v)
        # percentages are per round: pool them as one figure per iteration
        for k in [k for k in samples if k.startswith("Percentage huge-")]:
            samples[k] = [sum(samples[k]) / len(samples[k])]
        return samples

    def _round(self, ctx: WorkloadContext, params: dict[str, Any], r: int) -> Samples:
        saved = ctx.params
        ctx.params = params
        try:
            out = ThpFault.run(self, ctx)
        finally:
            ctx.params = saved
        # thpfault names its raw output per thread count: keep every round's
        for f in ctx.rawdir.glob("thpfault-*.out"):
            f.rename(f.with_name(f"thpchallenge-round{r}-{f.name}"))
        return out


ThpChallenge.metrics = ThpChallenge().metric_defs({})
