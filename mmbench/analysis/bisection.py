"""The decision core of ``mmbench bisect``: the first commit of a range that moved one row, found
by steps that each state how sure they are and stop undecided rather than guess.

The ends' pilot must separate (a pooled t test, Bonferroni over its looks) and sizes the fresh
ends every step is tested against; a step tests "like the good end" and "like the bad end" at
α/K after each round (K looks), and its verdict is bad, good, between (like neither: stop) or
undecided (stop).  The answer is wrong with probability at most α·⌈log2 N⌉ (the union bound over
the path).  Measuring comes in through ``measure(commit, rounds)``; the whole state is a
:class:`BisectLog`, saved and resumed as JSON.  Plain Python, no numpy.  docs/bisect.md has the
rules, the assumptions and the simulated error rates.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from mmbench.analysis import significance as sig
from mmbench.errors import UsageError

LOG_FORMAT = "mmbench-bisect-log"
LOG_VERSION = 1
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MAX_ROUNDS = 10
DEFAULT_FIRST_LOOK = 1
DEFAULT_END_ROUNDS = 5  # fresh rounds of each end when the pilot cannot size them
PILOT_ROUNDS = 3  # the pilot's rounds a side when the ends' own runs are not given
MIN_END_ROUNDS = 3  # fresh rounds of an end at least: a step's first look (1 round) has df 2

Verdict = str  # "good" | "bad" | "between" | "undecided" | "skipped"


class BisectError(UsageError):
    """A range, a setting or a log that cannot be bisected: one line saying what and why."""


class MeasureFailed(Exception):
    """The commit could not be measured (it did not build or boot); the message says why."""


@dataclass
class Measured:
    """What ``measure`` returns: per-round values of the followed row, the stored runs they came
    from, and anything the caller wants kept with the step (recompiled objects, wall time)."""

    samples: list[float]
    runs: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


Measure = Callable[[str, int], "Measured | Sequence[float]"]


@dataclass(frozen=True)
class Settings:
    """How sure each step must be and how many rounds it may spend."""

    confidence: float = DEFAULT_CONFIDENCE  # per step
    max_rounds: int = DEFAULT_MAX_ROUNDS  # a step's rounds at most
    first_look: int = DEFAULT_FIRST_LOOK  # a step's first test after this many rounds
    end_rounds: int | None = None  # fresh rounds of each end; None: sized from the pilot
    max_end_rounds: int | None = None  # the sizing's cap; None: max_rounds
    resolution: float = 0.0  # the row's resolution (a floor of the spread)

    def check(self) -> None:
        if not (0.5 <= self.confidence < 1.0) or math.isnan(self.confidence):
            raise BisectError(
                f"--confidence {self.confidence:g}: must be at least 0.5 and below 1 "
                f"(the probability that one step is right)"
            )
        if self.first_look < 1:
            raise BisectError(f"first look {self.first_look}: a step is tested after at least 1 round")
        if self.max_rounds < self.first_look:
            raise BisectError(f"--max-rounds {self.max_rounds}: must be at least {self.first_look} (the first look)")
        if self.end_rounds is not None and self.end_rounds < MIN_END_ROUNDS:
            raise BisectError(
                f"end rounds {self.end_rounds}: each end needs at least {MIN_END_ROUNDS} rounds (the spread of the row)"
            )
        if self.max_end_rounds is not None and self.max_end_rounds < MIN_END_ROUNDS:
            raise BisectError(f"max end rounds {self.max_end_rounds}: at least {MIN_END_ROUNDS}")
        if not self.resolution >= 0:
            raise BisectError(f"resolution {self.resolution}: must be 0 or more")

    @property
    def alpha(self) -> float:
        """The per-step error probability, 1 − confidence."""
        return 1.0 - self.confidence

    @property
    def looks(self) -> int:
        return self.max_rounds - self.first_look + 1

    @property
    def look_alpha(self) -> float:
        """The level of each (two-sided) test at one look: α / K."""
        return self.alpha / self.looks

    @property
    def end_cap(self) -> int:
        return self.max_end_rounds if self.max_end_rounds is not None else max(self.max_rounds, MIN_END_ROUNDS)

    def as_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "max_rounds": self.max_rounds,
            "first_look": self.first_look,
            "end_rounds": self.end_rounds,
            "max_end_rounds": self.max_end_rounds,
            "resolution": self.resolution,
        }


# ---------------------------------------------------------------------------------------------
# The tests


def _mean(x: Sequence[float]) -> float:
    return math.fsum(x) / len(x)


def _tolerance(values: Sequence[float], resolution: float) -> float:
    """The floor of the spread: the row's resolution plus float noise (10⁻⁸ of its magnitude)."""
    return resolution + sig.REL_TOL * max((abs(v) for v in values), default=0.0)


