"""The ``vmstat: WORKLOAD`` section: the derived rows of ``analysis/vmstat.py`` from the
per-counter means over the measured iterations (docs/statistics.md §5, §7), each row tested
against the baseline on its per-iteration values in its own direction: counts with the count
test, shares and velocities with Welch's."""

from __future__ import annotations

from mmbench.analysis import stats as st
from mmbench.analysis import vmstat as vm
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.analysis.compare.selection import iteration_row_tests
from mmbench.model.files import kernel_release
from mmbench.model.quirks import meaning_changes, release_version
from mmbench.model.results import IterationResult


def vmstat_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    sec = Section(f"vmstat: {label}", "vmstat", label=label)
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
    per_iter = _per_iteration(measured) if ctx.multi and ctx.base in derived else {}
    changed = _meaning_changes(ctx) if ctx.multi else {}
    for rd in vm.ROWS:
        if not any(rd.name in d for d in derived.values()):
            continue
        row = Row(rd.name, "Amean", rd.unit, rd.better, {n: clean(derived.get(n, {}).get(rd.name)) for n in ctx.names})
        sec.rows.append(row)
        for ch in changed.get(rd.name, []):
            row.add_note(f"counts differently from {ch.since[0]}.{ch.since[1]} on: see the notes")
            ctx.note(f"vmstat rows {', '.join(ch.rows)}: {ch.what}; these runs' kernels straddle it ({_kernels(ctx)})")
        if per_iter:
            _test(ctx, row, {n: [d[rd.name] for d in ds] for n, ds in per_iter.items()}, rd.count, rd.resolution)
    return sec


def _per_iteration(measured: dict[str, list[IterationResult]]) -> dict[str, list[dict[str, float | None]]]:
    """Every row's value in every measured iteration that has vmstat deltas, per run."""
    out = {}
    for n, its in measured.items():
        ds = [vm.derive_iteration(it.vmstat_delta, it.duration.get("elapsed")) for it in its if it.vmstat_delta]
        if ds:
            out[n] = ds
    return out


def _test(ctx: Context, row: Row, vals: dict[str, list[float | None]], count: bool, resolution: float) -> None:
    """The count test (counts) or Welch on the per-iteration values, in the row's own direction
    (``vm.ROWS``).  A row
    undefined in some iteration of a run (a ratio with nothing scanned there) is not tested for
    that run: the test would silently drop the iteration."""
    whole: dict[str, list[float]] = {}
    gaps = []
    for n, v in vals.items():
        if any(x is None for x in v):
            if any(x is not None for x in v):
                gaps.append(n)
            continue
        whole[n] = [float(x) for x in v]  # type: ignore[arg-type]
    if gaps:
        row.add_note(f"no test: undefined in some iterations of {', '.join(gaps)}")
    if ctx.base in whole:
        iteration_row_tests(ctx, row, whole, count=count, resolution=resolution)


def _meaning_changes(ctx: Context) -> dict[str, list]:
    """Row name → the kernel changes (``model.quirks.ROW_MEANING_CHANGES``) between the runs' kernels."""
    return meaning_changes([release_version(kernel_release(r.fingerprint or {})) for r in ctx.runs])


def _kernels(ctx: Context) -> str:
    return ", ".join(f"{n} {kernel_release(r.fingerprint or {}) or '?'}" for r, n in zip(ctx.runs, ctx.names))
