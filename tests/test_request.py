"""The typed request: ``mmbench run``'s command line parsed once into a ``RunRequest`` that turns
back into the same arguments (what a VM guest and a fleet agent run), travels as JSON in a fleet
job, and is run by the driver; ``measure`` runs arms for N rounds, as often as a caller asks."""

from __future__ import annotations

import json
import types

import pytest

from mmbench.cli import build_parser
from mmbench.commands.run import parse_request
from mmbench.errors import UsageError
from mmbench.model.request import KernelRequest, RunRequest

AB_KERNELS = [
    "--config",
    "smoke",
    "--results",
    "res",
    "--set",
    "budget=256M",
    "--set",
    "thp.enabled=never",
    "--iterations",
    "3",
    "--force",
    "--kernel",
    "source",
    "--patch",
    "a.patch",
    "--series",
    "q/series",
    "--kconfig",
    "mine.config",
    "--fragment",
    "irqsoff",
    "--baseline-kernel",
    "tree:/src/linux",
    "--baseline-patch",
    "b.patch",
    "--vm-memory",
    "2G",
    "--vm-cpus",
    "2",
    "--vm-numa",
    "1",
    "--vm-clock",
    "host",
    "--baseline",
    "old",
    "--max-time",
    "1h",
    "--quiet",
    "--json-log",
    "new",
]
ADAPTIVE = [
    "--config",
    "smoke",
    "--set",
    "faultin.size=16M",
    "--until",
    "ci<2.5%",
    "--baseline",
    "b",
    "--baseline-set",
    "thp.enabled=never",
    "--max-iterations",
    "7",
    "--max-time",
    "90s",
    "--check",
    "n",
]


def parse(argv: list[str]) -> RunRequest:
    return parse_request(build_parser().parse_args(["run", *argv]))


@pytest.mark.parametrize("argv", [AB_KERNELS, ADAPTIVE, ["--config", "smoke", "x"]])
def test_a_request_turns_back_into_the_arguments_that_make_it(argv):
    request = parse(argv)
    assert parse(request.argv()) == request
    assert RunRequest.from_json(request.to_json()) == request


def test_the_request_holds_every_argument_parsed():
    r = parse(AB_KERNELS)
    assert r.kernel == KernelRequest(
        "source", (("patch", "a.patch"), ("series", "q/series")), ("irqsoff",), ("mine.config",)
    )
    # the fragments and --kconfig files are both kernels'; the baseline's patches its own
    assert r.baseline_kernel == KernelRequest(
        "tree:/src/linux", (("patch", "b.patch"),), ("irqsoff",), ("mine.config",)
    )
    assert r.max_time_s == 3600.0 and r.iterations == 3 and r.force and r.quiet and r.json_log
    assert r.vm_sets() == ["vm.kernel=source", "vm.memory=2G", "vm.cpus=2", "vm.numa=1", "vm.clock=host"]
    assert r.all_sets()[:2] == ["budget=256M", "thp.enabled=never"]
    a = parse(ADAPTIVE)
    assert (a.until_pct, a.baseline, a.baseline_sets, a.max_iterations, a.max_time_s, a.check) == (
        2.5,
        "b",
        ("thp.enabled=never",),
        7,
        90.0,
        True,
    )


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            [
                "--config",
                "smoke",
                "--until",
                "ci<2%",
                "--kernel",
                "source",
                "--baseline",
                "b",
                "--baseline-kernel",
                "source",
                "n",
            ],
            "not available with --baseline-kernel",
        ),
        (["--config", "smoke", "--max-iterations", "3", "n"], "--max-iterations goes with --until"),
        (["--config", "smoke", "--vm-cpus", "2", "n"], "go with --kernel"),
        (
            ["--config", "smoke", "--kernel", "debian:linux-image-x", "--fragment", "irqsoff", "n"],
            "--fragment goes with a kernel built from source",
        ),
    ],
)
def test_bad_arguments_are_refused_at_the_parse(argv, words):
    with pytest.raises(UsageError, match=words):
        parse(argv)


def test_a_fleet_job_carries_the_request_the_agent_runs(tmp_path):
    """``submit``'s request, packed into a job and unpacked by the agent, is the same request (run
    with --force --quiet into the agent's store); a suite file travels as its text."""
    from mmbench.driver.jobs import job_entry, local_request
    from mmbench.config.load import find_suite

    suite = tmp_path / "mine.toml"
    suite.write_text(find_suite("smoke").read_text())
    for config in ("smoke", str(suite)):
        request = RunRequest(config=config, name="n", sets=("budget=256M",), iterations=2, results="elsewhere")
        entry = json.loads(json.dumps(job_entry(request)))
        got = local_request(entry, tmp_path / "agent")
        assert got.replace(config=config) == request.replace(force=True, quiet=True, results=None)
        if config != "smoke":
            assert got.config != config and open(got.config).read() == suite.read_text()
        assert parse(got.argv()) == got.replace(results=None)


def test_measure_runs_arms_for_n_rounds_and_can_be_called_again(tmp_path, monkeypatch):
    """The driver's fixed-round form, as a bisection calls it once per step: each arm gets exactly
    N measured rounds in A B, B A order, and the stored runs come back."""
    from mmbench.driver.rounds import Arm, measure
    from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
    from mmbench.store import open_store

    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    metric = MetricDef("tput", "MB/s", "higher", "rate")
    suite = types.SimpleNamespace(
        headline=["tput"],
        workloads=[types.SimpleNamespace(label="w", plugin="sim", iterations=5, warmup=1, metrics=[metric])],
    )
    order: list[str] = []

    def run_round(s, part, store, *, force, progress):
        order.append(part)
        w = store.create_run(
            part, force=True, suite_text="", suite_hash="x", suite_effective={}, fingerprint={}, settings={}
        )
        wl = s.workloads[0]
        w.add_workload(WorkloadRun("w", "sim", {}, [metric], []))
        for i in range(wl.warmup + wl.iterations):
            w.add_iteration(IterationResult("w", i, i < wl.warmup, "ok", samples={"tput": [100.0 + i]}))
        w.finish("complete")
        return "complete"

    store = open_store(tmp_path / "res")
    log = types.SimpleNamespace(info=lambda text: None, warn=lambda text: None)
    for step in ("good", "bad"):
        got = measure([Arm(f"{step}-a", suite, run_round), Arm(f"{step}-b", suite, run_round)], store, 3, progress=log)
        assert got.status == "complete" and [r.name for r in got.runs] == [f"{step}-a", f"{step}-b"]
        for run in got.runs:
            assert len(run.workloads[0].measured()) == 3
    assert order[:6] == [
        "good-a.round0",
        "good-b.round0",
        "good-b.round1",
        "good-a.round1",
        "good-a.round2",
        "good-b.round2",
    ]
    assert len(order) == 12
