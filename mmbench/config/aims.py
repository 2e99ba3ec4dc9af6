"""What a suite aims to show (``[suite] aims``), and the warning when its sandbox cannot show it.

A memory cgroup limit makes a big machine behave like a small one for the workload's own usage,
but its reclaim is memcg limit reclaim: it wakes no kswapd, does no global direct reclaim and
never compacts for free memory, because the machine's free memory stays far above its
watermarks.  A suite aimed at those mechanisms must run on the whole machine: ``sandbox = "none"``
on a dedicated machine, or in a VM (``mmbench run --kernel ...``), where that is the default.
This module has no heavy imports: ``mmbench compare`` uses it too.
"""

from __future__ import annotations

AIMS = (
    "kswapd",
    "direct-reclaim",
    "compaction",
    "fragmentation",
    "thp",
    "swap",
    "allocator",
    "numa",
    "writeback",
    "latency",
)
# The mechanisms that need whole-machine memory pressure.
WHOLE_MACHINE_AIMS = ("kswapd", "direct-reclaim", "compaction", "fragmentation")
# "Far smaller than the machine": a memcg below this share of MemTotal leaves the machine's
# watermarks untouched (min/low/high are a few percent of memory).
SMALL_MEMCG_SHARE = 0.5


def memcg_warning(aims: list[str], mode: str, budget: int | None, memtotal: int | None) -> str | None:
    """The warning for a suite aimed at whole-machine mechanisms run inside a small memcg."""
    wanted = [a for a in aims if a in WHOLE_MACHINE_AIMS]
    if mode != "memcg" or not wanted or not budget or not memtotal:
        return None
    if budget >= SMALL_MEMCG_SHARE * memtotal:
        return None
    return (
        f"this suite aims at {', '.join(wanted)} but runs only inside a {budget >> 20} MiB memory "
        f"cgroup on a {memtotal >> 20} MiB machine: memcg limit reclaim wakes no kswapd and does not "
        f"compact for free memory, so those rows stay near 0. Run it in a VM (--kernel ...) or, on a "
        f"dedicated machine, with --set sandbox=none"
    )
