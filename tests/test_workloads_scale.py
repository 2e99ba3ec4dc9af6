"""pfscale and vmscale (issue 14, item 1): real runs at a tiny size in a real memory cgroup, the
parsers, and strict arguments of their C programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import needs_root
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.params import resolve_params
from mmbench.cbuild import binary_for
from workload_harness import run_workload
from mmbench.workloads.pfscale import Pfscale, parse_pfscale
from mmbench.workloads.usemem import swap_free_bytes
from mmbench.workloads.vmscale import Vmscale, parse_vmscale, reclaim_events

ROOT = Path(__file__).resolve().parent.parent / "mmbench" / "workloads"


def ok(r) -> None:
    assert r.status == "ok", r.reason
    assert r.reason is None, r.reason


# -- parsers and checks (no root needed) --------------------------------------------------------


def test_parse_pfscale():
    assert parse_pfscale("result tasks 2 faults 1000 pages 3000 ns 500000000\n") == {
        "tasks": 2,
        "faults": 1000,
        "pages": 3000,
        "ns": 500000000,
        "samples": [],
    }
    assert parse_pfscale("sample ns 10 pages 4\nsample ns 9 pages 3\nresult tasks 2 faults 7 pages 7 ns 19\n")[
        "samples"
    ] == [(10, 4), (9, 3)]
    with pytest.raises(WorkloadError):
        parse_pfscale("")


def test_parse_vmscale_reclaim_prefers_pgsteal():
    r = parse_vmscale("result bytes 4096 ns 10 pgscan 7 pgsteal 5 pgpgout 9\ntasks 8 10\n")
    assert reclaim_events(r) == 5 and r["task_ns"] == [8, 10]
    assert reclaim_events({**r, "pgsteal": -1}) == 9
    assert reclaim_events({**r, "pgsteal": -1, "pgpgout": -1}) is None
    with pytest.raises(WorkloadError):
        parse_vmscale("result bytes 4096\n")
    with pytest.raises(WorkloadError, match="per-task"):  # an older vmscale.c's output
        parse_vmscale("result bytes 4096 ns 10 pgscan 7 pgsteal 5 pgpgout 9\n")


def test_pfscale_ladder_and_budget_check():
    params = resolve_params(Pfscale.params, {"tasks": [1, 2, 4], "case": 2, "map_size": "64M"}, 1 << 30, "t")
    assert [m.name for m in Pfscale().metric_defs(params)] == [
        "faults/sec-1",
        "pages/sec-1",
        "faults/sec-2",
        "pages/sec-2",
        "faults/sec-4",
        "pages/sec-4",
    ]
    with pytest.raises(UsageError, match="map_size"):
        Pfscale().check({**params, "map_size": 128 << 20}, 1 << 30)  # 4 x 2 x 128M > 0.9G
    with pytest.raises(UsageError, match="case"):
        resolve_params(Pfscale.params, {"case": 4}, 1 << 30, "t")


def test_pfscale_mmtests_walk():
    """ladder = true is MMTests' will-it-scale-pf walk, WIS_MIN_THREADS=2 .. 2xNCPU through the
    topology: 2, 3, 4 on a flat 2-CPU machine (what MMTests' generate-stride-range prints for it)."""
    from mmbench.workloads.pfscale import task_ladder

    assert task_ladder({"ladder": True}, 2) == [2, 3, 4]
    assert task_ladder({"ladder": True}, 4)[0] == 2 and task_ladder({"ladder": True}, 4)[-1] == 8
    assert task_ladder({}, 2) == [1, 2]
    with pytest.raises(UsageError, match="tasks or ladder"):
        Pfscale().check({"ladder": True, "tasks": [1], "map_size": 4096, "case": 1}, 1 << 30)


def test_vmscale_cases_are_checked():
    with pytest.raises(UsageError, match="not one of"):
        resolve_params(Vmscale.params, {"case": ["anon-w-seq", "anon-w-sequential"]}, 1 << 30, "t")
    params = resolve_params(Vmscale.params, {"case": "lru-file-readonce"}, 1 << 30, "t")
    assert [m.name for m in Vmscale().metric_defs(params)] == [
        "total-throughput-lru-file-readonce",
        "sum-task-throughput-lru-file-readonce",
        "reclaim-lru-file-readonce",
    ]
    with pytest.raises(UsageError, match="anon_size"):
        Vmscale().check({**params, "anon_size": 1 << 30}, 1 << 30)


@pytest.mark.parametrize(
    "prog,argv,what",
    [
        ("pfscale", ["4", "threads", "1", "4096", "0", "1", "/tmp", "0"], "CASE"),
        ("pfscale", ["1", "forks", "1", "4096", "0", "1", "/tmp", "0"], "MODE"),
        ("pfscale", ["1", "threads", "2x", "4096", "0", "1", "/tmp", "0"], "TASKS"),
        ("pfscale", ["1", "threads", "1", "4095", "0", "1", "/tmp", "0"], "MAP_BYTES"),
        ("pfscale", ["1", "threads", "1", "4096", "0", "1s", "/tmp", "0"], "DURATION_S"),
        ("pfscale", ["1", "threads", "1", "4096", "-1", "1", "/tmp", "0"], "WARMUP_S"),
        ("pfscale", ["1", "threads", "1", "4096", "0", "1", "/nonexistent", "0"], "DIR"),
        ("pfscale", ["1", "threads", "1"], "usage"),
        ("vmscale", ["anon-w-sequential", "1", "4096", "/tmp", "-"], "CASE"),
        ("vmscale", ["anon-w-seq", "0", "4096", "/tmp", "-"], "TASKS"),
        ("vmscale", ["anon-w-seq", "1", "4k", "/tmp", "-"], "BYTES"),
        ("vmscale", ["anon-w-seq", "2", "4096", "/tmp", "-"], "BYTES"),
        ("vmscale", ["anon-w-seq", "1", "4096", "/tmp", "/nonexistent/memory.stat"], "MEMORY_STAT"),
    ],
)
def test_garbage_arguments_are_errors(prog, argv, what):
    proc = subprocess.run([binary_for(ROOT / f"{prog}.c"), *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_pfscale_per_second_samples(tmp_path):
    """sample = 0.25s: one pages/sec sample per interval (will-it-scale's per-second figures) whose
    pages add up to the window's, and faults/sec still one figure for the window."""
    r = run_workload(
        "pfscale",
        {"tasks": [2], "map_size": "4M", "warmup_time": "0.1s", "duration": "0.75s", "sample": "0.25s"},
        budget="128M",
        outdir=tmp_path,
    )
    ok(r)
    assert len(r.samples["faults/sec-2"]) == 1 and len(r.samples["pages/sec-2"]) == 3
    out = parse_pfscale((tmp_path / "pfscale" / "iter-0" / "raw" / "pfscale-2.out").read_text())
    assert len(out["samples"]) == 3 and sum(ns for ns, _ in out["samples"]) == pytest.approx(out["ns"], rel=0.05)
    # live reads vs the tasks' epoch snapshots: they differ by what was written in between
    assert abs(sum(pg for _, pg in out["samples"]) - out["pages"]) <= max(64, 0.02 * out["pages"])
    assert all(v > 1000 for v in r.samples["pages/sec-2"])


def test_pfscale_child_failure_does_not_hang(tmp_path):
    """A task process that dies mid-run makes pfscale exit 1 at once, not wait on it."""
    binary = binary_for(ROOT / "pfscale.c")
    proc = subprocess.Popen(
        [binary, "1", "processes", "2", "1048576", "0", "30", str(tmp_path), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        children: list[int] = []
        for _ in range(200):
            children = [int(x) for x in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
            if len(children) == 2:
                break
            subprocess.run(["sleep", "0.01"])
        assert len(children) == 2
        subprocess.run(["kill", "-9", str(children[0])])
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "killed by signal 9" in err and "result" not in out


# -- real runs ------------------------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("case,mode", [(1, "processes"), (2, "threads"), (3, "processes")])
def test_pfscale_ladder(tmp_path, case, mode):
    r = run_workload(
        "pfscale",
        {"case": case, "mode": mode, "tasks": [1, 2], "map_size": "4M", "warmup_time": "0.1s", "duration": "0.4s"},
        budget="128M",
        outdir=tmp_path,
    )
    ok(r)
    assert sorted(r.samples) == ["faults/sec-1", "faults/sec-2", "pages/sec-1", "pages/sec-2"]
    for name, (v,) in r.samples.items():
        assert v > 1000, (name, v)  # a 4 KiB fault costs well under a millisecond
    for n in (1, 2):
        faults, pages = r.samples[f"faults/sec-{n}"][0], r.samples[f"pages/sec-{n}"][0]
        if case in (1, 2):  # anonymous (THP off) and COW faults: one fault per page (1%: a stray
            assert abs(faults / pages - 1) < 0.01, (n, faults, pages)  # stack or slot fault)
        else:  # a fault may map a whole large folio: never (noticeably) more faults than pages
            assert faults <= pages * 1.01, (n, faults, pages)
    raw = tmp_path / "pfscale" / "iter-0" / "raw"
    assert "result tasks 2 faults" in (raw / "pfscale-2.out").read_text()
    assert not list((tmp_path / "scratch").glob("*/pfscale-*"))  # task files unlinked


@needs_root
def test_vmscale_cases_and_reclaim(tmp_path):
    budget = 64 << 20
    r = run_workload("vmscale", {"tasks": 2, "anon_size": "0.25x", "file_size": "2x"}, budget=budget, outdir=tmp_path)
    ok(r)
    cases = ["anon-w-seq", "anon-w-rand", "lru-file-mmap-read", "lru-file-readonce"]
    assert sorted(r.samples) == sorted(
        [f"total-throughput-{c}" for c in cases]
        + [f"reclaim-{c}" for c in cases]
        + [f"sum-task-throughput-{c}" for c in cases]
    )
    for c in cases:
        (v,) = r.samples[f"total-throughput-{c}"]
        (summed,) = r.samples[f"sum-task-throughput-{c}"]
        assert v > 1024, (c, v)  # more than 1 MB/s
        # each task's own time is at most the time to the slowest task's end, so the sum of the
        # tasks' rates is at least the total rate (equal when both tasks end together)
        assert summed >= v * 0.999, (c, summed, v)
    # 128 MiB of sparse file read through a 64 MiB memcg: it must have reclaimed page cache (at
    # least 64 MiB, in events of one folio of at most 2 MiB each on v1).
    for c in ("lru-file-mmap-read", "lru-file-readonce"):
        (n,) = r.samples[f"reclaim-{c}"]
        assert n >= 32, (c, n)
    # The anon-w regions fit: nothing to reclaim beyond stray page cache.
    assert r.samples["reclaim-anon-w-seq"][0] < 256


@needs_root
def test_vmscale_reclaim_in_whole_machine_mode(tmp_path):
    """In a VM guest (whole-machine mode) there is no memcg: reclaim is the machine's, from
    /proc/vmstat, not absent."""
    r = run_workload(
        "vmscale",
        {"case": ["anon-w-seq"], "tasks": 1, "anon_size": "0.1x"},
        budget="128M",
        outdir=tmp_path,
        sandbox="none",
    )
    ok(r)
    (n,) = r.samples["reclaim-anon-w-seq"]
    assert n >= 0
    out = (tmp_path / "vmscale" / "iter-0" / "raw" / "vmscale-anon-w-seq.out").read_text()
    assert " pgpgout -1" in out and " pgsteal -1" not in out  # /proc/vmstat's pgpgout is KiB to disk


@needs_root
@pytest.mark.skipif(swap_free_bytes() > 0, reason="swap is active (someone else's): the refusal is not testable")
def test_vmscale_anon_lru_without_swap_is_refused(tmp_path):
    r = run_workload("vmscale", {"case": ["anon-lru"]}, budget="64M", outdir=tmp_path)
    assert r.status != "ok" and "needs active swap" in r.reason
