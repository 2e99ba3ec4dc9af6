"""Build a :class:`Comparison`: the runs' notes, one set of sections per workload label, then
the report-wide Benjamini–Hochberg adjustment and the percentages against the baseline."""

from __future__ import annotations

from collections import Counter

from mmbench.analysis import stats as st
from mmbench.analysis.compare import families
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.environment import env_diff, interleave_notes, memcg_notes, unique_names, vm_notes
from mmbench.analysis.compare.model import Comparison, Section
from mmbench.analysis.compare.power import headline_warnings, suite_headline
from mmbench.analysis.compare.percent import PCT_BASE_NEG, PCT_BASE_ZERO, pct_diff
from mmbench.analysis.compare.verdict import verdict_line
from mmbench.analysis.compare.sections.duration import duration_section
from mmbench.analysis.compare.sections.mmtests import is_mmtests_run, mmtests_sections
from mmbench.analysis.compare.sections.monitor import monitor_sections
from mmbench.analysis.compare.sections.ratio import ratio_section
from mmbench.analysis.compare.sections.vmstat import vmstat_section
from mmbench.analysis.compare.sections.workload import workload_section
from mmbench.analysis.runstatus import run_status_notes
from mmbench.model.results import IterationResult, RunRecord, WorkloadRun, workload_labels


def build_comparison(
    runs: list[RunRecord],
    *,
    pvalues: bool = False,
    ratio: bool = False,
    seed: int = 0,
    convention: st.Convention = "mmbench",
    primary: list[str] | None = None,
    mechanisms: list[str] | None = None,
    monitor_views: list[tuple[str, str]] | None = None,
) -> Comparison:
    """Compare ``runs`` (the first is the baseline).  ``pvalues`` is recorded for the exporters
    (p-values are always computed); ``ratio`` adds the per-workload ratio sections.
    ``convention="mmtests"`` summarises metrics as MMTests does (see :func:`stats.summarise`);
    ``monitor_views`` adds MMTests' per-interval views of those (monitor, series) to it.
    ``primary``/``mechanisms``: entries chosen at compare time, replacing the runs' stored
    families (``compare --primary``; families.parse_override splits the option)."""
    if not runs:
        raise ValueError("build_comparison needs at least one run")
    runs = list(runs)
    ctx = Context(runs, unique_names(runs), convention=convention, monitor_views=list(monitor_views or []))
    cmp = Comparison(baseline=ctx.base, runs=ctx.names, pvalues=pvalues, ratio=ratio, seed=seed)
    if ctx.names != [r.name for r in runs]:
        ctx.note(
            "runs with the same name were renamed: "
            + ", ".join(f"{r.name} → {n}" for r, n in zip(runs, ctx.names) if r.name != n)
        )
    cmp.env_diff = env_diff(runs, ctx.names)
    ctx.headline = suite_headline(runs)
    families.resolve(ctx, cmp, primary, mechanisms)
    for text in memcg_notes(runs, ctx.names) + vm_notes(runs, ctx.names) + interleave_notes(runs, ctx.names):
        ctx.note(text)
    for text in run_status_notes(runs, ctx.names):  # incomplete or failed runs are said so
        ctx.note(text)
    labels = workload_labels(runs)
    ratios: list[Section] = []
    dur: list[Section] = []
    vms: list[Section] = []
    mons: list[Section] = []
    # MMTests' own report for runs imported from MMTests (docs/mmtests-import.md §3)
    as_mmtests = convention == "mmtests" and all(is_mmtests_run(r) for r in runs)
    if as_mmtests:
        cmp.convention = "mmtests"
    for label in labels:
        wrs = {n: r.workload(label) for n, r in zip(ctx.names, runs)}
        measured = {n: _measured(ctx, n, label, w) for n, w in wrs.items()}
        if as_mmtests:
            # compare-kernels.sh's order: each benchmark's table, duration, vmstat, schedstat, monitors
            cmp.sections += [s for s in mmtests_sections(ctx, label, wrs, measured, ratio=ratio) if s.rows]
            continue
        wsec, means = workload_section(ctx, label, wrs, measured)
        cmp.sections.append(wsec)
        d = duration_section(ctx, label, measured)
        dur.append(d)
        v = vmstat_section(ctx, label, measured)
        if v.rows:
            vms.append(v)
        if ratio and ctx.multi:
            others = [(s.kind, r) for s in (d, v) for r in s.rows if r.stat == "Amean"]
            ratios.append(ratio_section(ctx, label, means, others))
        mons.extend(monitor_sections(ctx, label, measured))
    cmp.sections += [s for s in dur if s.rows] + [s for s in vms if s.rows] + mons + ratios
    families.mark_rows(ctx, cmp)
    families.adjust(ctx, cmp)
    cmp.family_sizes = dict(ctx.family_sizes)
    _pcts(ctx, cmp)
    if ctx.multi:
        cmp.verdicts = {n: verdict_line(ctx, cmp, n) for n in ctx.names[1:]}
    if ctx.multi:
        cmp.warnings = headline_warnings(ctx, ctx.headline_rows)
    cmp.notes = ctx.notes
    return cmp


def _measured(ctx: Context, name: str, label: str, w: WorkloadRun | None) -> list[IterationResult]:
    if w is None:
        ctx.note(f"{label}: not in run {name}")
        return []
    bad = [it for it in w.iterations if it.status != "ok" and not it.warmup]
    if bad:
        kinds = Counter(it.status for it in bad)
        why = "; ".join(f"iteration {it.index} {it.status}" + (f": {it.reason}" if it.reason else "") for it in bad[:5])
        ctx.note(
            f"{label} ({name}): {len(bad)} iteration(s) excluded "
            f"({', '.join(f'{c} {k}' for k, c in sorted(kinds.items()))}): {why}"
        )
    m = w.measured()
    # an imported iteration whose benchmark logs could not be read keeps its duration, vmstat
    # and monitors (docs/mmtests-import.md): said, not hidden
    short = [it for it in m if it.reason]
    if short:
        ctx.note(
            f"{label} ({name}): "
            + "; ".join(f"iteration {it.index}: {it.reason}" for it in short[:5])
            + (f" (and {len(short) - 5} more)" if len(short) > 5 else "")
        )
    if not m:
        ctx.note(f"{label} ({name}): no measured iteration")
    return m


def _pcts(ctx: Context, cmp: Comparison) -> None:
    for s in cmp.sections:
        for r in s.rows:
            for n in ctx.names:
                r.significant.setdefault(n, False)
                r.lead.setdefault(n, False)
                r.p.setdefault(n, None)
                if n not in r.ci:  # not r.ci.setdefault: that would compute a deferred interval
                    r.ci[n] = None
            if r.pct:  # already MMTests' percentages (sections/mmtests.py), or none by design
                continue
            b = r.values.get(ctx.base)
            if not ctx.multi:
                r.pct[ctx.base] = None
                continue
            # a mechanism has no better direction: its % is the raw change, + up, − down
            better = "higher" if r.family == "mechanism" else r.better
            r.pct[ctx.base] = pct_diff(b, b, better)[0]
            reasons = set()
            for n in ctx.names[1:]:
                r.pct[n], reason = pct_diff(b, r.values.get(n), better)
                if reason in (PCT_BASE_ZERO, PCT_BASE_NEG):
                    reasons.add(reason)
            for reason in sorted(reasons):
                r.add_note(f"no %: {reason}")
