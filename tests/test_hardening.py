"""Bad input and damaged stores end in one line and a documented exit status, never a traceback.

Issue 11: exit statuses (item 5), names that are not paths (2), ``report -o`` targets (3), a
damaged store (4), ``analyze irqsoff`` input (6), the suite loader (7), the SQLite index (8) and
what users misread in comparisons (11).  None of these needs root or changes the machine.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import mmbench, stored_doc

CSV = """workload,metric,unit,better,iteration,value
w,time,s,lower,0,1.0
w,time,s,lower,1,1.1
w,time,s,lower,2,0.9
"""


def one_line_error(proc, status: int = 2, needle: str | None = None) -> str:
    """The command failed cleanly: ``status``, one line on stderr, no traceback."""
    err = proc.stderr.strip()
    assert proc.returncode == status, (proc.returncode, proc.stderr, proc.stdout)
    assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1, proc.stderr
    if needle is not None:
        assert needle in err, err
    return err


class Proc:
    """What ``main`` returned and printed, shaped like subprocess.CompletedProcess."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args: str) -> Proc:
    """The CLI in this process (fast; an uncaught exception fails the test by itself)."""
    import contextlib
    import io

    from mmbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return Proc(status, out.getvalue(), err.getvalue())


def imported(tmp_path: Path, name: str = "a", text: str = CSV, results: Path | None = None) -> Path:
    results = results or tmp_path / "results"
    src = tmp_path / f"{name}.csv"
    src.write_text(text)
    proc = cli("import", "--results", str(results), str(src), name)
    assert proc.returncode == 0, proc.stderr
    return results


# -- item 5: exit statuses --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "five"])
def test_threshold_refused(tmp_path, value):
    results = imported(tmp_path)
    proc = mmbench("compare", "--results", str(results), "--fail-on-regression", "--threshold", value, "a", "a")
    one_line_error(proc, 2, "--threshold")


def test_internal_error_is_one_line_with_saved_traceback(tmp_path, monkeypatch, capsys):
    from mmbench import cli

    def boom(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli, "cmd_list", boom)
    monkeypatch.setenv("MMBENCH_CRASH_DIR", str(tmp_path / "crash"))
    status = cli.main(["list", "runs"])
    err = capsys.readouterr().err.strip()
    assert status == 70 and status != 1
    assert len(err.splitlines()) == 1 and err.startswith("mmbench: internal error: ZeroDivisionError: a bug")
    (saved,) = (tmp_path / "crash").iterdir()
    assert str(saved) in err and "ZeroDivisionError" in saved.read_text() and "boom" in saved.read_text()


def test_exit_statuses_distinct(tmp_path, monkeypatch, capsys):
    from mmbench import cli
    from mmbench.errors import EnvironmentUnsupported

    assert one_line_error(mmbench("compare", "--no-such-flag"), 2)
    assert one_line_error(mmbench("show", "--results", str(tmp_path / "r"), "nothere"), 2, "nothere")

    def unsupported(args):
        raise EnvironmentUnsupported("this kernel has no zram")

    monkeypatch.setattr(cli, "cmd_list", unsupported)
    assert cli.main(["list"]) == 3
    assert capsys.readouterr().err.strip() == "mmbench: error: this kernel has no zram"


def test_regression_gate_exit_1_only_for_regression(tmp_path):
    slow = CSV.replace(",1.0\n", ",2.0\n").replace(",1.1\n", ",2.1\n").replace(",0.9\n", ",1.9\n")
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", slow, results)
    gate = mmbench("compare", "--results", str(results), "--fail-on-regression", "--threshold", "5", "a", "b")
    assert gate.returncode == 1 and "regression" in gate.stderr
    fine = mmbench("compare", "--results", str(results), "--fail-on-regression", "--threshold", "5", "b", "a")
    assert fine.returncode == 0, fine.stderr
    huge = mmbench("compare", "--results", str(results), "--fail-on-regression", "--threshold", "1000", "a", "b")
    assert huge.returncode == 0


def test_exit_statuses_documented():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    for status in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 70 |"):
        assert status in doc


