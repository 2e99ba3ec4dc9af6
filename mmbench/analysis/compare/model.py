"""The result model of a comparison, which every report format reads: a :class:`Comparison` of
:class:`Section` objects holding :class:`Row` objects, and its ``mmbench-compare/1`` JSON shape
(:meth:`Comparison.to_dict`).  No statistics here.

A row's confidence intervals and minimum detectable effects are :class:`Deferred`: the builder
registers how to compute them and the value is computed the first time a report reads it, so a
text report without ``--pvalues`` (which shows neither) never pays for them (issue 13 item 9).
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
# primary rows (the `*`, the only rows --fail-on-regression reads) or every other tested row.
Family = Literal["primary", "exploratory"]
MARK_PRIMARY = "*"
MARK_EXPLORATORY = "~"


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
    # minimum detectable effect (%, 80 % power, Welch at 0.05) per tested run (issue 13 item 3)
    mde: MutableMapping[str, float | None] = field(default_factory=Deferred)
    # "primary" when the suite declares the row primary (whether or not a test could run),
    # "exploratory" when it is tested and not primary, None for descriptive rows
    family: Family | None = None
    test: str = ""                                        # "welch", "count", "" (untested)
    p_raw: dict[str, float | None] = field(default_factory=dict)
    # exploratory rows with q < 0.05 in their own family (marked "~", never gating)
    lead: dict[str, bool] = field(default_factory=dict)
    # per run: why there is no test, or that none could reach q <= 0.05 (shown in the primary summary)
    why: dict[str, str] = field(default_factory=dict)
    primary: bool = False

    def add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text

    def mark(self, run: str) -> str:
        """The cell's significance mark: ``*`` (primary, q < 0.05), ``~`` (exploratory lead) or ""."""
        if self.significant.get(run):
            return MARK_PRIMARY
        return MARK_EXPLORATORY if self.lead.get(run) else ""


@dataclass
class Section:
    title: str
    kind: SectionKind
    rows: list[Row] = field(default_factory=list)
    label: str = ""      # the workload label
    source: str = ""     # the workload's plugin, or the monitor's name


@dataclass
class PrimaryLine:
    """One line of the primary summary at the top of every report: a primary row against one run
    (``row`` None: the suite names it but this comparison has no such row)."""
    entry: str
    section: str
    row: Row | None
    run: str


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

    def to_dict(self) -> dict[str, Any]:
        """The ``mmbench-compare/1`` JSON shape (NaN → None)."""
        return {
            "schema": SCHEMA,
            "baseline": self.baseline,
            "runs": list(self.runs),
            "env_diff": [[k, {r: _jsonable(v) for r, v in vals.items()}] for k, vals in self.env_diff],
            "sections": [
                {"title": s.title,
                 "rows": [{
                     "metric": r.metric, "stat": r.stat, "unit": r.unit, "better": r.better,
                     "values": {n: _num(r.values.get(n)) for n in self.runs},
                     "pct": {n: _num(r.pct.get(n)) for n in self.runs},
                     "significant": {n: bool(r.significant.get(n, False)) for n in self.runs},
                     "p": {n: _num(r.p.get(n)) for n in self.runs},
                     "ci": {n: _ci(r.ci.get(n)) for n in self.runs},
                     "mde_pct": {n: clean(r.mde.get(n)) for n in self.runs},
                     "family": r.family, "test": r.test or None,
                     "p_raw": {n: _num(r.p_raw.get(n)) for n in self.runs},
                     "lead": {n: bool(r.lead.get(n, False)) for n in self.runs},
                     "why": {n: r.why.get(n) for n in self.runs},
                 } for r in s.rows]}
                for s in self.sections],
            "primary": {"entries": list(self.primary_entries), "source": self.primary_source,
                        "family_sizes": dict(self.family_sizes),
                        "rows": [{"entry": pl.entry, "section": pl.section, "run": pl.run,
                                  "metric": pl.row.metric if pl.row else None,
                                  "stat": pl.row.stat if pl.row else None} for pl in self.primary]},
            "notes": [f"warning: {w}" for w in self.warnings] + list(self.notes),
        }


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