@dataclass(frozen=True)
class Contrast:
    """The step's mean minus an end's mean, with the pooled t test's standard error, degrees of
    freedom and interval at the level the verdict used (two-sided 1 − 2α/K)."""

    diff: float
    se: float
    df: int
    low: float
    high: float
    end_mean: float

    def pct(self, v: float) -> float | None:
        """``v`` (the difference or a bound of its interval) as a percent of the end's mean."""
        return 100.0 * v / abs(self.end_mean) if self.end_mean else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "diff": _num(self.diff),
            "ci": [_num(self.low), _num(self.high)],
            "pct": _num(self.pct(self.diff)),
            "pct_ci": [_num(self.pct(self.low)), _num(self.pct(self.high))],
            "se": _num(self.se),
            "df": self.df,
            "end_mean": _num(self.end_mean),
        }


def contrast(x: Sequence[float], end: Sequence[float], resolution: float, level_alpha: float) -> Contrast:
    """mean(x) − mean(end) with the pooled standard error of x and end (the t test of "x is a
    sample of end's distribution"), its spread floored at :func:`_tolerance`."""
    nx, ne = len(x), len(end)
    mx, me = _mean(x), _mean(end)
    df = nx + ne - 2
    ss = math.fsum((v - mx) ** 2 for v in x) + math.fsum((v - me) ** 2 for v in end)
    tol = _tolerance([*x, *end], resolution)
    s2 = max(ss / df if df > 0 else math.nan, tol * tol)
    se = math.sqrt(s2 * (1.0 / nx + 1.0 / ne))
    d = mx - me
    h = sig.t_quantile(1.0 - level_alpha, df) * se if df > 0 else math.inf
    return Contrast(d, se, df, d - h, d + h, me)


def two_sided_p(c: Contrast) -> float:
    """P-value of the pooled t test of "no difference" (1 when there is no test)."""
    if c.df <= 0 or not c.se > 0 or math.isnan(c.diff):
        return 1.0
    return sig.t_two_sided_p(c.diff / c.se, c.df)


@dataclass(frozen=True)
class Look:
    """One look at a step's rounds: both tests and the verdict they give (None: measure more)."""

    p_good: float  # P-value of H_good (like the good end), two-sided
    p_bad: float  # P-value of H_bad (like the bad end), two-sided
    vs_good: Contrast
    vs_bad: Contrast
    verdict: Verdict | None


# "Between" ends the bisection, so it waits for this many rounds of the step (or its last look):
# one round cannot show the step's own spread.  In the second TCG bisection (docs/examples.md) the
# good end's three fresh boots all landed in the lower of its two levels (826 against 922-975
# instructions per page in its pilot), and one round of a good commit at the upper level measured
# unlike both ends.
BETWEEN_ROUNDS = 3


def judge(x: Sequence[float], good: Sequence[float], bad: Sequence[float], settings: Settings, last: bool) -> Look:
    """The tests of one look at ``x`` against the fresh ends; ``last``: no more rounds may follow
    (undecided if neither test rejects).  Unlike both ends is "between" from ``BETWEEN_ROUNDS``
    rounds on (or at the last look); before that the step measures more."""
    a = settings.look_alpha
    vg = contrast(x, good, settings.resolution, a / 2.0)
    vb = contrast(x, bad, settings.resolution, a / 2.0)
    p_good, p_bad = two_sided_p(vg), two_sided_p(vb)
    rg, rb = p_good <= a, p_bad <= a
    verdict: Verdict | None
    if rg and rb:
        verdict = "between" if len(x) >= BETWEEN_ROUNDS or last else None
    elif rg:
        verdict = "bad"
    elif rb:
        verdict = "good"
    else:
        verdict = "undecided" if last else None
    return Look(p_good, p_bad, vg, vb, verdict)


def pilot_looks(first: int, settings: Settings) -> int:
    """Looks of the pilot's test when it starts at ``first`` rounds a side: one per round count
    up to ``max_rounds`` (one if it starts beyond)."""
    return max(1, settings.max_rounds - first + 1)


# ---------------------------------------------------------------------------------------------
# Choosing the row and sizing the ends from the pilot


@dataclass(frozen=True)
class RowMove:
    row: str
    good_mean: float
    bad_mean: float
    pct: float | None  # 100·(bad/good − 1)
    effect: float | None  # |bad − good| / pooled spread (floored): rounds needed go as 1/effect²
    n_good: int
    n_bad: int


@dataclass(frozen=True)
class RowChoice:
    row: str
    moves: list[RowMove]  # every candidate, most moved first
    reason: str


def row_move(row: str, good: Sequence[float], bad: Sequence[float], resolution: float = 0.0) -> RowMove:
    g, b = _finite(good), _finite(bad)
    mg, mb = _mean(g), _mean(b)
    pct = 100.0 * (mb / mg - 1.0) if mg > 0 else None
    effect = None
    if len(g) >= 2 and len(b) >= 2:
        tol = _tolerance([*g, *b], resolution)
        ss = math.fsum((v - mg) ** 2 for v in g) + math.fsum((v - mb) ** 2 for v in b)
        s = math.sqrt(ss / (len(g) + len(b) - 2))
        if s <= tol:  # constant within each end (at the resolution): apart or not at all
            effect = math.inf if abs(mb - mg) > tol else 0.0
        else:
            effect = abs(mb - mg) / s
    return RowMove(row, mg, mb, pct, effect, len(g), len(b))


