"""Issue-5 workloads (largecopy, applaunch, postmark, simoop, pagealloc): each runs for real at a
tiny size in a real memory cgroup and must report plausible metrics; parsers on known text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import needs_root
from mmbench.model.params import resolve_params
from mmbench.errors import WorkloadError
from mmbench.model.sizes import parse_size
from mmbench.run.iteration import CompanionSpec, IterationPlan, run_iteration
from mmbench.run.journal import Journal
from workload_harness import run_workload
from mmbench.workloads import applaunch as applaunch_mod
from mmbench.plugins import workloads as registry
from mmbench.workloads._largecopy_gen import generate
from mmbench.workloads.largecopy import PHASES
from mmbench.workloads.postmark import parse_postmark
from mmbench.workloads.simoop import parse_simoop, parse_simoop_notes

POSTMARK_OUT = """\
Time:
\t40 seconds total
\t37 seconds of transactions (1351 per second)

Files:
\t29951 created (748 per second)
\t\tCreation alone: 5000 files (1666 per second)
\t\tMixed with transactions: 24951 files (674 per second)
\t24983 read (675 per second)
\t25016 appended (676 per second)
\t29951 deleted (749 per second)
\t\tDeletion alone: 4902 files (4902 per second)
\t\tMixed with transactions: 25049 files (677 per second)

