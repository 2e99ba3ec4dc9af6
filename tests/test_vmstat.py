"""vmstat rows from two real /proc/vmstat snapshots of a 6.18 kernel (taken around a memcg-limited
(64M, cgroup v1) file write+read, anonymous faults and ``echo 1 > /proc/sys/vm/compact_memory``),
checked against values computed by hand from the two files, plus synthetic old-kernel deltas."""

from pathlib import Path

import pytest

from mmbench.analysis import vmstat as vm
from mmbench.model.kernel import parse_vmstat, vmstat_delta

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def real():
    before = parse_vmstat((DATA / "vmstat-before.txt").read_text())
    after = parse_vmstat((DATA / "vmstat-after.txt").read_text())
    return vmstat_delta(before, after)


def test_real_counts(real):
    rows = vm.derive(real, elapsed=4.0)
    assert rows["Minor Faults"] == (1192274 - 1099926) - (822 - 816)
    assert rows["Major Faults"] == 822 - 816
    assert rows["Pages scanned file"] == 137260
    assert rows["Pages reclaimed file"] == 115223
    assert rows["Pages scanned anon"] == 0
    # limit reclaim = all − kswapd − direct − khugepaged − proactive (all 0 here)
    assert rows["Memcg limit pages scanned"] == 137260
    assert rows["Memcg efficiency %"] == pytest.approx(100 * 115223 / 137260)
    assert rows["Compaction migrate scanned"] == 2728990 - 1191455
    assert rows["Compaction free scanned"] == 51150 - 30035
    assert rows["Compaction pages isolated"] == 26690 - 12092
    assert rows["Page migrate success"] == 13222 - 5990
    assert rows["Page migrate failure"] == 99 - 65
    assert rows["Sector Reads"] == 1272201 - 1009409
    assert rows["Sector Writes"] == 905584 - 643104
    assert rows["Workingset refaults file"] == 122225 - 56682
    assert rows["Page reclaim immediate"] == 3899 - 2107
    assert rows["Allocation stalls"] == 0
    assert rows["THP split"] == 0  # thp_split_page on this kernel
    assert rows["NUMA alloc hit %"] == 100.0 and rows["NUMA alloc local %"] == 100.0  # shares, not volume
    assert "NUMA alloc hit" not in rows and "NUMA interleave hit" not in rows


def test_real_undefined_rows_omitted(real):
    rows = vm.derive(real, elapsed=4.0)
    # no kswapd/direct scanning, no compaction stall: ratios undefined → omitted, not 100
    for name in ("Kswapd efficiency %", "Direct efficiency %", "Percentage direct scans", "Compaction efficiency"):
        assert name not in rows
    assert rows["Kswapd velocity"] == 0.0
    assert "NUMA alloc miss" not in rows  # NUMA rows only when non-zero
    assert "Fragmentation stalls" not in rows
    assert "Kswapd velocity" not in vm.derive(real, elapsed=None)
    assert "Kswapd velocity" not in vm.derive(real, elapsed=0)


def test_missing_counters_omit_rows():
    rows = vm.derive({"pgfault": 10, "pgmajfault": 1})
    assert rows == {"Minor Faults": 9.0, "Major Faults": 1.0}


def test_allocstall_zones_summed_not_overwritten():
    d = {"allocstall_dma32": 3, "allocstall_normal": 5, "allocstall_movable": 7}
    assert vm.derive(d)["Allocation stalls"] == 15
    assert vm.derive({"allocstall": 4})["Allocation stalls"] == 4  # < 4.8


def test_zone_based_reclaim_pre_4_8():
    d = {
        "pgscan_kswapd_dma32": 100,
        "pgscan_kswapd_normal": 300,
        "pgsteal_kswapd_dma32": 50,
        "pgsteal_kswapd_normal": 250,
        "pgscan_direct_normal": 100,
        "pgsteal_direct_normal": 25,
        "pgscan_direct_throttle": 99,
    }  # events, never summed
    rows = vm.derive(d, elapsed=10.0)
    assert rows["Kswapd pages scanned"] == 400
    assert rows["Kswapd pages reclaimed"] == 300
    assert rows["Kswapd efficiency %"] == 75.0
    assert rows["Direct pages scanned"] == 100
    assert rows["Direct efficiency %"] == 25.0
    assert rows["Kswapd velocity"] == 40.0
    assert rows["Direct velocity"] == 10.0
    assert rows["Percentage direct scans"] == 20.0


def test_pre_3_4_pgsteal_zone_minus_kswapd_steal():
    d = {"pgsteal_normal": 500, "pgsteal_dma32": 100, "kswapd_steal": 450}
    rows = vm.derive(d)
    assert rows["Kswapd pages reclaimed"] == 450
    assert rows["Direct pages reclaimed"] == 150


def test_renames():
    assert vm.derive({"thp_split": 3})["THP split"] == 3  # < 4.5
    assert vm.derive({"thp_split_page": 4})["THP split"] == 4
    assert vm.derive({"workingset_refault": 9})["Workingset refaults file"] == 9  # < 5.9


def test_writes_compaction_numa():
    d = {
        "nr_vmscan_write": 100,
        "pswpout": 30,
        "compact_stall": 4,
        "compact_success": 1,
        "compact_fail": 3,
        "numa_pte_updates": 1124,
        "numa_huge_pte_updates": 2,
        "numa_hint_faults": 10,
        "numa_hint_faults_local": 7,
        "zswpin": 2,
        "zswpout": 5,
    }
    rows = vm.derive(d)
    assert rows["Page writes by reclaim"] == 100
    assert rows["Page writes file"] == 70
    assert rows["Page writes anon"] == 30
    assert rows["Compaction efficiency"] == 25.0
    # as MMTests (issue 13 item 8): the raw counter is the range, PTEs exclude 512 per PMD
    assert rows["NUMA base-page range updates"] == 1124
    assert rows["NUMA PTE updates"] == 1124 - 1024 and rows["NUMA PMD updates"] == 2
    assert rows["NUMA hint local percent"] == 70.0
    assert rows["Zswap ins"] == 2 and rows["Zswap outs"] == 5


