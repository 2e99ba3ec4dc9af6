"""guestpanic: crash the guest kernel (``echo c > /proc/sysrq-trigger``), to test how a run
survives a kernel under test that panics.  Refused anywhere but inside an mmbench VM guest."""

from __future__ import annotations

from pathlib import Path
from mmbench.model.params import Param
from mmbench.errors import WorkloadError
from mmbench.model.guest import in_guest
from mmbench.workloads.base import Samples, Workload, WorkloadContext


class GuestPanic(Workload):
    name = "guestpanic"
    summary = "Panic the guest kernel via sysrq (VM fault-handling tests; refused on a host)"
    params = {"delay": Param("duration", 1.0, "wait before the crash", minimum=0.0)}
    metrics = []

    work = ()  # crashes the guest: nothing to measure

    def run(self, ctx: WorkloadContext) -> Samples:
        # Checked here, not at load: the host loads the suite too before booting the guest.
        if not in_guest():
            raise WorkloadError(
                "guestpanic crashes the kernel: it only runs inside an mmbench VM guest (mmbench run --kernel ...)"
            )
        ctx.stop_event.wait(ctx.params["delay"])
        Path("/proc/sysrq-trigger").write_text("c")
        return {}