def _finite(x: Sequence[float]) -> list[float]:
    return [float(v) for v in x if v is not None and math.isfinite(float(v))]


# A rebuild with unrelated edits moves a time row by itself: in the second TCG bisection of
# docs/examples.md, System time of a good commit sat 0.5 % below the good end and that of a bad
# one 0.3 % below the bad end, against a planted move of 0.8 %.  A row that moved less than this (in
# per cent) is followed only when no row that moved more is also clearly apart (MIN_EFFECT spreads).
MIN_CHANGE_PCT = 2.0
MIN_EFFECT = 3.0


def choose_row(
    good: Mapping[str, Sequence[float]],
    bad: Mapping[str, Sequence[float]],
    primary: Sequence[str] | None = None,
    resolutions: Mapping[str, float] | None = None,
    min_change: float = MIN_CHANGE_PCT,
) -> RowChoice:
    """The row to follow: of the ``primary`` rows (all rows of both when None) present in both
    ends' pilot runs, the one that moved most, i.e. whose difference is largest in units of its
    pooled spread (the fewest rounds to tell the ends apart; a row constant within each end and
    different between them is infinitely far), among the rows that moved at least ``min_change``
    per cent and ``MIN_EFFECT`` spreads when there are any (a smaller move is within what a rebuild
    alone does).  Ties, and rows with fewer than 2 rounds a side (no spread), go by the size of the
    relative change.  ``good``/``bad`` map a row's name to its per-round values."""
    res = resolutions or {}
    names = list(primary) if primary is not None else [r for r in good if r in bad]
    if not names:
        raise BisectError("--row: the two ends' runs have no row in common to follow")
    missing = [r for r in names if not _finite(good.get(r, ())) or not _finite(bad.get(r, ()))]
    present = [r for r in names if r not in missing]
    if not present:
        raise BisectError(f"--row: none of the suite's primary rows ({', '.join(names)}) has values in both ends' runs")
    moves = [row_move(r, good[r], bad[r], res.get(r, 0.0)) for r in present]

    def large(m: RowMove) -> bool:
        # no relative change (a good end at 0 or below): a move from nothing is no rebuild's wiggle
        return m.effect is not None and m.effect >= MIN_EFFECT and (m.pct is None or abs(m.pct) >= min_change)

    def key(m: RowMove) -> tuple[int, int, float, float]:
        e = m.effect if m.effect is not None else -1.0
        return (m.effect is not None, large(m), e, abs(m.pct) if m.pct is not None else abs(m.bad_mean - m.good_mean))

    moves.sort(key=key, reverse=True)
    top = moves[0]
    passed = [m for m in moves if m.effect is not None and top.effect is not None and m.effect > top.effect]
    if top.effect is None:
        reason = (
            f"{top.row}: the largest relative change of the primary rows; no row has 2 rounds "
            f"a side, so none could be ranked by its spread"
        )
    elif math.isinf(top.effect):
        reason = f"{top.row}: constant within each end and different between them"
    else:
        reason = (
            f"{top.row}: moved {top.effect:.3g} times its spread between the ends "
            f"({_fmt(top.good_mean)} -> {_fmt(top.bad_mean)}" + (f", {top.pct:+.3g}%)" if top.pct is not None else ")")
        )
    for m in passed:
        reason += (
            f"; not {m.row}: {m.effect:.3g} spreads but {m.pct:+.2g}%, under --min-change {min_change:g}% "
            f"(a rebuild alone moves a row that much)"
        )
    if missing:
        reason += f"; not in both ends' runs: {', '.join(missing)}"
    return RowChoice(top.row, moves, reason)


