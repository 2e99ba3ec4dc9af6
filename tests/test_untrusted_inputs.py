"""Suites and stores as untrusted input (issue 23 item 5): setting keys that would leave their
sysfs/procfs folder, a run replaced while it is written, an unreadable machine journal, exit
statuses a run promises (5 for failed iterations, 130/143 for a signal as it ends), scratch
parents, a full results filesystem, ``--check`` of ``--until``, a results path that is a symlink
loop, MMTests logs that hold nothing, and the machine lock's holder."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from conftest import mmbench, needs_root, start_mmbench

GOOD_CSV = "workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1.0\nw,t,s,lower,1,1.2\n"
QUICK = """
[suite]
iterations = {n}
budget = "32M"
[actions]
sync = false
[[workload]]
name = "idle"
[workload.params]
duration = "{d}"
"""


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# ---- setting keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["thp.../../../../x", "vm./etc/passwd", "thp..enabled", "kernel.a b", "zswap.../enabled", "vm.swappiness/../x"],
)
def test_setting_key_outside_its_folder_is_refused_by_check(tmp_path, key):
    victim = tmp_path / "x"
    line = one_error_line(
        mmbench("run", "--check", "--config", "smoke", "--set", f"{key}=owned", "--results", str(tmp_path / "r"), "x")
    )
    assert f"settings.{key}" in line and "never names a path outside" in line, line
    assert not victim.exists()


def test_setting_key_in_a_suite_file_is_refused(tmp_path):
    suite = tmp_path / "evil.toml"
    suite.write_text(
        '[suite]\nbudget = "64M"\n[settings]\n"thp.../../../../x" = "owned"\n[[workload]]\nname = "faultin"\n'
    )
    line = one_error_line(mmbench("run", "--check", "--config", str(suite), "--results", str(tmp_path / "r"), "x"))
    assert str(suite) in line and "settings.thp.../../../../x" in line


def test_submit_refuses_the_key_before_a_job_is_queued(tmp_path):
    """``mmbench submit`` builds each job with job_entry: no database is reached first."""
    from mmbench.driver.jobs import job_entry
    from mmbench.errors import UsageError
    from mmbench.model.request import RunRequest

    with pytest.raises(UsageError, match="never names a path outside"):
        job_entry(RunRequest(config="smoke", name="n", sets=("vm./etc/passwd=1",)))
    proc = mmbench(
        "submit",
        "--queue",
        "postgresql://nobody@/nowhere?host=/nonexistent",
        "--config",
        "smoke",
        "--set",
        "thp.../../x=1",
        "--machines",
        "any",
        "n",
    )
    assert "never names a path outside" in one_error_line(proc)
    assert job_entry(
        RunRequest(config="smoke", name="n", sets=("vm.swappiness=10", "thp.hugepages-2048kB.enabled=never"))
    )


def test_knob_path_never_follows_a_symlink_out_of_its_folder(tmp_path, monkeypatch):
    from mmbench.errors import UsageError
    from mmbench.run import settings

    base = tmp_path / "sys"
    base.mkdir()
    (tmp_path / "outside").write_text("1\n")
    (base / "fine").write_text("1\n")
    (base / "link").symlink_to(tmp_path / "outside")
    monkeypatch.setitem(settings.NAMESPACES, "vm", [str(base)])
    assert settings.knob_path("vm.fine") == base / "fine"
    with pytest.raises(UsageError, match="not inside"):
        settings.knob_path("vm.link")


# ---- a run being written is never replaced --------------------------------------------------


def test_import_force_refuses_a_run_that_is_being_written(tmp_path):
    from mmbench.store.fs import FileStore

    results = tmp_path / "results"
    writer = FileStore(results).create_run(
        "live", force=False, suite_text="", suite_hash="", suite_effective={}, fingerprint={}, settings={}
    )  # this process is its writer
    (tmp_path / "a.csv").write_text(GOOD_CSV)
    for argv in (["import", "--force", str(tmp_path / "a.csv"), "live"], ["rm", "live"]):
        line = one_error_line(mmbench(*argv[:1], "--results", str(results), *argv[1:]))
        assert "live" in line and ("still being written" in line or "still running" in line), line
    assert json.loads((results / "live" / "run.json").read_text())["status"] == "running"
    writer.finish("complete")
    assert mmbench("import", "--results", str(results), "--force", str(tmp_path / "a.csv"), "live").returncode == 0


# ---- the machine journal ------------------------------------------------------------------------


@needs_root
def test_unreadable_journal_lines_are_named_and_the_rest_restored(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    knobs = [tmp_path / "knob1", tmp_path / "knob2"]
    for k in knobs:
        k.write_text("9\n")
    (state / "journal.jsonl").write_bytes(
        json.dumps({"kind": "value", "path": str(knobs[0]), "original": "1"}).encode()
        + b"\n"
        + b"\xff\xfe{not utf-8}\n"
        + b"[1, 2]\n"
        + json.dumps({"kind": "value", "path": str(knobs[1]), "original": "2"}).encode()
        + b"\n"
    )
    env = {"MMBENCH_STATE_DIR": str(state)}
    out = mmbench("restore", env=env)
    assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr
    assert f"{state / 'journal.jsonl'}: line 2: not UTF-8" in out.stdout, out.stdout
    assert f"{state / 'journal.jsonl'}: line 3: not a journal entry" in out.stdout, out.stdout
    assert [k.read_text().strip() for k in knobs] == ["1", "2"]
    aside = list(state.glob("journal.jsonl.unreadable-*"))
    assert len(aside) == 1 and b"\xff\xfe" in aside[0].read_bytes()
    assert "nothing to restore" in mmbench("restore", env=env, check=True).stdout


@needs_root
def test_lock_message_names_the_holder_even_with_an_empty_lock_file(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys, time\n"
                f"fd = os.open({str(state / 'journal.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); print('held', flush=True); time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        line = one_error_line(mmbench("restore", env={"MMBENCH_STATE_DIR": str(state), "MMBENCH_LOCK_WAIT": "0"}))
        assert f"pid {holder.pid}" in line and "pid ?" not in line, line
    finally:
        holder.kill()
        holder.wait()


# ---- exit statuses of a run -----------------------------------------------------------------


@needs_root
def test_run_with_a_failed_iteration_exits_5(tmp_path, suite_file):
    path = suite_file("""
