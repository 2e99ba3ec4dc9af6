"""The result model of a comparison, which every report format reads: a :class:`Comparison` of
:class:`Section` objects holding :class:`Row` objects, and its ``mmbench-compare/1`` JSON shape
(:meth:`Comparison.to_dict`).  No statistics here.

A row's confidence intervals and minimum detectable effects are :class:`Deferred`: the builder
registers how to compute them and the value is computed the first time a report reads it, so a
text report without ``--pvalues`` (which shows neither) never pays for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

SCHEMA = "mmbench-compare/1"
Better = Literal["higher", "lower"]
SectionKind = Literal["workload", "duration", "vmstat", "monitor", "ratio"]
# The Benjamini–Hochberg family a tested row is in (docs/statistics.md §4): the suite's declared
# primary rows (its outcomes: the `*`, the only rows --fail-on-regression reads), its declared
# mechanisms (`*`: moved up or down, never better or worse, never gating) or every other tested row.
Family = Literal["primary", "mechanism", "exploratory"]
FAMILIES: tuple[Family, ...] = ("primary", "mechanism", "exploratory")
MARK_PRIMARY = "*"
MARK_EXPLORATORY = "~"
# Above this a minimum detectable effect says only "these iterations cannot detect anything"
# (with 2 iterations a side the t quantile has 1-2 degrees of freedom and the MDE ran to 6e21 %).
MDE_SHOWN_MAX = 1000.0
MDE_TOO_LARGE = f"above {MDE_SHOWN_MAX:g}% (too few iterations)"


class Deferred(MutableMapping):
    """A mapping whose values may be registered as zero-argument functions (:meth:`defer`) and
    are computed once, on first read.  Otherwise a plain ``dict`` (equal to one, too)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(data or {})
        self._pending: dict[str, Callable[[], Any]] = {}

    def defer(self, key: str, compute: Callable[[], Any]) -> None:
        self._data.pop(key, None)
        self._pending[key] = compute

    def __getitem__(self, key: str) -> Any:
        if key in self._pending:
            self._data[key] = self._pending.pop(key)()
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._pending.pop(key, None)
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        if self._pending.pop(key, None) is None:
            del self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data or key in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data) + [k for k in self._pending if k not in self._data])

    def __len__(self) -> int:
        return len(self._data) + len(self._pending)

    def __repr__(self) -> str:
        return repr(dict(self))


@dataclass
class Row:
    metric: str
    stat: str
    unit: str
    better: Better
    values: dict[str, float | None]
    pct: dict[str, float | None] = field(default_factory=dict)
    significant: dict[str, bool] = field(default_factory=dict)
    p: dict[str, float | None] = field(default_factory=dict)
    ci: MutableMapping[str, tuple[float, float] | None] = field(default_factory=Deferred)
    note: str = ""
    # minimum detectable effect per tested run: the signed change (% of the baseline, in the
    # direction the run moved) the row's test finds 80 % of the time at its family's level
    mde: MutableMapping[str, float | None] = field(default_factory=Deferred)
    # "primary" / "mechanism" when the suite declares the row so (whether or not a test could
    # run), "exploratory" when it is tested and not declared, None for descriptive rows
    family: Family | None = None
    test: str = ""  # "welch", "count-exact", "count", "" (untested)
    p_raw: dict[str, float | None] = field(default_factory=dict)
    # exploratory rows with q < 0.05 in their own family (marked "~", never gating)
    lead: dict[str, bool] = field(default_factory=dict)
    # per run: why there is no test, or that none could reach q <= 0.05, or how it was judged
    # without one (shown in the primary summary)
    why: dict[str, str] = field(default_factory=dict)
    primary: bool = False
    # per run: "deterministic" when judged by significance.deterministic (constant at the row's
    # resolution in each run) instead of a test
    judged: dict[str, str] = field(default_factory=dict)
    # the smallest difference the row's measurement can express (its unit); 0: float noise only
    resolution: float = 0.0
    # per run: why the minimum detectable effect is not given (set when it is computed)
    mde_why: dict[str, str] = field(default_factory=dict)
    # per run: the iterations judged (baseline, run)
    n: dict[str, tuple[int, int]] = field(default_factory=dict)
    # per run: the per-iteration values the row's test used (set where the row is tested)
    iterations: dict[str, list[float]] = field(default_factory=dict)

    def add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text

    def mark(self, run: str) -> str:
        """The cell's significance mark: ``*`` (primary or mechanism, q < 0.05 or a deterministic
        change), ``~`` (exploratory lead) or ""."""
        if self.significant.get(run):
            return MARK_PRIMARY
        return MARK_EXPLORATORY if self.lead.get(run) else ""