def step_power(effect: float, end_rounds: int, settings: Settings) -> float:
    """Approximate probability that a step whose commit is like one end is decided by
    ``max_rounds``, when the ends are ``effect`` pooled spreads apart and measured ``end_rounds``
    each (normal approximation of the noncentral t at the last look)."""
    m = settings.max_rounds
    df = end_rounds + m - 2
    lam = effect / math.sqrt(1.0 / m + 1.0 / end_rounds)
    tc = sig.t_quantile(1.0 - settings.look_alpha / 2.0, df)
    z = (lam - tc * (1.0 - 1.0 / (4.0 * df))) / math.sqrt(1.0 + tc * tc / (2.0 * df))
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def plan_end_rounds(pilot_good: Sequence[float], pilot_bad: Sequence[float], settings: Settings) -> tuple[int, str]:
    """Fresh rounds for each end, fixed before they are measured: the fewest (at least 2, at most
    ``max_end_rounds``) at which, if the pilot's difference and spread are the truth, a step at
    ``max_rounds`` is decided with probability ``confidence``.  Returns the rounds and a sentence
    saying how they were chosen."""
    if settings.end_rounds is not None:
        return settings.end_rounds, f"{settings.end_rounds} rounds each (given)"
    g, b = _finite(pilot_good), _finite(pilot_bad)
    if len(g) < 2 or len(b) < 2:
        n = min(DEFAULT_END_ROUNDS, settings.end_cap)
        return n, f"{n} rounds each (the pilot has fewer than 2 rounds a side: nothing to size from)"
    effect = row_move("", g, b, settings.resolution).effect or 0.0
    cap = settings.end_cap
    for n in range(MIN_END_ROUNDS, cap + 1):
        if math.isinf(effect) or step_power(effect, n, settings) >= settings.confidence:
            return n, (
                f"{n} rounds each: the pilot's ends are {effect:.3g} spreads apart; a step is "
                f"then decided by {settings.max_rounds} rounds with probability "
                f"{step_power(effect, n, settings) if not math.isinf(effect) else 1.0:.2f}"
            )
    p = step_power(effect, cap, settings) if effect > 0 else 0.0
    return cap, (
        f"{cap} rounds each (the most allowed): the pilot's ends are only {effect:.3g} spreads "
        f"apart, so a step may be decided with probability {p:.2f} only; steps that cannot "
        f"decide stop the bisection (more --max-rounds would help)"
    )


# ---------------------------------------------------------------------------------------------
# The log: the whole state, saved after every change


@dataclass
class Samples:
    commit: str
    samples: list[float] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def add(self, got: Measured) -> None:
        self.samples += got.samples
        self.runs += got.runs
        for k, v in got.info.items():
            if isinstance(v, (int, float)) and isinstance(self.info.get(k), (int, float)) and not isinstance(v, bool):
                self.info[k] = self.info[k] + v  # recompiled objects, seconds: summed
            else:
                self.info[k] = v

    def as_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "samples": [_num(v) for v in self.samples],
            "runs": list(self.runs),
            "info": dict(self.info),
        }


@dataclass
class Step(Samples):
    index: int = 0  # position in the range: 0 is the good end
    verdict: Verdict | None = None  # None: measuring (an interrupted step resumes here)
    looks: int = 0
    p_good: float | None = None
    p_bad: float | None = None
    vs_good: Contrast | None = None
    vs_bad: Contrast | None = None
    reason: str = ""

    @property
    def rounds(self) -> int:
        return len(self.samples)

    @property
    def decided(self) -> bool:
        return self.verdict in ("good", "bad")

    def error_probability(self, settings: Settings) -> float | None:
        """The p-value of the rejected hypothesis over the looks (Bonferroni: K·p): how often a
        commit of the other kind gives evidence this strong.  None when not decided."""
        if self.verdict == "bad" and self.p_good is not None:
            return min(1.0, settings.looks * self.p_good)
        if self.verdict == "good" and self.p_bad is not None:
            return min(1.0, settings.looks * self.p_bad)
        return None

    def as_dict(self, settings: Settings | None = None) -> dict[str, Any]:
        d = super().as_dict()
        d.update(
            {
                "index": self.index,
                "verdict": self.verdict,
                "rounds": self.rounds,
                "looks": self.looks,
                "p_good": _num(self.p_good),
                "p_bad": _num(self.p_bad),
                "vs_good": self.vs_good.as_dict() if self.vs_good else None,
                "vs_bad": self.vs_bad.as_dict() if self.vs_bad else None,
                "reason": self.reason,
            }
        )
        if settings is not None:
            d["error_probability"] = _num(self.error_probability(settings))
            d["error_bound"] = settings.alpha if self.decided else None
        return d


@dataclass
class Outcome:
    """How the bisection ended.  ``status``: ``found`` (``first_bad`` is the commit), or it stopped
    with the first bad commit somewhere in ``candidates``: ``undecided`` / ``between`` (a step
    could not decide, or measured like neither end) or ``skipped`` (only unmeasurable commits
    left)."""

    status: str
    first_bad: str | None
    last_good: str
    first_known_bad: str
    candidates: list[str]
    error_bound: float
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "first_known_bad": self.first_known_bad,
            "candidates": list(self.candidates),
            "error_bound": _num(self.error_bound),
            "message": self.message,
        }


