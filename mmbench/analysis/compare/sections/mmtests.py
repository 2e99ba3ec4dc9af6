"""``compare --convention mmtests`` of runs imported from MMTests: the sections of MMTests'
compare-kernels.sh report, computed as the MMTests release that wrote the trees computes them
(``analysis/mmtests.py``, its monitors' ``analysis/mmtests_monitors.py``): the benchmark table
(MMTests' rows, grouped by statistic, its percentages and its significance marks), "duration" and
"vmstat" (Singleops: the best iteration, no percentage), and with ``--ratio`` compare-mmtests.pl's
``--print-ratio`` summary.  A cell MMTests prints as 0.00 for NaN holds 0.0 here, named in a note;
each section's ``layout`` says how MMTests prints it (report/mmtests_text.py).  The differences from
mmbench's default convention and their reasons are in docs/mmtests-import.md."""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.analysis import mmtests as mt
from mmbench.analysis import mmtests_monitors as mmv
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Row, Section, clean
from typing import Any

from mmbench.errors import UsageError
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun


def is_mmtests_run(run: RunRecord) -> bool:
    return (run.fingerprint or {}).get("imported_from") == "mmtests"


def rules_of(ctx: Context) -> mt.Rules:
    """The MMTests release whose rules apply: the baseline's (a note when the runs differ)."""
    found = [((r.fingerprint or {}).get("mmtests") or {}).get("rules") or "head" for r in ctx.runs]
    if len(set(found)) > 1:
        ctx.note(
            "the runs were written by different MMTests releases ("
            + ", ".join(f"{n}: {f}" for n, f in zip(ctx.names, found))
            + f"); {found[0]}'s rules are used"
        )
    rules = found[0]
    return rules if rules in mt.RULES else "head"  # type: ignore[return-value]


def _pooled(its: list[IterationResult], metric: str, thpscale: bool = False) -> Any:
    """Every sample of ``metric`` in the iterations, in iteration order (a float64 array).

    ``thpscale``: ExtractThpscale.pm's fake sample: in an iteration whose ``threads-<N>.log`` it
    read, a fault kind (``fault-base-<N>``, ``fault-huge-<N>``) that never happened gets one sample
    of 0 (``addData("fault-huge-$client", 1, 0)``), pooled with the other iterations' real ones."""
    import numpy as np

    parts = []
    fake = thpscale and _THPSCALE_KIND.fullmatch(metric)
    for it in its:
        if len(it.samples.get(metric, ())):
            parts.append(np.asarray(it.samples[metric], dtype=np.float64))
        elif fake and len(it.samples.get(f"fault-both-{fake[2]}", ())):  # the log of N was read
            parts.append(np.zeros(1))
    return np.concatenate(parts) if parts else np.empty(0)


# Above this many samples in all, the pooled arrays are sorted on two threads (numpy's sort lets
# go of the GIL): a thpscale tree's fault latencies are millions, and their sorts were a quarter
# of its compare (0.26 of 1.0 s; 2 threads: 0.15 s).
THREADED_SORT_MIN = 200_000


def _sorted_all(arrays: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    if sum(a.size for a in arrays.values()) < THREADED_SORT_MIN or len(arrays) < 2:
        return {n: np.sort(a) for n, a in arrays.items()}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(arrays, pool.map(np.sort, arrays.values())))


_THPSCALE_KIND = re.compile(r"fault-(base|huge)-(\d+)")
_THPSCALE_OP = re.compile(r"fault-(base|huge|both)-(\d+)")


def is_thpscale(wrs: dict[str, WorkloadRun | None]) -> bool:
    return any(w is not None and w.params.get("mmtests_format") == "thpscale" for w in wrs.values())


