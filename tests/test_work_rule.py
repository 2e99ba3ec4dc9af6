"""An iteration that did no work is a failed iteration with a reason (issue 22 item 7).

Every workload declares the metrics that prove it did work (``Workload.work``/``work_metrics``);
the runner fails an iteration where one is missing, empty or all zero, and an iteration of a
workload that declares nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conftest import needs_root
from mmbench.model.params import resolve_params
from mmbench.model.results import MetricDef
from mmbench.plugins import workloads as registry
from mmbench.run.iteration import CompanionSpec, IterationPlan, no_work_reason, run_iteration
from mmbench.run.journal import Journal
from mmbench.workloads.base import Samples, Workload, WorkloadContext

# workloads that measure nothing themselves (monitor-only mode, the guest crash test)
MEASURE_NOTHING = {"idle", "guestpanic"}


@pytest.mark.parametrize("name", sorted(registry()))
def test_every_shipped_workload_declares_its_proof_of_work(name):
    cls = registry()[name]
    wl = cls()
    params = resolve_params(cls.params, {}, 512 << 20, f"workload.{name}.params")
    proofs = wl.work_metrics(params)
    assert proofs is not None, f"{name} declares no metric that proves it did work"
    if name in MEASURE_NOTHING:
        assert proofs == []
        return
    assert proofs, f"{name} declares an empty proof of work"
    declared = {m.name for m in wl.metric_defs(params)}
    for proof in proofs:
        for metric in (proof,) if isinstance(proof, str) else proof:
            assert metric in declared, f"{name}: proof-of-work metric {metric!r} is not one of its metrics"


class _Toy(Workload):
    name = "toy"
    metrics = [MetricDef("ops/s", "ops/s", "higher", "rate"), MetricDef("p99", "us", "lower", "latency")]
    work = ("ops/s",)

    def __init__(self, samples: Samples) -> None:
        self.samples = samples

    def run(self, ctx: WorkloadContext) -> Samples:
        return self.samples


def test_no_work_reasons():
    assert no_work_reason(_Toy({}), {}, {"ops/s": [3.0], "p99": [1.0]}) is None
    assert no_work_reason(_Toy({}), {}, {"ops/s": [0.0, 2.0]}) is None  # one interval stalled
    assert (
        no_work_reason(_Toy({}), {}, {"p99": [5.0]})
        == "did no work: 'ops/s' has no samples (an iteration that did no work is not measured)"
    )
    assert "'ops/s' is 0 in all 3 samples" in no_work_reason(_Toy({}), {}, {"ops/s": [0.0, 0.0, 0.0]})
    assert "is 0 in all 1 samples" in no_work_reason(_Toy({}), {}, {"ops/s": [float("nan")]})

    class Either(_Toy):
        work = (("huge", "base"),)

    assert no_work_reason(Either({}), {}, {"base": [7.0]}) is None
    assert "'huge' or 'base' has no samples" in no_work_reason(Either({}), {}, {})

    class Undeclared(_Toy):
        work = None

    assert "declares no metric that proves" in no_work_reason(Undeclared({}), {}, {"ops/s": [1.0]})


def _iterate(wl: Workload, companions: list[CompanionSpec] | None = None):
    out = Path(tempfile.mkdtemp(prefix="mmbench-workrule-"))
    journal_dir = Path(tempfile.mkdtemp(prefix="mmbench-journal-"))
    journal = Journal(journal_dir)
    journal.acquire()
    try:
        metrics = list(wl.metrics) + [m for c in companions or [] for m in c.workload.metrics]
        plan = IterationPlan(
            run_name="test",
            label="toy",
            workload=wl,
            params={},
            metrics=metrics,
            budget=64 << 20,
            index=0,
            warmup=False,
            itdir=out / "toy" / "iter-0",
            rundir=out,
            scratch=out / "scratch",
            actions={"sync": False},
            companions=companions or [],
        )
        return run_iteration(plan, journal, log=lambda m: None)
    finally:
        journal.restore()
        journal.release()
        shutil.rmtree(journal_dir, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


@needs_root
def test_the_runner_fails_an_iteration_that_did_no_work():
    ok = _iterate(_Toy({"ops/s": [10.0], "p99": [4.0]}))
    assert ok.status == "ok" and ok.reason is None
    idle = _iterate(_Toy({"ops/s": [0.0, 0.0], "p99": [4.0]}))
    assert idle.status == "failed"
    assert idle.reason == "did no work: 'ops/s' is 0 in all 2 samples (an iteration that did no work is not measured)"

    class Other(_Toy):
        name = "other"
        metrics = [MetricDef("launch", "ms", "lower", "latency")]
        work = ("launch",)

    comp = _iterate(_Toy({"ops/s": [10.0]}), [CompanionSpec(Other({}), {})])
    assert comp.status == "failed" and comp.reason.startswith("companion other: did no work: 'launch' has no samples")


def _params(name: str, **kw: Any) -> dict[str, Any]:
    cls = registry()[name]
    return resolve_params(cls.params, kw, 256 << 20, f"workload.{name}.params")


def test_a_background_build_proves_nothing_but_a_measured_one_does():
    kb = registry()["kernbench"]()
    assert kb.work_metrics(_params("kernbench", builds=0)) == []
    assert kb.work_metrics(_params("kernbench", builds=2)) == ["Elapsed"]


@pytest.mark.parametrize(
    "name,params",
    [
        ("kernbench", {"ladder": True}),
        ("stressng", {"ladder": True}),
        ("stressng", {"threads": [1, 3]}),
        ("pgbench", {"ladder": True}),
        ("pgbench", {"batched": True}),
        ("pgbench", {"clients": [1, 2]}),
    ],
)
def test_a_ladder_proves_work_by_its_rungs_metrics(name, params):
    """A ladder names its metrics per rung: the proof of work is each rung's metric."""
    wl = registry()[name]()
    p = _params(name, **params)
    proofs = wl.work_metrics(p)
    declared = {m.name for m in wl.metric_defs(p)}
    assert proofs and all(isinstance(m, str) and m in declared for m in proofs), (proofs, sorted(declared))
