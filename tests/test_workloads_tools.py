"""Workloads wrapping Debian tools (stressng: stress-ng's memory stressors; fio: buffered IO under
an anonymous hog): parsers on output captured from the real tools (tests/data/tools/), each
workload run for real at a tiny size in a real memory cgroup, bad input and a missing tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import mmbench, needs_root
from mmbench.errors import UsageError, WorkloadError
from workload_harness import run_workload
from mmbench.plugins import workloads as registry
from mmbench.workloads.fio import parse_fio_json
from mmbench.workloads.stressng import parse_stressng_yaml

DATA = Path(__file__).parent / "data" / "tools"
needs_stress_ng = pytest.mark.skipif(shutil.which("stress-ng") is None, reason="Debian's stress-ng is not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="Debian's fio is not installed")


# -- parsers on captured output (stress-ng 0.15.06, fio 3.33) -----------------------------------


def test_parse_stressng_yaml_two_stressors():
    m = parse_stressng_yaml((DATA / "stressng-vm-mmap.yaml").read_text())
    assert set(m) == {"vm", "mmap"}
    assert m["vm"] == {"real": 51765.937492, "cpu": 39221.114639, "ops": 155413.0}
    assert m["mmap"] == {"real": 3.975352, "cpu": 6.108701, "ops": 12.0}


def test_parse_stressng_yaml_bigheap():
    m = parse_stressng_yaml((DATA / "stressng-bigheap.yaml").read_text())
    assert m == {"bigheap": {"real": 47366.942979, "cpu": 23794.494187, "ops": 94915.0}}


def test_parse_stressng_yaml_rejects_broken_reports():
    with pytest.raises(WorkloadError, match="does not parse"):
        parse_stressng_yaml("metrics:\n  - stressor: vm\n   bogo-ops: [\n")
    with pytest.raises(WorkloadError, match="without bogo-ops"):
        parse_stressng_yaml("metrics:\n    - stressor: vm\n      bogo-ops: 3\n")
    # --metrics-brief leaves out a stressor that did nothing: no rows, no figures
    assert parse_stressng_yaml("---\nsystem-info:\n      cpus: 2\n...\n") == {}


def test_parse_fio_randread_json():
    m = parse_fio_json((DATA / "fio-randread.json").read_text())
    assert set(m) == {"read"}  # a read job did no writes: no write row
    r = m["read"]
    assert r["MB/s"] == pytest.approx(105576907 / (1 << 20))
    assert r["IOPS"] == pytest.approx(25775.612194)
    assert (r["p50"], r["p95"], r["p99"], r["p99.9"]) == (31.616, 50.944, 77.312, 220.16)


def test_parse_fio_write_json_with_a_note_before_it():
    text = (
        "fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n" + (DATA / "fio-write.json").read_text()
    )
    w = parse_fio_json(text)["write"]
    assert w["MB/s"] == pytest.approx(563239916 / (1 << 20))
    assert (w["p50"], w["p95"], w["p99"], w["p99.9"]) == (3.568, 5.6, 27.008, 160.768)


def test_parse_fio_json_reports_job_errors():
    doc = json.loads((DATA / "fio-write.json").read_text())
    doc["jobs"][0]["error"] = 28
    with pytest.raises(WorkloadError, match="error 28"):
        parse_fio_json(json.dumps(doc))
    with pytest.raises(WorkloadError, match="no jobs"):
        parse_fio_json('{"fio version": "fio-3.33", "jobs": []}')


# -- bad input and missing tools ------------------------------------------------------------------


@needs_stress_ng
def test_unknown_stressor_is_a_one_line_error(suite_file, results):
    cfg = suite_file(
        '[suite]\nbudget = "256M"\n[[workload]]\nname = "stressng"\n[workload.params]\nstressors = ["vm", "compcat"]\n'
    )
    proc = mmbench("run", "--config", str(cfg), "--results", str(results), "x")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "stressors: 'compcat' is not a stressor of stress-ng" in err
    assert not results.exists() or not any(results.iterdir())


@needs_stress_ng
def test_stressng_rejects_duplicates_and_tiny_memory():
    cls = registry()["stressng"]
    base = {
        "stressors": ["vm"],
        "workers": 2,
        "duration": 1.0,
        "memory": 64 << 20,
        "page_in": False,
        "bigheap_growth": 65536,
        "vm_method": "write64",
        "random_madvise": False,
        "seed": 42,
    }
    with pytest.raises(UsageError, match="named twice"):
        cls().check({**base, "stressors": ["vm", "vm"]}, 256 << 20)
    with pytest.raises(UsageError, match="less than 1M per worker"):
        cls().check({**base, "memory": 1 << 20}, 256 << 20)
    with pytest.raises(UsageError, match="vm_method: 'write46' is not a vm method.*did you mean 'write64'"):
        cls().check({**base, "vm_method": "write46"}, 256 << 20)


def test_missing_tool_names_the_package(tmp_path, results):
    # an empty PATH: no stress-ng, no fio
    for suite, pkg in (("stressng", "stress-ng"), ("fio", "fio")):
        proc = mmbench("run", "--config", suite, "--results", str(results), "x", env={"PATH": str(tmp_path)})
        assert proc.returncode == 3, proc.stderr  # a missing tool: exit 3 (docs/cli.md)
        err = proc.stderr.strip()
        assert "\n" not in err and f"install Debian's {pkg}" in err


# -- real runs at a tiny size ---------------------------------------------------------------------


@needs_root
@needs_stress_ng
def test_stressng_runs_the_requested_stressors(tmp_path):
    wanted = ["vm", "mmap", "bigheap"]
    r = run_workload(
        "stressng",
        {"stressors": wanted, "workers": 1, "duration": "1s", "memory": "0.25x"},
        budget="128M",
        outdir=tmp_path,
    )
    assert r.status == "ok", r.reason
    names = {f"{s} bogo-ops/s" for s in wanted} | {f"{s} bogo-ops/s usr+sys" for s in wanted}
    assert set(r.samples) == names
    for name, values in r.samples.items():
        assert len(values) == 1 and values[0] > 0, name
    raw = tmp_path / "stressng" / "iter-0" / "raw"
    log = (raw / "stressng-vm.out.err").read_text()
    assert "dispatching hogs: 1 vm" in log
    for s in wanted:
        assert parse_stressng_yaml((raw / f"stressng-{s}.yaml").read_text())[s]["ops"] > 0
    # bigheap stayed inside the budget (RLIMIT_DATA) instead of being OOM-killed
    assert r.memcg["oom_kills"] == 0


@needs_root
@needs_fio
def test_fio_under_an_anon_hog(tmp_path):
    r = run_workload(
        "fio",
        {"jobs": ["randread", "write"], "file": "0.75x", "hog": "0.5x", "runtime": "1s"},
        budget="128M",
        outdir=tmp_path,
    )
    assert r.status == "ok", r.reason
    for lab in ("RandRead", "Write"):
        assert r.samples[f"{lab} MB/s"][0] > 0
        assert r.samples[f"{lab} IOPS"][0] > 0
        p = [r.samples[f"{q}-{lab} clat"][0] for q in ("p50", "p95", "p99", "p99.9")]
        assert 0 < p[0] <= p[1] <= p[2] <= p[3], (lab, p)
    assert not any(k.startswith(("Read ", "p50-Read ")) for k in r.samples)
    # the hog plus a file larger than the room it leaves filled the sandbox: reclaim ran
    assert r.memcg["max_usage"] >= 0.9 * r.memcg["limit"], r.memcg
    raw = tmp_path / "fio" / "iter-0" / "raw"
    assert (raw / "fio-randread.json").exists() and (raw / "fio-write.json").exists()
    assert not (tmp_path / "scratch").exists() or not any((tmp_path / "scratch").rglob("fio.data"))


@needs_root
def test_tool_gone_at_run_time_fails_the_iteration_naming_the_package(tmp_path, monkeypatch):
    import mmbench.workloads.fio as fio_mod
    import mmbench.workloads.stressng as stressng_mod

    # the tools vanish after the suite was loaded: shutil.which (one module for both) finds nothing
    monkeypatch.setattr(fio_mod.shutil, "which", lambda name: None)
    r = run_workload("fio", {"runtime": "1s"}, budget="64M", outdir=tmp_path / "a")
    assert r.status == "failed" and r.reason == "fio not found: install Debian's fio package"
    # (the load-time checks of stressor and method names still answer, as when the suite loaded)
    monkeypatch.setattr(stressng_mod, "available_stressors", lambda: ("vm",))
    monkeypatch.setattr(stressng_mod, "vm_methods", lambda: ())
    r = run_workload("stressng", {"stressors": ["vm"], "duration": "1s"}, budget="64M", outdir=tmp_path / "b")
    assert r.status == "failed" and r.reason == "stress-ng not found: install Debian's stress-ng package"