# -- item 2: names are not paths ----------------------------------------------------------------------


@pytest.mark.parametrize("workload", ["../../x", "a/b", ".", "..", "", " ", ".hidden", "a\tb"])
def test_import_workload_that_is_a_path(tmp_path, workload):
    results = tmp_path / "results"
    src = tmp_path / "bad.csv"
    src.write_text(f'workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\n"{workload}",t,s,lower,0,1\n')
    err = one_line_error(mmbench("import", "--results", str(results), str(src), "r"), 2, "line 3")
    assert "'workload'" in err
    assert not results.exists() or not any(results.iterdir())  # nothing written
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["6.12.0-rc3+", "v6.1_patched", "+", "~", "host:6.1", "base~1", "a,b=c@d"])
def test_run_names_kernel_people_use(tmp_path, name):
    results = imported(tmp_path, name)
    assert (results / name / "run.json").is_file()
    assert cli("show", "--results", str(results), name).stdout.startswith(f"run:      {name}")
    assert name in cli("list", "--results", str(results)).stdout


@pytest.mark.parametrize("name", ["../x", "a/b", ".", "..", ".hidden", "index.sqlite", "x" * 201, "a\nb"])
def test_run_names_that_are_not_folder_names(tmp_path, name):
    results = tmp_path / "results"
    src = tmp_path / "a.csv"
    src.write_text(CSV)
    one_line_error(mmbench("import", "--results", str(results), str(src), name), 2, "run name")
    assert not results.exists() or not any(p.name != "index.sqlite" for p in results.iterdir())
    assert not (tmp_path / "x").exists()
    one_line_error(mmbench("show", "--results", str(results), name), 2, "run name")


def test_one_name_check_everywhere():
    from mmbench.errors import UsageError
    from mmbench.model.names import check_name
    from mmbench.model.store import validate_run_name

    for bad in ("a/b", "", ".", "-x"):
        with pytest.raises(UsageError):
            validate_run_name(bad)
        with pytest.raises(UsageError):
            check_name(bad, "label")
    assert check_name("6.12.0-rc3+") == "6.12.0-rc3+"


def test_suite_label_that_is_a_path(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nbudget = "64M"\n[[workload]]\nname = "faultin"\nlabel = "../escape"\n')
    one_line_error(
        mmbench("run", "--config", str(suite), "--results", str(tmp_path / "r"), "x"), 2, "workload[../escape].label"
    )


# -- item 4: a damaged store ---------------------------------------------------------------------------

DAMAGE = {
    "empty": b"",
    "truncated": b'{"name": "a", "status": "comp',
    "binary": bytes(range(256)),
    "list": b"[1, 2, 3]",
    "foreign": b'{"hello": "world"}',
    "wrong type": b'{"name": "a", "status": "complete", "created": "yesterday"}',
    "NaN": b'{"name": "a", "status": "complete", "created": NaN}',
}


def _damage(results: Path, which: str, content: bytes) -> Path:
    target = {
        "run.json": results / "a" / "run.json",
        "workload.json": results / "a" / "w" / "workload.json",
        "result.json": results / "a" / "w" / "iter-1" / "result.json",
        "fingerprint.json": results / "a" / "fingerprint.json",
    }[which]
    target.write_bytes(content)
    return target


@pytest.mark.parametrize(
    "which,kind",
    [(w, k) for w in ("run.json", "result.json") for k in sorted(DAMAGE)]
    + [(w, k) for w in ("workload.json", "fingerprint.json") for k in ("empty", "binary", "list", "foreign")],
)
def test_damaged_file_is_one_line_naming_it(tmp_path, which, kind):
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV, results)
    target = _damage(results, which, DAMAGE[kind])
    for cmd in (["show", "a"], ["compare", "b", "a"], ["report", "-o", str(tmp_path / "r.html"), "a"]):
        proc = cli(cmd[0], "--results", str(results), *cmd[1:])
        if which == "fingerprint.json" and kind == "foreign":
            assert proc.returncode == 0, proc.stderr  # any JSON object is a fingerprint
            continue
        one_line_error(proc, 2, str(target))
    # list goes on: the damaged run is skipped with a one-line warning, the good one listed
    ls = cli("list", "--results", str(results))
    assert ls.returncode == 0 and "Traceback" not in ls.stderr
    assert any(line.startswith("b ") for line in ls.stdout.splitlines()), ls.stdout
    if not (which == "fingerprint.json" and kind == "foreign"):
        assert "skipping run a" in ls.stderr and str(target) in ls.stderr
        assert not list(tmp_path.glob("r.html*"))
    assert not list(tmp_path.glob(".r.html*")) and not list(tmp_path.glob(".*.tmp"))


