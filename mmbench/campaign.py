"""Adaptive repetitions: run a suite round by round until its headline metrics are known well enough.

``mmbench run --until 'ci<2%' [--baseline NAME [--baseline-set K=V ...]] --max-iterations N
--max-time T NAME`` runs one measured iteration of every workload per round (warm-up only in the
first round) and, after each round from the third on, computes for every headline metric the 95%
interval that decides:

* without a baseline: the interval of the run's own mean, as a percentage of the mean
  (Student's t on the iteration means: ± t(0.975, n-1) · s/√n / |mean|);
* with ``--baseline NAME``: the interval of the ratio of means against that run (Welch's t on the
  logarithms of the iteration means, so the interval is of the ratio and never crosses 0; its
  half-width is reported as ``(exp(t·se) - 1)``, in percent).  With ``--baseline-set``, the baseline
  is not a stored run but a second configuration of the same suite (the ``--set`` values with the
  ``--baseline-set`` values on top), run in alternation with this one (A B A B ...), so slow drift
  of the machine hits both equally.

With ``--baseline-kernel`` (commands/run.py) the two arms are the same suite on two kernels, each
round booting one guest per kernel (``arm_runners``: one run function per arm), and without
``--until`` it runs exactly ``--iterations`` rounds.

It stops as soon as every headline interval is narrower than the target, or at ``--max-iterations``
or ``--max-time``, and says which.  A suite names its headline metrics in ``[suite] headline``;
otherwise each workload's first metric is its headline.  Each round is a run of its own in a
parts store; after every round the parts are joined into run NAME (iterations numbered in the
order they ran), so a killed campaign keeps every round it finished.
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
    """Half-width (in %) of the 95% Welch interval of new/base on log scale; linear when a value
    is not positive (then relative to the baseline mean)."""
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
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1) if vb else 0))
    half = t975(df) * se
    if positive:
        return (math.exp(half) - 1) * 100
    return half / abs(ma) * 100 if ma else math.inf


def headline_values(run: Any, headline: list[str]) -> dict[str, list[float]]:
    """``label/metric`` → one value per measured iteration (the iteration's mean of that family)."""
    from mmbench.analysis.stats import iteration_values
    out: dict[str, list[float]] = {}
    for w in run.workloads:
        names = [m.name for m in w.metrics if m.name in headline] or [m.name for m in w.metrics[:1]]
        for name in names:
            metric = w.metric(name)
            per_iter = [[v for v in it.samples.get(name, []) if v == v] for it in w.measured()]
            out[f"{w.label}/{name}"] = [float(v) for v in iteration_values(per_iter, metric.mean_kind)]
    return out


def widths(run: Any, headline: list[str], baseline: Any | None) -> dict[str, float]:
    new = headline_values(run, headline)
    if baseline is None:
        return {k: own_halfwidth_pct(v) for k, v in new.items()}
    base = headline_values(baseline, headline)
    return {k: ratio_halfwidth_pct(base.get(k, []), v) for k, v in new.items()}


def _one_round(suite: Any, first: bool) -> Any:
    s = copy.copy(suite)
    s.workloads = [copy.copy(w) for w in suite.workloads]
    for w in s.workloads:
        w.iterations = 1
        if not first:
            w.warmup = 0
    return s


def run_adaptive(load: Callable[[list[str]], Any], sets: list[str], name: str, store: Any, *,
                 until: Until | None, baseline: str | None, baseline_sets: list[str] | None,
                 max_iterations: int, max_time: float | None, force: bool, progress: Any,
                 run_suite: Callable[..., str] | None,
                 arm_runners: dict[str, Callable[..., str]] | None = None) -> tuple[str, str]:
    """Run rounds until the target, a limit, or a failure; returns (status, why it stopped).
    ``until`` None: exactly ``max_iterations`` rounds.  ``arm_runners``: run name → the function
    that runs that arm's round (default ``run_suite``), e.g. a guest boot of that arm's kernel."""
    from mmbench.store import open_store
    from mmbench.store.transfer import join_interleaved
    if until is not None and max_iterations < MIN_ITERATIONS:
        raise UsageError(f"--max-iterations: at least {MIN_ITERATIONS} (fewer cannot estimate a spread)")
    configs = [(name, load(sets))]
    fixed_baseline = None
    if baseline and baseline_sets is not None:
        # A B A B ...: the baseline first; its values go on top of the common --set values
        configs.insert(0, (baseline, load([*sets, *baseline_sets])))
    elif baseline:
        fixed_baseline = store.load_run(baseline)
    for run_name, _ in configs:
        if store.exists(run_name) and not force:
            raise UsageError(f"run {run_name!r} already exists; use --force to replace it or pick another name")
    headline = list(configs[-1][1].headline)
    cache = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench")
    parts_dir = cache / "parts" / f"{name}-{os.getpid()}"
    parts_store = open_store(parts_dir)
    parts: dict[str, list[str]] = {n: [] for n, _ in configs}
    start = time.monotonic()
    status = "complete"
    try:
        for rnd in range(max_iterations):
            for run_name, suite in configs:
                part = f"{run_name}.round{rnd}"
                runner = (arm_runners or {}).get(run_name, run_suite)
                assert runner is not None
                st = runner(_one_round(suite, rnd == 0), part, parts_store, force=True, progress=progress)
                parts[run_name].append(part)
                join_interleaved(parts_store, parts[run_name], store, run_name, force=True)
                if st != "complete":
                    return "failed", f"round {rnd + 1} of {run_name} ended {st}"
            n = rnd + 1
            if until is None:  # a fixed number of rounds (A/B kernels without --until)
                progress.info(f"round {n} of {max_iterations} done ({', '.join(r for r, _ in configs)})")
                if n == max_iterations:
                    return status, f"ran {n} rounds, each arm once per round ({' '.join(r for r, _ in configs)})"
                continue
            if n < MIN_ITERATIONS:
                continue
            runs = {rn: store.load_run(rn) for rn, _ in configs}
            base = fixed_baseline if fixed_baseline is not None else (runs[baseline] if baseline else None)
            w = widths(runs[name], headline, base)
            worst = max(w.values()) if w else math.inf
            shown = ", ".join(f"{k} ±{v:.2f}%" for k, v in w.items())
            progress.info(f"after {n} iterations: {shown} (target ±{until.pct:g}%)")
            if worst < until.pct:
                return status, (f"stopped after {n} iterations: every headline interval is within "
                                f"±{until.pct:g}% ({shown})")
            if max_time is not None and time.monotonic() - start >= max_time:
                return status, (f"stopped at --max-time after {n} iterations ({time.monotonic() - start:.0f} s): "
                                f"{shown}, target ±{until.pct:g}% not reached")
        return status, (f"stopped at --max-iterations {max_iterations}: {shown}, "
                        f"target ±{until.pct:g}% not reached")
    except BaseException:
        # Interrupted or failed mid-round: what finished stays, marked incomplete.
        for run_name, names in parts.items():
            if names:
                join_interleaved(parts_store, names, store, run_name, force=True, status="incomplete")
        raise
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
