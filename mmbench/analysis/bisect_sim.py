"""Simulated bisections: a range with a planted first bad commit and a noise model in place of
VM runs, for the proof of :mod:`mmbench.analysis.bisection` (tests/test_bisection.py) and its
figures (bench/bisect-sim).

A commit before the planted one gives per-round values around the good mean, the planted one and
every later one around the bad mean (good mean × (1 + effect)); the noise is ``normal`` (spread
``cv`` of the good mean), ``lognormal`` (the same coefficient of variation, skewed),
``heavy`` (Student's t with 3 degrees of freedom, scaled to the same spread: outliers),
``poisson`` (counts; ``cv`` is ignored, the good mean sets the spread) or ``constant`` (a
deterministic clock: no noise at all).  Seeded: the same seed gives the same bisection.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Sequence

from mmbench.analysis import bisection as bis

NOISES = ("normal", "lognormal", "heavy", "poisson", "constant")


@dataclass
class Planted:
    """A range of ``n`` commits after the good end (``c0`` good, ``c1`` … ``cN``; ``cN`` the bad
    end) whose first bad commit is ``c{first_bad}``."""

    n: int
    first_bad: int
    effect: float  # relative change of the mean at the first bad commit
    cv: float = 0.02  # coefficient of variation of one round
    noise: str = "normal"
    mean: float = 1000.0
    seed: int = 0
    fail: set[int] = field(default_factory=set)  # commits that do not build
    calls: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.noise not in NOISES:
            raise ValueError(f"noise {self.noise!r}: one of {', '.join(NOISES)}")
        self.drawn: dict[int, int] = {}

    def _rng(self, i: int) -> random.Random:
        """The generator of commit ``i``'s next round: each round's value depends only on the
        seed, the commit and the round's number, so an interrupted and resumed bisection sees the
        same values as one that ran through."""
        k = self.drawn.get(i, 0)
        self.drawn[i] = k + 1
        return random.Random(f"{self.seed}/{i}/{k}")

    @property
    def commits(self) -> list[str]:
        return [f"c{i}" for i in range(self.n + 1)]

    def level(self, i: int) -> float:
        return self.mean * (1.0 + self.effect) if i >= self.first_bad else self.mean

    def draw(self, i: int, rounds: int) -> list[float]:
        return [self._one(i) for _ in range(rounds)]

    def _one(self, i: int) -> float:
        m, r = self.level(i), self._rng(i)
        if self.noise == "constant":
            return m
        if self.noise == "normal":
            return r.gauss(m, self.cv * self.mean)
        if self.noise == "lognormal":
            s2 = math.log1p(self.cv * self.cv)
            return m * math.exp(r.gauss(-s2 / 2.0, math.sqrt(s2)))
        if self.noise == "heavy":  # t(3) has variance 3
            chi2 = sum(r.gauss(0.0, 1.0) ** 2 for _ in range(3))
            return m + self.cv * self.mean / math.sqrt(3.0) * r.gauss(0.0, 1.0) / math.sqrt(chi2 / 3.0)
        return float(_poisson(r, m))

    def measure(self, commit: str, rounds: int) -> list[float]:
        i = int(commit[1:])
        self.calls.append((commit, rounds))
        if i in self.fail:
            raise bis.MeasureFailed("the build failed (simulated)")
        return self.draw(i, rounds)

    def pilot(self, rounds: int = 3) -> tuple[list[float], list[float]]:
        return self.draw(0, rounds), self.draw(self.n, rounds)


def _poisson(r: random.Random, lam: float) -> int:
    if lam > 50:  # normal approximation, rounded: exact enough for counts this large
        return max(0, round(r.gauss(lam, math.sqrt(lam))))
    k, p, t = 0, 1.0, math.exp(-lam)
    while True:
        p *= r.random()
        if p <= t:
            return k
        k += 1


@dataclass
class Tally:
    """What many simulated bisections did."""

    runs: int = 0
    found: int = 0  # named the planted commit
    wrong: int = 0  # named another commit, or a range without it
    stopped: int = 0  # stopped undecided (range holds the planted commit)
    refused: int = 0  # ends not separable
    steps: int = 0
    step_errors: int = 0  # decided steps whose verdict was wrong
    decided_steps: int = 0
    step_rounds: int = 0
    end_rounds: int = 0  # fresh rounds of both ends
    pilot_rounds: int = 0  # pilot rounds of both ends (the given ones included)
    bounds: list[float] = field(default_factory=list)

    def add(self, planted: Planted, log: bis.BisectLog | None) -> None:
        self.runs += 1
        if log is None:
            self.refused += 1
            return
        o = log.outcome
        assert o is not None
        self.bounds.append(o.error_bound)
        self.end_rounds += 2 * (log.end_rounds or 0)
        self.pilot_rounds += sum(len(x.samples) for x in (log.pilot_good, log.pilot_bad) if x)
        for s in log.steps:
            if s.verdict == "skipped":
                continue
            self.steps += 1
            self.step_rounds += s.rounds
            if s.decided:
                self.decided_steps += 1
                truth = "bad" if s.index >= planted.first_bad else "good"
                self.step_errors += s.verdict != truth
        target = planted.commits[planted.first_bad]
        if o.status == "found":
            if o.first_bad == target:
                self.found += 1
            else:
                self.wrong += 1
        elif target in o.candidates:
            self.stopped += 1
        else:
            self.wrong += 1

    def rate(self, k: int) -> float:
        return k / self.runs if self.runs else math.nan

    @property
    def mean_bound(self) -> float:
        return sum(self.bounds) / len(self.bounds) if self.bounds else math.nan

    @property
    def rounds_per_step(self) -> float:
        return self.step_rounds / self.steps if self.steps else math.nan

    @property
    def step_error_rate(self) -> float:
        """Wrong verdicts per step measured: what the per-step level bounds (a wrong verdict
        among the decided steps alone can be more frequent where steps rarely decide)."""
        return self.step_errors / self.steps if self.steps else math.nan

    @property
    def decided_error_rate(self) -> float:
        return self.step_errors / self.decided_steps if self.decided_steps else math.nan


def simulate(
    trials: int,
    n: int,
    effect: float,
    cv: float,
    noise: str = "normal",
    *,
    settings: bis.Settings = bis.Settings(),
    seed: int = 1,
    pilot_rounds: int = 3,
    positions: Sequence[int] | None = None,
) -> Tally:
    """``trials`` seeded bisections of ``n`` commits, the planted commit drawn uniformly from
    1..n (or from ``positions``), the pilot ``pilot_rounds`` rounds a side."""
    pick = random.Random(seed)
    tally = Tally()
    for t in range(trials):
        first = pick.choice(list(positions)) if positions else pick.randint(1, n)
        p = Planted(n, first, effect, cv, noise, seed=seed * 1_000_003 + t)
        pilot = p.pilot(pilot_rounds) if pilot_rounds else None
        try:
            log = bis.bisect(p.commits, p.measure, "row", settings=settings, pilot=pilot)
        except bis.BisectError:
            log = None
        tally.add(p, log)
    return tally