def test_store_written_by_newer_mmbench_is_refused(tmp_path):
    results = imported(tmp_path, "a")
    meta = stored_doc(results / "a" / "run.json")
    assert meta["format"] == 2
    meta["format"] = 99
    (results / "a" / "run.json").write_text(json.dumps(meta))
    one_line_error(mmbench("show", "--results", str(results), "a"), 2, "newer mmbench")
    del meta["format"]  # a store from before the field: format 1, read as such
    (results / "a" / "run.json").write_text(json.dumps(meta))
    assert mmbench("show", "--results", str(results), "a").returncode == 0


def test_copied_result_is_not_misread(tmp_path):
    results = imported(tmp_path, "a")
    it1 = results / "a" / "w" / "iter-1" / "result.json"
    (results / "a" / "w" / "iter-0" / "result.json").write_text(it1.read_text())
    one_line_error(mmbench("show", "--results", str(results), "a"), 2, "iter-0")


def test_results_directory_is_a_file(tmp_path):
    f = tmp_path / "results"
    f.write_text("not a directory\n")
    for cmd in (["list"], ["show", "a"], ["compare", "a"], ["import", str(f), "a"]):
        one_line_error(mmbench(cmd[0], "--results", str(f), *cmd[1:]), 2, str(f))


@pytest.mark.parametrize("content", [b"", b"garbage" * 100, bytes(range(256)) * 10])
def test_damaged_index(tmp_path, content):
    results = imported(tmp_path, "a")
    (results / "index.sqlite").write_bytes(content)
    ls = mmbench("list", "--results", str(results))
    assert ls.returncode == 0 and "a " in ls.stdout and "Traceback" not in ls.stderr
    assert mmbench("show", "--results", str(results), "a").returncode == 0
    imported(tmp_path, "b", CSV, results)  # the folder is the truth: a new run is still stored
    assert (results / "b" / "run.json").is_file()


def test_damaged_summary_cache_is_recomputed(tmp_path):
    from mmbench.monitors.base import SUMMARY_VERSION, MonitorSummary, load_summary
    from mmbench.model.results import MetricDef

    class Fake:
        name = "fake"
        calls = 0

        @classmethod
        def summarise(cls, outdir, meta):
            cls.calls += 1
            return MonitorSummary([(MetricDef("m", "s", "lower"), [1.0])], [])

    (tmp_path / "data").write_text("x")
    bad = {
        "version": SUMMARY_VERSION,
        "monitor": "fake",
        "notes": [],
        "metrics": [[{"name": "m", "unit": "s", "better": "sideways"}, ["x"]]],
    }
    for content in ("", "{", json.dumps(bad), "[]"):
        (tmp_path / "summary.json").write_text(content)
        os.utime(tmp_path / "summary.json", ns=(2 * 10**18, 2 * 10**18))
        s = load_summary(Fake, tmp_path, {})
        assert s.metrics[0][0].better == "lower"
    assert Fake.calls == 4


# -- item 3: report -o writes only regular files ------------------------------------------------------


def _no_temp_left(folder: Path) -> None:
    assert not [p for p in folder.rglob(".*tmp*")], list(folder.rglob(".*tmp*"))


def test_report_to_stdout(tmp_path):
    results = imported(tmp_path)
    proc = mmbench("report", "--results", str(results), "-o", "-", "a")
    assert proc.returncode == 0 and proc.stdout.lstrip().lower().startswith("<!doctype html")
    assert proc.stdout.rstrip().endswith("</html>") and "wrote stdout" in proc.stderr
    dev = mmbench("report", "--results", str(results), "-o", "/dev/stdout", "a")
    assert dev.returncode == 0 and dev.stdout.rstrip().endswith("</html>") and len(dev.stdout) == len(proc.stdout)
    _no_temp_left(tmp_path)