@dataclass
class BisectLog:
    """Everything a bisection knows; :meth:`to_json` / :func:`load_log` (docs/bisect.md, *The
    log*)."""

    row: str
    commits: list[str]
    settings: Settings
    pilot_good: Samples | None = None
    pilot_bad: Samples | None = None
    pilot_first: int = 0  # rounds a side when the pilot's test began (its looks)
    pilot_p: float | None = None  # the pilot's test, two-sided, None until it separates
    pilot: Contrast | None = None  # bad − good in the pilot
    end_rounds: int | None = None
    end_plan: str = ""
    good: Samples | None = None  # the fresh ends every step is tested against
    bad: Samples | None = None
    ends: Contrast | None = None  # bad − good in the fresh ends (shown, never a gate)
    steps: list[Step] = field(default_factory=list)
    outcome: Outcome | None = None

    def error_bound(self) -> float:
        """The probability that the answer is wrong, at most: α for each step of the path an
        error-free bisection of this range takes (⌈log2 N⌉ for N candidates; more when skipped
        commits unbalance the splits, then the steps decided).  A wrong answer needs a wrong
        verdict on that path, each at most α (the union bound)."""
        candidates = len(self.commits) - 1
        path = max(math.ceil(math.log2(candidates)) if candidates > 1 else 0, sum(1 for s in self.steps if s.decided))
        return min(1.0, self.settings.alpha * path)

    def as_dict(self) -> dict[str, Any]:
        s = self.settings

        def samples(x: Samples | None) -> dict[str, Any] | None:
            return x.as_dict() if x else None

        return {
            "format": LOG_FORMAT,
            "version": LOG_VERSION,
            "row": self.row,
            "commits": list(self.commits),
            "settings": s.as_dict(),
            "pilot": {
                "good": samples(self.pilot_good),
                "bad": samples(self.pilot_bad),
                "first": self.pilot_first,
                "p": _num(self.pilot_p),
                "looks": pilot_looks(self.pilot_first, s) if self.pilot_first else None,
                "bad_vs_good": self.pilot.as_dict() if self.pilot else None,
            },
            "end_rounds": self.end_rounds,
            "end_plan": self.end_plan,
            "ends": {
                "good": samples(self.good),
                "bad": samples(self.bad),
                "bad_vs_good": self.ends.as_dict() if self.ends else None,
            },
            "steps": [st.as_dict(s) for st in self.steps],
            "outcome": self.outcome.as_dict() if self.outcome else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the log atomically (a temporary file renamed over it)."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(p)


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _contrast_from(d: Any, where: str) -> Contrast | None:
    if d is None:
        return None
    _need(d, dict, where)
    ci = d.get("ci") or [None, None]

    def num(v: Any, missing: float) -> float:
        return missing if v is None else float(v)

    return Contrast(
        num(d.get("diff"), math.nan),
        num(d.get("se"), math.nan),
        int(d.get("df", 0)),
        num(ci[0], -math.inf),
        num(ci[1], math.inf),
        num(d.get("end_mean"), 0.0),
    )


def _samples_from(d: Any, where: str) -> Samples | None:
    if d is None:
        return None
    _need(d, dict, where)
    return Samples(
        str(_get(d, "commit", where)),
        _floats(_get(d, "samples", where), f"{where}.samples"),
        [str(r) for r in d.get("runs", [])],
        dict(d.get("info", {})),
    )


def _floats(v: Any, where: str) -> list[float]:
    _need(v, list, where)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise BisectError(f"{where}: every sample must be a number")
    return [float(x) for x in v]


def _need(v: Any, kind: type, where: str) -> None:
    if not isinstance(v, kind):
        raise BisectError(f"{where}: expected {'an object' if kind is dict else 'a list'}")


def _get(d: dict, key: str, where: str) -> Any:
    if key not in d:
        raise BisectError(f"{where}: no field '{key}'")
    return d[key]


def log_from_dict(d: Any, source: str = "log") -> BisectLog:
    """A :class:`BisectLog` from its JSON object; a damaged or foreign file is a one-line error
    naming the field."""
    _need(d, dict, source)
    if d.get("format") != LOG_FORMAT:
        raise BisectError(f"{source}: not an mmbench bisect log (format {d.get('format')!r}, expected {LOG_FORMAT!r})")
    if d.get("version") != LOG_VERSION:
        raise BisectError(f"{source}: log version {d.get('version')!r}; this mmbench reads {LOG_VERSION}")
    try:
        sd = _get(d, "settings", source)
        _need(sd, dict, f"{source}: settings")
        settings = Settings(**{k: sd[k] for k in Settings().as_dict() if k in sd})
        settings.check()
        commits = _get(d, "commits", source)
        _need(commits, list, f"{source}: commits")
        pilot = d.get("pilot") or {}
        ends = d.get("ends") or {}
        _need(pilot, dict, f"{source}: pilot")
        _need(ends, dict, f"{source}: ends")
        log = BisectLog(
            str(_get(d, "row", source)),
            [str(c) for c in commits],
            settings,
            _samples_from(pilot.get("good"), f"{source}: pilot.good"),
            _samples_from(pilot.get("bad"), f"{source}: pilot.bad"),
            int(pilot.get("first") or 0),
            pilot.get("p"),
            _contrast_from(pilot.get("bad_vs_good"), f"{source}: pilot.bad_vs_good"),
            d.get("end_rounds"),
            str(d.get("end_plan", "")),
            _samples_from(ends.get("good"), f"{source}: ends.good"),
            _samples_from(ends.get("bad"), f"{source}: ends.bad"),
            _contrast_from(ends.get("bad_vs_good"), f"{source}: ends.bad_vs_good"),
        )
        steps = _get(d, "steps", source)
        _need(steps, list, f"{source}: steps")
        for i, sd in enumerate(steps):
            where = f"{source}: steps[{i}]"
            base = _samples_from(sd, where)
            assert base is not None
            v = sd.get("verdict")
            if v not in (None, "good", "bad", "between", "undecided", "skipped"):
                raise BisectError(f"{where}.verdict: {v!r} is not a verdict")
            log.steps.append(
                Step(
                    base.commit,
                    base.samples,
                    base.runs,
                    base.info,
                    int(_get(sd, "index", where)),
                    v,
                    int(sd.get("looks", 0)),
                    sd.get("p_good"),
                    sd.get("p_bad"),
                    _contrast_from(sd.get("vs_good"), f"{where}.vs_good"),
                    _contrast_from(sd.get("vs_bad"), f"{where}.vs_bad"),
                    str(sd.get("reason", "")),
                )
            )
        o = d.get("outcome")
        if o is not None:
            _need(o, dict, f"{source}: outcome")
            log.outcome = Outcome(
                str(_get(o, "status", f"{source}: outcome")),
                o.get("first_bad"),
                str(o.get("last_good")),
                str(o.get("first_known_bad")),
                [str(c) for c in o.get("candidates", [])],
                float(o.get("error_bound") or 0.0),
                str(o.get("message", "")),
            )
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise BisectError(f"{source}: damaged log ({e})") from None
    return log


def load_log(path: str | Path) -> BisectLog:
    """Read a log written by :meth:`BisectLog.save`."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise BisectError(f"--resume {path}: no such file") from None
    except OSError as e:
        raise BisectError(f"--resume {path}: cannot read it ({e.strerror})") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise BisectError(f"--resume {path}: not JSON (line {e.lineno}: {e.msg})") from None
    return log_from_dict(d, str(path))


# ---------------------------------------------------------------------------------------------
# The bisection


def check_range(commits: Sequence[str]) -> None:
    """The range is [good, ..., bad] in history order; refuse what cannot be bisected."""
    if len(commits) < 2:
        raise BisectError("the range needs a good and a bad commit")
    if commits[0] == commits[-1]:
        raise BisectError(f"good and bad are the same commit ({commits[0]}): nothing to bisect")
    seen: set[str] = set()
    for c in commits:
        if c in seen:
            raise BisectError(f"commit {c} appears twice in the range")
        seen.add(c)


def _measured(got: Measured | Sequence[float], commit: str, asked: int, what: str = "") -> Measured:
    """``measure``'s answer as :class:`Measured`; rounds without a value are a failure (of the
    commit, or of the given pilot ``what``)."""
    m = got if isinstance(got, Measured) else Measured(list(got))
    bad = [v for v in m.samples if v is None or not math.isfinite(float(v))]
    if bad and what:
        raise BisectError(f"{what} ({commit}): {len(bad)} of its rounds have no value of the row")
    if bad:
        raise MeasureFailed(f"{len(bad)} of its rounds gave no value of the row")
    if asked and len(m.samples) < 1:
        raise MeasureFailed(f"asked for {asked} rounds, got none")
    m.samples = [float(v) for v in m.samples]
    return m


def _next_index(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested commit nearest the middle of (lo, hi); the lower one on a tie."""
    mid = (lo + hi) / 2.0
    cands = [i for i in range(lo + 1, hi) if i not in skipped]
    return min(cands, key=lambda i: (abs(i - mid), i)) if cands else None


