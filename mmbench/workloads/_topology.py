"""The machine's CPU topology and MMTests' ladders of CPU, thread and job counts over it.

kernbench, stress-ng, pgbench and pfscale step their parallelism the way MMTests' shellpacks do
(``threads_powertwo``, ``threads_topology_walk``); the counts come from sysfs as MMTests'
shellpacks/common.sh reads them.
"""

from __future__ import annotations

import os
from decimal import ROUND_DOWN, Decimal
from pathlib import Path


def llc_count(sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """Last-level caches (MMTests' NUM_LLCS): distinct CPU sets sharing the highest-index cache
    sysfs lists; 1 where sysfs has no cache information."""
    sets: dict[int, set[str]] = {}
    for f in sysfs.glob("cpu[0-9]*/cache/index[0-9]*/shared_cpu_list"):
        try:
            sets.setdefault(int(f.parent.name[5:]), set()).add(f.read_text().strip())
        except OSError:
            continue
    return len(sets[max(sets)]) if sets else 1


def cpu_count() -> int:
    """CPUs this process may run on (what MMTests' NUM_LOGICAL_CPUS counts on an unrestricted box)."""
    return len(os.sched_getaffinity(0))


def cpu_topology() -> tuple[int, int, int, int]:
    """(CPUs, SMT weight, LLC weight, node weight) as MMTests' shellpacks/common.sh computes them:
    threads per core, CPUs per last-level cache, CPUs per NUMA node."""
    n = cpu_count()
    sysfs = Path("/sys/devices/system")
    try:
        smt = len(_cpu_list((sysfs / "cpu/cpu0/topology/thread_siblings_list").read_text()))
    except OSError:
        smt = 1
    nodes = len(list((sysfs / "node").glob("node[0-9]*"))) or 1
    return n, max(1, smt), max(1, n // llc_count()), max(1, n // nodes)


def _cpu_list(text: str) -> list[int]:
    """CPUs of a sysfs list such as ``0-3,8``."""
    out: list[int] = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    return out


def topology_of(ncpus: int | None = None) -> tuple[int, int, int, int]:
    """This machine's ``cpu_topology()``, or a flat one of ``ncpus`` CPUs when that differs (a
    guest's CPU count asked for on the host)."""
    here = cpu_topology()
    return here if ncpus in (None, here[0]) else (ncpus, 1, ncpus, ncpus)


def topology_walk(low: int, high: int, topology: tuple[int, int, int, int] | None = None) -> list[int]:
    """MMTests' client/thread walk (bin/generate-stride-range, the shellpacks'
    ``threads_topology_walk``; pgbench and will-it-scale use it): ``low`` and ``high``, plus steps
    through each level of the machine -- up to the SMT siblings of a core (4 steps), up to one
    last-level cache (4), up to one node (3, or 6 with more than 3 LLCs a node), up to the machine
    (2), to twice it (3), to four times (2), on to ``high`` (1) -- a level's stride cut to one
    decimal and each value to an integer, as its bc/seq/cut pipeline does; sorted, in [low, high].
    On 2 CPUs without SMT, 1..4 gives 1, 2, 3, 4."""
    n, smt, llc, node = topology or cpu_topology()
    levels = [
        (1, smt, 4),
        (smt, llc, 4),
        (llc, node, 6 if node // llc > 3 else 3),
        (node, n, 2),
        (n, 2 * n, 3),
        (n, 4 * n, 2),
        (4 * n, high, 1),
    ]
    values, last = {low, high}, None
    for frm, to, steps in levels:
        if (frm, to) == last or frm == to:
            continue
        last = (frm, to)
        stride = (Decimal(to - frm) / steps).quantize(Decimal("0.1"), rounding=ROUND_DOWN)
        if stride <= 0:
            continue
        x = Decimal(frm)
        while x <= to:
            values.add(int(x))
            x += stride
    return sorted(v for v in values if low <= v <= high)


def ladder(low: int, high: int) -> list[int]:
    """MMTests' threads_powertwo ladder: low, 2·low, 4·low ... below high, then high itself."""
    out, n = [], max(1, low)
    while n < high:
        out.append(n)
        n *= 2
    out.append(high)
    return out
