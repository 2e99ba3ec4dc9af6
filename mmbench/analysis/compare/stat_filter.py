"""``compare --stats LIST``: keep only the rows whose statistic is listed (the seeds' tables often
show only the mean and its +/-)."""

from __future__ import annotations

from mmbench.analysis.compare.model import Comparison
from mmbench.errors import UsageError


def keep_stats(comparison: Comparison, spec: str) -> None:
    """Keep only the rows whose statistic is listed ("mean" is Amean, Hmean or Gmean)."""
    wanted = {w.strip().lower() for w in spec.split(",") if w.strip()}
    stats = {r.stat.lower() for s in comparison.sections for r in s.rows}
    unknown = sorted(w for w in wanted if w != "mean" and w not in stats)
    if unknown:
        raise UsageError(
            f"--stats: no row has the statistic {unknown[0]!r}; the rows have: mean, {', '.join(sorted(stats))}"
        )

    def keep(stat: str) -> bool:
        s = stat.lower()
        return s in wanted or ("mean" in wanted and s in ("amean", "hmean", "gmean"))

    for section in comparison.sections:
        section.rows = [r for r in section.rows if keep(r.stat)]