def _resume_check(log: BisectLog, commits: Sequence[str], row: str, settings: Settings) -> None:
    if log.commits != list(commits):
        raise BisectError(
            f"--resume: the log bisects {log.commits[0]}..{log.commits[-1]} "
            f"({len(log.commits)} commits), not this range"
        )
    if log.row != row:
        raise BisectError(f"--resume: the log follows the row {log.row!r}, not {row!r}")
    if log.settings != settings:
        diff = [k for k, v in settings.as_dict().items() if log.settings.as_dict()[k] != v]
        raise BisectError(
            f"--resume: the log was made with other settings ({', '.join(diff)}); resume with the same ones"
        )


def bisect(
    commits: Sequence[str],
    measure: Measure,
    row: str,
    *,
    settings: Settings = Settings(),
    pilot: tuple[Measured | Sequence[float], Measured | Sequence[float]] | None = None,
    log: BisectLog | None = None,
    save: Callable[[BisectLog], None] | None = None,
) -> BisectLog:
    """Bisect ``commits`` (history order, ``commits[0]`` the good end, ``commits[-1]`` the bad
    end) on ``row``.  ``measure(commit, rounds)`` returns that many more per-round values of the
    row (raising :class:`MeasureFailed` when the commit cannot be built or booted).  ``pilot``
    holds the ends' own per-round values (the runs that showed the change), extended by
    ``measure`` until the ends separate; without one, :data:`PILOT_ROUNDS` a side are measured
    first.  ``log`` resumes a saved bisection: what it measured is kept, an unfinished step goes
    on from its rounds.  ``save`` is called after every measurement.  Returns the log with its
    ``outcome``.  A range that cannot be bisected raises :class:`BisectError`."""
    settings.check()
    check_range(commits)
    if log is not None:
        _resume_check(log, commits, row, settings)
        if log.outcome is not None:
            return log
    else:
        log = BisectLog(row, list(commits), settings)
        if pilot is not None:
            log.pilot_good, log.pilot_bad = Samples(commits[0]), Samples(commits[-1])
            log.pilot_good.add(_measured(pilot[0], commits[0], 0, "the good end's pilot"))
            log.pilot_bad.add(_measured(pilot[1], commits[-1], 0, "the bad end's pilot"))

    def saved() -> None:
        if save is not None:
            save(log)

    _pilot(log, measure, saved)
    _fresh_ends(log, measure, saved)
    _steps(log, measure, saved)
    saved()
    return log


