"""Bad input and damaged stores end in one line and a documented exit status, never a traceback.

Issue 11: exit statuses (item 5), names that are not paths (2), ``report -o`` targets (3), a
damaged store (4), ``analyze irqsoff`` input (6), the suite loader (7), the SQLite index (8) and
what users misread in comparisons (11).  None of these needs root or changes the machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import mmbench

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


def imported(tmp_path: Path, name: str = "a", text: str = CSV, results: Path | None = None) -> Path:
    results = results or tmp_path / "results"
    src = tmp_path / f"{name}.csv"
    src.write_text(text)
    mmbench("import", "--results", str(results), str(src), name, check=True)
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
    assert not results.exists() or not any(results.iterdir())   # nothing written
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["6.12.0-rc3+", "v6.1_patched", "+", "~", "host:6.1", "base~1", "a,b=c@d"])
def test_run_names_kernel_people_use(tmp_path, name):
    results = imported(tmp_path, name)
    assert (results / name / "run.json").is_file()
    assert mmbench("show", "--results", str(results), name, check=True).stdout.startswith(f"run:      {name}")
    assert name in mmbench("list", "--results", str(results), check=True).stdout


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
    from mmbench.names import check_name
    from mmbench.store.base import validate_run_name
    for bad in ("a/b", "", ".", "-x"):
        with pytest.raises(UsageError):
            validate_run_name(bad)
        with pytest.raises(UsageError):
            check_name(bad, "label")
    assert check_name("6.12.0-rc3+") == "6.12.0-rc3+"


def test_suite_label_that_is_a_path(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nbudget = "64M"\n[[workload]]\nname = "faultin"\nlabel = "../escape"\n')
    one_line_error(mmbench("run", "--config", str(suite), "--results", str(tmp_path / "r"), "x"), 2,
                   "workload[../escape].label")
