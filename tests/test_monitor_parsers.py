"""Monitor parsers on text captured from a real kernel (tests/data/kernel/, 6.18 x86-64: see
KERNEL there), with the expected values read off the text by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mmbench.model.kernel import parse_meminfo, parse_vmstat
from mmbench.monitors.buddyinfo import parse_buddyinfo
from mmbench.monitors.kthreads import TICKS, stat_cpu_seconds
from mmbench.monitors.pagetypeinfo import Pagetypeinfo, parse_pagetypeinfo
from mmbench.monitors.psi import parse_pressure
from mmbench.monitors.slabinfo import parse_slabinfo

KERNEL = Path(__file__).parent / "data" / "kernel"


def text(name: str) -> str:
    return (KERNEL / name).read_text()


def test_buddyinfo_per_zone_and_total():
    b = parse_buddyinfo(text("buddyinfo"))
    assert b["0.Normal.o0"] == 3636 and b["0.DMA32.o10"] == 752 and b["0.DMA.o8"] == 1
    assert b["all.o0"] == 0 + 2 + 3636 and b["all.o10"] == 3 + 752 + 135
    assert len([k for k in b if k.startswith("all.")]) == 11  # orders 0..10


def test_pagetypeinfo_free_pages_and_blocks():
    p = parse_pagetypeinfo(text("pagetypeinfo"))
    # DMA Movable: one order-9 and three order-10 blocks = 512 + 3 * 1024 pages, all >= pageblock
    assert p["free.node0-DMA.Movable"] == 3584 and p["free_hi.node0-DMA.Movable"] == 3584
    # DMA Unmovable: one order-8 block, below the pageblock order 9
    assert p["free.node0-DMA.Unmovable"] == 256 and p["free_hi.node0-DMA.Unmovable"] == 0
    assert p["free.node0-DMA32.Movable"] == 772808 and p["free_hi.node0-DMA32.Movable"] == 771072
    assert p["blocks.node0-Normal.Movable"] == 1330 and p["blocks.node0-Normal.Reclaimable"] == 91
    assert p["blocks.node0-DMA.Movable"] == 7


def test_pagetypeinfo_keeps_each_nodes_zones_apart():
    """On a two-node machine both nodes have a zone Normal: node 1's lines must not overwrite
    node 0's (they did when the columns were keyed by zone name alone)."""
    real = text("pagetypeinfo")
    node1 = "\n".join(
        line.replace("Node    0,", "Node    1,").replace("Node 0,", "Node 1,")
        for line in real.splitlines()
        if " ".join(line.split()).startswith("Node 0, zone Normal")
    )
    node1 = node1.replace("Movable   3629", "Movable     17")
    p = parse_pagetypeinfo(real + "\n" + node1 + "\n")
    one = parse_pagetypeinfo(real)
    assert p["free.node0-Normal.Movable"] == one["free.node0-Normal.Movable"]
    assert p["free.node1-Normal.Movable"] == one["free.node0-Normal.Movable"] - 3629 + 17
    assert p["blocks.node1-Normal.Movable"] == one["blocks.node0-Normal.Movable"]


def test_pagetypeinfo_list_too_long_to_count_is_a_lower_bound():
    """Since 5.5 the kernel prints '>100000' for a free list it stopped counting (seq_printf
    "%s%6lu ", with ">" on overflow): parsed as 100,000, the zone/type marked capped, and the
    summary says its free figure is a lower bound."""
    line = "Node    0, zone   Normal, type      Movable   3629   2005   6897"
    capped = text("pagetypeinfo").replace(line, "Node    0, zone   Normal, type      Movable >100000   2005   6897")
    p = parse_pagetypeinfo(capped)
    assert p["capped.node0-Normal.Movable"] == 1 and p["capped.node0-DMA32.Movable"] == 0
    assert (
        p["free.node0-Normal.Movable"]
        == parse_pagetypeinfo(text("pagetypeinfo"))["free.node0-Normal.Movable"] - 3629 + 100000
    )
    cols = list(p)
    arr = np.array([[0.0, *p.values()], [1.0, *p.values()]])
    notes = Pagetypeinfo.summarise_table(cols, arr, {}).notes
    assert any("Movable" in n and "lower bounds" in n for n in notes)
    assert not Pagetypeinfo.summarise_table(
        cols, np.array([[0.0, *parse_pagetypeinfo(text("pagetypeinfo")).values()]] * 2), {}
    ).notes


def test_slabinfo_bytes_per_cache():
    s = parse_slabinfo(text("slabinfo"))
    assert s["zs_handle-zswap1"] == 512 * 8 and s["ext4_groupinfo_1k"] == 50 * 160
    assert "slabinfo" not in s and "#" not in "".join(s)  # the two header lines are skipped


def test_pressure_avg10_and_total():
    out: dict[str, float] = {}
    parse_pressure(text("pressure-memory"), "sys.memory", out)
    assert out == {
        "sys.memory.some.avg10": 0.02,
        "sys.memory.some.total": 1069576,
        "sys.memory.full.avg10": 0.01,
        "sys.memory.full.total": 817635,
    }


def test_meminfo_and_vmstat():
    m = parse_meminfo(text("meminfo"))
    assert m["MemTotal"] > m["MemFree"] > 0 and "HugePages_Total" in m and "AnonHugePages" in m
    v = parse_vmstat("nr_free_pages 123\npgscan_kswapd 9\n")
    assert v == {"nr_free_pages": 123, "pgscan_kswapd": 9}
    assert parse_vmstat("nr_free_pages 123\nbroken\npgscan_kswapd 9\n") == {"nr_free_pages": 123, "pgscan_kswapd": 9}


def test_stat_cpu_seconds_counts_after_the_last_parenthesis():
    real = (KERNEL / "kswapd0-stat").read_bytes()
    assert real.startswith(b"45 (kswapd0) S") and stat_cpu_seconds(real) == 0.0
    fields = real[real.rindex(b")") + 2 :].split()
    fields[11], fields[12] = b"250", b"50"
    odd = b"77 (a) b (c)) " + b" ".join(fields)  # comm with spaces and parentheses
    assert stat_cpu_seconds(odd) == 300 / TICKS


def test_kthread_cpu_time_is_the_schedulers_own_account():
    """The CPU-time clock of a pid gives the scheduler's run time in ns (not 4 ms ticks): for this
    process it agrees with process_time()."""
    import os
    import time as _time
    from mmbench.monitors.kthreads import cpu_seconds, sched_cpu_clock

    sum(i * i for i in range(200_000))
    a, b = cpu_seconds(os.getpid()), _time.process_time()
    assert abs(a - b) < 0.05
    assert _time.clock_gettime(sched_cpu_clock(os.getpid())) >= a


def test_kthread_instructions_on_the_instruction_clock():
    import numpy as np
    from mmbench.monitors.kthreads import Kthreads

    arr = np.array([[0.0, 1.0], [1.0, 1.25], [2.0, 1.5]])
    rows = {m.name: v for m, v in Kthreads.summarise_table(["kswapd0"], arr, {"ns_per_instruction": 1}).metrics}
    assert rows["kswapd0 instructions"] == [5e8] and rows["kswapd0 CPU (s)"] == [0.5]
    assert "kswapd0 instructions" not in {m.name for m, _ in Kthreads.summarise_table(["kswapd0"], arr, {}).metrics}
