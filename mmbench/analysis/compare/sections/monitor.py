"""The ``monitor NAME: WORKLOAD`` sections: each monitor's per-iteration summary (cached in its
folder by ``load_summary``); latency metrics (mm-trace stalls) get workload-style rows and tests,
the others an Amean and a Max row, the Amean row tested on its per-iteration means when the suite
declares it primary (kswapd0 CPU, a stall count; counts with the count test).  The monitor
registry is imported only when an iteration recorded a monitor, so a plain compare does not pay
for it."""

from __future__ import annotations

from pathlib import Path

from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context, Series
from mmbench.analysis.compare.model import Row, Section, clean
from mmbench.analysis.compare.sections.workload import metric_rows
from mmbench.analysis.compare.selection import iteration_row_tests
from mmbench.model.results import IterationResult, MetricDef


def monitor_sections(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> list[Section]:
    names: dict[str, None] = {}
    for its in measured.values():
        for it in its:
            names.update(dict.fromkeys(it.monitors))
    if not names:
        return []
    try:
        from mmbench.plugins import monitors as registry
        from mmbench.monitors.base import load_summary

        reg = registry()
    except Exception as e:  # a broken monitor package must not break compare
        ctx.note(f"monitors: registry unavailable ({type(e).__name__}: {e}); monitor sections skipped")
        return []
    out = []
    run_by_name = dict(zip(ctx.names, ctx.runs))
    for mon in names:
        cls = reg.get(mon)
        if cls is None:
            ctx.note(f"monitor {mon} ({label}): not a known monitor; its section is skipped")
            continue
        defs: dict[str, MetricDef] = {}
        values: dict[str, dict[str, list[list[float]]]] = {}
        for n, its in measured.items():
            run = run_by_name[n]
            for it in its:
                meta = it.monitors.get(mon)
                if meta is None:
                    continue
                if "dir" not in meta:  # never started: unavailable on that kernel, or failed
                    why = meta.get("unavailable") or meta.get("error") or "no data"
                    ctx.note(f"monitor {mon} ({label}, run {n}): not recorded: {why}")
                    continue
                try:
                    folder = Path(run.path or ".") / str(meta["dir"])
                    summ = load_summary(cls, folder, meta)
                except Exception as e:
                    ctx.note(
                        f"monitor {mon} ({label}, run {n}, iteration {it.index}): "
                        f"summary failed: {type(e).__name__}: {e}"
                    )
                    continue
                for t in summ.notes:
                    ctx.note(f"monitor {mon} ({label}, run {n}): {t}")
                for md, vals in summ.metrics:
                    defs.setdefault(md.name, md)
                    values.setdefault(md.name, {}).setdefault(n, []).append(st.floats(vals))
        sec = Section(f"monitor {mon}: {label}", "monitor", label=label, source=mon)
        for mname, md in defs.items():
            per = values.get(mname, {})
            if md.kind == "latency":
                # stall latencies (mm-trace): summarised and tested like a workload's latency
                series = {n: Series(per.get(n, []), list(range(len(per.get(n, [])))), md.mean_kind) for n in ctx.names}
                metric_rows(ctx, f"{mon}: {label}", sec, md, series)
                continue
            pooled = {n: st.pooled(per.get(n, [])) for n in ctx.names}
            for stat, fn in (("Amean", st.amean), ("Max", st.vmax)):
                sec.rows.append(
                    Row(mname, stat, md.unit, md.better, {n: clean(fn(v)) if v else None for n, v in pooled.items()})
                )
            if ctx.multi and ctx.is_primary(sec, mname, "Amean"):
                # a declared monitor row (kswapd0 CPU, a stall count: an outcome or a mechanism) is
                # tested on its per-iteration means; other monitor rows stay descriptive
                iteration_row_tests(
                    ctx,
                    sec.rows[-2],
                    {n: [st.amean(v) for v in per.get(n, []) if v] for n in ctx.names if per.get(n)},
                    count=md.kind == "count",
                    resolution=md.effective_resolution,
                )
        if sec.rows:
            out.append(sec)
    return out
