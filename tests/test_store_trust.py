"""What mmbench reads from a store is what was written, or one line naming the file:
digests on every read (sidecars, sealed documents, the index's rows, the PostgreSQL cache), only
regular files inside the store, integers checked before a run is written, runs that say running
only while their writer is proved alive, one line for malformed URLs, and ``mmbench verify``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmbench.model.files import SEAL, StoreError, samples_from_json
from mmbench.model.results import OWNER_UNKNOWN, IterationResult, MetricDef, WorkloadRun
from mmbench.store.fs import FileStore
from mmbench.store.writer import owner_check
from tests.conftest import mmbench, stored_doc
from tests.test_hardening import cli, one_line_error


def write_run(root: Path, name: str = "r", shift: float = 0.0) -> FileStore:
    store = FileStore(root)
    w = store.create_run(
        name,
        force=True,
        suite_text="[suite]\n",
        suite_hash="h",
        suite_effective={},
        fingerprint={"kernel": {"release": "6.1"}},
        settings={},
    )
    w.add_workload(
        WorkloadRun(
            "wl",
            "bench",
            {},
            [
                MetricDef("lat", "us", "lower", "latency"),
                MetricDef("tput", "MB/s", "higher", "rate"),
                MetricDef("ops", "ops/s", "higher", "rate"),
            ],
        )
    )
    rng = np.random.default_rng(36)
    for i in range(3):
        w.add_iteration(
            IterationResult(
                "wl",
                i,
                False,
                "ok",
                samples={
                    "lat": rng.lognormal(5, 0.1, 400) + shift,
                    "tput": rng.normal(500, 5, 300),
                    "ops": [100.0 + i + shift],
                },
            )
        )
    w.finish("complete")
    return store


# ---- digests -----------------------------------------------------------------------------------


def test_a_sealed_document_may_be_reformatted_but_not_changed(tmp_path):
    root = tmp_path / "res"
    write_run(root)
    res = root / "r" / "wl" / "iter-1" / "result.json"
    doc = json.loads(res.read_text())
    res.write_text(json.dumps(doc, indent=4, sort_keys=True))  # same content, other layout
    assert FileStore(root).load_run("r").workload("wl").iterations[1].samples["ops"] == [101.0]
    doc["samples"]["ops"] = [111.0]  # a changed value, digest kept
    res.write_text(json.dumps(doc))
    one_line_error(
        cli("compare", "--results", str(root), "r", "r"),
        2,
        f"{res}: its content does not match the BLAKE2b digest it was stored with",
    )
    del doc[SEAL]  # edited by hand, digest dropped
    res.write_text(json.dumps(doc))
    assert FileStore(root).load_run("r").workload("wl").iterations[1].samples["ops"] == [111.0]


def test_a_host_side_finisher_may_rewrite_monitors_only(tmp_path):
    """A VM run's deferred monitors are finished on the host, which rewrites result.json's
    "monitors" (vm/runner.py): the seal does not cover that key, and covers every other."""
    root = tmp_path / "res"
    write_run(root)
    res = root / "r" / "wl" / "iter-0" / "result.json"
    doc = json.loads(res.read_text())
    doc["monitors"] = {"mm-trace": {"events": 5, "dir": "wl/iter-0/monitors/mm-trace"}}
    res.write_text(json.dumps(doc, indent=1))
    FileStore(root).load_run("r")
    doc["duration"] = {"elapsed": 1.0}
    res.write_text(json.dumps(doc, indent=1))
    with pytest.raises(StoreError, match="does not match the BLAKE2b digest"):
        FileStore(root).load_run("r")


def test_references_must_tile_their_sidecar():
    data = np.arange(10, dtype="<f8")
    read = lambda file, count: data[:count] if count <= 10 else pytest.fail("read past the file")  # noqa: E731
    f = "samples-0123456789abcdef.f8"
    got = samples_from_json(
        {"a": {"file": f, "offset": 0, "count": 4}, "b": {"file": f, "offset": 4, "count": 6}}, read
    )
    assert list(got["b"]) == [4, 5, 6, 7, 8, 9]
    with pytest.raises(StoreError, match=r"samples.b: samples 2..8 of .* overlap samples.a's 0..4"):
        samples_from_json({"a": {"file": f, "offset": 0, "count": 4}, "b": {"file": f, "offset": 2, "count": 6}}, read)
    with pytest.raises(StoreError, match=r"samples.b starts at sample 5 .* no metric holds samples 4..5"):
        samples_from_json({"a": {"file": f, "offset": 0, "count": 4}, "b": {"file": f, "offset": 5, "count": 5}}, read)


def test_a_sidecar_is_never_read_past_what_its_references_cover(tmp_path):
    root = tmp_path / "res"
    write_run(root)
    (side,) = (root / "r" / "wl" / "iter-0").glob("samples-*.f8")
    side.unlink()
    side.symlink_to("/dev/zero")
    one_line_error(cli("compare", "--results", str(root), "r", "r"), 2, "a symlink to /dev/zero, outside the results")
    side.unlink()
    inside = root / "r" / "wl" / "iter-0" / "elsewhere.f8"
    inside.write_bytes(bytes(8 * 700))
    side.symlink_to(inside.name)  # inside the store: followed, checked
    one_line_error(cli("compare", "--results", str(root), "r", "r"), 2, "do not match the BLAKE2b digest in its name")


def test_a_damaged_index_row_is_indexed_again_never_shown(tmp_path):
    import sqlite3

    root = tmp_path / "res"
    write_run(root, "a")
    write_run(root, "b")
    assert "3" in mmbench("list", "--results", str(root), check=True).stdout
    with sqlite3.connect(root / "index.sqlite") as db:
        db.execute("UPDATE iterations SET warmup=1 WHERE run='b' AND idx=2")  # as a flipped bit would
        db.execute("UPDATE sample_means SET mean=mean*2 WHERE run='a'")
    out = mmbench("list", "--results", str(root), check=True)
    assert "the rows of run b do not match their digest" in out.stderr
    assert [line.split()[5] for line in out.stdout.splitlines()[1:]] == ["3", "3"]
    values = FileStore(root).iteration_values(["a"])  # history's read: sample_means checked too
    rec = FileStore(root).load_run("a")
    assert sorted(v for _, _, m, _, v in values if m == "ops") == [
        it.samples["ops"][0] for it in rec.workload("wl").iterations
    ]


# ---- runs that say running ---------------------------------------------------------------------


def test_a_run_is_running_only_while_its_writer_is_proved_alive():
    from mmbench.model.kernel import proc_start_time
    from mmbench.store.writer import boot_id

    me = {"pid": os.getpid(), "boot_id": boot_id(), "pid_start": proc_start_time(os.getpid())}
    assert owner_check(me)[0] == "running"
    assert owner_check({**me, "pid_start": "1"})[0] == "incomplete"  # the pid is another process now
    assert owner_check({**me, "boot_id": "another-boot"})[0] == OWNER_UNKNOWN  # a reboot, or another machine
    status, why = owner_check({"pid": os.getpid()})  # an older mmbench: a pid alone
    assert status == OWNER_UNKNOWN and "no boot id or process start time" in why
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert owner_check({**me, "pid": dead.pid})[0] == "incomplete"


def test_rm_and_force_take_a_run_nobody_provably_writes(tmp_path):
    root = tmp_path / "res"
    write_run(root, "a")
    write_run(root, "b")
    meta = stored_doc(root / "b" / "run.json")
    meta.update(status="running", pid=os.getpid())  # alive, but its start time is not recorded
    meta.pop("pid_start")
    (root / "b" / "run.json").write_text(json.dumps(meta))
    listed = cli("list", "--results", str(root))
    assert [line.split()[1] for line in listed.stdout.splitlines()[1:]] == ["complete", "interrupted"]
    assert OWNER_UNKNOWN in listed.stdout
    assert (
        "is interrupted (it says running, but its writer cannot be proved alive here)"
        in cli("compare", "--results", str(root), "a", "b").stderr
    )
    out = cli("rm", "--results", str(root), "b")
    assert (
        out.returncode == 0
        and "says running, but it records pid" in out.stderr
        and "removed" in out.stderr + out.stdout
    )
    assert not (root / "b").exists() and (root / "a").exists()


# ---- what goes into a store --------------------------------------------------------------------


def test_an_iteration_number_no_index_column_holds_is_refused_before_writing(tmp_path):
    store = FileStore(tmp_path / "res")
    w = store.create_run(
        "r", force=False, suite_text="", suite_hash="", suite_effective={}, fingerprint={}, settings={}
    )
    w.add_workload(WorkloadRun("wl", "bench", {}, [MetricDef("t", "s", "lower")]))
    with pytest.raises(Exception, match="iteration number 2147483648 is not a whole number"):
        w.add_iteration(IterationResult("wl", 2**31, False, "ok", samples={"t": [1.0]}))
    assert not (tmp_path / "res" / "r" / "wl" / "iter-2147483648").exists()


def _gnu_time_tree(root: Path, n: int = 20) -> Path:
    logs = root / "r" / "iter-1" / "kb" / "logs"
    logs.mkdir(parents=True)
    for i in range(1, n + 1):
        (logs / f"time-4-{i}").write_text("1.00user 0.50system 0:02.00elapsed 75%CPU\n")
    return logs


@pytest.mark.parametrize("kind", ["fifo", "symlink loop", "device"])
def test_an_mmtests_log_that_is_no_file_fails_its_iteration_and_is_named(tmp_path, kind):
    logs = _gnu_time_tree(tmp_path / "tree")
    bad = logs / "time-4-7"
    bad.unlink()
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "symlink loop":
        bad.symlink_to(bad.name)
    else:
        if os.geteuid() != 0:
            pytest.skip("mknod needs root")
        import stat

        os.mknod(bad, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    out = mmbench("import-mmtests", "--results", str(tmp_path / "res"), str(tmp_path / "tree"), timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"{bad}: " in out.stderr and "iter-1 of kb is stored as failed" in out.stderr
    (it,) = FileStore(tmp_path / "res").load_run("r").workload("kb").iterations
    assert it.status == "failed" and str(bad) in it.reason


def test_two_names_for_one_iteration_or_log_are_said(tmp_path):
    logs = _gnu_time_tree(tmp_path / "tree")
    (logs / "time-4-03").write_text("9.00user 0.50system 0:02.00elapsed 75%CPU\n")
    out = mmbench("import-mmtests", "--results", str(tmp_path / "res"), str(tmp_path / "tree"))
    assert out.returncode == 0 and "time-4-03 and time-4-3 are the same log" in out.stderr
    (logs / "time-4-03").unlink()
    (tmp_path / "tree" / "r" / "iter-1").rename(tmp_path / "tree" / "r" / "iter-01")
    _gnu_time_tree(tmp_path / "tree")
    one_line_error(
        mmbench("import-mmtests", "--results", str(tmp_path / "res2"), str(tmp_path / "tree")),
        2,
        "iter-01 and iter-1 are both iteration 1",
    )
    assert not (tmp_path / "res2" / "r").exists()


def test_an_iteration_beyond_the_index_range_writes_nothing_and_poisons_nothing(tmp_path):
    logs = _gnu_time_tree(tmp_path / "tree")
    logs.parent.parent.rename(logs.parent.parent.with_name("iter-99999999999999999999"))
    write_run(tmp_path / "res", "a")
    one_line_error(
        mmbench("import-mmtests", "--results", str(tmp_path / "res"), str(tmp_path / "tree")),
        2,
        "iteration number 99999999999999999999 is not a whole number 0..2147483647",
    )
    assert not (tmp_path / "res" / "r").exists()
    for command in (["list"], ["reindex"]):
        assert mmbench(*command, "--results", str(tmp_path / "res")).returncode == 0


def test_a_run_that_does_not_read_back_replaces_nothing(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_run(src, "r", shift=1.0)
    write_run(dst, "r")
    before = {p: p.read_bytes() for p in (dst / "r").rglob("*") if p.is_file()}
    (side,) = (src / "r" / "wl" / "iter-2").glob("samples-*.f8")
    data = bytearray(side.read_bytes())
    data[100] ^= 4
    side.write_bytes(bytes(data))
    one_line_error(cli("push", "--results", str(src), "--to", str(dst), "--force", "r"), 2, str(side))
    from mmbench.model.store import reseal_documents

    files = reseal_documents(list(FileStore(src).run_files("r")))
    with pytest.raises(StoreError, match="do not match the BLAKE2b digest in its name"):
        FileStore(dst).put_run_files("r", files, force=True)  # as a caller that skipped load_run would
    assert {p: p.read_bytes() for p in (dst / "r").rglob("*") if p.is_file()} == before
    assert not [p for p in dst.iterdir() if p.name.startswith(".")]


def test_a_stored_run_changed_by_its_caller_is_sealed_afresh(tmp_path):
    """The VM runner adds what the host knows to a guest's run.json and fingerprint.json before it
    stores the run (vm/runner.py): put_run_files seals what it is given."""
    src = tmp_path / "guest"
    write_run(src, "r")
    files = dict(FileStore(src).run_files("r"))
    meta, fp = json.loads(files["run.json"]), json.loads(files["fingerprint.json"])
    meta["vm_timing"], fp["vm"] = {"wall_s": 3.0}, {"memory": "512M"}
    files["run.json"], files["fingerprint.json"] = json.dumps(meta).encode(), json.dumps(fp).encode()
    FileStore(tmp_path / "host").put_run_files("r", sorted(files.items()), force=False)
    rec = FileStore(tmp_path / "host").load_run("r")
    assert rec.fingerprint["vm"] == {"memory": "512M"} and SEAL not in rec.fingerprint


# ---- one line for every bad input --------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,option",
    [
        (["list", "--results", "postgresql://[::1"], "--results"),
        (["compare", "--results", "postgresql://u:secret@[::1", "a"], "--results"),
        (["push", "--to", "postgresql://h/db?bogus=1", "a"], "--to"),
        (["pull", "--from", "postgres://%zz@h/", "a"], "--from"),
        (["jobs", "--queue", "postgresql://[::1"], "--queue"),
    ],
)
def test_a_malformed_url_is_one_line_naming_its_argument(tmp_path, argv, option):
    err = one_line_error(
        cli(*argv[:1], *(["--results", str(tmp_path)] if argv[0] in ("push", "pull") else []), *argv[1:]),
        2,
        f"{option} postgres",
    )
    assert "not a valid PostgreSQL URL" in err and "secret" not in err


def test_postgres_without_the_fleet_extra_names_it(tmp_path):
    stub = tmp_path / "stub" / "psycopg"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'psycopg'\")\n")
    out = mmbench(
        "list", "--results", "postgresql:///x", env={"PYTHONPATH": f"{stub.parent}:{Path(__file__).parent.parent}"}
    )
    one_line_error(out, 3, "pip install 'mmbench[fleet]'")


def test_proc_self_is_not_a_results_directory():
    one_line_error(cli("list", "runs", "--results", "/proc/self"), 2, "--results /proc/self: not a results directory")


# ---- mmbench verify ----------------------------------------------------------------------------


def test_verify_says_what_is_wrong_and_repairs_only_when_asked(tmp_path):
    import sqlite3

    root = tmp_path / "res"
    write_run(root, "a")
    write_run(root, "b")
    cli("list", "--results", str(root))
    ok = cli("verify", "--results", str(root))
    assert ok.returncode == 0 and ok.stdout.rstrip().endswith("nothing wrong"), ok.stdout
    (side,) = (root / "b" / "wl" / "iter-1").glob("samples-*.f8")
    side.write_bytes(side.read_bytes()[:-8])
    os.mkfifo(root / "a" / "wl" / "iter-0" / "stray-fifo")
    (root / "a" / "wl" / ".iter-3.partial").mkdir()
    meta = stored_doc(root / "a" / "run.json")
    meta.update(status="running", pid=1)
    meta.pop("boot_id")
    (root / "a" / "run.json").write_text(json.dumps(meta))
    with sqlite3.connect(root / "index.sqlite") as db:
        db.execute("UPDATE sample_means SET mean=0 WHERE run='a'")
    snapshot = {p: (p.read_bytes() if p.is_file() else None) for p in root.rglob("*") if not p.is_fifo()}
    out = cli("verify", "--results", str(root))
    assert out.returncode == 2 and "2 damaged or unsafe file(s)" in out.stderr, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("damaged") and str(side) in line and "truncated" in line for line in lines)
    assert any(line.startswith("unsafe") and "stray-fifo: a FIFO" in line for line in lines)
    assert any(line.startswith("tidy") and ".iter-3.partial" in line for line in lines)
    assert any(line.startswith("tidy") and "says running, but it records pid 1" in line for line in lines)
    assert not any("index.sqlite" in line for line in lines)  # run a's rows are checked only once it is indexed
    assert {p: (p.read_bytes() if p.is_file() else None) for p in root.rglob("*") if not p.is_fifo()} == snapshot
    fixed = cli("verify", "--results", str(root), "--repair")
    assert "repaired marked run a incomplete" in fixed.stdout and not (root / "a" / "wl" / ".iter-3.partial").exists()
    assert fixed.returncode == 2 and side.exists()  # damaged data is never "repaired"
    assert json.loads((root / "a" / "run.json").read_text())["status"] == "incomplete"


def test_verify_finds_index_rows_that_differ_from_their_folder(tmp_path):
    import sqlite3

    root = tmp_path / "res"
    write_run(root, "a")
    cli("list", "--results", str(root))
    with sqlite3.connect(root / "index.sqlite") as db:
        db.execute("UPDATE sample_means SET mean=0 WHERE run='a'")
    out = cli("verify", "--results", str(root))
    assert out.returncode == 2 and "its sample_means rows of run 'a' differ from the run's folder" in out.stdout
    assert cli("verify", "--results", str(root), "--repair").returncode == 0
    assert cli("verify", "--results", str(root)).stdout.rstrip().endswith("nothing wrong")


# ---- PostgreSQL --------------------------------------------------------------------------------


def test_postgres_checks_push_pull_and_its_cache(tmp_path, pg_url):
    import zlib
    import psycopg

    folder = tmp_path / "res"
    write_run(folder, "a")
    write_run(folder, "b", shift=2.0)
    assert cli("push", "--results", str(folder), "--to", pg_url, "a", "b").returncode == 0
    good = cli("compare", "--results", pg_url, "--format", "json", "a", "b").stdout
    cached = list((tmp_path / "cache" / "pg").glob("*/runs/b/*/b/wl/iter-1/samples-*.f8"))
    assert len(cached) == 1
    data = bytearray(cached[0].read_bytes())
    data[77] ^= 0x20
    cached[0].write_bytes(bytes(data))
    again = cli("compare", "--results", pg_url, "--format", "json", "a", "b")
    assert again.returncode == 0 and again.stdout == good
    assert "does not read back" in again.stderr and "dropped and fetched again" in again.stderr
    # damaged bytes in the database itself are named, and never left in the cache
    rel = cached[0].relative_to(cached[0].parents[2]).as_posix()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (blob,) = conn.execute("SELECT data FROM mmbench_files WHERE run='b' AND path=%s", (rel,)).fetchone()
        raw = bytearray(zlib.decompress(blob))
        raw[77] ^= 0x20
        conn.execute(
            "UPDATE mmbench_files SET data=%s, size=size WHERE run='b' AND path=%s", (zlib.compress(bytes(raw)), rel)
        )
        conn.execute("UPDATE mmbench_runs SET version=gen_random_uuid()::text WHERE name='b'")
    for _ in range(2):
        one_line_error(cli("compare", "--results", pg_url, "a", "b"), 2, "do not match the BLAKE2b digest in its name")
    one_line_error(cli("pull", "--results", str(tmp_path / "pulled"), "--from", pg_url, "b"), 2, "BLAKE2b")
    assert not (tmp_path / "pulled" / "b").exists()
    out = cli("verify", "--results", pg_url)
    assert out.returncode == 2 and rel.rsplit("/", 1)[-1] in out.stdout
    # and a damaged run is never pushed in
    (side,) = (folder / "a" / "wl" / "iter-0").glob("samples-*.f8")
    side.write_bytes(side.read_bytes() + bytes(8))
    one_line_error(cli("push", "--results", str(folder), "--to", pg_url, "--force", "a"), 2, "stray byte")


def test_verify_finds_nothing_wrong_in_a_run_written_with_lists(tmp_path):
    """A workload hands its samples over as lists; read back from the sidecar they are arrays.  The
    index's per-iteration means from either must be the same bytes, or verify calls a freshly
    written store damaged (seen with a smoke run's 1,024 fault latencies: 457.68447753906247 as
    written, 457.6844775390625 from numpy's mean)."""
    lat = list(np.random.default_rng(7).lognormal(6, 0.3, 1024))
    assert float(np.mean(lat)) != math.fsum(lat) / len(lat)  # the case: numpy rounds differently
    store = FileStore(tmp_path / "res")
    w = store.create_run(
        "r",
        force=False,
        suite_text="",
        suite_hash="h",
        suite_effective={},
        fingerprint={"kernel": {"release": "6.1"}},
        settings={},
    )
    w.add_workload(WorkloadRun("wl", "bench", {}, [MetricDef("lat", "us", "lower", "latency")]))
    w.add_iteration(IterationResult("wl", 0, False, "ok", samples={"lat": lat}))
    w.finish("complete")
    proc = mmbench("verify", "--results", str(tmp_path / "res"))
    assert proc.returncode == 0 and "nothing wrong" in proc.stdout, proc.stdout + proc.stderr