Data:
\t3162.21 megabytes read (79.05 megabytes per second)
\t3751.60 megabytes written (93.79 megabytes per second)
"""


def raw(tmp_path: Path, name: str) -> Path:
    return tmp_path / name / "iter-0" / "raw"


def ok(r) -> None:
    assert r.status == "ok", r.reason
    assert r.reason is None, r.reason


# -- parsers and generator (no root needed) ----------------------------------------------------


def test_parse_postmark_known_output():
    m = parse_postmark(POSTMARK_OUT)
    assert m == {
        "Transactions/s": 1351.0,
        "Files created/s": 748.0,
        "Files deleted/s": 749.0,
        "Data read MB/s": 79.05,
        "Data written MB/s": 93.79,
    }


def test_parse_postmark_scales_small_data_units():
    text = POSTMARK_OUT.replace(
        "3162.21 megabytes read (79.05 megabytes per second)", "608.66 kilobytes read (512.00 kilobytes per second)"
    )
    assert parse_postmark(text)["Data read MB/s"] == 0.5


def test_parse_simoop_skips_warmup_and_empty_ops():
    text = "\n".join(
        [
            "setup files 2 size 1 seconds 0.1",
            "Read latency usec: (p50: 1) (p95: 2) (p99: 3) (max: 4) count 9",  # before warm-up: ignored
            "warmup complete",
            "interval 1 seconds 1.0",
            "Read latency usec: (p50: 10) (p95: 20) (p99: 30) (max: 40) count 5",
            "Write latency usec: (p50: -1) (p95: -1) (p99: -1) (max: -1) count 0",
            "Allocation latency usec: (p50: 100) (p95: 200) (p99: 300) (max: 400) count 200",
            "rates work/s 1000.000 stalls/s 0.500",
            "interval 2 seconds 0.5",
            "Read latency usec: (p50: 11) (p95: 21) (p99: 31) (max: 41) count 25",
            "rates work/s 900.000 stalls/s 0.000",
            "done intervals 2",
        ]
    )
    s, notes = parse_simoop_notes(text)
    assert s["p50-Read"] == [10, 11] and s["max-Read"] == [40, 41]
    assert "p50-Write" not in s and s["Write ops/s"] == [0]
    assert s["p99-Allocation"] == [300] and s["Allocation ops/s"] == [200]
    # a percentile needs enough ops in its interval: 5 reads make no p95, 25 no p99
    assert s["p95-Read"] == [21] and "p99-Read" not in s and s["Read ops/s"] == [5, 50]
    assert notes == [
        "p95-Read: left out of 1 of 2 intervals (fewer than 20 read ops in the interval)",
        "p99-Read: left out of 2 of 2 intervals (fewer than 100 read ops in the interval)",
    ]
    assert s["work/s"] == [1000, 900] and s["stalls/s"] == [0.5, 0]
    assert parse_simoop(text) == s


def test_parse_simoop_warmup_that_never_ended_is_a_failure():
    text = (
        "setup files 2 size 1 seconds 0.1\nwarmup incomplete: 1 of 2 workers and 3 of 3 "
        "readers/writers/allocators had done work after 600.1 s (limit 600 s)\n"
    )
    with pytest.raises(WorkloadError, match=r"^simoop warmup incomplete: 1 of 2 workers .* no measurement"):
        parse_simoop(text)
    with pytest.raises(WorkloadError, match="never completed its warm-up"):
        parse_simoop("setup files 2 size 1 seconds 0.1\n")


def test_largecopy_source_is_deterministic(tmp_path):
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    na = generate(str(a), 1 << 20, 7)
    nb = generate(str(b), 1 << 20, 7)
    assert na == nb and na[1] == 1 << 20 and na[0] > 20
    assert a.read_bytes() == b.read_bytes()
    generate(str(b), 1 << 20, 8)
    assert a.read_bytes() != b.read_bytes()


# -- real runs ------------------------------------------------------------------------------------


@needs_root
def test_largecopy_phases(tmp_path):
    r = run_workload("largecopy", {"source": "4M", "target": "24M"}, budget="128M", outdir=tmp_path)
    ok(r)
    assert set(r.samples) == set(PHASES)
    for phase in PHASES:
        (v,) = r.samples[phase]
        assert 0 < v < 120, (phase, v)
    log = (raw(tmp_path, "largecopy") / "largecopy.log").read_text()
    assert "5 copies" in log and "via http://127.0.0.1:" in log
    assert "GET /src-" in (raw(tmp_path, "largecopy") / "largecopy-httpd.log").read_text()


@needs_root
def test_applaunch_standalone(tmp_path):
    apps = ["browser-table", "python-import", "terminal-find"]
    # Chromium (~150 MB of binary and libraries, charged to the sandbox when its page cache was
    # reclaimed, e.g. by DAMON after 30 s idle) plus its heap thrashes in 256M: give it 1G.
    r = run_workload(
        "applaunch",
        {
            "duration": "120s",
            "launches": 2,
            "pause": "0s",
            "discard_first": False,
            "apps": apps,
            "find_root": "/usr/share/doc",
        },
        budget="1G",
        outdir=tmp_path,
    )
    ok(r)
    log = (raw(tmp_path, "applaunch") / "applaunch.log").read_text()
    expect = apps if applaunch_mod.find_chromium() else apps[1:]
    assert sorted(r.samples) == sorted(expect), log
    for app in expect:
        assert all(1 < ms < 60000 for ms in r.samples[app]), (app, r.samples[app])
    assert " ok\n" in log
    assert all(len(v) <= 2 for v in r.samples.values())


@needs_root
def test_applaunch_duration_stops_a_running_launch(tmp_path):
    r = run_workload(
        "applaunch",
        {"duration": "1s", "apps": ["terminal-find"], "find_root": "/", "discard_first": False},
        budget="256M",
        outdir=tmp_path,
    )
    assert r.duration["elapsed"] < 1 + 3  # a launch running at the deadline is stopped, not waited for
    log = (raw(tmp_path, "applaunch") / "applaunch.log").read_text()
    assert "terminal-find " in log  # ok, or interrupted when find / takes longer than the 1 s
    if r.samples.get("terminal-find"):
        ok(r)
    else:  # no launch finished: an iteration that measured nothing fails (issue 22 item 7)
        assert "terminal-find" in log and " interrupted" in log, log
        assert r.status == "failed" and r.reason.startswith("did no work: 'terminal-find' has no samples"), r.reason


@needs_root
def test_applaunch_without_chromium_skips_the_browser(tmp_path, monkeypatch):
    monkeypatch.setattr(applaunch_mod, "find_chromium", lambda: None)
    params = {"duration": "2s", "pause": "0s", "discard_first": False, "apps": ["browser-table", "python-import"]}
    resolved = resolve_params(applaunch_mod.Applaunch.params, params, 1 << 28, "t")
    assert [m.name for m in applaunch_mod.Applaunch().metric_defs(resolved)] == ["python-import"]
    r = run_workload("applaunch", params, budget="256M", outdir=tmp_path)
    ok(r)
    assert list(r.samples) == ["python-import"]
    log = (raw(tmp_path, "applaunch") / "applaunch.log").read_text()
    assert log.count("browser-table skipped: Chromium is not installed") == 1


@needs_root
def test_applaunch_as_companion_merges_samples(tmp_path):
    budget = parse_size("256M")
    main_cls, comp_cls = registry()["simoop"], registry()["applaunch"]
    main_params = resolve_params(
        main_cls.params,
        {"runtime": "3s", "warmup_time": "1s", "interval": "1s", "wss": "0.2x", "files": "32M"},
        budget,
        "t",
    )
    comp_params = resolve_params(
        comp_cls.params, {"apps": ["python-import"], "pause": "0s", "discard_first": False}, budget, "t"
    )
    main, comp = main_cls(), comp_cls()
    journal = Journal(tmp_path / "journal")
    journal.acquire()
    try:
        plan = IterationPlan(
            run_name="t",
            label="simoop",
            workload=main,
            params=main_params,
            metrics=main.metric_defs(main_params) + comp.metric_defs(comp_params),
            budget=budget,
            index=0,
            warmup=False,
            itdir=tmp_path / "simoop" / "iter-0",
            rundir=tmp_path,
            scratch=tmp_path / "scratch",
            actions={"sync": True},
            companions=[CompanionSpec(comp, comp_params)],
        )
        r = run_iteration(plan, journal, log=lambda m: None)
    finally:
        journal.restore()
        journal.release()
    ok(r)
    assert len(r.samples["python-import"]) >= 2
    assert len(r.samples["p50-Read"]) == 3
    assert r.duration["elapsed"] < 30  # the companion stopped when simoop finished


@needs_root
@pytest.mark.skipif(shutil.which("postmark") is None, reason="postmark not installed (apt-get install postmark)")
def test_postmark_with_anon_hog(tmp_path):
    r = run_workload(
        "postmark",
        {"fileset": "0.5x", "transactions": 3000, "hog": "0.25x", "hog_period": "200ms"},
        budget="256M",
        outdir=tmp_path,
    )
    ok(r)
    assert set(r.samples) == {
        "Transactions/s",
        "Files created/s",
        "Files deleted/s",
        "Data read MB/s",
        "Data written MB/s",
    }
    assert all(v[0] > 0 for v in r.samples.values())
    cfg = (raw(tmp_path, "postmark") / "postmark.cfg").read_text()
    assert "set transactions 3000" in cfg and "set number 507" in cfg
    hog = (raw(tmp_path, "postmark") / "anonhog.out").read_text()
    assert hog.startswith("ready") and "done rewrites" in hog


@needs_root
def test_simoop_intervals(tmp_path):
    r = run_workload(
        "simoop",
        {"runtime": "3s", "warmup_time": "1s", "interval": "1s", "wss": "0.25x", "files": "64M"},
        budget="256M",
        outdir=tmp_path,
    )
    ok(r)
    for op in ("Read", "Write", "Allocation"):
        assert len(r.samples[f"{op} ops/s"]) == 3 and all(n > 0 for n in r.samples[f"{op} ops/s"])
        p50, mx = r.samples[f"p50-{op}"], r.samples[f"max-{op}"]
        assert len(p50) == len(mx) == 3
        for a, d in zip(p50, mx):
            assert 0 <= a <= d < 60e6, (op, a, d)
    for a, b, c in zip(r.samples["p50-Read"], r.samples["p95-Read"], r.samples["p99-Read"]):
        assert a <= b <= c  # reads are many per interval: every percentile is kept
    assert all(w > 0 for w in r.samples["work/s"]) and len(r.samples["stalls/s"]) == 3
    out = (raw(tmp_path, "simoop") / "simoop.out").read_text()
    assert "warmup complete seconds" in out
    assert (raw(tmp_path, "simoop") / "simoop-notes.txt").exists()


@needs_root
def test_simoop_warmup_limit_fails_the_iteration(tmp_path):
    # the working set cannot be faulted in within a zero limit: no measurement, a reason
    r = run_workload(
        "simoop",
        {
            "runtime": "1s",
            "warmup_time": "0s",
            "warmup_limit": "0s",
            "interval": "1s",
            "wss": "0.5x",
            "files": "16M",
            "file_size": "8M",
        },
        budget="256M",
        outdir=tmp_path,
    )
    assert r.status == "failed" and r.samples == {}
    assert r.reason.startswith("simoop warmup incomplete: ") and "no measurement" in r.reason, r.reason


@needs_root
def test_pagealloc_throughput_and_system_time(tmp_path):
    r = run_workload("pagealloc", {"size": "2x"}, budget="128M", outdir=tmp_path)
    ok(r)
    assert set(r.samples) == {"Write throughput", "Read throughput", "Anon churn throughput", "Total throughput"}
    assert all(10 < v[0] < 1e6 for v in r.samples.values()), r.samples
    assert r.duration["system"] > 0.05
    assert "write bytes 268435456" in (raw(tmp_path, "pagealloc") / "pagealloc.out").read_text()