def extract_ops(wrs: dict[str, WorkloadRun | None]) -> list[MetricDef]:
    """The ops MMTests' extract module reports, in its order: the baseline's metrics; for thpscale
    (ExtractThpscale.pm) ``fault-base-<N>`` of every thread count N, then ``fault-huge-<N>``, then
    ``fault-both-<N>``, whether or not that kind of fault happened (its fake sample, ``_pooled``)."""
    base_w = next((w for w in wrs.values() if w is not None), None)
    if base_w is None:
        return []
    if not is_thpscale(wrs):
        return list(base_w.metrics)
    defs: dict[str, MetricDef] = {}
    for w in wrs.values():
        for md in w.metrics if w is not None else []:
            defs.setdefault(md.name, md)
    counts = sorted({int(m[2]) for name in defs if (m := _THPSCALE_OP.fullmatch(name))})
    ops = [md for name, md in defs.items() if not _THPSCALE_OP.fullmatch(name)]
    for kind in ("base", "huge", "both"):
        for n in counts:
            name = f"fault-{kind}-{n}"
            ops.append(
                defs.get(name)
                or MetricDef(
                    name, "us", "lower", "latency", description=f"{kind} fault + 2 MiB memset latency, {n} threads"
                )
            )
    return ops


def _fixed(row: Row, names: list[str], pct: dict[str, float | None] | None = None) -> Row:
    """A row whose percentages are MMTests' (or none): the builder leaves them as they are."""
    row.pct = {n: (pct or {}).get(n) for n in names}
    return row


def benchmark_section(
    ctx: Context,
    label: str,
    wrs: dict[str, WorkloadRun | None],
    measured: dict[str, list[IterationResult]],
    rules: mt.Rules,
) -> tuple[Section, dict[str, dict[str, mt.Summary]]]:
    base_w = next((w for w in wrs.values() if w is not None), None)
    sec = Section(label, "workload")
    if base_w is None:
        return sec, {}
    summary_type = base_w.params.get("mmtests_summary") or "Multiops"
    ops = extract_ops(wrs)
    thpscale = is_thpscale(wrs)
    summaries: dict[str, dict[str, mt.Summary]] = {}
    pooled = {md.name: _sorted_all({n: _pooled(its, md.name, thpscale) for n, its in measured.items()}) for md in ops}
    for md in ops:
        pref: mt.Preferred = "Higher" if md.better == "higher" else "Lower"
        summaries[md.name] = {
            n: mt.summarise(x, summary_type, pref, rules, presorted=True) for n, x in pooled[md.name].items() if x.size
        }
    if not summaries:
        return sec, {}
    first = next(iter(summaries.values()))
    nstats = len(next(iter(first.values())).rows) if first else 0
    for i in range(nstats):  # Compare.pm: for each statistic, for each op
        for md in ops:
            per = summaries[md.name]
            if ctx.base not in per:
                continue
            title, _, compare = per[ctx.base].rows[i]
            vals = {n: clean(per[n].rows[i][1]) if n in per else None for n in ctx.names}
            row = Row(md.name, title, md.unit, "higher" if compare == "pdiff" else "lower", vals)
            bv = per[ctx.base].rows[i][1]
            pct = {n: (mt.percent(compare, per[n].rows[i][1], bv) if n in per else None) for n in ctx.names}
            _fixed(row, ctx.names, pct if ctx.multi else None)
            if per[ctx.base].ratio_index == i and ctx.multi and rules != "v0.25":
                for n in ctx.names[1:]:
                    if n in per:
                        row.significant[n] = mt.significant(per[ctx.base], per[n])
            if rules == "v0.25" and ctx.multi and title[1:5] == "mean":  # Compare.pm: /^.mean/
                for n in ctx.names[1:]:
                    if n in per:
                        row.significant[n] = mt.significant_ttest(per[ctx.base], per[n])
            sec.rows.append(row)
    return sec, summaries


