"""The ``ratio: WORKLOAD`` section (``--ratio``): every mean row as a ratio oriented so > 1 is
better, and their geometric mean, leaving out rows that cannot be ratioed (docs/statistics.md §8)."""

from __future__ import annotations

from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.analysis.compare.sections.workload import Means


def _oriented(b: float | None, v: float | None, better: str) -> float | None:
    if b is None or v is None or b <= 0 or v <= 0:
        return None
    return v / b if better == "higher" else b / v


def ratio_section(ctx: Context, label: str, means: Means, others: list[tuple[str, Row]] = ()) -> Section:
    """``others``: (section kind, Amean row) of the duration and vmstat sections, ratioed the same
    way after the Gmean row and not part of it (the Gmean summarises the workload's own metrics)."""
    sec = Section(f"ratio: {label}", "ratio")
    oriented: dict[str, list[float]] = {n: [] for n in ctx.names}
    excluded: dict[str, int] = {n: 0 for n in ctx.names}
    for mname, (md, stat, vals) in means.items():
        b = vals.get(ctx.base)
        ratios: dict[str, float | None] = {}
        for n in ctx.names:
            v = vals.get(n)
            # One direction for every row: > 1 is better (new/base when higher is better,
            # base/new when lower is better); rows and the Gmean use the same ratio.
            why = None
            if b is None or v is None or b < 0 or v < 0:
                why = "a mean is missing or negative"
            elif b == 0 or v == 0:
                why = "both means are 0" if b == v else "baseline is 0" if b == 0 else "value is 0"
            if why is not None:
                ratios[n] = None
                excluded[n] += 1
                if n != ctx.base:
                    ctx.note(f"ratio {label}: {mname} of {n} excluded from the Gmean ({why})")
                continue
            o = v / b if md.better == "higher" else b / v
            ratios[n] = o
            oriented[n].append(o)
        sec.rows.append(Row(mname, f"Ratio {stat}", "ratio", "higher", ratios))
    gm_note = "geometric mean of ratios oriented so > 1 is better (new/base; base/new for lower-is-better)"
    skipped = {n: k for n, k in excluded.items() if k and n != ctx.base}
    if skipped:
        gm_note += "; rows that cannot be ratioed excluded: " + ", ".join(
            f"{k} of {len(means)} for {n}" for n, k in skipped.items()
        )
    if others:  # said once, not on every row
        gm_note += f"; the {len(others)} duration and vmstat ratio rows below are not in it"
    sec.rows.append(
        Row(
            "All metrics",
            "Gmean",
            "ratio",
            "higher",
            {n: clean(st.gmean(o)) if o else None for n, o in oriented.items()},
            note=gm_note,
        )
    )
    for kind, row in others:
        b = row.values.get(ctx.base)
        sec.rows.append(
            Row(
                f"{row.metric} ({kind})",
                f"Ratio {row.stat}",
                "ratio",
                "higher",
                {n: _oriented(b, row.values.get(n), row.better) for n in ctx.names},
            )
        )
    return sec
