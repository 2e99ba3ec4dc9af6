"""What every section builder shares while one comparison is built: the runs and their unique
names, the notes (each said once), the significance tests waiting for the report-wide
Benjamini–Hochberg adjustment, and :class:`Series`, one metric of one run with everything derived
from its samples computed once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mmbench.analysis import stats as st
from mmbench.analysis.compare.model import Row, Section
from mmbench.config.primary import Entry
from mmbench.model.results import MetricDef, RunRecord


@dataclass
class Test:
    """One p-value of the report, and the rows whose cells (for ``run``) it decides."""

    rows: list[Row]
    run: str
    p: float


@dataclass
class Context:
    runs: list[RunRecord]
    names: list[str]
    tests: list[Test] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # metric names the suites call headline, and the headline mean rows found (label, metric,
    # row, series per run) for the power warning
    headline: set[str] = field(default_factory=set)
    headline_rows: list[tuple[str, MetricDef, Row, dict[str, Series]]] = field(default_factory=list)
    # "mmtests": summary rows as MMTests computes them (imported trees; docs/mmtests-import.md)
    convention: st.Convention = "mmbench"
    # compare --monitor-view MONITOR:SERIES, as (monitor, series): MMTests' --print-monitor views
    # besides the ones compare-kernels.sh graphs
    monitor_views: list[tuple[str, str]] = field(default_factory=list)
    # the declared entries of the runs' suites (families.py): outcomes (primary) and mechanisms
    primary: list[Entry] = field(default_factory=list)
    mechanisms: list[Entry] = field(default_factory=list)
    # the declared families given at compare time (--primary, --mechanisms): "primary", "mechanism"
    chosen: set[str] = field(default_factory=set)
    # tests per Benjamini–Hochberg family, known once every section is built (the MDE reads it)
    family_sizes: dict[str, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    @property
    def base(self) -> str:
        return self.names[0]

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1

    def note(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.notes.append(text)

    def add_test(self, rows: list[Row], run: str, p: float) -> None:
        self.tests.append(Test(rows, run, p))

    def declared(self, sec: Section, metric: str, stat: str) -> str | None:
        """The declared family that names this row: "primary", "mechanism" or None."""
        if sec.kind == "ratio" or not (self.primary or self.mechanisms):
            return None
        names = section_names_of(sec)
        if any(e.matches(names, metric, stat, MEAN_STATS) for e in self.primary):
            return "primary"
        if any(e.matches(names, metric, stat, MEAN_STATS) for e in self.mechanisms):
            return "mechanism"
        return None

    def is_primary(self, sec: Section, metric: str, stat: str) -> bool:
        """Does a declared entry (outcome or mechanism) name this row?"""
        return self.declared(sec, metric, stat) is not None


MEAN_STATS = (st.mean_label("amean"), st.mean_label("hmean"), st.mean_label("gmean"))


def section_names_of(sec: Section) -> set[str]:
    """The names an entry's SECTION prefix may give this section: its kind, label, plugin or monitor."""
    return {sec.kind, sec.label.lower(), sec.source.lower()} - {""}


class Series:
    """One metric of one run: the samples of each measured iteration (``indices`` are the
    iterations' numbers) and, computed on first use and only once, the iteration means (the
    units of the mean row and of Welch's test), the sorted pooled samples and the per-iteration
    percentiles (before, the baseline's were recomputed for every run and quantile).

    ``per_iter`` holds lists, or float64 arrays where the samples were stored as such (a long
    run's); ``arrays`` are then the iterations' arrays that have samples, and the
    sorting and summing is done on them in place, with the results the lists would give."""

    def __init__(self, per_iter: list, indices: list[int], kind: st.MeanKind, arrays: list | None = None):
        self.per_iter = per_iter
        self.indices = indices
        self.kind = kind
        self.arrays = arrays

    @property
    def has_samples(self) -> bool:
        return any(len(a) for a in self.per_iter)

    @cached_property
    def iteration_means(self) -> list[float]:
        """One mean (of the metric's family) per iteration that has samples."""
        return st.iteration_values(self.per_iter, self.kind)

    @cached_property
    def _sorted_finite(self) -> list:
        """Each iteration's finite samples, sorted by numpy (as sorted() sorts them)."""
        import numpy as np

        return [np.sort(a if self._all_finite else a[np.isfinite(a)]) for a in self.arrays or []]

    @cached_property
    def _all_finite(self) -> bool:
        import numpy as np

        return all(bool(np.isfinite(a).all()) for a in self.arrays or [])

    @cached_property
    def pooled_sorted(self) -> list[float] | Any:
        """All samples sorted, NaNs last: a list, or an array for array-backed series."""
        if self.arrays is not None:
            import numpy as np

            if not self.arrays:
                return []
            if self._all_finite:  # the sorted iterations merged: timsort finds their runs
                return np.sort(np.concatenate(self._sorted_finite), kind="stable")
            return np.sort(np.concatenate(self.arrays))  # NaNs last, as sorted_values puts them
        return st.sorted_values(st.pooled(self.per_iter))

    @cached_property
    def iteration_percentiles(self) -> dict[int, list[float]]:
        """P50…P99 of each iteration's finite samples (iterations without any left out)."""
        out: dict[int, list[float]] = {q: [] for q in st.PERCENTILES}
        if self.arrays is not None:
            finite = self._sorted_finite
        else:
            finite = [sorted(v for v in a if math.isfinite(v)) for a in self.per_iter]
        for s in finite:
            if len(s):
                for q, v in zip(st.PERCENTILES, st.percentiles_of_sorted(s)):
                    out[q].append(v)
        return out

    def summary(
        self, better: st.Better, latency: bool, convention: st.Convention = "mmbench"
    ) -> list[tuple[str, float]]:
        return st.summarise(
            self.per_iter,
            kind=self.kind,
            better=better,
            latency=latency,
            iteration_means=self.iteration_means,
            pooled_sorted=self.pooled_sorted,
            convention=convention,
        )
