"""Sample-size planning: how many iterations make a headline interval narrow enough, predicted
from a pilot or a stored baseline (the intervals as compare computes them: Student's t on the
mean, Welch's t on the log ratio); the driver's adaptive rounds (``run --until``) use it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mmbench.analysis.significance import t_quantile, welch_df
from mmbench.analysis.stats import iteration_values

MIN_ITERATIONS = 3  # fewer cannot estimate a spread
DIMINISHING = 1.10  # unreachable target: stop adding iterations within 10 % of the floor


def t975(df: float) -> float:
    """The two-sided 95% critical value of Student's t."""
    return t_quantile(0.975, df)


def own_halfwidth_pct(values: list[float]) -> float:
    """±% of the mean covered by the 95% t interval of the mean of ``values``."""
    n = len(values)
    if n < 2:
        return math.inf
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    if m == 0:
        return math.inf
    return t975(n - 1) * sd / math.sqrt(n) / abs(m) * 100


def ratio_halfwidth_pct(base: list[float], new: list[float]) -> float:
    """Half-width (in %) of the 95% Welch interval of new/base on log scale (compare's interval,
    with its degrees of freedom); linear when a value is not positive (then relative to the
    baseline mean)."""
    if len(base) < 2 or len(new) < 2:
        return math.inf
    positive = all(v > 0 for v in base + new)
    a = [math.log(v) for v in base] if positive else list(base)
    b = [math.log(v) for v in new] if positive else list(new)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((v - ma) ** 2 for v in a) / (len(a) - 1) / len(a)
    vb = sum((v - mb) ** 2 for v in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0
    if va == 0 or vb == 0:  # one side constant: its spread does not add degrees of freedom
        df = float(len(b) - 1 if va == 0 else len(a) - 1)
    else:
        df = welch_df(va, vb, len(a), len(b))
    half = t975(df) * se
    if positive:
        return (math.exp(half) - 1) * 100
    return half / abs(ma) * 100 if ma else math.inf


def log_cv2(values: list[float]) -> float | None:
    """The variance of the logs of ``values`` (≈ CV²): what one iteration adds to the interval of
    a ratio; None when undefined (fewer than 2 values, or a value not positive)."""
    if len(values) < 2 or any(not (v > 0) or v != v for v in values):
        return None
    logs = [math.log(v) for v in values]
    m = sum(logs) / len(logs)
    return sum((x - m) ** 2 for x in logs) / (len(logs) - 1)


def predicted_ratio_pct(u_base: float, n_base: int, u_new: float, n_new: int) -> float:
    """The half-width (%) of the ratio interval with per-iteration log variances ``u_*`` and
    these iteration counts (the degrees of freedom as compare computes them)."""
    vb, vn = u_base / n_base, u_new / n_new
    if vb + vn == 0:
        return 0.0
    if vb == 0 or vn == 0:
        df = float(n_new - 1 if vb == 0 else n_base - 1)
    else:
        df = welch_df(vb, vn, n_base, n_new)
    return math.expm1(t975(df) * math.sqrt(vb + vn)) * 100


def predicted_own_pct(u: float, n: int) -> float:
    """The half-width (%) of the interval of a run's own mean, at per-iteration log variance ``u``."""
    return math.expm1(t975(n - 1) * math.sqrt(u / n)) * 100


@dataclass
class Plan:
    """How many measured iterations the run gets, and what to say about it."""

    iterations: int
    notes: list[str]


def plan_iterations(
    target: float,
    max_n: int,
    new: dict[str, list[float]],
    base: dict[str, list[float]] | None = None,
    base_fixed: bool = False,
) -> Plan:
    """The fewest measured iterations (at least :data:`MIN_ITERATIONS`, at most ``max_n``) whose
    predicted interval of every headline metric is within ``target`` percent.

    ``new``: per headline key, the values that show the run's spread (the pilot's).  ``base``:
    the baseline's values: a stored run (``base_fixed``: its iteration count stays as it is, and
    the new run is assumed to vary as it does; ``new`` may be empty) or the pilot of the
    alternated baseline configuration.  Metrics whose spread is undefined are named and left out,
    whatever their order; none left: ``max_n``."""
    notes: list[str] = []
    keys = list(base) if base_fixed and base is not None else list(new)
    needs: dict[str, int] = {}
    for key in keys:
        if base is None:
            u = log_cv2(new.get(key, []))
            if u is None:
                notes.append(
                    f"{key}: interval undefined (fewer than 2 values, or a value <= 0): not used to size the run"
                )
                continue
            needs[key] = next(
                (n for n in range(MIN_ITERATIONS, max_n + 1) if predicted_own_pct(u, n) < target), max_n + 1
            )
            continue
        bvals = base.get(key, [])
        ub = log_cv2(bvals)
        un = ub if base_fixed else log_cv2(new.get(key, []))
        if ub is None or un is None:
            notes.append(
                f"{key}: interval of the ratio undefined (a baseline value <= 0, or fewer than 2): "
                f"not used to size the run"
            )
            continue
        nb_of = (lambda n: len(bvals)) if base_fixed else (lambda n: n)
        need = next(
            (n for n in range(MIN_ITERATIONS, max_n + 1) if predicted_ratio_pct(ub, nb_of(n), un, n) < target), None
        )
        if need is None and base_fixed:
            widths_n = {n: predicted_ratio_pct(ub, len(bvals), un, n) for n in range(MIN_ITERATIONS, max_n + 1)}
            best = min(widths_n.values())
            k = next((m for m in range(len(bvals), 100_000) if predicted_ratio_pct(ub, m, ub, m) < target), None)
            more = (
                f"the target needs a baseline of about {k} iterations (rerun it with --iterations {k} or with --until)"
                if k
                else "no baseline size reaches it at this spread"
            )
            notes.append(
                f"{key}: target ±{target:g}% is unreachable against this baseline: with its "
                f"{len(bvals)} iterations (spread {100 * math.sqrt(ub):.2g}%) the interval stays at "
                f"±{best:.3g}% or wider however many iterations this run has; {more}"
            )
            need = min(n for n, w in widths_n.items() if w <= best * DIMINISHING)
        needs[key] = need if need is not None else max_n + 1
    if not needs:
        notes.append(f"no headline metric has a defined interval: running --max-iterations ({max_n})")
        return Plan(max_n, notes)
    worst = max(needs.values())
    if worst > max_n:
        late = sorted(k for k, v in needs.items() if v > max_n)
        notes.append(
            f"{', '.join(late)}: the target needs more than --max-iterations {max_n} at this spread; running {max_n}"
        )
        worst = max_n
    return Plan(worst, notes)


def headline_values(run: Any, headline: list[str], pilot: bool = False) -> dict[str, list[float]]:
    """``label/metric`` → one value per iteration (the iteration's mean of that family): of the
    measured iterations, or with ``pilot`` of the last iteration of each workload in each part
    (the pilot rounds' one iteration, stored as warm-up)."""
    out: dict[str, list[float]] = {}
    for w in run.workloads:
        names = [m.name for m in w.metrics if m.name in headline] or [m.name for m in w.metrics[:1]]
        its = [it for it in w.iterations if it.status == "ok"][-1:] if pilot else w.measured()
        for name in names:
            metric = w.metric(name)
            per_iter = [[v for v in it.samples.get(name, []) if v == v] for it in its]
            out[f"{w.label}/{name}"] = [float(v) for v in iteration_values(per_iter, metric.mean_kind)]
    return out


def widths(run: Any, headline: list[str], baseline: Any | None) -> dict[str, float]:
    new = headline_values(run, headline)
    if baseline is None:
        return {k: own_halfwidth_pct(v) for k, v in new.items()}
    base = headline_values(baseline, headline)
    return {k: ratio_halfwidth_pct(base.get(k, []), v) for k, v in new.items()}