@dataclass
class Section:
    title: str
    kind: SectionKind
    rows: list[Row] = field(default_factory=list)
    label: str = ""  # the workload label
    source: str = ""  # the workload's plugin, or the monitor's name
    # how MMTests prints this section (``--convention mmtests``; report/mmtests_text.py): "part"
    # (table, huge, locality, duration, vmstat, schedstat, iostat, monitor-view, ratio), "field"
    # (the column width), "decimals", "title" (the line compare-kernels.sh echoes before it),
    # "runs" (the columns MMTests prints, when a run is left out)
    layout: dict[str, Any] = field(default_factory=dict)


@dataclass
class PrimaryLine:
    """One line of the primary (or mechanism) summary at the top of every report: a declared row
    against one run (``row`` None: the suite names it but this comparison has no such row)."""

    entry: str
    section: str
    row: Row | None
    run: str


@dataclass
class DeclaredFamily:
    """A declared family of a comparison: its entries, where they come from (the runs' suites, or
    ``compare --primary``/``--mechanisms``), and one summary line per (row, run)."""

    entries: list[str] = field(default_factory=list)
    source: str = ""
    chosen_at_compare: bool = False
    lines: list[PrimaryLine] = field(default_factory=list)


@dataclass
class Comparison:
    baseline: str
    runs: list[str]
    sections: list[Section] = field(default_factory=list)
    env_diff: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pvalues: bool = False
    ratio: bool = False
    seed: int = 0
    # what the comparison could not have detected (headline rows; analysis/compare/power.py),
    # shown at the top of every report; in JSON, the first entries of "notes"
    warnings: list[str] = field(default_factory=list)
    # the primary family: the entries the suites declare, where they came from, one line per
    # (row, run), and the number of tests in each Benjamini–Hochberg family
    primary_entries: list[str] = field(default_factory=list)
    primary_source: str = ""
    primary: list[PrimaryLine] = field(default_factory=list)
    family_sizes: dict[str, int] = field(default_factory=dict)
    primary_chosen_at_compare: bool = False
    # the declared mechanism rows (reported as up or down, never gating)
    mechanisms: DeclaredFamily = field(default_factory=DeclaredFamily)
    # per family: deterministic changes judged outside its test (significance.deterministic)
    deterministic_counts: dict[str, int] = field(default_factory=dict)
    # per run: one line putting the mechanisms and the outcomes together (report/base.py makes it)
    verdicts: dict[str, str] = field(default_factory=dict)
    # "mmtests": the sections are MMTests' own (imported runs, compare --convention mmtests)
    convention: str = "mmbench"

    def to_dict(self) -> dict[str, Any]:
        """The ``mmbench-compare/1`` JSON shape (NaN → None)."""
        return {
            "schema": SCHEMA,
            "baseline": self.baseline,
            "runs": list(self.runs),
            "env_diff": [[k, {r: _jsonable(v) for r, v in vals.items()}] for k, vals in self.env_diff],
            "sections": [
                {
                    "title": s.title,
                    "rows": [
                        {
                            "metric": r.metric,
                            "stat": r.stat,
                            "unit": r.unit,
                            "better": None if r.family == "mechanism" else r.better,
                            "values": {n: _num(r.values.get(n)) for n in self.runs},
                            "pct": {n: _num(r.pct.get(n)) for n in self.runs},
                            "significant": {n: bool(r.significant.get(n, False)) for n in self.runs},
                            "p": {n: _num(r.p.get(n)) for n in self.runs},
                            "ci": {n: _ci(r.ci.get(n)) for n in self.runs},
                            "mde_pct": {n: _mde(r.mde.get(n)) for n in self.runs},
                            "mde_why": {n: _mde_why(r, n) for n in self.runs},
                            "family": r.family,
                            "test": r.test or None,
                            "p_raw": {n: _num(r.p_raw.get(n)) for n in self.runs},
                            "lead": {n: bool(r.lead.get(n, False)) for n in self.runs},
                            "why": {n: r.why.get(n) for n in self.runs},
                            "judged": {
                                n: r.judged.get(n, "test" if r.p.get(n) is not None else None) for n in self.runs
                            },
                            "resolution": r.resolution if r.test or r.judged else None,
                        }
                        for r in s.rows
                    ],
                }
                for s in self.sections
            ],
            "primary": {
                "entries": list(self.primary_entries),
                "source": self.primary_source,
                "chosen_at_compare": self.primary_chosen_at_compare,
                "family_sizes": dict(self.family_sizes),
                "rows": [_line(pl) for pl in self.primary],
            },
            "mechanisms": {
                "entries": list(self.mechanisms.entries),
                "source": self.mechanisms.source,
                "chosen_at_compare": self.mechanisms.chosen_at_compare,
                "rows": [_line(pl) for pl in self.mechanisms.lines],
            },
            "families": {
                f: family_error_rate(f, self.family_sizes.get(f, 0), self.deterministic_counts.get(f, 0))
                for f in FAMILIES
            },
            "verdicts": dict(self.verdicts),
            "notes": [f"warning: {w}" for w in self.warnings] + list(self.notes),
        }


