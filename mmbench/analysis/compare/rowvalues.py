"""Per-iteration values of the rows a suite declares: for each primary entry, the values ``compare``
tests for the row it names, per run (what a bisection follows round by round)."""

from __future__ import annotations

from dataclasses import dataclass

from mmbench.analysis.compare.builder import build_comparison
from mmbench.model.results import RunRecord


@dataclass
class RowValues:
    """One declared row: where it is (``section``), its better direction, its resolution (the
    smallest difference its unit expresses) and each run's per-iteration values."""

    section: str
    better: str
    resolution: float
    values: dict[str, list[float]]


def row_iterations(runs: list[RunRecord], entries: list[str] | None = None) -> dict[str, RowValues]:
    """``entry → RowValues`` of the row each entry names: ``entries`` as
    ``compare --primary`` takes them (each must name one row: a one-line error otherwise), or the
    runs' stored primary family when None (an entry naming no row, or several, is left out).  One
    run is compared with itself: a row's values are collected where it is tested, which needs two."""
    if not runs:
        return {}
    pair = list(runs) if len(runs) > 1 else [runs[0], runs[0]]
    cmp = build_comparison(pair, primary=entries)
    names = [r.name for r in runs]
    out: dict[str, RowValues] = {}
    by_entry: dict[str, list] = {}
    for line in cmp.primary:
        if line.row is not None and all(line.row is not r for _, r in by_entry.get(line.entry, [])):
            by_entry.setdefault(line.entry, []).append((line.section, line.row))
    for entry in cmp.primary_entries:
        found = by_entry.get(entry, [])
        if len(found) != 1:
            continue
        section, row = found[0]
        out[entry] = RowValues(section, row.better, row.resolution, {n: list(row.iterations.get(n, [])) for n in names})
    return out