def test_report_refuses_what_is_not_a_regular_file(tmp_path):
    results = imported(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep").write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "x.html")
    to_dir = tmp_path / "to-dir"
    to_dir.symlink_to(folder)
    # a device node of our own: were the guard broken, the test would destroy it, not /dev/null
    device = tmp_path / "null-device"
    if os.geteuid() == 0:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        device = Path("/dev/null")  # not root: the rename would fail anyway
    for target, needle in (
        (folder, "directory"),
        (fifo, "FIFO"),
        (device, "character device"),
        (dangling, "symlink"),
        (to_dir, "directory"),
        (Path(f"{folder}/"), "directory"),
    ):
        one_line_error(cli("report", "--results", str(results), "-o", str(target), "a"), 2, needle)
    assert (folder / "keep").read_text() == "x" and fifo.is_fifo() and dangling.is_symlink()
    assert device.is_char_device() and to_dir.is_symlink()
    assert not (tmp_path / "nowhere").exists()
    _no_temp_left(tmp_path)


def test_report_through_symlink_and_over_a_file(tmp_path):
    results = imported(tmp_path)
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    assert cli("report", "--results", str(results), "-o", str(link), "a").returncode == 0
    assert link.is_symlink() and "</html>" in real.read_text()
    new = tmp_path / "sub" / "new.html"
    assert cli("report", "--results", str(results), "-o", str(new), "a").returncode == 0 and new.is_file()
    _no_temp_left(tmp_path)


def test_report_unwritable_folder_leaves_nothing(tmp_path):
    results = imported(tmp_path)
    parent = tmp_path / "file"
    parent.write_text("x")
    one_line_error(cli("report", "--results", str(results), "-o", str(parent / "r.html"), "a"), 2, str(parent))
    assert parent.read_text() == "x"
    _no_temp_left(tmp_path)


def test_plot_output_dir_that_is_a_file(tmp_path):
    results = imported(tmp_path)
    f = tmp_path / "plots"
    f.write_text("x")
    one_line_error(cli("plot", "--results", str(results), "-o", str(f), "a"), 2, "not a directory")
    assert f.read_text() == "x"


# -- item 6: analyze irqsoff -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"", "empty"),
        (b"\n\n", "empty"),
        (bytes(range(256)) * 4, "binary"),
        (b"# mmbench\n\nA benchmark framework.\n", "no irqsoff trace"),
        (b"# tracer: function\n#\n  bash-1 [000] .... 1.0: foo <-bar\n", "no irqsoff trace"),
        (b"\xff\xfe garbage \xc3\x28\n", "no irqsoff trace"),
    ],
)
def test_analyze_irqsoff_refuses_what_is_no_trace(tmp_path, content, needle):
    f = tmp_path / "README"
    f.write_bytes(content)
    err = one_line_error(cli("analyze", "irqsoff", str(f)), 2, needle)
    assert str(f) in err and "0 us" not in err
    one_line_error(cli("analyze", "irqsoff", str(tmp_path)), 2, "directory")
    one_line_error(cli("analyze", "irqsoff", str(tmp_path / "missing")), 2, "no such file")


def test_analyze_irqsoff_reads_a_real_trace():
    sample = Path(__file__).resolve().parent / "data" / "irqsoff" / "sample-modern.txt"
    out = cli("analyze", "irqsoff", str(sample))
    assert out.returncode == 0 and out.stdout.startswith("Total sampled time IRQs off") and "Event " in out.stdout


# -- item 7: the suite loader ------------------------------------------------------------------------

GOOD_SUITE = '[suite]\nbudget = "64M"\niterations = 1\n[[workload]]\nname = "faultin"\n[workload.params]\nsize = "4M"\n'


