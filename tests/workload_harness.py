"""Run one workload iteration for real, outside a suite: for workload tests and quick checks.

``run_workload("faultin", {"size": "64M"}, budget="256M")`` builds the sandbox, runs one
iteration with a private journal (restored before it returns) and gives the IterationResult.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from mmbench.model.params import resolve_params
from mmbench.model.sizes import parse_size
from mmbench.run.iteration import IterationPlan, run_iteration
from mmbench.run.journal import Journal
from mmbench.model.results import IterationResult
from mmbench.plugins import workloads as registry


def run_workload(
    name: str,
    params: dict[str, Any] | None = None,
    *,
    budget: str | int = "256M",
    outdir: Path | None = None,
    actions: dict[str, Any] | None = None,
    settings: dict[str, str] | None = None,
    sandbox: str = "memcg",
) -> IterationResult:
    """Run ``name`` once in a fresh sandbox of ``budget``; ``settings`` maps knob paths to values
    (written through the journal and put back afterwards).  ``sandbox="none"`` runs it in
    whole-machine mode (no memcg limit; the budget is only what relative sizes are relative to)."""
    budget_b = parse_size(budget)
    cls = registry()[name]
    wl = cls()
    resolved = resolve_params(cls.params, params or {}, budget_b, f"workload.{name}.params")
    wl.check(resolved, budget_b)
    own_out = outdir is None  # a folder made here is removed here (callers reading raw files pass one)
    out = Path(outdir or tempfile.mkdtemp(prefix=f"mmbench-{name}-"))
    journal_dir = Path(tempfile.mkdtemp(prefix="mmbench-journal-"))
    journal = Journal(journal_dir)
    journal.acquire()
    try:
        for path, value in (settings or {}).items():
            journal.set_value(path, value)
        plan = IterationPlan(
            run_name="test",
            label=name,
            workload=wl,
            params=resolved,
            metrics=wl.metric_defs(resolved),
            budget=budget_b,
            index=0,
            warmup=False,
            itdir=out / name / "iter-0",
            rundir=out,
            scratch=out / "scratch",
            actions=actions or {"sync": True},
            sandbox_mode=sandbox,
        )
        return run_iteration(plan, journal, log=lambda m: None)
    finally:
        journal.restore()
        journal.release()
        shutil.rmtree(journal_dir, ignore_errors=True)
        if own_out:
            shutil.rmtree(out, ignore_errors=True)