def test_mean_deltas():
    assert vm.mean_deltas([{"a": 1, "b": 4}, {"a": 3}]) == {"a": 2.0, "b": 4.0}


def test_memcg_limit_rows_of_mean_deltas_are_exactly_zero():
    """Seed004's A/A pair printed "Memcg limit pages scanned 2.32e-11": all − kswapd − direct of
    mean deltas (895707.4 − 894953.2 − 754.2) is 0 per iteration and must be 0, not float dust."""
    from mmbench.analysis.vmstat import derive, mean_deltas

    its = [
        {
            "pgscan_anon": 0,
            "pgscan_file": f,
            "pgscan_kswapd": k,
            "pgscan_direct": f - k,
            "pgsteal_anon": 0,
            "pgsteal_file": f,
            "pgsteal_kswapd": k,
            "pgsteal_direct": f - k,
        }
        for f, k in ((895707, 894953), (904828, 904449), (900001, 899000), (774366, 773000), (1, 0))
    ]
    rows = derive(mean_deltas(its))
    assert rows["Memcg limit pages scanned"] == 0.0 and rows["Memcg limit pages reclaimed"] == 0.0
    its[0]["pgscan_file"] += 5  # a real remainder (5 pages in one of 5 iterations) stays
    assert derive(mean_deltas(its))["Memcg limit pages scanned"] == pytest.approx(1.0)


def test_rows_whose_meaning_changed_between_the_kernels_say_so():
    """Runs on 6.1 and 6.12: rows counting differently on the two (model.quirks.ROW_MEANING_CHANGES)
    carry a note and the comparison's notes say what changed; runs on one side of every change
    (6.12 against 6.18 for these rows) get none."""
    from mmbench.analysis.compare import build_comparison
    from mmbench.model.quirks import ROW_MEANING_CHANGES, meaning_changes, release_version
    from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

    metric = MetricDef("Time", "s", "lower", "time")

    def run(name, release, delta):
        its = [
            IterationResult(
                "w",
                i,
                False,
                "ok",
                samples={"Time": [1.0 + i / 10]},
                duration={"elapsed": 1.0},
                vmstat_delta=dict(delta),
            )
            for i in range(3)
        ]
        return RunRecord(
            name,
            "complete",
            0.0,
            1.0,
            "",
            "",
            {"kernel": {"release": release}},
            {},
            [WorkloadRun("w", "pft", {}, [metric], its)],
        )

    delta = {
        "pswpout": 100,
        "pswpin": 10,
        "pgscan_direct": 50,
        "pgsteal_direct": 40,
        "pgscan_kswapd": 10,
        "thp_fault_alloc": 3,
        "nr_vmscan_write": 120,
    }
    c = build_comparison([run("v61", "6.1.192", delta), run("v612", "6.12.117", {**delta, "swpout_zero": 7})])
    rows = {r.metric: r for s in c.sections if s.title.startswith("vmstat") for r in s.rows}
    for name in ("Swap Outs", "Direct pages scanned", "THP fault alloc", "Page writes file"):
        assert "counts differently from" in rows[name].note, name
    assert "counts differently" not in rows["Kswapd pages scanned"].note
    assert rows["Swap outs zero-filled"].values == {"v61": None, "v612": 7.0}
    assert any("zero-filled page is swapped without I/O" in n and "v61 6.1.192, v612 6.12.117" in n for n in c.notes)
    same = build_comparison([run("a", "6.12.117", delta), run("b", "6.18.44-fc-v595", delta)])
    assert not any("counts differently" in r.note for s in same.sections for r in s.rows)
    # the data: every change names rows the vmstat section has, and a version
    assert {r for ch in ROW_MEANING_CHANGES for r in ch.rows} <= {r.name for r in vm.ROWS}
    assert release_version("6.1.0-47-cloud-amd64") == (6, 1) and release_version("") is None
    assert meaning_changes([(6, 1), None]) == {}


def test_real_6_12_counters_zero_filled_swap():
    """/proc/vmstat of a 6.12.117 guest around one seed002-simoop iteration (zram swap): the
    zero-filled pages swapped without I/O (swpout_zero, 6.12) are rows of their own and not in
    Swap Outs, while nr_vmscan_write counts them, so Page writes file holds them too (the
    meaning change ROW_MEANING_CHANGES names); khugepaged's reclaim has counters of its own."""
    d6 = DATA / "kernel-6.12"
    delta = vmstat_delta(
        parse_vmstat((d6 / "vmstat-before.txt").read_text()), parse_vmstat((d6 / "vmstat-after.txt").read_text())
    )
    rows = vm.derive(delta, elapsed=60.0)
    assert (rows["Swap Outs"], rows["Swap outs zero-filled"]) == (35128, 133)
    assert (rows["Swap Ins"], rows["Swap ins zero-filled"]) == (25301, 108)
    assert delta["nr_vmscan_write"] == 35327
    assert rows["Page writes file"] == 35327 - 35128 == 199  # 133 of them zero-filled anon pages
    assert rows["Zswap writebacks"] == 0 and "pgscan_khugepaged" in delta and "pgscan_proactive" not in delta
    assert rows["Direct pages scanned"] == delta["pgscan_direct"] == 27677
