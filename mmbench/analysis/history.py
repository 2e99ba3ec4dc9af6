"""A metric across a series of runs of one suite on one machine, with change points.

Each run contributes one value per (workload, metric): the mean of its measured iterations' means
(iteration means come from the store's index, so nothing is downloaded).  Change points come from
E-Divisive means with a permutation test, as MongoDB's performance CI and Otava use it
(``analysis/changepoint.py``).  A change point is reported when the
permutation p-value is at most ``PVALUE`` (0.001, with ``PERMUTATIONS`` = 999 permutations and a
fixed seed, so the same history gives the same answer).  Each change point says the runs on both
sides and the step: the mean of the segment after over the mean of the segment before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmbench.analysis.changepoint import PERMUTATIONS, PVALUE, change_points  # noqa: F401 (re-exported)
from mmbench.errors import UsageError


@dataclass
class ChangePoint:
    index: int              # first run of the new segment
    before_run: str
    after_run: str
    before_mean: float
    after_mean: float

    @property
    def step_pct(self) -> float:
        return (self.after_mean - self.before_mean) / abs(self.before_mean) * 100 if self.before_mean else float("nan")


@dataclass
class Series:
    workload: str
    metric: str
    runs: list[str]
    created: list[float]
    values: list[float]
    change_points: list[ChangePoint] = field(default_factory=list)


def _segments_means(values: list[float], cps: list[int]) -> list[float]:
    bounds = [0, *cps, len(values)]
    return [sum(values[a:b]) / (b - a) for a, b in zip(bounds, bounds[1:])]


def build_history(store: Any, *, machine: str | None, suite: str | None,
                  metrics: list[str] | None = None) -> list[Series]:
    """Series of every (workload, metric) in the matching runs, oldest first."""
    runs = [r for r in store.list_runs()
            if (machine is None or r.get("host") == machine) and (suite is None or r.get("suite") == suite)
            and r["status"] in ("complete", "imported")]
    if not runs:
        known = sorted({(r.get("host", ""), r.get("suite", "")) for r in store.list_runs()})
        raise UsageError(f"no complete runs of suite {suite!r} on machine {machine!r} in {store}"
                         + (f"; there are: {', '.join(f'{m}/{s}' for m, s in known if s)}" if known else ""))
    runs.sort(key=lambda r: r["created"] or 0)
    order = {r["name"]: i for i, r in enumerate(runs)}
    per: dict[tuple[str, str], dict[str, list[float]]] = {}
    for run, workload, metric, _idx, value in store.iteration_values(list(order)):
        if value is None:
            continue
        if metrics and metric not in metrics and f"{workload}.{metric}" not in metrics:
            continue
        per.setdefault((workload, metric), {}).setdefault(run, []).append(value)
    if metrics and not per:
        raise UsageError(f"--metric: none of {', '.join(metrics)} is in these runs")
    out = []
    for (workload, metric), by_run in sorted(per.items()):
        names = sorted(by_run, key=order.__getitem__)
        values = [sum(by_run[n]) / len(by_run[n]) for n in names]
        s = Series(workload, metric, names, [runs[order[n]]["created"] for n in names], values)
        cps = change_points(values)
        means = _segments_means(values, cps)
        s.change_points = [ChangePoint(i, names[i - 1], names[i], means[k], means[k + 1])
                           for k, i in enumerate(cps)]
        out.append(s)
    return out
