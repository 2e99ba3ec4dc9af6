"""Which test decides which row (docs/statistics.md §4), run against the baseline:

* a row constant at its resolution within each run (a deterministic guest clock): judged by
  ``significance.deterministic``, not tested: a change when the runs are more than the resolution
  apart in every iteration, no change otherwise;
* a row that counts events (vmstat counters, a metric of kind ``count``) whose per-iteration
  values are whole numbers: the count test (``significance.count_test``: exact at small n);
* any other tested row: Welch's t-test on one value per iteration (the iteration means of a
  metric, its per-iteration percentiles, a duration, a vmstat row's per-iteration value);
* with fewer than 2 iterations on a side: no test at all (the iteration is the unit of
  replication; pooling the samples of one iteration would test the machine's state of that
  iteration, not the kernels);
* two constant series whose constancy could be Poisson noise (small counts): the count test.

Every p-value goes to :class:`~mmbench.analysis.compare.context.Context` for the Benjamini–Hochberg
step of its family (primary or exploratory, ``families.py``); a row that cannot be tested says why
in its note and in ``Row.why``.  The interval of the ratio and the minimum detectable effect are
deferred: computed only if a report reads them.
"""

from __future__ import annotations

import math
from functools import partial

from mmbench.analysis import significance as sig
from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context, Series
from mmbench.analysis.compare.model import Row
from mmbench.analysis.compare.power import row_mde
from mmbench.model.results import MetricDef


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def test_row(
    ctx: Context,
    row: Row,
    run: str,
    base: list[float],
    new: list[float],
    kind: st.MeanKind = "amean",
    count: bool = False,
    resolution: float = 0.0,
) -> sig.TestResult | None:
    """Judge ``row`` for ``run`` on one value per iteration a side: a deterministic verdict (both
    runs constant at ``resolution``), else a test whose p-value is registered with its deferred
    interval and MDE, or the reason there is none."""
    row.n[run] = (len(base), len(new))
    det = sig.deterministic(base, new, resolution, count) if len(base) >= 2 and len(new) >= 2 else None
    if det is not None:
        judge_deterministic(row, run, det)
        return None
    res = None
    if count and sig.is_counts(base) and sig.is_counts(new):
        res = sig.count_test(base, new)
    if res is None:
        res = sig.welch(base, new)
    row.test = row.test or res.test
    why = None
    if res.state == "too-few-samples":
        why = f"no test: {res.n_base} vs {res.n_new} iterations (a test needs 2 a side: the iteration is the unit)"
    elif res.state == "same-constant":
        why = f"no change: {_fmt(base[0])} in every iteration of both runs (not tested)"
    elif res.state == "no-variance":
        why = f"no variance: not tested ({_fmt(base[0])} vs {_fmt(new[0])} in every iteration)"
    elif res.state == "undefined":
        why = "no test: the test statistic is undefined for these values"
    elif res.p_floor > sig.ALPHA:
        if (
            res.test == "count-exact"
            and res.p_floor >= 2.0 / math.comb(res.n_base + res.n_new, min(res.n_base, res.n_new)) * 0.999
        ):
            why = (
                f"cannot reach q <= {sig.ALPHA:g} at this n: at {res.n_base} vs {res.n_new} iterations the exact "
                f"count test's smallest p is {res.p_floor:.2g} (a count that moves in every iteration needs "
                f"{_iterations_for_floor()} a side)"
            )
        else:
            why = (
                f"cannot reach q <= {sig.ALPHA:g} at this n: {_fmt(sum(base) + sum(new))} events in all, even "
                f"the most extreme split of them would give p = {res.p_floor:.2g}"
            )
    if why is not None:
        row.why[run] = why
    if res.ok and res.p_floor <= sig.ALPHA:
        ctx.add_test([row], run, res.p)  # type: ignore[arg-type]
    if len(base) >= 2 and len(new) >= 2:
        if res.test.startswith("count"):
            row.ci.defer(run, partial(sig.count_ratio_ci, base, new))  # type: ignore[attr-defined]
        else:
            row.ci.defer(run, partial(sig.ratio_ci, base, new, kind))  # type: ignore[attr-defined]
        if res.ok:
            row.mde.defer(run, partial(row_mde, ctx, row, run, base, new, kind, res.test))  # type: ignore[attr-defined]
    return res


