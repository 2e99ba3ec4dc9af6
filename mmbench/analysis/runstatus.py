"""What a comparison must say about a run that is not complete: its numbers cover less.

A run that was interrupted, whose process died, that failed, or that is still being written
is compared on the iterations it stored; the note says so, with how many measured iterations
completed and how many failed, so a reader does not take a partial run for a whole one.
"""

from __future__ import annotations

from mmbench.model.results import RunRecord

WHY = {
    "incomplete": "incomplete (interrupted, or its process died)",
    "failed": "failed",
    "running": "still running",
    "interrupted (owner unknown)": "interrupted (it says running, but its writer cannot be proved alive here)",
}


def run_status_notes(runs: list[RunRecord], names: list[str]) -> list[str]:
    out = []
    for run, name in zip(runs, names):
        why = WHY.get(run.status)
        if why is None:
            continue
        measured = [it for w in run.workloads for it in w.iterations if not it.warmup]
        ok = sum(it.status == "ok" for it in measured)
        out.append(
            f"run {name} is {why}: {ok} measured iteration(s) completed"
            + (f", {len(measured) - ok} failed" if len(measured) > ok else "")
            + "; its numbers cover only those"
        )
    return out
