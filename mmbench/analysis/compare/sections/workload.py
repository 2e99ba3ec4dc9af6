"""The ``WORKLOAD`` section: the summary rows of every metric a workload declares (Min, mean,
Stddev, CoeffVar, Max, B-mean, and percentiles for latencies), the tests of the mean and
percentile rows against the baseline, and notes on outlying iterations."""

from __future__ import annotations

import math

from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context, Series
from mmbench.analysis.compare.model import Better, Row, Section, clean
from mmbench.analysis.compare.power import headline_metrics
from mmbench.analysis.compare.selection import metric_tests
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun

# a workload metric's mean row, per metric name: its definition, row label and values per run
Means = dict[str, tuple[MetricDef, str, dict[str, float | None]]]


def metric_defs(ctx: Context, label: str, wrs: dict[str, WorkloadRun | None]) -> list[MetricDef]:
    defs: dict[str, MetricDef] = {}
    for n, w in wrs.items():
        if w is None:
            continue
        for m in w.metrics:
            old = defs.get(m.name)
            if old is None:
                defs[m.name] = m
            elif (old.unit, old.better, old.kind, old.mean_kind) != (m.unit, m.better, m.kind, m.mean_kind):
                ctx.note(
                    f"{label}: metric {m.name} is defined differently in run {n}; the first run's definition is used"
                )
    return list(defs.values())


def workload_section(
    ctx: Context, label: str, wrs: dict[str, WorkloadRun | None], measured: dict[str, list[IterationResult]]
) -> tuple[Section, Means]:
    plugin = next((w.plugin for w in wrs.values() if w is not None), "")
    title = label if not plugin or plugin == label else f"{label} ({plugin})"
    sec = Section(title, "workload", label=label, source=plugin)
    means: Means = {}
    defs = metric_defs(ctx, label, wrs)
    heads = headline_metrics(defs, ctx.headline)
    for md in defs:
        series = {n: _series(its, md) for n, its in measured.items()}
        mean_row = metric_rows(ctx, label, sec, md, series)
        if mean_row is not None:
            means[md.name] = (md, mean_row.stat, mean_row.values)
            if md.name in heads:
                ctx.headline_rows.append((label, md, mean_row, series))
    return sec, means


def _series(its: list[IterationResult], md: MetricDef) -> Series:
    raw = [it.samples.get(md.name, ()) for it in its]
    if any(hasattr(x, "ravel") for x in raw):  # large stored samples come back as float64 arrays
        import numpy as np

        per_iter = [np.asarray(x, dtype=np.float64) for x in raw]
        return Series(per_iter, [it.index for it in its], md.mean_kind, [a for a in per_iter if len(a)])
    return Series([st.floats(x) for x in raw], [it.index for it in its], md.mean_kind)


def metric_rows(ctx: Context, label: str, sec: Section, md: MetricDef, series: dict[str, Series]) -> Row | None:
    """Summary rows of one metric into ``sec``, with tests; returns the mean row."""
    kind = md.mean_kind
    latency = md.kind == "latency"
    summaries: dict[str, list[tuple[str, float]]] = {}
    for n, s in series.items():
        if s.has_samples:
            summaries[n] = s.summary(md.better, latency, ctx.convention)
            outlier_notes(ctx, label, md, n, s)
    if not summaries:
        return None
    stat_names = [name for name, _ in next(iter(summaries.values()))]
    rows: dict[str, Row] = {}
    for i, name in enumerate(stat_names):
        better: Better = "lower" if name in ("Stddev", "CoeffVar") else md.better
        unit = "%" if name == "CoeffVar" else md.unit
        vals = {n: (clean(summaries[n][i][1]) if n in summaries else None) for n in ctx.names}
        rows[name] = Row(md.name, name, unit, better, vals)
        sec.rows.append(rows[name])
        if name == "CoeffVar" and any(len(a) > 1 for s in series.values() for a in s.per_iter):
            sec.rows += sample_spread_rows(ctx, sec, md, series)
    mean_row = rows[st.mean_label(kind)]
    if ctx.multi and all(n in series for n in ctx.names):
        metric_tests(ctx, md, series, mean_row, [rows[f"P{p}"] for p in st.PERCENTILES] if latency else [])
    return mean_row


SAMPLE_SPREAD_NOTE = (
    "Stddev.samples and CoeffVar.samples: the spread of all samples pooled, as the seeds' "
    "'+/-' and 'stddev'; Stddev and CoeffVar are the spread of the iteration means, "
    "which the tests use"
)


def sample_spread_rows(ctx: Context, sec: Section, md: MetricDef, series: dict[str, Series]) -> list[Row]:
    """Stddev.samples and CoeffVar.samples of a metric with several samples per iteration
    (application launches, fault latencies): the spread of every sample, next to
    the spread of iteration means.  Descriptive, not tested."""
    sd: dict[str, float | None] = {}
    cv: dict[str, float | None] = {}
    for n in ctx.names:
        s = series.get(n)
        pooled = s.pooled_sorted if s is not None else []  # sorted once already for the summary
        sd[n] = clean(st.stddev(pooled)) if len(pooled) else None
        m = st.mean(pooled, md.mean_kind) if len(pooled) else math.nan
        cv[n] = clean(100.0 * sd[n] / abs(m)) if sd[n] is not None and math.isfinite(m) and m != 0 else None
    ctx.note(SAMPLE_SPREAD_NOTE)  # once per comparison
    return [Row(md.name, "Stddev.samples", md.unit, "lower", sd), Row(md.name, "CoeffVar.samples", "%", "lower", cv)]


def outlier_notes(ctx: Context, label: str, md: MetricDef, run: str, s: Series) -> None:
    have = [i for i, a in zip(s.indices, s.per_iter) if len(a)]
    if len(have) < 3:
        return
    vals = s.iteration_means
    finite = sorted(v for v in vals if math.isfinite(v))
    med = (
        (
            finite[len(finite) // 2]
            if len(finite) % 2
            else (finite[len(finite) // 2 - 1] + finite[len(finite) // 2]) / 2.0
        )
        if finite
        else math.nan
    )
    for j, z in st.outliers(vals):
        ctx.note(
            f"{label} iteration {have[j]} is an outlier in {md.name} "
            f"(run {run}: {_fmt(vals[j])} {md.unit} vs median {_fmt(med)}, robust z {z:.1f}); "
            f"kept"
        )


def _fmt(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "nan"
