"""The C workload and monitor programs: warning- and analyzer-clean, strict arguments, no hang
when a pft client process fails (issue 11, item 9)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mmbench.cbuild import CFLAGS, INCLUDE_DIR, binary_for

ROOT = Path(__file__).resolve().parent.parent / "mmbench"
SOURCES = sorted([*ROOT.glob("workloads/*.c"), *ROOT.glob("monitors/*.c")])


def test_the_build_warns():
    assert "-Wall" in CFLAGS and "-Wextra" in CFLAGS


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("src", SOURCES, ids=[p.name for p in SOURCES])
def test_compiles_clean_with_analyzer(src, tmp_path):
    flags = [f for f in CFLAGS if f not in ("-g",)] + ["-Werror", "-fanalyzer", f"-I{INCLUDE_DIR}"]
    proc = subprocess.run(["gcc", *flags, "-c", "-o", str(tmp_path / "x.o"), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "prog,argv,what",
    [
        ("faultin", ["64M", "1"], "SIZE_BYTES"),
        ("faultin", ["", "1"], "SIZE_BYTES"),
        ("faultin", ["4194304", "yes"], "MADV_HUGEPAGE"),
        ("pft", ["4194304", "2x", "threads", "1", "0"], "CLIENTS"),
        ("pft", ["4194304", "2", "forks", "1", "0"], "MODE"),
        ("pft", ["-4194304", "2", "threads", "1", "0"], "SIZE_BYTES"),
        ("thpfault", ["4194304", "1", "1", "0.5"], "HOLES_BYTES"),
        ("usemem", ["1M", "0", "/dev/null", "1"], "ANON_BYTES"),
        ("stutter", ["nan", "4096", "0", "0"], "DURATION_S"),
        ("anonhog", ["4096", "4096", "ten"], "PERIOD_MS"),
        ("pagealloc", ["-d", "/tmp", "-s", "1M", "-j", "1", "-b", "4096", "-c", "4096"], "-s"),
        ("simoop", ["-t", "1e3"], "-t"),
        ("simoop", ["-d", "/tmp", "-L", "soon"], "-L"),
        ("allocfree", ["-m", "pipe", "-b", "1x"], "-b"),
        ("allocfree", ["-m", "pipes"], "-m pipe or -m anon"),
        ("highalloc", ["hugetlb", "0", "1", "zero"], "STEP"),
        ("bgload", ["hog", "1M", "5ms"], "PAUSE_MS"),
    ],
)
def test_garbage_arguments_are_errors(prog, argv, what):
    binary = binary_for(ROOT / "workloads" / f"{prog}.c")
    proc = subprocess.run([binary, *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_read_latency_arguments_are_strict(tmp_path):
    binary = binary_for(ROOT / "monitors" / "read_latency.c")
    proc = subprocess.run(
        [binary, str(tmp_path / "f"), str(tmp_path / "o.tsv"), "1", "100ms"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "interval_ms" in proc.stderr
    assert not (tmp_path / "f").exists()


def test_pft_process_mode_does_not_hang_when_a_client_fails():
    """Every client's mmap of 2**49 bytes fails: before, the parent waited on the barrier forever."""
    binary = binary_for(ROOT / "workloads" / "pft.c")
    proc = subprocess.run(
        [binary, str(1 << 50), "2", "processes", "1", "0"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert "client" in proc.stderr and "exited with status 1" in proc.stderr


def test_pft_process_mode_still_measures():
    binary = binary_for(ROOT / "workloads" / "pft.c")
    proc = subprocess.run(
        [binary, str(8 << 20), "2", "processes", "2", "0"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("result")]
    assert len(lines) == 2 and all(int(ln[6]) > 0 and int(ln[8]) == 2048 for ln in lines)


@pytest.mark.parametrize(
    "script,said",
    [("kill -KILL $$", "was killed by SIGKILL and printed nothing"), ("exit 3", "exited 3 and printed nothing")],
)
def test_a_compiler_that_says_nothing_is_said(tmp_path, monkeypatch, script, said):
    """A compiler killed by a signal (the OOM killer) prints nothing: the reason still says how it ended."""
    from mmbench.cbuild import _build
    from mmbench.errors import EnvironmentUnsupported

    cc = tmp_path / "cc"
    cc.write_text(f"#!/bin/sh\n{script}\n")
    cc.chmod(0o755)
    src = tmp_path / "prog.c"
    src.write_text("int main(void) { return 0; }\n")
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(EnvironmentUnsupported) as err:
        _build(src, ["-O2"], [], "")
    assert str(err.value) == f"building prog.c failed: {cc} {said}"