def _more(end: Samples, want: int, which: str, measure: Measure, saved: Callable[[], None]) -> None:
    """``want`` more rounds of an end; an end that cannot be measured refuses the range."""
    try:
        got = _measured(measure(end.commit, want), end.commit, want)
    except MeasureFailed as e:
        raise BisectError(f"the {which} end {end.commit} could not be measured: {e}") from None
    end.add(Measured(got.samples[:want], got.runs, got.info))
    saved()


def _pilot(log: BisectLog, measure: Measure, saved: Callable[[], None]) -> None:
    """Extend the pilot until its ends separate at α/K (K its looks), or refuse the range."""
    s = log.settings
    c = log.commits
    if log.pilot_good is None or log.pilot_bad is None:
        log.pilot_good, log.pilot_bad = Samples(c[0]), Samples(c[-1])
    g, b = log.pilot_good, log.pilot_bad
    if log.pilot_p is not None and log.pilot_p <= s.alpha / pilot_looks(log.pilot_first, s):
        return
    if not log.pilot_first:
        log.pilot_first = max(MIN_END_ROUNDS, min(len(g.samples), len(b.samples)) or PILOT_ROUNDS)
    n = max(log.pilot_first, min(len(g.samples), len(b.samples)))
    k = pilot_looks(log.pilot_first, s)
    while True:
        for which, end in (("good", g), ("bad", b)):
            if len(end.samples) < n:
                _more(end, n - len(end.samples), which, measure, saved)
        cmp = contrast(b.samples, g.samples, s.resolution, s.alpha / 2.0)
        log.pilot, log.pilot_p = cmp, two_sided_p(cmp)
        if log.pilot_p <= s.alpha / k:
            saved()
            return
        if n >= max(s.max_rounds, log.pilot_first):
            raise BisectError(
                f"the good end {c[0]} measures like the bad end {c[-1]} on {log.row}: "
                f"{_fmt(_mean(g.samples))} vs {_fmt(_mean(b.samples))} over {len(g.samples)} and "
                f"{len(b.samples)} rounds, p = {log.pilot_p:.2g} (must reach {s.alpha / k:.2g}): "
                f"nothing to bisect on this row at --max-rounds {s.max_rounds}"
            )
        n += 1


def _fresh_ends(log: BisectLog, measure: Measure, saved: Callable[[], None]) -> None:
    """Measure each end ``end_rounds`` times afresh (sized from the pilot before any is seen)."""
    s = log.settings
    assert log.pilot_good is not None and log.pilot_bad is not None
    if log.end_rounds is None:
        log.end_rounds, log.end_plan = plan_end_rounds(log.pilot_good.samples, log.pilot_bad.samples, s)
    for which, commit in (("good", log.commits[0]), ("bad", log.commits[-1])):
        end = getattr(log, which) or Samples(commit)
        setattr(log, which, end)
        if len(end.samples) < log.end_rounds:
            _more(end, log.end_rounds - len(end.samples), which, measure, saved)
    assert log.good is not None and log.bad is not None
    log.ends = contrast(log.bad.samples, log.good.samples, s.resolution, s.alpha / 2.0)


def _apply(step: Step, lo: int, hi: int, skipped: set[int]) -> tuple[int, int]:
    if step.verdict == "good":
        return step.index, hi
    if step.verdict == "bad":
        return lo, step.index
    if step.verdict == "skipped":
        skipped.add(step.index)
    return lo, hi


