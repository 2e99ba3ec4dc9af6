"""usemem: an anonymous (plus optional file-backed) memory consumer sized past the budget.

``usemem.c`` writes every byte of its regions ``passes`` times.  With a working set larger than
the sandbox, every pass after the first has to reclaim -- and with swap, swap out and refault --
what the previous pass wrote.

Without swap an anonymous working set larger than the budget is OOM-killed, so ``anon_size``
defaults to 1.5x the budget only when swap is active (``SwapTotal`` > 0 when the iteration starts,
e.g. the zram swap of ``configs/usemem-swap.toml``) and to 0.8x otherwise; an explicit size above
the budget without swap is refused before it runs.  ``file_size`` adds a MAP_SHARED file in the
workdir, which is written back and reclaimed instead of swapped.
"""

from __future__ import annotations


from mmbench.model.params import Param
from mmbench.errors import WorkloadError
from mmbench.model.kernel import meminfo_bytes
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, Workload, WorkloadContext


def swap_free_bytes() -> int:
    return meminfo_bytes("SwapFree", 0)


def parse_usemem(text: str) -> tuple[list[dict[str, int]], dict[str, int]]:
    passes, total = [], {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "pass":
            passes.append(S.parse_kv_line(" ".join(parts[2:])))
        elif parts and parts[0] == "total":
            total = S.parse_kv_line(" ".join(parts[1:]))
    if not passes or not total:
        raise WorkloadError("usemem printed no result")
    return passes, total


class Usemem(Workload):
    name = "usemem"
    summary = "Write an anon (+file) working set past the budget several times: reclaim, swap-out, refault"
    params = {
        "anon_size": Param("size", None, "anonymous working set (default 1.5x with swap active, 0.8x without)"),
        "file_size": Param("size", "0", "MAP_SHARED file-backed working set in the workdir (0 = none)"),
        "passes": Param("int", 3, "times every byte is written", minimum=1),
    }
    metrics = [
        MetricDef("Elapsed", "s", "lower", "time", description="wall-clock time of all passes"),
        MetricDef("User", "s", "lower", "time", description="user CPU time of all passes", resolution=0.01),
        MetricDef("System", "s", "lower", "time", description="system CPU time of all passes", resolution=0.01),
        MetricDef("Throughput", "MB/s", "higher", "rate", description="bytes written per second, one sample per pass"),
        MetricDef(
            "Throughput first pass", "MB/s", "higher", "rate", description="first pass only (fault-in, no refaults)"
        ),
        MetricDef(
            "Major faults", "faults", "lower", "count", description="major faults (swap-ins, file reads) of all passes"
        ),
    ]

    work = ("Throughput",)

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        swap = swap_free_bytes()
        anon = p["anon_size"]
        if anon is None:
            anon = int((1.5 if swap > 0 else 0.8) * ctx.budget)
        elif anon > ctx.budget * 0.95 and swap == 0:
            raise WorkloadError(
                f"anon_size {anon} bytes exceeds the {ctx.budget} byte budget and no swap is "
                f"active: it would be OOM-killed (add a [swap] table or lower anon_size)"
            )
        ctx.log(f"usemem: anon {anon >> 20} MiB, file {p['file_size'] >> 20} MiB, swap free {swap >> 20} MiB")
        out = ctx.run(
            [ctx.binary("usemem"), str(anon), str(p["file_size"]), str(ctx.workdir / "usemem-file"), str(p["passes"])],
            raw_name="usemem.out",
        )
        passes, total = parse_usemem(out.stdout)
        tput = [r["bytes"] / (1 << 20) / (r["ns"] / 1e9) for r in passes]
        return {
            "Elapsed": [total["elapsed_ns"] / 1e9],
            "User": [total["user_us"] / 1e6],
            "System": [total["sys_us"] / 1e6],
            "Throughput": tput,
            "Throughput first pass": tput[:1],
            "Major faults": [total["majflt"]],
        }