def _singleops(
    ctx: Context,
    sec: Section,
    stat: str,
    values: dict[str, dict[str, list[float | None]]],
    order: list[str],
    preferred: mt.Preferred,
) -> None:
    """Singleops rows: the best iteration's value of each op (the first of the sorted values)."""
    for op in order:
        vals: dict[str, float | None] = {}
        for n in ctx.names:
            xs = [x for x in values.get(n, {}).get(op, []) if x is not None]
            vals[n] = clean(mt.summarise(xs, "Singleops", preferred, "head").rows[0][1]) if xs else None
        if any(op in values.get(n, {}) for n in ctx.names):  # MMTests prints an op no iteration defined
            sec.rows.append(_fixed(Row(op, stat, "", "lower" if preferred == "Lower" else "higher", vals), ctx.names))


def thpscale_huge_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    """compare-kernels.sh's "thpscale Percentage Faults Huge" (compare-mmtests.pl -a counts,
    ExtractThpscalecounts.pm): per thread count N and iteration, huge faults * 100 / all faults,
    then Singleops (DATA_ACTIONS: the largest iteration) with pdiff percentages."""
    sec = Section(f"percentage faults huge: {label}", "workload")
    counts = sorted(
        {
            int(m[2])
            for its in measured.values()
            for it in its
            for name in it.samples
            if (m := _THPSCALE_OP.fullmatch(name))
        }
    )
    for n in counts:
        vals: dict[str, float | None] = {}
        for run, its in measured.items():
            xs = []
            for it in its:
                both = len(it.samples.get(f"fault-both-{n}", ()))
                if both:  # the log of N was read (a log without fault lines: MMTests' -1 is not known here)
                    xs.append(len(it.samples.get(f"fault-huge-{n}", ())) * 100 / both)
            vals[run] = clean(mt.summarise(xs, "Singleops", "Higher", "head").rows[0][1]) if xs else None
        vals = mt.compare_cells({r: vals.get(r) for r in ctx.names}, ctx.base)
        bv = vals[ctx.base]
        pct = {r: (mt.percent("pdiff", v, bv) if v is not None and bv is not None else 0.0) for r, v in vals.items()}
        sec.rows.append(
            _fixed(Row(f"huge-{n}", "Percentage", "%", "higher", vals), ctx.names, pct if ctx.multi else None)
        )
    return sec


def thpscale_locality_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    """compare-kernels.sh's "thpscale Percentage Locality" (compare-mmtests.pl -a locality,
    ExtractThpscalelocality.pm): per thread count N and iter-N, local-base, local-huge,
    remote-base, remote-huge (local or remote faults * 100 / the faults of that kind) and, where
    some fault was neither, uncertain-N; Singleops (the largest iteration), pdiff percentages.
    Kept as MMTests has it: a run with a log where one kind of fault never happened is not in the
    table (Perl dies dividing by zero: "Failed to load module"), and the first run that is
    becomes the baseline of the percentages."""
    sec = Section(f"percentage locality: {label}", "workload")
    per_run: dict[str, dict[str, list[float]]] = {}
    order: list[str] = []
    for run in ctx.names:
        ops: dict[str, list[float]] = {}
        failed = False
        for it in measured.get(run, []):
            for n, t in (it.imported.get("mmtests_thpscale_locality") or {}).items():
                base, huge = t["base"], t["huge"]
                if base[0] + huge[0] == 0:
                    continue  # MMTests' local-none-N of -1: not printed (Compare.pm)
                if base[0] == 0 or huge[0] == 0:
                    failed = True
                    break
                vals = [
                    (f"local-base-{n}", base[1] * 100 / base[0]),
                    (f"local-huge-{n}", huge[1] * 100 / huge[0]),
                    (f"remote-base-{n}", base[2] * 100 / base[0]),
                    (f"remote-huge-{n}", huge[2] * 100 / huge[0]),
                ]
                if t["uncertain"]:
                    vals.append((f"uncertain-{n}", t["uncertain"] * 100 / (base[0] + huge[0])))
                for op, v in vals:
                    if op not in ops and op not in order:
                        order.append(op)
                    ops.setdefault(op, []).append(v)
            if failed:
                break
        if failed:
            ctx.note(
                f"percentage locality: {label} ({run}): a thread count where one kind of fault never "
                f"happened; MMTests' ExtractThpscalelocality.pm divides by zero there and leaves the run "
                f"out of its table"
            )
        elif ops:
            per_run[run] = ops
    if not per_run:
        return sec
    first = next(r for r in ctx.names if r in per_run)
    order.sort(key=lambda op: int(op.rsplit("-", 1)[1]))  # stable: MMTests' order within an N
    for op in order:
        vals: dict[str, float | None] = {}
        for run in ctx.names:
            xs = per_run.get(run, {}).get(op)
            vals[run] = clean(mt.summarise(xs, "Singleops", "Higher", "head").rows[0][1]) if xs else None
        bv = vals[first]
        pct = {r: (mt.percent("pdiff", v, bv) if v is not None and bv is not None else None) for r, v in vals.items()}
        sec.rows.append(_fixed(Row(op, "Percentage", "%", "higher", vals), ctx.names, pct if ctx.multi else None))
    return sec


