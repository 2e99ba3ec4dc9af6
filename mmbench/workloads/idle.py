"""idle: no workload at all, for ``mmbench monitor``: the monitors record the system as it is."""

from __future__ import annotations

from mmbench.model.params import Param
from mmbench.workloads.base import Samples, Workload, WorkloadContext


class Idle(Workload):
    name = "idle"
    summary = "Do nothing for a duration while the monitors record (monitor-only mode)"
    params = {"duration": Param("duration", 60.0, "how long to record", minimum=0.1)}
    metrics = []

    work = ()  # measures nothing itself: the monitors record the system

    def run(self, ctx: WorkloadContext) -> Samples:
        ctx.stop_event.wait(ctx.params["duration"])
        return {}