def load_error(tmp_path: Path, content: bytes | str, *sets: str) -> str:
    """The one-line error of loading the suite and checking its settings on this kernel (what
    `run` and `run --check` do before anything is applied)."""
    from mmbench.config.load import load_suite
    from mmbench.errors import UsageError
    from mmbench.run.settings import validate_suite_settings

    f = tmp_path / "suite.toml"
    f.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(UsageError) as e:
        validate_suite_settings(load_suite(str(f), list(sets)))
    msg = str(e.value)
    assert "\n" not in msg and str(f) in msg, msg
    return msg


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"", "empty suite"),
        (b"   \n# only a comment\n", "empty suite"),
        (bytes(range(256)), "binary"),
        (b'[suite]\ndescription = "caf\xe9"\n', "line 2: not UTF-8"),
        (b'[suite]\nbudget = "64M"\n', "no workloads"),
        (b"[suite]\n" + b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "TOML"),
    ],
)
def test_suite_file_that_is_no_suite(tmp_path, content, needle):
    assert needle in load_error(tmp_path, content)


def test_suite_that_is_a_directory(tmp_path):
    one_line_error(mmbench("run", "--config", str(tmp_path), "--results", str(tmp_path / "r"), "x"), 2, "directory")


@pytest.mark.parametrize("size", ['"3x"', '"65M"', '"2G"'])
def test_workload_larger_than_budget_refused(tmp_path, size):
    msg = load_error(tmp_path, GOOD_SUITE.replace('"4M"', size))
    assert "workload[faultin].params.size" in msg and "budget" in msg


def test_workload_larger_than_budget_with_swap_is_allowed(tmp_path):
    from mmbench.config.load import load_suite

    f = tmp_path / "s.toml"
    f.write_text(GOOD_SUITE.replace('"4M"', '"2x"') + '[swap]\ntype = "zram"\nsize = "1x"\n')
    assert load_suite(str(f)).workloads[0].params["size"] == 128 << 20


@pytest.mark.skipif(os.geteuid() != 0, reason="settings are validated against writable knobs (root)")
@pytest.mark.parametrize(
    "setting,needle",
    [
        ("vm.swappiness=500", "outside 0..200"),
        ("vm.dirty_ratio=101", "outside 0..100"),
        ("vm.overcommit_memory=7", "outside 0..2"),
        ("thp.khugepaged.max_ptes_none=512", "outside 0..511"),
        ("thp.khugepaged.pages_to_scan=0", "outside 1"),
        ("vm.min_free_kbytes=-5", "outside"),
        ("vm.swappiness=lots", "expected an integer"),
        ("thp.enabled=sometimes", "not one of"),
    ],
)
def test_setting_the_kernel_would_reject(tmp_path, setting, needle):
    before = Path("/proc/sys/vm/swappiness").read_text()
    msg = load_error(tmp_path, GOOD_SUITE, setting)
    assert f"settings.{setting.split('=')[0]}" in msg and needle in msg
    # the whole run is refused before any setting (or anything else) is applied
    f = tmp_path / "suite.toml"
    proc = mmbench(
        "run",
        "--config",
        str(f),
        "--set",
        "vm.dirty_background_ratio=5",
        "--set",
        setting,
        "--results",
        str(tmp_path / "r"),
        "x",
    )
    one_line_error(proc, 2, setting.split("=")[0])
    assert not (tmp_path / "r").exists() and Path("/proc/sys/vm/swappiness").read_text() == before


# -- item 8: the SQLite index is the store's index ------------------------------------------------------


def _index_runs(results: Path) -> dict[str, str]:
    import sqlite3

    conn = sqlite3.connect(results / "index.sqlite")
    try:
        return dict(conn.execute("SELECT name, status FROM runs").fetchall())
    finally:
        conn.close()


def _listed(results: Path) -> list[str]:
    out = cli("list", "--results", str(results))
    assert out.returncode == 0, out.stderr
    return [line.split()[0] for line in out.stdout.splitlines()[1:]]


