"""The ``vmstat: WORKLOAD`` section: the derived rows of ``analysis/vmstat.py`` from the
per-counter means over the measured iterations (docs/statistics.md §5, §7)."""

from __future__ import annotations

from mmbench.analysis import stats as st
from mmbench.analysis import vmstat as vm
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.store.model import IterationResult


def vmstat_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    sec = Section(f"vmstat: {label}", "vmstat")
    derived: dict[str, dict[str, float]] = {}
    for n, its in measured.items():
        with_delta = [it for it in its if it.vmstat_delta]
        if not with_delta:
            continue
        el = [it.duration["elapsed"] for it in with_delta if "elapsed" in it.duration]
        elapsed = st.amean(el) if len(el) == len(with_delta) else None
        derived[n] = vm.derive(vm.mean_deltas(it.vmstat_delta for it in with_delta), elapsed)
    if not derived:
        return sec
    for rd in vm.ROWS:
        if not any(rd.name in d for d in derived.values()):
            continue
        sec.rows.append(Row(rd.name, "Amean", rd.unit, rd.better,
                            {n: clean(derived.get(n, {}).get(rd.name)) for n in ctx.names}))
    return sec