def duration_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    """MonitorDuration.pm: Duration User, System, Elapsed, the smallest over iterations."""
    sec = Section(f"duration: {label}", "duration")
    values = {
        n: {
            name: [float(it.duration[key]) for it in its if key in it.duration]
            for key, name in (("user", "User"), ("system", "System"), ("elapsed", "Elapsed"))
        }
        for n, its in measured.items()
    }
    _singleops(ctx, sec, "Duration", values, ["User", "System", "Elapsed"], "Lower")
    return sec


def vmstat_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]], rules: mt.Rules) -> Section:
    """MonitorMmtestsvmstat.pm's "Ops" rows: per row, the best iteration (v1.00 and HEAD: the
    smallest, the module prefers Lower; v0.25: the largest, DATA_ACTIONS preferred Higher)."""
    sec = Section(f"vmstat: {label}", "vmstat")
    values: dict[str, dict[str, list[float | None]]] = {}
    for n, its in measured.items():
        for it in its:
            if not it.vmstat_delta:
                continue
            for name, v in mmv.vmstat_values(it.vmstat_delta, it.duration.get("elapsed")).items():
                values.setdefault(n, {}).setdefault(name, []).append(v)
    order = [name for _, name in mmv.VMSTAT_ROWS]
    _singleops(ctx, sec, "Ops", values, order, "Higher" if rules == "v0.25" else "Lower")
    for n, per in values.items():
        holes = [op for op, xs in per.items() if _hole(xs)] if rules != "v0.25" else []
        if holes:  # (v0.25's addData kept undefined values: no gap, no failure)
            ctx.note(
                f"vmstat: {label} ({n}): {', '.join(holes)} undefined in an iteration before one where it "
                f"is defined; MMTests' report leaves this run out of its vmstat table (Summarise.pm "
                f"dies on the gap: 'Failed to load module')"
            )
    return sec


def _hole(xs: list[float | None]) -> bool:
    """A value undefined in some iteration and defined in a later one: MMTests' per-iteration data
    of that op then has a gap, and its summary of the whole run fails."""
    seen_none = False
    for x in xs:
        if x is None:
            seen_none = True
        elif seen_none:
            return True
    return False


def schedstat_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]], rules: mt.Rules) -> Section:
    """MonitorMmtestsschedstat.pm's "Ops" rows from the /proc/schedstat deltas around the test."""
    sec = Section(f"schedstat: {label}", "vmstat")
    values: dict[str, dict[str, list[float | None]]] = {}
    empty: dict[str, int] = {}
    no_wakeups: dict[str, int] = {}
    for n, its in measured.items():
        for it in its:
            delta = it.imported.get("mmtests_schedstat")
            if delta is None:
                continue
            if not delta:
                empty[n] = empty.get(n, 0) + 1
            elif not delta.get("ttwu_count"):
                no_wakeups[n] = no_wakeups.get(n, 0) + 1
            for name, v in mmv.schedstat_values(delta).items():
                values.setdefault(n, {}).setdefault(name, []).append(None if v != v else v)
    _singleops(
        ctx, sec, "Ops", values, [name for _, name in mmv.SCHEDSTAT_ROWS], "Higher" if rules == "v0.25" else "Lower"
    )
    for n, k in empty.items():
        ctx.note(
            f"schedstat: {label} ({n}): the kernel had no schedstats: /proc/schedstat was empty in "
            f"tests-sysstate around {label} in {k} iteration(s) (a kernel without CONFIG_SCHEDSTATS); "
            f"its column is MMTests' table of zeros (MonitorMmtestsschedstat.pm sums nothing), not a measurement"
        )
    for n, k in no_wakeups.items():
        ctx.note(
            f"schedstat: {label} ({n}): TTWU Count is 0 in {k} iteration(s): the kernel counted no "
            f"wake-ups, i.e. schedstats were off (kernel.sched_schedstats=0), so its TTWU and SIS rows "
            f"measure nothing"
        )
    return sec


