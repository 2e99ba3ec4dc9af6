"""What the comparison could not have seen: when a headline row (the suite's
``[suite] headline`` metrics, else each workload's first metric, as ``run --until`` chooses them)
has a minimum detectable effect above 5 % against the baseline, or cannot be tested at all with
one iteration, a warning shown at the top of every report says so, with the number of iterations
per run that would detect 5 % at the variation these runs show."""

from __future__ import annotations

import re

from mmbench.analysis import significance as sig
from mmbench.analysis.compare.context import Context, Series
from mmbench.analysis.compare.model import MDE_SHOWN_MAX, Row
from mmbench.model.results import MetricDef, RunRecord


def mde_text(mde: float, digits: str = ".1f") -> str:
    """An MDE as printed: the signed percentage (a rise +, a fall −), or '>1000% (too few
    iterations)' past MDE_SHOWN_MAX."""
    return f">{MDE_SHOWN_MAX:g}% (too few iterations)" if abs(mde) > MDE_SHOWN_MAX else f"{mde:+{digits}}%"


EFFECT_PCT = 5.0
ITERATION_LIMIT = 100_000


def family_alpha(ctx: Context, row: Row) -> tuple[float, int]:
    """The per-test level at which one change in ``row``'s family is found by Benjamini–Hochberg
    when the family's other rows do not change: α/m, m the family's size (its tests)."""
    m = max(1, ctx.family_sizes.get(row.family or "exploratory", 1))
    return sig.ALPHA / m, m


def row_mde(
    ctx: Context, row: Row, run: str, base: list[float], new: list[float], kind: str, test: str
) -> float | None:
    """The minimum detectable effect (80 % power) of the test applied to ``row``, at the level
    Benjamini–Hochberg gives one change in its family (:func:`family_alpha`), so a true change
    of this size is starred (or marked) 80 % of the time, not 80 % before the adjustment; in the
    direction ``run`` moved (a fall is given as the fall: −81 %, not the +417 % rise of the same
    size on the log scale).  When there is none, ``row.mde_why`` says why."""
    alpha, m = family_alpha(ctx, row)
    b, v = row.values.get(ctx.base), row.values.get(run)
    if b is None or v is None:
        b, v = sum(base) / len(base), sum(new) / len(new)
    direction = "down" if v < b else "up"
    if test.startswith("count"):
        got = sig.count_min_detectable_effect(base, new, alpha=alpha, direction=direction)
        if got is None:
            row.mde_why[run] = (
                f"no change of any size could be marked at {len(base)} vs {len(new)} iterations "
                f"(its family's level {alpha:.2g} is below the exact count test's smallest p)"
                if sum(base) > 0
                else "the baseline counted nothing: a change of its rate has no size"
            )
        return got
    got = sig.min_detectable_effect(base, new, kind, alpha=alpha, direction=direction)  # type: ignore[arg-type]
    if got is None:
        row.mde_why[run] = "undefined for these values"
    return got


def suite_headline(runs: list[RunRecord]) -> set[str]:
    """The metric names the runs' suites declare in ``[suite] headline`` (union over runs)."""
    out: set[str] = set()
    for r in runs:
        text = r.suite_text or ""
        if not re.search(r"^\s*headline\s*=", text, re.M):  # most suites: skip the TOML parser
            continue
        import tomllib

        try:
            names = (tomllib.loads(text).get("suite") or {}).get("headline") or []
        except tomllib.TOMLDecodeError:
            continue
        out.update(str(n) for n in names if isinstance(n, str))
    return out


def headline_metrics(metrics: list[MetricDef], headline: set[str]) -> set[str]:
    """A workload's headline metrics: those the suite names, else its first metric."""
    named = {m.name for m in metrics if m.name in headline}
    return named or ({metrics[0].name} if metrics else set())


def headline_warnings(ctx: Context, rows: list[tuple[str, MetricDef, Row, dict[str, Series]]]) -> list[str]:
    out = []
    for label, md, row, series in rows:
        weak: list[str] = []
        single: list[str] = []
        need = 0
        unknown = False
        b_it = series[ctx.base].iteration_means
        for n in ctx.names[1:]:
            if row.values.get(ctx.base) is None or row.values.get(n) is None:
                continue
            n_it = series[n].iteration_means
            if len(b_it) < 2 or len(n_it) < 2:
                single.append(n)
                continue
            mde = row.mde.get(n)
            if mde is None or abs(mde) <= EFFECT_PCT:
                continue
            weak.append(f"{mde_text(mde)} for {n}")
            k = sig.iterations_to_detect(
                b_it, n_it, md.mean_kind, EFFECT_PCT, limit=ITERATION_LIMIT, alpha=family_alpha(ctx, row)[0]
            )
            if k is None:
                unknown = True
            else:
                need = max(need, k)
        what = f"{label}: {md.name} ({row.stat})"
        if weak:
            how = (
                f"more than {ITERATION_LIMIT} iterations per run would be needed"
                if unknown
                else f"{need} iterations per run would detect it at this variation"
            )
            fam, m = (row.family or "exploratory"), family_alpha(ctx, row)[1]
            out.append(
                f"{what} could not detect a {EFFECT_PCT:g}% change against {ctx.base}: smallest "
                f"change starred 80% of the time (its {fam} family of {m} tests) {', '.join(weak)}; {how}"
            )
        if single:
            out.append(
                f"{what} could not detect any change against {ctx.base} for {', '.join(single)}: "
                f"one iteration a side allows no test; run at least 2 (the number needed for "
                f"{EFFECT_PCT:g}% follows from the spread of several)"
            )
    return out
