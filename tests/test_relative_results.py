"""A relative results directory, as users give it (the default ``results`` is one): issue 22 item 1.

stress-ng and fio were handed report paths under the results directory while running in another
working directory, so ``mmbench run --config stressng NAME`` from the project root failed.  The
suite below runs one workload of every kind with ``--results results`` from a scratch working
directory: tools writing their report to a path they are given (stressng, fio), a tool reading a
command file in its own working directory (postmark), a C program of mmbench's (faultin), a
companion (applaunch), and monitors that hand an output path to a program (read-latency's C
sampler, perf-stat) beside the sampling ones; then ``$MMBENCH_RESULTS`` relative, with
``compare`` and ``show`` reading the store back through the relative name.
"""

from __future__ import annotations

import shutil

import pytest

from conftest import mmbench, mmbench_cgroups, needs_root

pytestmark = [
    needs_root,
    pytest.mark.skipif(
        not (shutil.which("stress-ng") and shutil.which("fio") and shutil.which("postmark")),
        reason="stress-ng, fio and postmark come with scripts/setup.sh",
    ),
]

SUITE = """
[suite]
budget = "192M"
iterations = 1
warmup = 0
scratch = "scratch"

[[workload]]
name = "stressng"
[workload.params]
stressors = ["vm"]
workers = 1
duration = "1s"
memory = "0.25x"

[[workload]]
name = "fio"
[workload.params]
jobs = ["read"]
file = "32M"
hog = "0"
runtime = "2s"
[workload.with.applaunch]
apps = ["python-import"]
discard_first = false

[[workload]]
name = "postmark"
[workload.params]
fileset = "4M"
transactions = 500
subdirectories = 4

[[workload]]
name = "faultin"
[workload.params]
size = "16M"

[monitors.proc-vmstat]
interval = "1s"
[monitors.read-latency]
interval = "0.5s"
file_size = "8M"
read_size = "64K"
[monitors.perf-stat]
interval = "1s"
"""


def test_every_kind_of_workload_runs_with_a_relative_results_directory(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    out = mmbench("run", "--config", "suite.toml", "--results", "results", "rel", cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr + out.stdout
    run = tmp_path / "results" / "rel"
    assert (run / "stressng" / "iter-0" / "raw" / "stressng-vm.yaml").exists()
    assert (run / "fio" / "iter-0" / "raw" / "fio-read.json").exists()
    assert (run / "postmark" / "iter-0" / "raw" / "postmark.out").exists()
    assert (run / "fio" / "iter-0" / "raw" / "applaunch.log").exists()
    assert (run / "faultin" / "iter-0" / "monitors" / "read-latency" / "read-latency.tsv").exists()
    assert not (tmp_path / "scratch").exists() or not any((tmp_path / "scratch").iterdir())
    show = mmbench("show", "--results", "results", "rel", cwd=str(tmp_path), check=True).stdout
    assert "status:   complete" in show, show
    assert show.count("iteration 0: ok") == 4, show
    assert mmbench_cgroups() == []


def test_relative_results_and_cache_from_the_environment(tmp_path):
    # a relative MMBENCH_CACHE too: the C programs compiled there run from other directories
    (tmp_path / "suite.toml").write_text(
        '[suite]\nbudget = "128M"\niterations = 1\nwarmup = 0\n'
        '[[workload]]\nname = "stressng"\n[workload.params]\n'
        'stressors = ["mmap"]\nworkers = 1\nduration = "1s"\nmemory = "0.25x"\n'
        '[[workload]]\nname = "postmark"\n[workload.params]\n'
        'fileset = "4M"\ntransactions = 300\nsubdirectories = 4\nhog = "16M"\nhog_block = "1M"\n'
        'hog_period = "100ms"\n'
    )
    env = {"MMBENCH_RESULTS": "store", "MMBENCH_CACHE": "cache"}
    out = mmbench("run", "--config", "suite.toml", "a", cwd=str(tmp_path), env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert (tmp_path / "store" / "a" / "stressng" / "iter-0" / "raw" / "stressng-mmap.yaml").exists()
    assert (tmp_path / "store" / "a" / "postmark" / "iter-0" / "raw" / "anonhog.out").exists()
    assert any((tmp_path / "cache").rglob("anonhog*"))
    show = mmbench("show", "a", cwd=str(tmp_path), env=env, check=True).stdout
    assert show.count("iteration 0: ok") == 2, show
    cmp = mmbench("compare", "a", cwd=str(tmp_path), env=env, check=True).stdout
    assert "mmap bogo-ops/s" in cmp
