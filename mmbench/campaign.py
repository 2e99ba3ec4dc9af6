"""Adaptive repetitions: size a run so its headline metrics are known well enough, without the
optional-stopping bias of "stop when the interval looks narrow".

``mmbench run --until 'ci<2%' [--baseline NAME [--baseline-set K=V ...]] --max-iterations N
--max-time T NAME``.  Stopping the first time an interval looks narrow picks iterations that
happen to agree: the stored spread is then too small, and the comparison made afterwards is
anti-conservative (issue 22 item 4: 36-55 % of A/A comparisons significant after an early stop,
11.5-12.1 % when both runs used --until, interval coverage 88 %).  So the number of measured
iterations is fixed before any of them is seen:

* with ``--baseline NAME`` (a stored run): from the baseline's own iterations, assuming the new
  run varies as the baseline does: the fewest iterations whose predicted interval of the ratio
  (Welch's t on the logs, as compare computes it) is within the target.  When the baseline's
  own iterations already make the interval wider than the target (its n sets a floor), that is
  said at the start, with the number of baseline iterations the target would need, and the run
  gets the iterations past which more would narrow the interval by less than 10 %;
* otherwise (no baseline, or ``--baseline-set``: the baseline configuration run in alternation
  A B, B A, A B ... so drift, and any effect of going first or second in a round, hits both):
  a **pilot** of 3 rounds sizes the run and is then stored as
  warm-up, left out of every statistic: the measured iterations that follow are a fixed-size
  sample whatever the pilot showed (a two-stage design: the decision never sees the data that
  are tested).

With ``--baseline-kernel`` (commands/run.py) the two arms are the same suite on two kernels, each
round booting one guest per kernel (``arm_runners``: one run function per arm), and without
``--until`` it runs exactly ``--iterations`` rounds.

The run then does exactly that many measured rounds (or stops at ``--max-time``), reports the
intervals it reached and whether the target was met.  A headline metric whose interval is
undefined (its mean is 0, or it has no values) cannot size the run: it is named and left out,
the same whatever the order of the metrics; when none can size it, ``--max-iterations`` is used.
A suite names its headline metrics in ``[suite] headline``; otherwise each workload's first
metric is its headline.  Each round is a run of its own in a parts store; after every round the
parts are joined into run NAME (iterations numbered in the order they ran), so a killed
campaign keeps every round it finished.
"""

from __future__ import annotations

import copy
import math
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import UsageError

MIN_ITERATIONS = 3           # fewer cannot estimate a spread
DEFAULT_MAX_ITERATIONS = 30
PILOT = 3                    # rounds that size a run without a stored baseline (stored as warm-up)
DIMINISHING = 1.10           # unreachable target: stop adding iterations within 10 % of the floor


@dataclass(frozen=True)
class Until:
    """A stopping target: the 95% interval's half-width below ``pct`` percent."""
    pct: float


def parse_until(text: str) -> Until:
    m = re.fullmatch(r"\s*ci\s*<\s*([0-9]*\.?[0-9]+)\s*%?\s*", text or "")
    if not m:
        raise UsageError(f"--until {text!r}: expected ci<PCT, e.g. 'ci<2%' (the 95% interval within ±2%)")
    pct = float(m.group(1))
    if not 0 < pct <= 1000:
        raise UsageError(f"--until {text!r}: the target must be above 0 and at most 1000 percent")
    return Until(pct)


def t975(df: float) -> float:
    """The two-sided 95% critical value of Student's t (the statistics stage's quantile)."""
    from mmbench.analysis.significance import t_quantile
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
    from mmbench.analysis.significance import welch_df
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
    if va == 0 or vb == 0:          # one side constant: its spread does not add degrees of freedom
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
    from mmbench.analysis.significance import welch_df
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


