"""Issue-14 application workloads (kernbench, thpchallenge, pgbench): parsers on real captured
output (tests/data/apps/), and each workload run for real at a tiny size in a real memory cgroup."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from conftest import needs_root
from mmbench.model.params import resolve_params
from mmbench.model.sizes import parse_size
from mmbench.errors import UsageError, WorkloadError
from mmbench.run.iteration import CompanionSpec, IterationPlan, run_iteration
from mmbench.run.journal import Journal
from workload_harness import run_workload
from mmbench.plugins import workloads as registry
from mmbench.workloads.kernbench import Kernbench, parse_time, source_cache, source_tarball
from mmbench.workloads.pgbench import Pgbench, parse_latencies, parse_tps, percentile, pg_bindir, scale_for

DATA = Path(__file__).parent / "data" / "apps"
needs_linux_source = pytest.mark.skipif(source_tarball() is None, reason="needs Debian's linux-source package")
needs_postgres = pytest.mark.skipif(pg_bindir() is None, reason="needs Debian's postgresql package")


def ok(r) -> None:
    assert r.status == "ok", r.reason
    assert r.reason is None, r.reason


def raw(out: Path, name: str) -> Path:
    return out / name / "iter-0" / "raw"


@pytest.fixture
def outdir():
    # not tmp_path: the PostgreSQL server runs as the postgres user, and pytest's base folder is
    # root-only (the workload copes through CAP_DAC_READ_SEARCH; a plain folder keeps it simple)
    d = Path(tempfile.mkdtemp(prefix="mmbench-apps-", dir="/var/tmp"))
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


# -- parsers on real output (no root needed) ---------------------------------------------------


def test_parse_gnu_time_line():
    assert parse_time((DATA / "kernbench-time.txt").read_text()) == {"Elapsed": 12.17, "User": 6.69, "System": 2.06}
    # make's own noise before it and a later line win over an earlier one
    assert parse_time("Command exited with non-zero status 2\nelapsed 1.00 user 2.00 system 3.00\n")["System"] == 3.0
    with pytest.raises(WorkloadError):
        parse_time("Command terminated by signal 9\n")


def test_parse_pgbench_tps_and_log():
    assert parse_tps((DATA / "pgbench-rw.out").read_text()) == 1108.425335
    assert parse_tps("tps = 12.5 (excluding connections establishing)\n") == 12.5  # PostgreSQL <= 13
    with pytest.raises(WorkloadError):
        parse_tps("pgbench: error: connection to server failed\n")
    lat = parse_latencies((DATA / "pgbench-tx.log").read_text())
    assert len(lat) == 200
    assert lat[0] == 6.386 and min(lat) > 0
    # skipped transactions (--latency-limit) carry no latency
    assert parse_latencies("0 5 skipped 0 1795429834 641965\n0 6 250 0 1795429834 642000 12\n") == [0.25]


def test_percentile_nearest_rank():
    vals = sorted(float(x) for x in range(1, 101))
    assert (percentile(vals, 50), percentile(vals, 95), percentile(vals, 99)) == (50.0, 95.0, 99.0)
    assert percentile([7.0], 99) == 7.0


def test_pgbench_scale_follows_budget():
    p = resolve_params(Pgbench.params, {"database": "0.5x"}, parse_size("1G"), "t")
    assert scale_for(p["database"]) == 34
    assert scale_for(1) == 1


def test_bad_params_are_usage_errors():
    budget = parse_size("256M")
    with pytest.raises(UsageError, match="shared_buffers"):
        Pgbench().check(resolve_params(Pgbench.params, {"shared_buffers": "1x"}, budget, "t"), budget)
    if source_tarball() is not None:
        with pytest.raises(UsageError, match="targets"):
            Kernbench().check(resolve_params(Kernbench.params, {"targets": ["../etc"]}, budget, "t"), budget)


def test_kernbench_without_linux_source_names_the_package(monkeypatch):
    import mmbench.workloads.kernbench as kb

    monkeypatch.setattr(kb, "source_tarball", lambda: None)
    budget = parse_size("256M")
    with pytest.raises(UsageError, match="install Debian's linux-source package"):
        Kernbench().check(resolve_params(Kernbench.params, {}, budget, "t"), budget)


# -- real runs ---------------------------------------------------------------------------------


@needs_root
@needs_linux_source
def test_kernbench_builds_init(outdir):
    r = run_workload("kernbench", {"targets": ["init/"], "jobs": 2}, budget="512M", outdir=outdir)
    ok(r)
    assert r.samples["Elapsed"][0] > 0 and r.samples["User"][0] > 0
    products = (raw(outdir, "kernbench") / "kernbench-products-0.txt").read_text().split("\n")
    objs = dict(line.split() for line in products if line)
    assert "init/main.o" in objs and int(objs["init/main.o"]) > 1000
    # the build was out of tree: the cached, shared source has no objects
    assert not list(source_cache().glob("*/init/main.o"))


@needs_root
@needs_postgres
@pytest.mark.parametrize("mode", ["read-only", "read-write"])
def test_pgbench_runs_and_stops_its_server(outdir, mode):
    r = run_workload(
        "pgbench",
        {"database": "20M", "duration": "2s", "mode": mode, "shared_buffers": "16M"},
        budget="256M",
        outdir=outdir,
    )
    ok(r)
    s = r.samples
    assert s["TPS"][0] > 0
    assert 0 < s["Latency p50"][0] <= s["Latency p95"][0] <= s["Latency p99"][0]
    rawd = raw(outdir, "pgbench")
    assert (
        "select only" in (rawd / "pgbench.out").read_text()
        if mode == "read-only"
        else "TPC-B" in (rawd / "pgbench.out").read_text()
    )
    pid = int((rawd / "postgres.pid").read_text())
    # the postmaster is gone (not merely a zombie or a reused PID running postgres)
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        cmd = b""
    assert b"postgres" not in cmd
    assert "database system is shut down" in (rawd / "postgres.log").read_text()


@needs_root
@needs_linux_source
def test_thpchallenge_faults_beside_a_build(outdir):
    budget = parse_size("512M")
    main_cls, comp_cls = registry()["thpchallenge"], registry()["kernbench"]
    main_params = resolve_params(
        main_cls.params, {"size": "64M", "threads": [1], "delay": "3s", "rounds": 2, "interval": "1s"}, budget, "t"
    )
    comp_params = resolve_params(comp_cls.params, {"builds": 0, "targets": ["init/"]}, budget, "t")
    main, comp = main_cls(), comp_cls()
    journal = Journal(outdir / "journal")
    journal.acquire()
    try:
        plan = IterationPlan(
            run_name="t",
            label="thpchallenge",
            workload=main,
            params=main_params,
            metrics=main.metric_defs(main_params) + comp.metric_defs(comp_params),
            budget=budget,
            index=0,
            warmup=False,
            itdir=outdir / "thpchallenge" / "iter-0",
            rundir=outdir,
            scratch=outdir / "scratch",
            actions={"sync": True},
            companions=[CompanionSpec(comp, comp_params)],
        )
        r = run_iteration(plan, journal, log=lambda m: None)
    finally:
        journal.restore()
        journal.release()
    ok(r)
    # two rounds of 32 units of 2 MiB with one thread
    assert len(r.samples["fault-both-1"]) == 64
    assert 0 <= r.samples["Percentage huge-1"][0] <= 100
    rawd = raw(outdir, "thpchallenge")
    progress = (rawd / "kernbench.log").read_text()
    assert "build 0 building" in progress
    log = (rawd / "thpchallenge.log").read_text().splitlines()
    assert [line.split()[1] for line in log] == ["0", "1"]
    # the faults started only once the build was running
    t_build = float(next(line for line in progress.splitlines() if "build 0 building" in line).split()[0])
    assert os.path.getmtime(rawd / "thpchallenge.log") > t_build


@needs_root
def test_thpchallenge_without_a_build_says_so(outdir):
    r = run_workload(
        "thpchallenge", {"size": "8M", "threads": [1], "delay": "0s", "rounds": 1}, budget="256M", outdir=outdir
    )
    assert r.status == "failed" and "add [workload.with.kernbench]" in r.reason


@needs_root
@needs_postgres
def test_pgbench_stops_its_server_when_the_run_fails(outdir, monkeypatch):
    import mmbench.workloads.pgbench as pg

    def broken(text: str) -> float:
        raise WorkloadError("pgbench printed no tps line (test)")

    monkeypatch.setattr(pg, "parse_tps", broken)
    r = run_workload(
        "pgbench", {"database": "15M", "duration": "1s", "shared_buffers": "16M"}, budget="256M", outdir=outdir
    )
    assert r.status == "failed" and "no tps line (test)" in r.reason
    pid = int((raw(outdir, "pgbench") / "postgres.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert "database system is shut down" in (raw(outdir, "pgbench") / "postgres.log").read_text()


def test_pgbench_batched_tps_as_mmtests_extract_report():
    """MMTests' batched TPS (shellpack_src/src/pgbench/extract-report.pl) on a real 17 s aggregate log
    of pgbench 15 (-l --aggregate-interval=1): lines 1-7 skipped, lines 8-11 the dropped first batch,
    lines 12-15 the one batch: its transactions / (its last interval_start - line 11's)."""
    from mmbench.workloads.pgbench import aggregate_latency_ms, batched_tps, merge_aggregates

    text = (DATA / "pgbench-aggregate.log").read_text()
    rows = [[int(x) for x in line.split()[:3]] for line in text.splitlines()]
    assert len(rows) == 17
    want = sum(r[1] for r in rows[11:15]) / (rows[14][0] - rows[10][0])
    assert batched_tps(text) == [want]
    assert aggregate_latency_ms(text) == pytest.approx(sum(r[2] for r in rows) / sum(r[1] for r in rows) / 1000)
    # two threads' logs: the same seconds added up
    half = "".join(f"{t} {n // 2} {lat // 2}\n" for t, n, lat in rows)
    assert [int(x) for x in merge_aggregates([half, half]).splitlines()[0].split()] == [
        rows[0][0],
        rows[0][1] // 2 * 2,
        rows[0][2] // 2 * 2,
    ]


def test_pgbench_ladder_metric_names():
    p = {"clients": [0], "ladder": True, "batched": True}
    assert Pgbench.client_counts(p, topology=(2, 1, 2, 2)) == [1, 2, 3, 4]
    assert Pgbench.client_counts(p, topology=(8, 2, 8, 8)) == [1, 2, 3, 5, 6, 8, 10, 13, 15, 16]
    names = [m.name for m in Pgbench().metric_defs(p)]
    assert names[:3] == ["TPS-1", "TPS batched-1", "Latency mean-1"]
    assert len(names) == 3 * len(Pgbench.client_counts(p))
    assert [m.name for m in Pgbench().metric_defs({"clients": [0]})] == [
        "TPS",
        "Latency p50",
        "Latency p95",
        "Latency p99",
    ]
    assert Pgbench.client_counts({"clients": [0, 3]}, ncpus=2) == [2, 3]


@pytest.mark.parametrize(
    "topology, low, expected",
    [
        # (CPUs, SMT, LLC, node weights), first rung: bin/generate-stride-range of MMTests 638401e0 run
        # with these weights, --min low --max 2xCPUs (pgbench's client walk from 1, will-it-scale's from 2)
        ((2, 1, 2, 2), 1, [1, 2, 3, 4]),
        ((2, 1, 2, 2), 2, [2, 3, 4]),
        ((4, 2, 4, 4), 1, [1, 2, 3, 4, 5, 6, 7, 8]),
        ((6, 1, 6, 6), 1, [1, 2, 3, 4, 5, 6, 8, 10, 12]),
        ((8, 2, 8, 8), 1, [1, 2, 3, 5, 6, 8, 10, 13, 15, 16]),
        ((12, 1, 12, 12), 2, [2, 3, 6, 9, 11, 12, 16, 20, 24]),
        ((16, 2, 16, 16), 1, [1, 2, 5, 9, 12, 16, 21, 26, 31, 32]),
        ((16, 2, 8, 16), 1, [1, 2, 3, 5, 6, 8, 10, 13, 15, 16, 21, 26, 31, 32]),
        ((64, 2, 32, 32), 1, [1, 2, 9, 17, 24, 32, 48, 64, 85, 106, 127, 128]),
        ((64, 2, 8, 32), 2, [2, 3, 5, 6, 8, 12, 16, 20, 24, 28, 32, 48, 64, 85, 106, 127, 128]),
        ((128, 2, 16, 64), 1, [1, 2, 5, 9, 12, 16, 24, 32, 40, 48, 56, 64, 96, 128, 170, 213, 255, 256]),
    ],
)
def test_topology_walk_as_mmtests(topology, low, expected):
    """MMTests' threads_topology_walk (bin/generate-stride-range), the rungs its pgbench and
    will-it-scale configs walk; the expected lists are what MMTests' script printed."""
    from mmbench.workloads._topology import topology_walk

    assert topology_walk(low, 2 * topology[0], topology) == expected


def test_kernbench_job_ladder_as_mmtests():
    """MMTests' kernbench ladder (config-workload-kernbench): threads_powertwo from NCPU/LLCs/4 to
    NCPU, a first rung below 4 replaced by NCPU (so -jNCPU alone below 16 CPUs per LLC; our 2-CPU
    machines build at -j2 only), metrics named as its time-<J>-<I> files give them (Elapsed-<J> ...)."""
    assert Kernbench.job_ladder({"ladder": True}, 2, llcs=1) == [2]
    assert Kernbench.job_ladder({"ladder": True}, 12, llcs=1) == [12]
    assert Kernbench.job_ladder({"ladder": True}, 16, llcs=1) == [4, 8, 16]
    assert Kernbench.job_ladder({"ladder": True}, 64, llcs=1) == [16, 32, 64]
    assert Kernbench.job_ladder({"ladder": True}, 64, llcs=2) == [8, 16, 32, 64]
    assert Kernbench.job_ladder({"ladder": True}, 64, llcs=8) == [64]
    assert Kernbench.job_ladder({"ladder": False}, 12) is None
    names = [m.name for m in Kernbench().metric_defs({"ladder": True, "builds": 1})]
    assert len(names) == 3 * len(Kernbench.job_ladder({"ladder": True})) and all("-" in n for n in names)
    with pytest.raises(UsageError, match="companion"):
        Kernbench().check({"ladder": True, "builds": 0, "targets": ["vmlinux"]}, 1 << 30)


def test_kernbench_llc_count(tmp_path):
    """NUM_LLCS as MMTests counts it: distinct shared_cpu_list values of the highest cache index;
    1 without cache information."""
    from mmbench.workloads._topology import llc_count

    assert llc_count(tmp_path) == 1
    for cpu in range(4):
        for idx, shared in ((0, str(cpu)), (2, "0-1" if cpu < 2 else "2-3")):
            d = tmp_path / f"cpu{cpu}" / "cache" / f"index{idx}"
            d.mkdir(parents=True)
            (d / "shared_cpu_list").write_text(shared + "\n")
    assert llc_count(tmp_path) == 2