[suite]
iterations = 2
budget = "32M"
[actions]
sync = false
[[workload]]
name = "idle"
label = "fine"
[workload.params]
duration = "0.1s"
[[workload]]
name = "idle"
label = "slow"
timeout = "0.3s"
[workload.params]
duration = "5s"
""")
    out = mmbench("run", "--config", str(path), "--results", str(tmp_path / "r"), "partly", timeout=120)
    assert out.returncode == 5, out.stderr
    assert "run partly: complete, but 2 of 4 iterations failed" in out.stderr


@needs_root
def test_signal_as_the_run_ends_still_exits_143(tmp_path, suite_file):
    """SIGTERM after the last iteration ended (while the run is stored and the machine put back)
    cuts nothing short, and the command still exits 143 (docs/cli.md).  A trial whose signal
    reached a process that had already exited does not count."""
    path = suite_file(QUICK.format(n=1, d="0.2s") + '[monitors.meminfo]\ninterval = "20ms"\n')
    exercised = 0
    for attempt in range(6):
        proc = start_mmbench(
            "run", "--json-log", "--config", str(path), "--results", str(tmp_path / "r"), f"late{attempt}"
        )
        for line in proc.stderr:
            if '"iteration-end"' in line:
                break
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        proc.wait(timeout=120)
        assert "Traceback" not in rest, rest
        if proc.returncode == 0:
            continue  # it had exited before the signal came
        assert proc.returncode == 143, rest
        status = json.loads((tmp_path / "r" / f"late{attempt}" / "run.json").read_text())["status"]
        # before the run was marked complete it is stopped there (its iteration is kept); after, it
        # says the signal cut nothing short
        assert (status == "complete" and "nothing was cut short" in rest) or (
            status == "incomplete" and "completed iterations are kept" in rest
        ), (status, rest)
        assert (tmp_path / "r" / f"late{attempt}" / "idle" / "iter-0" / "result.json").exists()
        exercised += 1
        if exercised == 2:
            break
    assert exercised, "no signal arrived before the run exited"


def test_late_signal_is_recorded_not_ignored():
    code = (
        "import os, signal\n"
        "from mmbench.run import signals\n"
        "signals.ignore_after_exit()\n"
        "with signals.catch_signals():\n    pass\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "print(signals.late_signal() == signal.SIGTERM)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


# ---- scratch parents, a full results filesystem ---------------------------------------------


@needs_root
def test_scratch_parents_the_run_created_are_removed(tmp_path, suite_file):
    scratch = tmp_path / "made" / "by" / "mmbench" / "scratch"
    path = suite_file(QUICK.format(n=1, d="0.1s").replace('budget = "32M"', f'budget = "32M"\nscratch = "{scratch}"'))
    mmbench("run", "--config", str(path), "--results", str(tmp_path / "r"), "s", check=True, timeout=120)
    assert not (tmp_path / "made").exists()


@pytest.fixture
def full_fs(tmp_path):
    """A 1 MiB tmpfs of our own, nearly full; unmounted afterwards."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "filler").write_bytes(bytes(900 << 10))
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@needs_root
def test_full_results_filesystem_is_one_line_and_the_run_incomplete(full_fs, suite_file):
    path = suite_file("""
[suite]
iterations = 5
budget = "32M"
[actions]
sync = false
[[workload]]
name = "faultin"
[workload.params]
size = "4M"
[monitors.meminfo]
interval = "20ms"
""")
    results = full_fs / "results"
    out = mmbench("run", "--config", str(path), "--results", str(results), "full", timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "internal error" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mmbench: error: no space left on {full_fs}"), last
    meta = json.loads((results / "full" / "run.json").read_text())
    assert meta["status"] == "incomplete" and "no space left" in meta["note"]
    assert not [p for p in results.rglob("*") if p.name.endswith(".tmp") or p.name == ".spare"]
    listed = mmbench("list", "--results", str(results))
    assert listed.returncode == 0 and "incomplete" in listed.stdout, listed.stderr


@needs_root
def test_import_into_a_full_filesystem_leaves_nothing(full_fs, tmp_path):
    (tmp_path / "a.csv").write_text(GOOD_CSV)
    (full_fs / "filler2").write_bytes(bytes(120 << 10))  # every last block
    results = full_fs / "results"
    line = one_error_line(mmbench("import", "--results", str(results), str(tmp_path / "a.csv"), "a"))
    assert f"no space left on {full_fs}" in line, line
    assert not (results / "a").exists()


# ---- arguments and paths ------------------------------------------------------------------------


@pytest.mark.parametrize("until", ["ci<nan%", "ci<inf%", "ci<0%", "ci<-1%", "ci", "2%"])
def test_check_refuses_an_until_the_run_would_refuse(tmp_path, until):
    line = one_error_line(
        mmbench("run", "--check", "--config", "smoke", "--until", until, "--results", str(tmp_path / "r"), "x")
    )
    assert "--until" in line


def test_check_refuses_until_companions_without_until(tmp_path):
    line = one_error_line(
        mmbench("run", "--check", "--config", "smoke", "--baseline", "b", "--results", str(tmp_path / "r"), "x")
    )
    assert "--baseline goes with --until" in line


def test_results_symlink_loop_is_named(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for argv in (["list"], ["show", "x"], ["compare", "x"], ["reindex"]):
        line = one_error_line(mmbench(argv[0], "--results", str(loop), *argv[1:]))
        assert str(loop) in line and "symlink loop" in line, line
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    line = one_error_line(mmbench("list", "--results", str(dangling)))
    assert "does not exist" in line and str(dangling) in line


# ---- MMTests logs that hold nothing ---------------------------------------------------------------

PFT_LINE = (
    "   MappingSize  Threads CacheLine   UserTime  SysTime WallTime flt/cpu/s fault/wsec\n"
    "  268435456        {n}         1      0.04s    0.38s    0.42s 500000.000 600000.000\n"
)


@pytest.mark.parametrize("kind", ["empty", "binary", "symlink-out"])
def test_mmtests_log_that_holds_nothing_is_named(tmp_path, kind):
    logs = tmp_path / "work" / "log" / "r" / "iter-0" / "pft" / "logs"
    logs.mkdir(parents=True)
    (logs / "pft-1.log").write_text(PFT_LINE.format(n=1))
    bad = logs / "pft-2.log"
    if kind == "empty":
        bad.write_text("")
    elif kind == "binary":
        bad.write_bytes(bytes(range(256)) * 4)
    else:
        (tmp_path / "elsewhere.log").write_text(PFT_LINE.format(n=2))
        bad.symlink_to(tmp_path / "elsewhere.log")
    out = mmbench("import-mmtests", "--results", str(tmp_path / "results"), str(tmp_path), "r")
    why = {"empty": "empty", "binary": "binary", "symlink-out": "outside the MMTests run folder"}[kind]
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert f"{bad}: " in out.stderr and why in out.stderr, out.stderr
    res = json.loads((tmp_path / "results" / "r" / "pft" / "iter-0" / "result.json").read_text())
    assert res["status"] == "failed" and str(bad) in res["reason"]


def test_import_of_one_run_leaves_it_indexed_once(tmp_path):
    """(issue 23.6) the writer records the run in the index: the next list indexes nothing again."""
    from mmbench.store.fs import FileStore

    (tmp_path / "a.csv").write_text(GOOD_CSV)
    results = tmp_path / "results"
    mmbench("import", "--results", str(results), str(tmp_path / "a.csv"), "a", check=True)
    assert FileStore(results).sync() == (0, 0, [])