def plan_iterations(target: float, max_n: int, new: dict[str, list[float]],
                    base: dict[str, list[float]] | None = None, base_fixed: bool = False) -> Plan:
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
                notes.append(f"{key}: interval undefined (fewer than 2 values, or a value <= 0): not used "
                             f"to size the run")
                continue
            needs[key] = next((n for n in range(MIN_ITERATIONS, max_n + 1) if predicted_own_pct(u, n) < target),
                              max_n + 1)
            continue
        bvals = base.get(key, [])
        ub = log_cv2(bvals)
        un = ub if base_fixed else log_cv2(new.get(key, []))
        if ub is None or un is None:
            notes.append(f"{key}: interval of the ratio undefined (a baseline value <= 0, or fewer than 2): "
                         f"not used to size the run")
            continue
        nb_of = (lambda n: len(bvals)) if base_fixed else (lambda n: n)
        need = next((n for n in range(MIN_ITERATIONS, max_n + 1)
                     if predicted_ratio_pct(ub, nb_of(n), un, n) < target), None)
        if need is None and base_fixed:
            widths_n = {n: predicted_ratio_pct(ub, len(bvals), un, n) for n in range(MIN_ITERATIONS, max_n + 1)}
            best = min(widths_n.values())
            k = next((m for m in range(len(bvals), 100_000)
                      if predicted_ratio_pct(ub, m, ub, m) < target), None)
            more = (f"the target needs a baseline of about {k} iterations (rerun it with --iterations {k} "
                    f"or with --until)" if k else "no baseline size reaches it at this spread")
            notes.append(f"{key}: target ±{target:g}% is unreachable against this baseline: with its "
                         f"{len(bvals)} iterations (spread {100 * math.sqrt(ub):.2g}%) the interval stays at "
                         f"±{best:.3g}% or wider however many iterations this run has; {more}")
            need = min(n for n, w in widths_n.items() if w <= best * DIMINISHING)
        needs[key] = need if need is not None else max_n + 1
    if not needs:
        notes.append(f"no headline metric has a defined interval: running --max-iterations ({max_n})")
        return Plan(max_n, notes)
    worst = max(needs.values())
    if worst > max_n:
        late = sorted(k for k, v in needs.items() if v > max_n)
        notes.append(f"{', '.join(late)}: the target needs more than --max-iterations {max_n} at this spread; "
                     f"running {max_n}")
        worst = max_n
    return Plan(worst, notes)


def headline_values(run: Any, headline: list[str], pilot: bool = False) -> dict[str, list[float]]:
    """``label/metric`` → one value per iteration (the iteration's mean of that family): of the
    measured iterations, or with ``pilot`` of the last iteration of each workload in each part
    (the pilot rounds' one iteration, stored as warm-up)."""
    from mmbench.analysis.stats import iteration_values
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


def _one_round(suite: Any, first: bool, pilot: bool = False) -> Any:
    """One round: one measured iteration per workload, or (``pilot``) one iteration stored as
    warm-up; the suite's own warm-up only in the first round."""
    s = copy.copy(suite)
    s.workloads = [copy.copy(w) for w in suite.workloads]
    for w in s.workloads:
        own = w.warmup if first else 0
        w.iterations = 0 if pilot else 1
        w.warmup = own + (1 if pilot else 0)
    return s


