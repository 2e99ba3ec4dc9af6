"""``--fail-on-regression``: the significant changes in the bad direction beyond a threshold."""

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
        return f"{self.section}: {self.metric} {self.stat} in {self.run}: {self.pct:+.2f}%{p}"


def regressions(comparison: Comparison, threshold_pct: float) -> list[Regression]:
    """Significant changes in the bad direction larger than ``threshold_pct`` percent."""
    out = []
    for s in comparison.sections:
        for r in s.rows:
            for n in comparison.runs[1:]:
                pct = r.pct.get(n)
                if r.significant.get(n) and pct is not None and pct < -abs(threshold_pct):
                    out.append(Regression(s.title, r.metric, r.stat, n, pct, r.p.get(n)))
    return out