def test_folders_and_index_disagree(tmp_path):
    import shutil

    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV, results)
    assert _listed(results) == ["a", "b"] and set(_index_runs(results)) == {"a", "b"}
    shutil.rmtree(results / "a")  # folder gone, row left
    shutil.copytree(results / "b", results / "c")  # folder added by hand, no row
    meta = stored_doc(results / "b" / "run.json")
    meta["status"] = "failed"  # run.json changed after indexing
    (results / "b" / "run.json").write_text(json.dumps(meta))
    assert sorted(_listed(results)) == ["b", "c"]
    assert _index_runs(results) == {"b": "failed", "c": "imported"}
    (results / "index.sqlite").unlink()  # index gone: rebuilt from the folders
    assert sorted(_listed(results)) == ["b", "c"] and set(_index_runs(results)) == {"b", "c"}


def test_reindex_replaces_a_damaged_index(tmp_path):
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV, results)
    (results / "b" / "w" / "iter-0" / "result.json").write_text("{")
    (results / "index.sqlite").write_bytes(b"\0garbage" * 64)
    out = cli("reindex", "--results", str(results))
    assert out.returncode == 0 and "indexed 1 run(s)" in out.stdout and "damaged: b" in out.stdout
    assert _index_runs(results) == {"a": "imported"}
    assert not list(results.glob(".index.sqlite*"))
    one_line_error(cli("reindex", "--results", str(tmp_path / "none")), 2, "no such results directory")


def test_rm_removes_from_folders_and_index(tmp_path):
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV, results)
    imported(tmp_path, "c", CSV, results)
    one_line_error(cli("rm", "--results", str(results), "a", "nosuch"), 2, "nothing removed")
    one_line_error(cli("rm", "--results", str(results), "../a"), 2, "run name")
    assert (results / "a").is_dir()
    out = cli("rm", "--results", str(results), "a", "c")
    assert out.returncode == 0 and out.stdout.split() == ["removed", "a", "removed", "c"]
    assert not (results / "a").exists() and not (results / "c").exists()
    assert set(_index_runs(results)) == {"b"} and _listed(results) == ["b"]


def test_rm_refuses_a_live_run(tmp_path):
    results = imported(tmp_path, "a")
    meta = stored_doc(results / "a" / "run.json")
    from mmbench.model.kernel import proc_start_time
    from mmbench.store.writer import boot_id

    meta.update(status="running", pid=os.getpid(), pid_start=proc_start_time(os.getpid()), boot_id=boot_id())
    (results / "a" / "run.json").write_text(json.dumps(meta))
    one_line_error(cli("rm", "--results", str(results), "a"), 2, "still running")
    assert (results / "a" / "run.json").is_file()


# -- item 11: what users misread ----------------------------------------------------------------------


def test_text_comparison_units_and_legend(tmp_path):
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV.replace(",1.1\n", ",1.3\n"), results)
    out = cli("compare", "--results", str(results), "a", "b").stdout
    assert out.count("positive = better") == 1
    # table rows start with the family letter (P, e or blank), then the statistic
    rows = [line for line in out.splitlines() if line[2:].startswith(("Amean", "Stddev", "Min", "Max"))]
    assert rows and all("time [s]" in line for line in rows if " time" in line)
    solo = cli("compare", "--results", str(results), "a").stdout
    assert "positive = better" not in solo  # one run: no percentages to explain


def test_one_counter_one_direction():
    from mmbench.analysis import vmstat as vm
    from mmbench.model.counters import ALIASES, DIRECTION, direction
    from mmbench.monitors import meminfo, proc_vmstat

    for row in vm.ROWS:
        if row.counter is not None:
            assert row.better == direction(row.counter), row.name
    for _title, names in proc_vmstat.GAUGES + proc_vmstat.RATES:
        assert len({direction(n) for n in names if n in DIRECTION}) == 1
    for field in meminfo.SUMMARY_FIELDS:
        direction(field)  # every field shown has an entry
    from mmbench.monitors import memcg

    for counter in memcg.RATE_SUMMARY:
        assert direction(counter) == "lower"
    # the examples: one direction in every section
    assert next(r for r in vm.ROWS if r.name == "THP fault alloc").better == direction("thp_fault_alloc") == "higher"
    assert direction("MemFree") == direction("nr_free_pages") == "higher"
    assert all(ALIASES[k] in DIRECTION for k in ALIASES)
    # volume counters are never compared as counts
    assert direction("numa_hit") is None
    assert not any(r.counter in ("numa_hit", "numa_local", "numa_interleave") for r in vm.ROWS)
    delta = {"numa_hit": 8290_00, "numa_miss": 10_00, "numa_local": 8290_00, "numa_other": 10_00}
    rows = vm.derive(delta)
    assert rows["NUMA alloc hit %"] == pytest.approx(100 * 829000 / 830000) and "NUMA alloc hit" not in rows