def _merge(parts: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for p in parts:
        for k, v in p.items():
            out.setdefault(k, []).extend(v)
    return out


def run_adaptive(load: Callable[[list[str]], Any], sets: list[str], name: str, store: Any, *,
                 until: Until | None, baseline: str | None, baseline_sets: list[str] | None,
                 max_iterations: int, max_time: float | None, force: bool, progress: Any,
                 run_suite: Callable[..., str] | None,
                 arm_runners: dict[str, Callable[..., str]] | None = None) -> tuple[str, str]:
    """Size the run (pilot or stored baseline), then run exactly that many measured rounds (or
    until --max-time); returns (status, what happened).  ``until`` None: exactly
    ``max_iterations`` measured rounds, no pilot.  ``arm_runners``: run name → the function that
    runs that arm's round (default ``run_suite``), e.g. a guest boot of that arm's kernel; a
    pilot round asks for 0 measured iterations and 1 more warm-up of each workload, so a runner
    must pass each workload's ``iterations`` and ``warmup`` on."""
    from mmbench.store import open_store
    from mmbench.store.transfer import join_interleaved
    if until is not None and max_iterations < MIN_ITERATIONS:
        raise UsageError(f"--max-iterations: at least {MIN_ITERATIONS} (fewer cannot estimate a spread)")
    configs = [(name, load(sets))]
    fixed_baseline = None
    if baseline and baseline_sets is not None:
        # A B, B A, ...: the baseline first in the first round; its values go on top of the common --set values
        configs.insert(0, (baseline, load([*sets, *baseline_sets])))
    elif baseline:
        fixed_baseline = store.load_run(baseline)
    for run_name, _ in configs:
        if store.exists(run_name) and not force:
            raise UsageError(f"run {run_name!r} already exists; use --force to replace it or pick another name")
    headline = list(configs[-1][1].headline)
    target = until.pct if until is not None else math.inf
    plan: Plan | None = None
    if until is None:                 # a fixed number of rounds (e.g. A/B kernels without --until)
        plan = Plan(max_iterations, [])
    elif fixed_baseline is not None:
        base_vals = headline_values(fixed_baseline, headline)
        plan = plan_iterations(target, max_iterations, {}, base_vals, base_fixed=True)
        progress.info(f"--until ci<{target:g}% against {baseline} ({_count(base_vals)} iterations): "
                      f"{plan.iterations} measured iterations planned, assuming this run varies as {baseline} does")
        for text in plan.notes:
            progress.info(text)
    else:
        progress.info(f"--until ci<{target:g}%: a pilot of {PILOT} rounds sizes the run; its iterations are stored "
                      f"as warm-up and left out of every statistic (so the decision never sees the tested data)")
    cache = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench")
    parts_dir = cache / "parts" / f"{name}-{os.getpid()}"
    parts_store = open_store(parts_dir)
    parts: dict[str, list[str]] = {n: [] for n, _ in configs}
    pilots: dict[str, list[dict[str, list[float]]]] = {n: [] for n, _ in configs}
    start = time.monotonic()
    status = "complete"
    retried: dict[str, int] = {}
    measured = 0
    rnd = 0
    try:
        while True:
            pilot = plan is None
            # Counterbalanced, A B then B A: a seed002 A/A pair with A always first in its round
            # had the second arm lower in p99-Allocation in all 5 rounds (starred, q = 0.014), so
            # a position effect in the round must not fall on one arm only.
            for run_name, suite in (configs if rnd % 2 == 0 else configs[::-1]):
                part = f"{run_name}.round{rnd}"
                runner = (arm_runners or {}).get(run_name, run_suite)
                assert runner is not None
                st = runner(_one_round(suite, rnd == 0, pilot), part, parts_store, force=True, progress=progress)
                why = _why(parts_store, part) if st != "complete" else ""
                if st != "complete" and arm_runners and "guest kernel panicked" in why and \
                        retried.get(run_name, 0) < PANIC_RETRIES:
                    # Under TCG a guest sometimes dies of an int3 oops while a static key is
                    # patched (docs/kernels.md): the round runs once more, the panic is kept and
                    # said; a round that panics again, or a fourth panic of the arm, fails the run.
                    retried[run_name] = retried.get(run_name, 0) + 1
                    kept = _keep_console(parts_store, part, cache)
                    progress.warn(f"round {rnd + 1} of {run_name}: {why[2:]}; its guest console: {kept}; "
                                  f"running the round once more")
                    part = f"{run_name}.round{rnd}.retry"
                    st = runner(_one_round(suite, rnd == 0, pilot), part, parts_store, force=True, progress=progress)
                parts[run_name].append(part)
                join_interleaved(parts_store, parts[run_name], store, run_name, force=True)
                if st != "complete":
                    kept = _keep_console(parts_store, part, cache)
                    return "failed", (f"round {rnd + 1} of {run_name} ended {st}{_why(parts_store, part)}"
                                      + (f" (its guest console: {kept})" if kept else ""))
                if pilot:
                    pilots[run_name].append(headline_values(parts_store.load_run(part), headline, pilot=True))
            rnd += 1
            if pilot:
                if rnd < PILOT:
                    continue
                new = _merge(pilots[name])
                base = _merge(pilots[baseline]) if baseline and baseline_sets is not None else None
                plan = plan_iterations(target, max_iterations, new, base)
                shown = _shown(new, base)
                progress.info(f"pilot of {PILOT} rounds: {shown}: {plan.iterations} measured iterations planned")
                for text in plan.notes:
                    progress.info(text)
                continue
            measured += 1
            if until is None:
                progress.info(f"round {measured} of {plan.iterations} done ({', '.join(r for r, _ in configs)})")
                if measured >= plan.iterations:
                    return status, (f"ran {measured} rounds, each arm once per round "
                                    f"({' '.join(r for r, _ in configs)})")
                continue
            if measured >= plan.iterations:
                break
            if max_time is not None and time.monotonic() - start >= max_time:
                return status, (f"stopped at --max-time after {measured} of {plan.iterations} planned measured "
                                f"iterations ({time.monotonic() - start:.0f} s): {_reached(store, configs, name, baseline, fixed_baseline, headline, target)}")
        return status, (f"stopped after {measured} measured iterations as planned"
                        + (f" (+{PILOT} pilot rounds stored as warm-up)" if fixed_baseline is None else "")
                        + f": {_reached(store, configs, name, baseline, fixed_baseline, headline, target)}")
    except BaseException:
        # Interrupted or failed mid-round: what finished stays, marked incomplete.
        for run_name, names in parts.items():
            if names:
                join_interleaved(parts_store, names, store, run_name, force=True, status="incomplete")
        raise
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)


