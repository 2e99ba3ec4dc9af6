"""``--fail-on-regression``: the significant changes of primary rows in the bad direction beyond a
threshold (exploratory rows never gate: docs/statistics.md §9)."""

from __future__ import annotations

from dataclasses import dataclass

from mmbench.analysis.compare.model import Comparison


@dataclass(frozen=True)
class Regression:
    section: str
    metric: str
    stat: str
    run: str
    pct: float
    p: float | None

    def __str__(self) -> str:
        p = f", p={self.p:.3g}" if self.p is not None else ""
        change = "up from 0" if self.pct == -float("inf") else f"{self.pct:+.2f}%"
        return f"{self.section}: {self.metric} {self.stat} in {self.run}: {change}{p}"


def regressions(comparison: Comparison, threshold_pct: float) -> list[Regression]:
    """Significant changes of primary rows in the bad direction larger than ``threshold_pct``
    percent.  A primary row whose baseline is 0 has no percentage: a rise from 0 in a
    lower-is-better row (compaction stalls 0 -> 360) counts as worse by more than any threshold."""
    out = []
    for s in comparison.sections:
        for r in s.rows:
            if r.family != "primary":
                continue
            for n in comparison.runs[1:]:
                pct = r.pct.get(n)
                b, v = r.values.get(comparison.baseline), r.values.get(n)
                if pct is None and b == 0 and v is not None and v > 0 and r.better == "lower":
                    pct = -float("inf")  # from 0 to some: worse by more than any threshold
                if r.significant.get(n) and pct is not None and pct < -abs(threshold_pct):
                    out.append(Regression(s.title, r.metric, r.stat, n, pct, r.p.get(n)))
    return out
