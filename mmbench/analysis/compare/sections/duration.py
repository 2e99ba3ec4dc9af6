"""The ``duration: WORKLOAD`` section: User, System and Elapsed seconds per measured iteration,
an Amean row (Welch-tested, lower is better) and a Stddev row each.  Their resolution is 10 ms:
GNU time's, and the tick that user and system time are sampled at (HZ = 100; finer at higher HZ)."""

from __future__ import annotations

from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.analysis.compare.selection import iteration_row_tests
from mmbench.model.results import IterationResult

DURATION_RESOLUTION = 0.01


def duration_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    sec = Section(f"duration: {label}", "duration", label=label)
    for key, name in (("user", "User"), ("system", "System"), ("elapsed", "Elapsed")):
        vals = {n: [float(it.duration[key]) for it in its if key in it.duration] for n, its in measured.items()}
        if not any(vals.values()):
            continue
        amean_row = Row(name, "Amean", "s", "lower", {n: clean(st.amean(v)) if v else None for n, v in vals.items()})
        sec.rows.append(amean_row)
        sec.rows.append(Row(name, "Stddev", "s", "lower", {n: clean(st.stddev(v)) for n, v in vals.items()}))
        iteration_row_tests(ctx, amean_row, vals, resolution=DURATION_RESOLUTION)
    return sec