# A/B kernels: a guest panic reruns its round once; at most this many reruns per arm and run (six
# int3 oopses in about 110 TCG boots, docs/kernels.md: two panics in one 5-round run happen)
PANIC_RETRIES = 3


def _keep_console(parts_store: Any, part: str, cache: Path) -> Path | None:
    """A failed round's guest console, copied out of the parts store (removed at the end) to
    ~/.cache/mmbench/failed-rounds/, so a panic's trace can be read; None when it had none."""
    try:
        data = dict(parts_store.run_files(part)).get("vm-console.log")
        if not data:
            return None
        out = cache / "failed-rounds" / f"{part}-{os.getpid()}-console.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        return out
    except OSError:
        return None


def _why(parts_store: Any, part: str) -> str:
    """': <reason>' from a round's stored run (its note, or its first failed iteration), or ''."""
    import json
    try:
        files = dict(parts_store.run_files(part))
        note = json.loads(files.get("run.json", b"{}")).get("note")
        if not note:
            for key, data in sorted(files.items()):
                if key.endswith("/result.json"):
                    for it in json.loads(data).get("iterations", []):
                        if it.get("status") == "failed" and it.get("reason"):
                            note = f"{key.split('/')[0]} iteration {it.get('index')}: {it['reason']}"
                            break
                if note:
                    break
    except Exception:   # the reason is a courtesy: never hide the failure behind another
        return ""
    return f": {note}" if note else ""


def _count(vals: dict[str, list[float]]) -> int:
    return max((len(v) for v in vals.values()), default=0)


def _shown(new: dict[str, list[float]], base: dict[str, list[float]] | None) -> str:
    out = []
    for k, v in new.items():
        u = log_cv2(v)
        ub = log_cv2(base.get(k, [])) if base is not None else None
        spread = "undefined" if u is None else f"{100 * math.sqrt(u):.2g}%"
        out.append(f"{k} varies by {spread}" + ("" if base is None else
                                                 f" ({'undefined' if ub is None else f'{100 * math.sqrt(ub):.2g}%'} in the baseline)"))
    return ", ".join(out)


def _reached(store: Any, configs: list[tuple[str, Any]], name: str, baseline: str | None, fixed: Any,
             headline: list[str], target: float) -> str:
    runs = {rn: store.load_run(rn) for rn, _ in configs}
    base = fixed if fixed is not None else (runs[baseline] if baseline else None)
    w = widths(runs[name], headline, base)
    shown = ", ".join(f"{k} ±{v:.2f}%" if math.isfinite(v) else f"{k} undefined" for k, v in w.items())
    missed = [k for k, v in w.items() if not v < target]
    if not missed:
        return f"every headline interval is within ±{target:g}% ({shown})"
    return f"target ±{target:g}% not reached for {', '.join(missed)} ({shown})"