def ratio_section(
    ctx: Context, label: str, wrs: dict[str, WorkloadRun | None], summaries: dict[str, dict[str, mt.Summary]]
) -> Section:
    """compare-mmtests.pl --print-ratio: per op the ratio of the ratio statistic to the baseline's
    (Compare.pm _generateRatioComparisonTable), then Dmean/Dmin/Dmax of cidiff and the Gmean."""
    sec = Section(f"ratio: {label}", "ratio")
    base_w = next((w for w in wrs.values() if w is not None), None)
    if base_w is None:
        return sec
    if not summaries:  # no op in any run: MMTests prints the Gmean of nothing, NaN
        sec.rows.append(_fixed(Row("Lower", "Gmean", "ratio", "higher", {n: None for n in ctx.names}), ctx.names))
        ctx.note(f"ratio: {label}: no benchmark samples in any run; its Gmean is undefined (MMTests prints NaN)")
        return sec
    prefs = {md.name: ("Higher" if md.better == "higher" else "Lower") for md in extract_ops(wrs)}
    preferred = "Lower"  # the module's preference (getPreferredValue() of the first module)
    if prefs and all(p == "Higher" for p in prefs.values()):
        preferred = "Higher"
    v025 = rules_of(ctx) == "v0.25"
    norm: dict[str, list[float]] = {n: [] for n in ctx.names}
    ratios: dict[str, list[float]] = {n: [] for n in ctx.names}
    for op, per in summaries.items():
        b = per.get(ctx.base)
        if b is None:
            continue
        vals: dict[str, float | None] = {}
        pct: dict[str, float | None] = {}
        cid: dict[str, float | None] = {}
        for n in ctx.names:
            s = per.get(n)
            if s is None or b.ratio_value != b.ratio_value or s.ratio_value != s.ratio_value:
                r, cmp_, nc = 1.0, 0.0, 0.0
            else:
                aval, bval, aci, bci = s.ratio_value, b.ratio_value, s.ratio_ci, b.ratio_ci
                if prefs[op] != preferred:
                    aval, bval, aci, bci = bval, aval, bci, aci
                r = mt.rdiff(aval, bval)
                cmp_ = mt.pndiff(r, 1) if preferred == "Lower" else mt.pdiff(r, 1)
                if v025:  # the stddevs, compared by sdiff; no stddev: MMTests prints NaN
                    asd, bsd = s.ratio_sd, b.ratio_sd
                    if prefs[op] != preferred:
                        asd, bsd = bsd, asd
                    nc = mt.sdiff(aval, asd, bval, bsd) if asd is not None and bsd is not None else None
                else:
                    nc = mt.cidiff(aval, aci, bval, bci) if aci is not None and bci is not None else 0.0
                if nc is not None and nc != nc:
                    nc = 0.0
            vals[n], pct[n], cid[n] = r, cmp_, nc
            ratios[n].append(r)
            norm[n].append(nc if nc is not None else 0.0)
        sec.rows.append(
            _fixed(Row(op, "Ratio", "ratio", "higher" if preferred == "Higher" else "lower", vals), ctx.names, pct)
        )
        if any(s.ratio_ci is not None or s.ratio_sd is not None for s in per.values()):
            # the "(+0.06s)" column: how far apart the intervals are (cidiff; > 1 in size: no overlap)
            sec.rows.append(_fixed(Row(op, "CIdiff", "", "higher", cid), ctx.names))
    if any(s.ratio_ci is not None or s.ratio_sd is not None for per in summaries.values() for s in per.values()):
        for stat, fn in (("Dmean", lambda xs: sum(xs) / len(xs)), ("Dmin", min), ("Dmax", max)):
            sec.rows.append(
                _fixed(
                    Row(preferred, stat, "", "higher", {n: clean(fn(v)) if v else None for n, v in norm.items()}),
                    ctx.names,
                )
            )
    sec.rows.append(
        _fixed(
            Row(preferred, "Gmean", "ratio", "higher", {n: clean(mt.gmean_ratio(v)) for n, v in ratios.items()}),
            ctx.names,
        )
    )
    return sec


