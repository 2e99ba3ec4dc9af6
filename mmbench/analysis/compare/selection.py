"""Which test decides which row (docs/statistics.md §4), run against the baseline:

* the mean row of a metric: Welch's t-test on the iteration means, with the interval of the
  ratio and the minimum detectable effect (both deferred: computed only if a report reads them);
* the percentile rows of a latency metric: Welch on the per-iteration percentiles with ≥ 2
  iterations a side, else Mann–Whitney on the pooled samples;
* a row with one value per iteration (durations): Welch on those values.

Every p-value goes to :class:`~mmbench.analysis.compare.context.Context` for the report-wide
Benjamini–Hochberg adjustment; a row that cannot be tested says why in its note.
"""

from __future__ import annotations

from functools import partial

from mmbench.analysis import significance as sig
from mmbench.analysis import stats as st
from mmbench.analysis.compare.context import Context, Series
from mmbench.analysis.compare.model import Row
from mmbench.model.results import MetricDef


def metric_tests(ctx: Context, md: MetricDef, series: dict[str, Series], mean_row: Row,
                pct_rows: list[Row]) -> None:
    kind = md.mean_kind
    base = series[ctx.base]
    b_it = base.iteration_means
    states: dict[str, list[str]] = {}
    for n in ctx.names[1:]:
        new = series[n]
        n_it = new.iteration_means
        if mean_row.values.get(ctx.base) is None or mean_row.values.get(n) is None:
            # An undefined mean (e.g. Hmean over an iteration with a 0) is not tested: the
            # test would silently drop the undefined iteration (issue 13 item 8).
            states.setdefault("mean undefined", []).append(n)
            continue
        res = sig.welch(b_it, n_it)
        if res.ok:
            ctx.add_test([mean_row], n, res.p)  # type: ignore[arg-type]
        else:
            states.setdefault(f"Welch {res.state} ({res.n_base} vs {res.n_new} iterations)", []).append(n)
        # Welch t-interval on the log ratio of iteration means (chosen by
        # bench/stats-calibration: the percentile bootstrap covered 80-82 % at 3 iterations).
        # One iteration a side: no interval (pooled samples would claim a precision the
        # runs do not have).
        if len(b_it) >= 2 and len(n_it) >= 2:
            mean_row.ci.defer(n, partial(sig.ratio_ci, b_it, n_it, kind))  # type: ignore[attr-defined]
        else:
            mean_row.ci[n] = None
        if res.ok:
            mean_row.mde.defer(n, partial(sig.min_detectable_effect, b_it, n_it, kind))  # type: ignore[attr-defined]
        if pct_rows and len(b_it) >= 2 and len(n_it) >= 2:
            # Several iterations: the iteration is the unit of replication, so each percentile
            # is tested across the per-iteration percentiles (Welch).  Pooling thousands of
            # samples would call a 3% wobble between two identical runs significant.
            for r, q in zip(pct_rows, st.PERCENTILES):
                res = sig.welch(base.iteration_percentiles[q], new.iteration_percentiles[q])
                if res.ok:
                    ctx.add_test([r], n, res.p)  # type: ignore[arg-type]
                else:
                    r.add_note(f"Welch {res.state} on per-iteration P{q} for {n}")
        elif pct_rows:
            # One iteration a side: only the samples are left (Mann-Whitney, pooled)
            mw = sig.mann_whitney(base.pooled_sorted, new.pooled_sorted)
            if mw.ok:
                ctx.add_test(pct_rows, n, mw.p)  # type: ignore[arg-type]
            else:
                for r in pct_rows:
                    r.add_note(f"Mann-Whitney {mw.state} ({mw.n_base} vs {mw.n_new} samples) for {n}")
    for text, who in states.items():
        mean_row.add_note(f"no test: {text} for {', '.join(who)}")


def iteration_row_tests(ctx: Context, row: Row, vals: dict[str, list[float]],
                       kind: st.MeanKind = "amean", equal_constants_tested: bool = True) -> None:
    """Welch-test a row whose per-iteration values are ``vals`` (duration and vmstat rows),
    against the baseline, so --fail-on-regression and --ratio see them (issue 13 item 5).

    With ``equal_constants_tested`` False, two runs with the same constant in every iteration
    (a vmstat counter that stays 0 without swap, say) get p = 1 without entering the report's
    Benjamini–Hochberg family: dozens of such rows carry no evidence and would only dilute the
    q-values of the rows that do."""
    base = vals.get(ctx.base)
    if base is None or row.values.get(ctx.base) is None:
        return
    states: dict[str, list[str]] = {}
    for n in ctx.names[1:]:
        new = vals.get(n)
        if new is None or row.values.get(n) is None:
            continue
        res = sig.welch(base, new)
        if res.state == "deterministic" and res.p == 1.0 and not equal_constants_tested:
            row.p[n] = 1.0
            continue
        if res.ok:
            ctx.add_test([row], n, res.p)  # type: ignore[arg-type]
            if len(base) >= 2 and len(new) >= 2:
                row.ci.defer(n, partial(sig.ratio_ci, base, new, kind))  # type: ignore[attr-defined]
                row.mde.defer(n, partial(sig.min_detectable_effect, base, new, kind))  # type: ignore[attr-defined]
        else:
            states.setdefault(f"Welch {res.state} ({res.n_base} vs {res.n_new} iterations)", []).append(n)
    for text, who in states.items():
        row.add_note(f"no test: {text} for {', '.join(who)}")