def _line(pl: PrimaryLine) -> dict[str, Any]:
    return {
        "entry": pl.entry,
        "section": pl.section,
        "run": pl.run,
        "metric": pl.row.metric if pl.row else None,
        "stat": pl.row.stat if pl.row else None,
    }


FAMILY_TEXT = {
    "primary": ("*", True, "the suite's outcomes"),
    "mechanism": ("*", False, "the suite's mechanisms: moved up or down, never better or worse"),
    "exploratory": ("~", False, "every other tested row: a lead to follow, never a finding"),
}


def family_error_rate(family: str, tests: int, deterministic: int) -> dict[str, Any]:
    """What a mark of ``family`` means, for JSON readers: each family holds its own false discovery
    rate, so an A/A comparison carries some mark in some family more often than 5 % (docs/statistics.md §4)."""
    mark, gates, what = FAMILY_TEXT[family]
    return {
        "rows": what,
        "mark": mark,
        "gates": gates,
        "tests": tests,
        "method": "Benjamini-Hochberg",
        "false_discovery_rate": 0.05,
        "error_rate": (
            f"at most 5% of comparisons without a true change mark a row of this family "
            f"(false discovery rate 5% within its {tests} test(s)); the families are adjusted "
            f"apart, so a report marks a row of some family more often than that"
        ),
        "deterministic_changes": deterministic,
    }


def _mde(v: float | None) -> float | None:
    """An MDE as JSON gives it: None past MDE_SHOWN_MAX (as the text does), with ``mde_why``."""
    v = clean(v)
    return None if v is None or abs(v) > MDE_SHOWN_MAX else v


def _mde_why(r: Row, run: str) -> str | None:
    v = clean(r.mde.get(run))
    if v is not None and abs(v) > MDE_SHOWN_MAX:
        return MDE_TOO_LARGE
    return r.mde_why.get(run) if v is None else None


def _num(v: Any) -> float | None:
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _ci(v: tuple[float, float] | None) -> list[float | None] | None:
    if v is None:
        return None
    lo, hi = _num(v[0]), _num(v[1])
    return None if lo is None or hi is None else [lo, hi]


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def clean(v: float | None) -> float | None:
    """NaN/inf never reach a row: undefined is None."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None