def _monitor_file(run: RunRecord, it: IterationResult, mon: str, name: str) -> Path | None:
    meta = it.monitors.get(mon) or {}
    if "dir" not in meta:
        return None
    path = Path(run.path or ".") / str(meta["dir"]) / name
    return path if path.is_file() else None


def _tsv_frames(path: Path) -> list[dict[str, float]]:
    lines = path.read_text().splitlines()
    cols = lines[0].split("\t")[1:]
    out = []
    for line in lines[1:]:
        f = line.split("\t")[1:]
        out.append({c: float(v) for c, v in zip(cols, f) if v != "nan"})
    return out


def monitor_view_sections(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> list[Section]:
    """The vmstat and proc-vmstat series MMTests graphs (compare-mmtests.pl --print-monitor vmstat|
    proc-vmstat --sub-heading X), each as its Amean and Max over every iteration's values pooled."""
    runs = dict(zip(ctx.names, ctx.runs))
    out = []
    for mon, fname, graphed in (
        ("vmstat", "vmstat.log", mmv.VMSTAT_VIEWS),
        ("proc-vmstat", "proc-vmstat.tsv", mmv.PROC_VMSTAT_VIEWS),
    ):
        asked = [h for m, h in ctx.monitor_views if m == mon]
        headings = list(dict.fromkeys([*graphed, *asked]))
        series: dict[str, dict[str, list[float]]] = {}
        counters: dict[str, set[str]] = {}
        for n, its in measured.items():
            its_with = [
                (it, f) for it in sorted(its, key=lambda i: i.index) if (f := _monitor_file(runs[n], it, mon, fname))
            ]
            files = [f for _, f in its_with]
            if not files:
                if asked and its:
                    ctx.note(
                        f"monitor {mon} (MMTests): {label} ({n}): no {mon} monitor file, so no {', '.join(asked)} view"
                    )
                continue
            if mon == "vmstat":
                texts = [f.read_text().splitlines() for f in files]
                view = mmv.vmstat_view_v025 if rules_of(ctx) == "v0.25" else mmv.vmstat_view
                series[n] = {h: [v for t in texts for v in view(t, h)] for h in headings}
            else:
                frames = [_tsv_frames(f) for f in files]
                counters[n] = {c for fr in frames for f in fr for c in f}
                reads = [it.monitors[mon].get("mmtests_frames_read") for it, _ in its_with]
                series[n] = {}
                for h in headings:
                    view = mmv.ProcVmstatView(h)  # one per run: its last value carries across iterations
                    series[n][h] = [v for fr, r in zip(frames, reads) for v in view.series(fr, r)]
        if not series:
            continue
        for h in asked if mon == "proc-vmstat" else []:
            lacking = [n for n in series if not mmv.proc_vmstat_known(h, counters[n])]
            if len(lacking) == len(series):
                raise UsageError(
                    f"--monitor-view proc-vmstat:{h}: no /proc/vmstat counter {h!r} in the "
                    f"proc-vmstat monitor of {label} in any run (e.g. "
                    f"{', '.join(sorted(counters[lacking[0]])[:6])}, ...)"
                )
            for n in lacking:
                ctx.note(
                    f"monitor proc-vmstat (MMTests): {label} ({n}): its kernel has no counter {h}; "
                    f"MMTests' view reads 0 for it, shown as such"
                )
        sec = Section(f"monitor {mon} (MMTests): {label}", "monitor", label=label, source=mon)
        rules = rules_of(ctx)
        for h in headings:
            pref = mmv.monitor_preferred(mon, h, rules)
            summarise = mmv.monitor_summary_v025 if rules == "v0.25" else mmv.monitor_summary
            summ = {n: summarise(series[n][h] if n in series else [], pref) for n in ctx.names}
            title = summ[ctx.names[0]][0]
            for i, stat in ((1, title), (2, "Max")):
                vals = mt.compare_cells({n: summ[n][i] for n in ctx.names}, ctx.base)
                sec.rows.append(
                    _fixed(
                        Row(
                            h,
                            stat,
                            "",
                            "higher" if pref == "Higher" else "lower",
                            {n: clean(v) for n, v in vals.items()},
                        ),
                        ctx.names,
                    )
                )
        out.append(sec)
    return out


def iostat_section(ctx: Context, label: str, measured: dict[str, list[IterationResult]]) -> Section:
    """MonitorIostat.pm's Amean and Max of every device column (compare-kernels.sh prints it when
    the second row's baseline value is above 5; shown here whenever there is data)."""
    runs = dict(zip(ctx.names, ctx.runs))
    view = mmv.IostatView(rules_of(ctx))  # one per comparison: its device set spans runs and iter-N
    series: dict[str, dict[str, list[float]]] = {}
    order: list[str] = []
    for n, its in measured.items():
        for it in sorted(its, key=lambda i: i.index):
            rel = (it.imported.get("mmtests_files") or {}).get("iostat")
            if not rel or not it.path:
                continue
            path = Path(runs[n].path or ".") / it.path / rel
            if not path.is_file():
                continue
            for op, vals in view.series(path.read_text().splitlines()).items():
                series.setdefault(n, {}).setdefault(op, []).extend(vals)
                if op not in order:
                    order.append(op)
    sec = Section(f"iostat: {label}", "monitor")
    rules = rules_of(ctx)
    for i in (1, 2):  # the mean rows of every op, then the Max rows
        for op in order:
            pref = mmv.monitor_preferred("iostat", op, rules)
            summ = {n: mmv.monitor_summary(series[n][op], pref) for n in ctx.names if op in series.get(n, {})}
            stat = (mmv.monitor_summary([], pref)[0]) if i == 1 else "Max"
            vals = {n: clean(summ[n][i]) if n in summ else None for n in ctx.names}
            sec.rows.append(_fixed(Row(op, stat, "", "higher" if pref == "Higher" else "lower", vals), ctx.names))
    return sec


def mmtests_sections(
    ctx: Context,
    label: str,
    wrs: dict[str, WorkloadRun | None],
    measured: dict[str, list[IterationResult]],
    *,
    ratio: bool,
) -> list[Section]:
    """Every MMTests section of one benchmark, in compare-kernels.sh's order."""
    rules = rules_of(ctx)
    table, summaries = benchmark_section(ctx, label, wrs, measured, rules)
    base_w = next((w for w in wrs.values() if w is not None), None)
    fmt = base_w.params.get("mmtests_format") if base_w is not None else None
    field, decimals = mt.table_layout(fmt, rules)
    titles = mt.report_titles(label, rules)
    table.layout = {"part": "table", "field": field, "decimals": decimals, "title": titles[0]}
    out = [table]
    if is_thpscale(wrs):
        huge, local = thpscale_huge_section(ctx, label, measured), thpscale_locality_section(ctx, label, measured)
        huge.layout = {"part": "huge", "field": 12, "decimals": 2, "title": titles[1]}
        shown = [n for n in ctx.names if any(r.values.get(n) is not None for r in local.rows)]
        local.layout = {"part": "locality", "field": 12, "decimals": 2, "title": titles[2], "runs": shown}
        out += [huge, local]
    for sec, part in (
        (duration_section(ctx, label, measured), "duration"),
        (vmstat_section(ctx, label, measured, rules), "vmstat"),
        (schedstat_section(ctx, label, measured, rules), "schedstat"),
        (iostat_section(ctx, label, measured), "iostat"),
    ):
        sec.layout = {"part": part, "field": mmv.monitor_field(part, rules), "decimals": 2}
        if part == "iostat" and sec.rows:
            sec.layout["omitted"] = _iostat_omitted(ctx, sec, rules)
        out.append(sec)
    for sec in monitor_view_sections(ctx, label, measured):
        sec.layout = {
            "part": "monitor-view",
            "field": mmv.monitor_field("view", rules),
            "decimals": 2,
            "monitor": sec.source,
        }
        out.append(sec)
    for sec in out:
        _nan_as_mmtests(ctx, sec)
    if ratio and ctx.multi:
        rsec = ratio_section(ctx, label, wrs, summaries)
        rsec.layout = {"part": "ratio", "field": field, "decimals": decimals}
        out.append(rsec)
    if not any(it.duration for it in measured.get(ctx.base, [])):
        # compare-kernels.sh reports the benchmarks the baseline began in its first iteration
        # (run_report_name reads tests-activity); one the baseline never ran is not among them
        for sec in out:
            sec.layout["benchmark_omitted"] = f"the baseline {ctx.base} never ran it (no 'time ::' line)"
    return out


def _iostat_omitted(ctx: Context, sec: Section, rules: mt.Rules) -> str:
    """Why compare-kernels.sh prints no iostat table for these runs ("" when it prints one)."""
    second = sec.rows[1].values.get(ctx.base) if len(sec.rows) > 1 else None
    if not mmv.iostat_printed(second):
        return (
            "compare-kernels.sh prints it only when the baseline's second row (Amean await of the "
            "first device) is above 5"
        )
    if rules == "v1.00" and any(r.values.get(n) is None for r in sec.rows for n in ctx.names[1:]):
        return (
            "MMTests v1.00 dies printing it: a column without data has no interval for Compare.pm's "
            'significance test ("Can\'t use an undefined value as an ARRAY reference", fixed later)'
        )
    return ""


# the tables compare-mmtests.pl prints with percentages (an extract module's, not a monitor's)
COMPARED = ("table", "huge", "locality")


def _nan_as_mmtests(ctx: Context, sec: Section) -> None:
    """Compare.pm prints an undefined cell (NaN, or an op a run lacks) as 0 with 0 %: the rows
    hold that 0, and a note names every such cell and why (docs/mmtests-import.md, "NaN cells")."""
    if "runs" not in sec.layout and sec.rows:
        # a run with no value at all here: MMTests fails to load its module and leaves its column out
        sec.layout["runs"] = [n for n in ctx.names if any(r.values.get(n) is not None for r in sec.rows)]
        for n in ctx.names:
            if n not in sec.layout["runs"]:
                ctx.note(f'{sec.title} ({n}): no data; MMTests\' table has no column for it ("Failed to load module")')
    shown = sec.layout["runs"] if sec.rows else []
    percentages = ctx.multi and sec.layout.get("part") in COMPARED
    undefined: dict[str, list[str]] = {}
    for r in sec.rows:
        for n in shown:
            if r.values.get(n) is None:
                r.values[n] = 0.0
                why = mmv.UNDEFINED_WHY.get(r.metric)
                undefined.setdefault(n, []).append(f"{r.stat} {r.metric}" + (f" ({why})" if why else ""))
            if percentages and r.pct.get(n) is None:
                r.pct[n] = 0.0
    for n, cells in undefined.items():
        ctx.note(f"{sec.title} ({n}): undefined, printed 0.00 as MMTests prints NaN (Compare.pm): " + ", ".join(cells))
