"""Rounds: ``run_rounds`` runs one or two arms (a configuration or a kernel each, stored as one run
each) one iteration per arm per round, the order turned round every round (A B, B A, ...), for a
fixed number of rounds or, with ``--until``, a number fixed before any is measured (from a stored
baseline, or a pilot stored as warm-up: docs/statistics.md); ``measure`` is the fixed-round form
that returns the stored runs, callable once per step of a bisection.
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mmbench.analysis.samplesize import MIN_ITERATIONS, Plan, headline_values, log_cv2, plan_iterations, widths
from mmbench.errors import UsageError

DEFAULT_MAX_ITERATIONS = 30
PILOT = 3  # rounds that size a run without a stored baseline (stored as warm-up)


@dataclass
class Arm:
    """One side of a comparison: the run ``name`` it is stored as, its suite, and the function that
    runs one round of it, ``run(suite, part, parts_store, *, force, progress) -> status`` (the
    suite on this machine, or a guest boot of the arm's kernel).  ``retry_panics``: a round whose
    guest kernel panicked runs once more (under TCG a guest sometimes dies of an int3 oops while
    a static key is patched, docs/kernels.md).  ``position``: the arm's place among the arms, kept
    in the stored run (``interleave``: ``history`` draws each arm as its own series)."""

    name: str
    suite: Any
    run: Callable[..., str]
    retry_panics: bool = False
    position: tuple[int, int] | None = None  # (arm, arms) of a fleet interleave, stored as its ``interleave``


@dataclass
class Measured:
    """What ``measure`` did: the status, what happened, and each arm's stored run (in arm order)."""

    status: str
    note: str
    runs: list[Any]


def round_order(arms: list[Any], rnd: int) -> list[Any]:
    """The arms in the order round ``rnd`` runs them: A B, then B A, then A B ... so drift of the
    machine, and any effect of going first or second in a round, falls on every arm."""
    return list(arms) if rnd % 2 == 0 else list(arms)[::-1]


def measure(
    arms: list[Arm],
    store: Any,
    rounds: int,
    *,
    progress: Any,
    force: bool = True,
    parts_dir: Path | None = None,
) -> Measured:
    """Each arm measured for exactly ``rounds`` rounds, counterbalanced; returns the stored runs."""
    status, note = run_rounds(
        arms,
        store,
        until=None,
        fixed_baseline=None,
        max_iterations=rounds,
        max_time=None,
        force=force,
        progress=progress,
        parts_dir=parts_dir,
    )
    return Measured(status, note, [store.load_run(a.name) for a in arms])


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


def run_rounds(
    arms: list[Arm],
    store: Any,
    *,
    until: float | None,
    fixed_baseline: str | None,
    max_iterations: int,
    max_time: float | None,
    force: bool,
    progress: Any,
    parts_dir: Path | None = None,
) -> tuple[str, str]:
    """Size the run (pilot or stored baseline), then run exactly that many measured rounds (or
    until ``max_time`` seconds); returns (status, what happened).  The last arm is the run being
    sized; with two arms the first is the baseline, run alternately.  ``until``: the target
    half-width in percent, None for exactly ``max_iterations`` measured rounds and no pilot.
    ``fixed_baseline``: a stored run the only arm is sized against.  A pilot round asks for 0
    measured iterations and 1 more warm-up of each workload, so an arm's runner must pass each
    workload's ``iterations`` and ``warmup`` on.  ``parts_dir``: where the rounds' own runs are
    stored until joined (default: a folder of the cache, removed at the end)."""
    from mmbench.store import open_store
    from mmbench.store.transfer import join_interleaved

    if until is not None and max_iterations < MIN_ITERATIONS:
        raise UsageError(f"--max-iterations: at least {MIN_ITERATIONS} (fewer cannot estimate a spread)")
    configs = [(a.name, a.suite) for a in arms]
    runners = {a.name: a for a in arms}
    name = arms[-1].name
    baseline = arms[0].name if len(arms) == 2 else fixed_baseline
    alternated = len(arms) == 2
    fixed = store.load_run(fixed_baseline) if fixed_baseline and not alternated else None
    for run_name, _ in configs:
        if store.exists(run_name) and not force:
            raise UsageError(f"run {run_name!r} already exists; use --force to replace it or pick another name")
    headline = list(configs[-1][1].headline)
    target = until if until is not None else math.inf
    plan: Plan | None = None
    if until is None:  # a fixed number of rounds (e.g. A/B kernels without --until)
        plan = Plan(max_iterations, [])
    elif fixed is not None:
        base_vals = headline_values(fixed, headline)
        plan = plan_iterations(target, max_iterations, {}, base_vals, base_fixed=True)
        progress.info(
            f"--until ci<{target:g}% against {baseline} ({_count(base_vals)} iterations): "
            f"{plan.iterations} measured iterations planned, assuming this run varies as {baseline} does"
        )
        for text in plan.notes:
            progress.info(text)
    else:
        progress.info(
            f"--until ci<{target:g}%: a pilot of {PILOT} rounds sizes the run; its iterations are stored "
            f"as warm-up and left out of every statistic (so the decision never sees the tested data)"
        )
    cache = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench")
    parts_dir = parts_dir or cache / "parts" / f"{name}-{os.getpid()}"
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
            for run_name, suite in round_order(configs, rnd):
                part = f"{run_name}.round{rnd}"
                runner = runners[run_name].run
                st = runner(_one_round(suite, rnd == 0, pilot), part, parts_store, force=True, progress=progress)
                why = _why(parts_store, part) if st != "complete" else ""
                if (
                    st != "complete"
                    and runners[run_name].retry_panics
                    and "guest kernel panicked" in why
                    and retried.get(run_name, 0) < PANIC_RETRIES
                ):
                    # the round runs once more, the panic is kept and said; a round that panics
                    # again, or a fourth panic of the arm, fails the run
                    retried[run_name] = retried.get(run_name, 0) + 1
                    kept = _keep_console(parts_store, part, cache)
                    progress.warn(
                        f"round {rnd + 1} of {run_name}: {why[2:]}; its guest console: {kept}; "
                        f"running the round once more"
                    )
                    part = f"{run_name}.round{rnd}.retry"
                    st = runner(_one_round(suite, rnd == 0, pilot), part, parts_store, force=True, progress=progress)
                parts[run_name].append(part)
                join_interleaved(
                    parts_store, parts[run_name], store, run_name, force=True, arm=runners[run_name].position
                )
                if st != "complete":
                    kept = _keep_console(parts_store, part, cache)
                    return "failed", (
                        f"round {rnd + 1} of {run_name} ended {st}{_why(parts_store, part)}"
                        + (f" (its guest console: {kept})" if kept else "")
                    )
                if pilot:
                    pilots[run_name].append(headline_values(parts_store.load_run(part), headline, pilot=True))
            rnd += 1
            if pilot:
                if rnd < PILOT:
                    continue
                new = _merge(pilots[name])
                base = _merge(pilots[baseline]) if alternated else None
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
                    return status, (
                        f"ran {measured} rounds, each arm once per round ({' '.join(r for r, _ in configs)})"
                    )
                continue
            if measured >= plan.iterations:
                break
            if max_time is not None and time.monotonic() - start >= max_time:
                return status, (
                    f"stopped at --max-time after {measured} of {plan.iterations} planned measured "
                    f"iterations ({time.monotonic() - start:.0f} s): "
                    f"{_reached(store, configs, name, baseline, fixed, headline, target)}"
                )
        return status, (
            f"stopped after {measured} measured iterations as planned"
            + (f" (+{PILOT} pilot rounds stored as warm-up)" if fixed is None else "")
            + f": {_reached(store, configs, name, baseline, fixed, headline, target)}"
        )
    except BaseException:
        # Interrupted or failed mid-round: what finished stays, marked incomplete.
        for run_name, names in parts.items():
            if names:
                join_interleaved(
                    parts_store, names, store, run_name, force=True, status="incomplete", arm=runners[run_name].position
                )
        raise
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)


# A guest panic reruns its round once; at most this many reruns per arm and run (six int3 oopses
# in about 110 TCG boots, docs/kernels.md: two panics in one 5-round run happen)
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
    except Exception:  # the reason is a courtesy: never hide the failure behind another
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
        out.append(
            f"{k} varies by {spread}"
            + (
                ""
                if base is None
                else f" ({'undefined' if ub is None else f'{100 * math.sqrt(ub):.2g}%'} in the baseline)"
            )
        )
    return ", ".join(out)


def _reached(
    store: Any,
    configs: list[tuple[str, Any]],
    name: str,
    baseline: str | None,
    fixed: Any,
    headline: list[str],
    target: float,
) -> str:
    runs = {rn: store.load_run(rn) for rn, _ in configs}
    base = fixed if fixed is not None else (runs[baseline] if baseline else None)
    w = widths(runs[name], headline, base)
    shown = ", ".join(f"{k} ±{v:.2f}%" if math.isfinite(v) else f"{k} undefined" for k, v in w.items())
    missed = [k for k, v in w.items() if not v < target]
    if not missed:
        return f"every headline interval is within ±{target:g}% ({shown})"
    return f"target ±{target:g}% not reached for {', '.join(missed)} ({shown})"
