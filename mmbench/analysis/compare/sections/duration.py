"""The ``duration: WORKLOAD`` section: User, System and Elapsed seconds per measured iteration,
an Amean row (Welch-tested, lower is better) and a Stddev row each."""

from __future__ import annotations

from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.analysis.compare.selection import iteration_row_tests
from mmbench.model.results import IterationResult


def duration_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    sec = Section(f"duration: {label}", "duration", label=label)
    for key, name in (("user", "User"), ("system", "System"), ("elapsed", "Elapsed")):
        vals = {n: [float(it.duration[key]) for it in its if key in it.duration]
                for n, its in measured.items()}
        if not any(vals.values()):
            continue
        amean_row = Row(name, "Amean", "s", "lower",
                        {n: clean(st.amean(v)) if v else None for n, v in vals.items()})
        sec.rows.append(amean_row)
        sec.rows.append(Row(name, "Stddev", "s", "lower",
                            {n: clean(st.stddev(v)) for n, v in vals.items()}))
        iteration_row_tests(ctx, amean_row, vals)
    return sec