def _steps(log: BisectLog, measure: Measure, saved: Callable[[], None]) -> None:
    assert log.good is not None and log.bad is not None
    good, bad = log.good.samples, log.bad.samples
    lo, hi = 0, len(log.commits) - 1
    skipped: set[int] = set()
    k = 0
    while hi - lo > 1:
        i = _next_index(lo, hi, skipped)
        if i is None:
            break
        if k < len(log.steps):
            step = log.steps[k]
            if step.index != i or step.commit != log.commits[i]:
                raise BisectError(
                    f"--resume: step {k + 1} of the log measured {step.commit}, but the "
                    f"bisection's step {k + 1} is {log.commits[i]} (a damaged log)"
                )
        else:
            step = Step(log.commits[i], index=i)
            log.steps.append(step)
        k += 1
        if step.verdict is None:
            _measure_step(step, good, bad, log, measure, saved)
        if step.verdict in ("undecided", "between"):
            break
        lo, hi = _apply(step, lo, hi, skipped)
    del log.steps[k:]  # a log's steps past a stop cannot be (resume replays the same path)
    log.outcome = _outcome(log, lo, hi, skipped)


def _measure_step(
    step: Step, good: list[float], bad: list[float], log: BisectLog, measure: Measure, saved: Callable[[], None]
) -> None:
    s = log.settings
    # a resumed step: its looks so far are replayed silently (the level counts every look)
    while True:
        n = step.rounds
        if n >= s.first_look:
            look = judge(step.samples, good, bad, s, last=n >= s.max_rounds)
            step.looks = n - s.first_look + 1
            step.p_good, step.p_bad = look.p_good, look.p_bad
            step.vs_good, step.vs_bad = look.vs_good, look.vs_bad
            if look.verdict is not None:
                step.verdict = look.verdict
                if look.verdict == "undecided":
                    step.reason = (
                        f"like neither end at {s.confidence:.0%} after {n} rounds "
                        f"(p like good {look.p_good:.2g}, like bad {look.p_bad:.2g}; each "
                        f"must reach {s.look_alpha:.2g})"
                    )
                elif look.verdict == "between":
                    step.reason = (
                        "measures unlike both ends: more than one change in the range, "
                        "or the machine drifted since the ends were measured"
                    )
                saved()
                return
        want = max(1, s.first_look - n)
        try:
            got = _measured(measure(step.commit, want), step.commit, want)
        except MeasureFailed as e:
            step.verdict, step.reason = "skipped", str(e) or "could not be measured"
            saved()
            return
        step.add(Measured(got.samples[:want], got.runs, got.info))
        saved()


def _outcome(log: BisectLog, lo: int, hi: int, skipped: set[int]) -> Outcome:
    c = log.commits
    bound = log.error_bound()
    last = log.steps[-1] if log.steps else None
    if hi - lo == 1:
        msg = f"first bad commit: {c[hi]}"
        return Outcome("found", c[hi], c[lo], c[hi], [c[hi]], bound, msg)
    cands = c[lo + 1 : hi + 1]
    if last is not None and last.verdict in ("undecided", "between"):
        what = "could not decide" if last.verdict == "undecided" else "measures like neither end"
        msg = (
            f"stopped: step {len(log.steps)} ({last.commit}) {what}; the first bad commit is one of "
            f"the {len(cands)} after {c[lo]} up to {c[hi]}"
        )
        return Outcome(last.verdict, None, c[lo], c[hi], cands, bound, msg)
    msg = f"only skipped commits are left: the first bad commit is one of {', '.join(cands)}"
    return Outcome("skipped", None, c[lo], c[hi], cands, bound, msg)


def step_line(step: Step, settings: Settings, number: int, label: str | None = None) -> str:
    """One line for a step: commit (or ``label``), rounds, the mean with its difference to both ends
    (percent and the interval at the verdict's level), the verdict and its error probability."""
    head = f"step {number}: {label or step.commit}"
    if step.verdict == "skipped":
        return f"{head}: skipped ({step.reason})"
    if not step.samples or step.vs_good is None or step.vs_bad is None:
        return f"{head}: measuring ({step.rounds} rounds)"

    def vs(c: Contrast) -> str:
        p, lo, hi = c.pct(c.diff), c.pct(c.low), c.pct(c.high)
        if p is None or lo is None or hi is None:
            return f"{c.diff:+.4g} [{c.low:+.4g}, {c.high:+.4g}]"
        return f"{p:+.2f}% [{lo:+.2f}%, {hi:+.2f}%]"

    verdict = step.verdict or "measuring"
    ep = step.error_probability(settings)
    err = f", error probability {ep:.2g}" if ep is not None else ""
    return (
        f"{head}: {_fmt(_mean(step.samples))} over {step.rounds} rounds; vs good "
        f"{vs(step.vs_good)}, vs bad {vs(step.vs_bad)}: {verdict}{err}"
        + (f" ({step.reason})" if step.reason and not step.decided else "")
    )