def _proc_vmstat_directions() -> dict[str, str]:
    import numpy as np
    from mmbench.monitors.proc_vmstat import ProcVmstat

    cols = ["nr_free_pages", "thp_fault_alloc", "pgfault"]
    arr = np.array([[0.0, 100, 0, 0], [1.0, 90, 5, 10], [2.0, 80, 9, 30]])
    return {m.name: m.better for m, _ in ProcVmstat.summarise_table(cols, arr, {}).metrics}


def test_monitor_sections_read_the_same_table():
    got = _proc_vmstat_directions()
    assert got["THP fault alloc (/s)"] == "higher" and got["Free memory (MiB)"] == "higher"
    assert got["Page faults (/s)"] == "lower"


def test_compare_says_when_a_run_is_incomplete_or_failed(tmp_path):
    results = imported(tmp_path, "a")
    imported(tmp_path, "b", CSV, results)
    meta = stored_doc(results / "b" / "run.json")
    for status, said in (("failed", "run b is failed"), ("incomplete", "run b is incomplete")):
        meta["status"] = status
        (results / "b" / "run.json").write_text(json.dumps(meta))
        out = cli("compare", "--results", str(results), "a", "b")
        assert out.returncode == 0 and said in out.stderr and said in out.stdout
        assert "3 measured iteration(s) completed" in out.stdout
        js = json.loads(cli("compare", "--results", str(results), "--format", "json", "a", "b").stdout)
        assert any(said in n for n in js["notes"])
    assert "is complete" not in cli("compare", "--results", str(results), "a").stdout


def test_list_header_warmup_apart_and_iteration_numbers(tmp_path):
    results = imported(tmp_path, "a")
    res = results / "a" / "w" / "iter-0" / "result.json"
    data = stored_doc(res)
    data["warmup"] = True
    res.write_text(json.dumps(data))
    lines = cli("list", "--results", str(results)).stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "STATUS", "CREATED"] and "WARM-UP" in lines[0]
    fields = lines[1].split()
    header = lines[0].split()
    assert fields[0] == "a" and "MEASURED" in header
    # imported runs have no kernel: MEASURED and WARM-UP are the two numbers before the description
    numbers = [f for f in fields if f.isdigit()]
    assert numbers[:2] == ["2", "1"]
    show = cli("show", "--results", str(results), "a").stdout
    shown = sorted(
        int(line.split()[1].rstrip(":")) for line in show.splitlines() if line.strip().startswith("iteration")
    )
    folders = sorted(int(p.name.split("-")[1]) for p in (results / "a" / "w").glob("iter-*"))
    assert shown == folders == [0, 1, 2] and "iteration 0 warm-up" in show


def test_missing_tool_is_exit_3(tmp_path, monkeypatch):
    from mmbench.plugins import workloads as registry

    monkeypatch.setattr(registry()["faultin"], "requires", ["no-such-tool-mmbench"])
    f = tmp_path / "s.toml"
    f.write_text(GOOD_SUITE)
    err = one_line_error(cli("run", "--check", "--config", str(f), "x"), 3, "no-such-tool-mmbench")
    assert str(f) in err


def test_run_check_runs_nothing(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(GOOD_SUITE)
    out = cli("run", "--check", "--config", str(f), "--results", str(tmp_path / "r"), "6.12.0-rc3+")
    assert out.returncode == 0 and "nothing was run" in out.stdout and not (tmp_path / "r").exists()
    one_line_error(cli("run", "--check", "--config", str(f), "../x"), 2, "run name")