def _iterations_for_floor() -> int:
    """The fewest iterations a side at which the exact count test can give p <= 0.05 (4: 2/70)."""
    k = 2
    while 2.0 / math.comb(2 * k, k) > sig.ALPHA:
        k += 1
    return k


def judge_deterministic(row: Row, run: str, det: sig.Determinism) -> None:
    """Record :func:`significance.deterministic`'s verdict: a change (starred or marked with its
    family once families are known, ``families.adjust``) or none; never a test."""

    def span(lo: float, hi: float) -> str:
        return _fmt(lo) if lo == hi else f"{_fmt(lo)}-{_fmt(hi)}"

    b, n = span(*det.base), span(*det.new)
    where = f"in every iteration ({det.n_base} vs {det.n_new})"
    row.test = row.test or "deterministic"
    res = f"the resolution {_fmt(det.resolution)}" if det.resolution else f"float noise ({sig.REL_TOL:g} of the value)"
    if det.changed:
        row.judged[run] = "deterministic"
        row.why[run] = f"judged deterministic: {b} vs {n} {where}, more than {res} apart"
    elif det.base[0] == det.base[1] and det.new[0] == det.new[1] and sig.close(det.base[0], det.new[0]):
        row.why[run] = f"no change: {b} in every iteration of both runs (not tested)"
    else:
        row.why[run] = f"no change beyond {res}: {b} vs {n} {where} (not tested)"


def _notes(row: Row, runs: list[str]) -> None:
    """The reasons of ``row.why`` in the row's note, each said once with the runs it applies to."""
    by: dict[str, list[str]] = {}
    for n in runs:
        if n in row.why:
            by.setdefault(row.why[n], []).append(n)
    for text, who in by.items():
        if text.startswith("no change:"):  # the values say it; kept in Row.why for the summary
            continue
        row.add_note(f"{text} for {', '.join(who)}")


def metric_tests(ctx: Context, md: MetricDef, series: dict[str, Series], mean_row: Row, pct_rows: list[Row]) -> None:
    kind = md.mean_kind
    res = md.effective_resolution
    for r in [mean_row, *pct_rows]:
        r.resolution = res
    for n in ctx.names:
        mean_row.iterations[n] = list(series[n].iteration_means)
        for r, q in zip(pct_rows, st.PERCENTILES):
            r.iterations[n] = list(series[n].iteration_percentiles[q])
    base = series[ctx.base]
    b_it = base.iteration_means
    count = md.kind == "count"
    for n in ctx.names[1:]:
        new = series[n]
        undefined = [r for r in (ctx.base, n) if mean_row.values.get(r) is None]
        if undefined:
            # An undefined mean (e.g. Hmean over an iteration with a 0) is not tested: the
            # test would silently drop the undefined iteration.
            mean_row.why[n] = f"no test: the {mean_row.stat} of {' and '.join(undefined)} is undefined"
            continue
        test_row(ctx, mean_row, n, b_it, new.iteration_means, kind, count, res)
        # Percentiles: one per iteration, Welch across them (the iteration is the unit of
        # replication; pooled samples would call a 3% wobble between identical runs significant).
        for r, q in zip(pct_rows, st.PERCENTILES):
            test_row(ctx, r, n, base.iteration_percentiles[q], new.iteration_percentiles[q], resolution=res)
    for r in [mean_row, *pct_rows]:
        _notes(r, ctx.names[1:])


def iteration_row_tests(
    ctx: Context,
    row: Row,
    vals: dict[str, list[float]],
    kind: st.MeanKind = "amean",
    count: bool = False,
    resolution: float = 0.0,
) -> None:
    """Test a row whose per-iteration values are ``vals`` (duration, vmstat and monitor rows)
    against the baseline, so --fail-on-regression and --ratio see them.  Two
    runs with the same constant in every iteration (a swap counter that stays 0) are not tested
    and stay out of the Benjamini–Hochberg family: they carry no evidence and would only dilute
    the q-values of the rows that do."""
    row.resolution = resolution
    row.iterations.update({n: list(v) for n, v in vals.items()})
    base = vals.get(ctx.base)
    if base is None or row.values.get(ctx.base) is None:
        return
    for n in ctx.names[1:]:
        new = vals.get(n)
        if new is None or row.values.get(n) is None:
            continue
        test_row(ctx, row, n, base, new, kind, count, resolution)
    _notes(row, ctx.names[1:])
