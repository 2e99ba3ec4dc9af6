"""Build the comparison of several runs: sections → rows, with percentages, significance,
confidence intervals, outlier and exclusion notes (definitions in docs/statistics.md).

The first run is the baseline.  Exporters in ``mmbench/report/`` render a :class:`Comparison`;
``Comparison.to_dict()`` is the ``mmbench-compare/1`` JSON shape.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mmbench.analysis import significance as sig
from mmbench.analysis import stats as st
from mmbench.analysis import vmstat as vm
from mmbench.config.aims import memcg_warning
from mmbench.monitors.base import load_summary
from mmbench.store.model import IterationResult, MetricDef, RunRecord, WorkloadRun

SCHEMA = "mmbench-compare/1"
Better = Literal["higher", "lower"]
SectionKind = Literal["workload", "duration", "vmstat", "monitor", "ratio"]

# pct edge-case reasons (also listed in docs/statistics.md)
PCT_NO_BASE = "baseline value missing or undefined"
PCT_BASE_ZERO = "baseline is 0: a percentage of 0 is undefined"
PCT_BASE_NEG = "baseline is negative: the percentage's sign would be meaningless"
PCT_NO_VALUE = "value missing or undefined"


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
    ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    note: str = ""
    # minimum detectable effect (%, 80 % power, Welch at 0.05) per tested run (issue 13 item 3)
    mde: dict[str, float | None] = field(default_factory=dict)

    def add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text


@dataclass
class Section:
    title: str
    kind: SectionKind
    rows: list[Row] = field(default_factory=list)


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
                     "mde_pct": {n: _clean(r.mde.get(n)) for n in self.runs},
                 } for r in s.rows]}
                for s in self.sections],
            "notes": list(self.notes),
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


def _clean(v: float | None) -> float | None:
    """NaN/inf never reach a row: undefined is None."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------------------------
# Percentage difference


def pct_diff(base: float | None, new: float | None, better: Better) -> tuple[float | None, str | None]:
    """Percentage difference of ``new`` against ``base``, positive = better.

    higher-is-better: 100·(new/base − 1); lower-is-better: 100·(1 − new/base).
    Equal values are 0 % (also 0 against 0: nothing changed).  None (with the reason) when the
    base is missing, NaN, 0 (and new is not) or negative, or new is missing.  new = 0 against a
    non-zero base is a real value (e.g. −100 % for a throughput), never "0 %"."""
    if base is None or not math.isfinite(base):
        return None, PCT_NO_BASE
    if new is None or not math.isfinite(new):
        return None, PCT_NO_VALUE
    if new == base:
        return 0.0, None
    if base == 0:
        return None, PCT_BASE_ZERO
    if base < 0:
        return None, PCT_BASE_NEG
    r = new / base
    return (100.0 * (r - 1.0) if better == "higher" else 100.0 * (1.0 - r)), None


# --------------------------------------------------------------------------------------------
# Environment


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def env_diff(runs: list[RunRecord], names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    flat = [flatten(r.fingerprint or {}) for r in runs]
    keys: dict[str, None] = {}
    for f in flat:
        keys.update(dict.fromkeys(f))
    out = []
    for k in sorted(keys):
        vals = [f.get(k) for f in flat]
        if any(v != vals[0] for v in vals[1:]):
            out.append((k, dict(zip(names, vals))))
    return out


# --------------------------------------------------------------------------------------------
# The builder


@dataclass
class _Test:
    rows: list[Row]
    run: str
    p: float


class _Builder:
    def __init__(self, runs: list[RunRecord], pvalues: bool, ratio: bool, seed: int):
        self.runs = runs
        self.names = _unique_names(runs)
        self.base = self.names[0]
        self.multi = len(runs) > 1
        self.seed = seed
        self.tests: list[_Test] = []
        self.cmp = Comparison(baseline=self.base, runs=self.names, pvalues=pvalues, ratio=ratio,
                              seed=seed)
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        if text not in self._seen_notes:
            self._seen_notes.add(text)
            self.notes.append(text)

    _seen_notes: set[str]

    # ---- per workload ------------------------------------------------------------------------

    def build(self) -> Comparison:
        self._seen_notes = set()
        if self.names != [r.name for r in self.runs]:
            self.note("runs with the same name were renamed: " + ", ".join(
                f"{r.name} → {n}" for r, n in zip(self.runs, self.names) if r.name != n))
        self.cmp.env_diff = env_diff(self.runs, self.names)
        for r, n in zip(self.runs, self.names):
            fp = r.fingerprint or {}
            sb = fp.get("sandbox") or {}
            mem = fp.get("memory") or {}
            warning = memcg_warning(list(sb.get("aims") or []), str(sb.get("mode", "")),
                                    mem.get("budget"), mem.get("MemTotal"))
            if warning:
                self.note(f"{n}: {warning}")
        for text in vm_notes(self.runs, self.names):
            self.note(text)
        from mmbench.analysis.runstatus import run_status_notes   # incomplete/failed runs said so
        for text in run_status_notes(self.runs, self.names):
            self.note(text)
        labels: dict[str, None] = {}
        for r in self.runs:
            labels.update(dict.fromkeys(w.label for w in r.workloads))
        sections_ratio: list[Section] = []
        dur: list[Section] = []
        vms: list[Section] = []
        mons: list[Section] = []
        for label in labels:
            wrs = {n: r.workload(label) for n, r in zip(self.names, self.runs)}
            measured = {n: self._measured(n, label, w) for n, w in wrs.items()}
            wsec, means = self._workload_section(label, wrs, measured)
            self.cmp.sections.append(wsec)
            if self.cmp.ratio and self.multi:
                sections_ratio.append(self._ratio_section(label, wsec, means))
            dur.append(self._duration_section(label, measured))
            v = self._vmstat_section(label, measured)
            if v.rows:
                vms.append(v)
            mons.extend(self._monitor_sections(label, measured))
        self.cmp.sections += [s for s in dur if s.rows] + vms + mons + sections_ratio
        self._adjust()
        self._pcts()
        self.cmp.notes = self.notes
        return self.cmp

    def _measured(self, name: str, label: str, w: WorkloadRun | None) -> list[IterationResult]:
        if w is None:
            self.note(f"{label}: not in run {name}")
            return []
        bad = [it for it in w.iterations if it.status != "ok" and not it.warmup]
        if bad:
            kinds = Counter(it.status for it in bad)
            why = "; ".join(f"iteration {it.index} {it.status}" + (f": {it.reason}" if it.reason else "")
                            for it in bad[:5])
            self.note(f"{label} ({name}): {len(bad)} iteration(s) excluded "
                      f"({', '.join(f'{c} {k}' for k, c in sorted(kinds.items()))}): {why}")
        m = w.measured()
        if not m:
            self.note(f"{label} ({name}): no measured iteration")
        return m

    def _metric_defs(self, label: str, wrs: dict[str, WorkloadRun | None]) -> list[MetricDef]:
        defs: dict[str, MetricDef] = {}
        for n, w in wrs.items():
            if w is None:
                continue
            for m in w.metrics:
                old = defs.get(m.name)
                if old is None:
                    defs[m.name] = m
                elif (old.unit, old.better, old.kind, old.mean_kind) != (m.unit, m.better, m.kind, m.mean_kind):
                    self.note(f"{label}: metric {m.name} is defined differently in run {n}; "
                              f"the first run's definition is used")
        return list(defs.values())

    def _workload_section(self, label: str, wrs: dict[str, WorkloadRun | None],
                          measured: dict[str, list[IterationResult]]):
        plugin = next((w.plugin for w in wrs.values() if w is not None), "")
        title = label if not plugin or plugin == label else f"{label} ({plugin})"
        sec = Section(title, "workload")
        means: dict[str, tuple[MetricDef, str, dict[str, float | None]]] = {}
        for md in self._metric_defs(label, wrs):
            per_iter = {n: [np.asarray(it.samples.get(md.name, ()), dtype=float) for it in its]
                        for n, its in measured.items()}
            indices = {n: [it.index for it in its] for n, its in measured.items()}
            mean_row = self._metric_rows(label, sec, md, per_iter, indices)
            if mean_row is not None:
                means[md.name] = (md, mean_row.stat, mean_row.values)
        return sec, means

    def _latency_rows(self, label: str, sec: Section, md: MetricDef,
                      per_iter: dict[str, list[np.ndarray]]) -> None:
        self._metric_rows(label, sec, md, per_iter, {n: list(range(len(v))) for n, v in per_iter.items()})

    def _metric_rows(self, label: str, sec: Section, md: MetricDef, per_iter: dict[str, list[np.ndarray]],
                     indices: dict[str, list[int]]) -> Row | None:
        """Summary rows of one metric into ``sec``, with tests; returns the mean row."""
        kind = md.mean_kind
        latency = md.kind == "latency"
        summaries: dict[str, list[tuple[str, float]]] = {}
        for n, pis in per_iter.items():
            if any(len(a) for a in pis):
                summaries[n] = st.summarise(pis, kind=kind, better=md.better, latency=latency)
                self._outliers(label, md, n, pis, indices[n], kind)
        if not summaries:
            return None
        stat_names = [s for s, _ in next(iter(summaries.values()))]
        rows: dict[str, Row] = {}
        for i, s in enumerate(stat_names):
            better: Better = "lower" if s in ("Stddev", "CoeffVar") else md.better
            unit = "%" if s == "CoeffVar" else md.unit
            vals = {n: (_clean(summaries[n][i][1]) if n in summaries else None) for n in self.names}
            rows[s] = Row(md.name, s, unit, better, vals)
            sec.rows.append(rows[s])
        mean_row = rows[st.mean_label(kind)]
        if self.multi and all(n in per_iter for n in self.names):
            self._tests(label, md, per_iter, mean_row,
                        [rows[f"P{p}"] for p in st.PERCENTILES] if latency else [])
        return mean_row

    def _outliers(self, label: str, md: MetricDef, run: str, pis: list[np.ndarray],
                  idx: list[int], kind: st.MeanKind) -> None:
        have = [(i, a) for i, a in zip(idx, pis) if len(a)]
        if len(have) < 3:
            return
        vals = np.array([st.mean(a, kind) for _, a in have])
        med = float(np.median(vals[np.isfinite(vals)])) if np.isfinite(vals).any() else float("nan")
        for j, z in st.outliers(vals):
            self.note(f"{label} iteration {have[j][0]} is an outlier in {md.name} "
                      f"(run {run}: {_fmt(vals[j])} {md.unit} vs median {_fmt(med)}, robust z {z:.1f}); "
                      f"kept")

    def _tests(self, label: str, md: MetricDef, per_iter: dict[str, list[np.ndarray]],
               mean_row: Row, pct_rows: list[Row]) -> None:
        kind = md.mean_kind
        base = per_iter[self.base]
        b_it = st.iteration_values(base, kind)
        b_all = st.pooled(base)
        states: dict[str, list[str]] = {}
        for n in self.names[1:]:
            new = per_iter[n]
            n_it = st.iteration_values(new, kind)
            if mean_row.values.get(self.base) is None or mean_row.values.get(n) is None:
                # An undefined mean (e.g. Hmean over an iteration with a 0) is not tested: the
                # test would silently drop the undefined iteration (issue 13 item 8).
                states.setdefault("mean undefined", []).append(n)
                continue
            res = sig.welch(b_it, n_it)
            if res.ok:
                self.tests.append(_Test([mean_row], n, res.p))  # type: ignore[arg-type]
            else:
                states.setdefault(f"Welch {res.state} ({res.n_base} vs {res.n_new} iterations)", []).append(n)
            # Welch t-interval on the log ratio of iteration means (chosen by
            # bench/stats-calibration: the percentile bootstrap covered 80-82 % at 3 iterations).
            # One iteration a side: no interval (pooled samples would claim a precision the
            # runs do not have).
            mean_row.ci[n] = (sig.ratio_ci(b_it, n_it, kind)
                              if b_it.size >= 2 and n_it.size >= 2 else None)
            if res.ok:
                mean_row.mde[n] = sig.min_detectable_effect(b_it, n_it, kind)
            if pct_rows and b_it.size >= 2 and n_it.size >= 2:
                # Several iterations: the iteration is the unit of replication, so each percentile
                # is tested across the per-iteration percentiles (Welch).  Pooling thousands of
                # samples would call a 3% wobble between two identical runs significant.
                for r, q in zip(pct_rows, st.PERCENTILES):
                    res = sig.welch(_iteration_percentiles(base, q), _iteration_percentiles(new, q))
                    if res.ok:
                        self.tests.append(_Test([r], n, res.p))  # type: ignore[arg-type]
                    else:
                        r.add_note(f"Welch {res.state} on per-iteration P{q} for {n}")
            elif pct_rows:
                # One iteration a side: only the samples are left (Mann-Whitney, pooled)
                mw = sig.mann_whitney(b_all, st.pooled(new))
                if mw.ok:
                    self.tests.append(_Test(pct_rows, n, mw.p))  # type: ignore[arg-type]
                else:
                    for r in pct_rows:
                        r.add_note(f"Mann-Whitney {mw.state} ({mw.n_base} vs {mw.n_new} samples) for {n}")
        for text, who in states.items():
            mean_row.add_note(f"no test: {text} for {', '.join(who)}")

    def _test_iteration_row(self, key: str, row: Row, vals: dict[str, np.ndarray]) -> None:
        """Welch-test a row whose per-iteration values are ``vals`` (duration rows: User, System,
        Elapsed), against the baseline, so --fail-on-regression sees them (issue 13 item 5)."""
        base = vals.get(self.base)
        if base is None or row.values.get(self.base) is None:
            return
        states: dict[str, list[str]] = {}
        for n in self.names[1:]:
            new = vals.get(n)
            if new is None or row.values.get(n) is None:
                continue
            res = sig.welch(base, new)
            if res.ok:
                self.tests.append(_Test([row], n, res.p))  # type: ignore[arg-type]
                if base.size >= 2 and new.size >= 2:
                    row.ci[n] = sig.ratio_ci(base, new, "amean")
                    row.mde[n] = sig.min_detectable_effect(base, new, "amean")
            else:
                states.setdefault(f"Welch {res.state} ({res.n_base} vs {res.n_new} iterations)", []).append(n)
        for text, who in states.items():
            row.add_note(f"no test: {text} for {', '.join(who)}")

    # ---- duration, vmstat, monitors ------------------------------------------------------------

    def _duration_section(self, label: str, measured: dict[str, list[IterationResult]]) -> Section:
        sec = Section(f"duration: {label}", "duration")
        for key, name in (("user", "User"), ("system", "System"), ("elapsed", "Elapsed")):
            vals = {n: np.array([it.duration[key] for it in its if key in it.duration], dtype=float)
                    for n, its in measured.items()}
            if not any(v.size for v in vals.values()):
                continue
            amean_row = Row(name, "Amean", "s", "lower",
                            {n: _clean(st.amean(v)) if v.size else None for n, v in vals.items()})
            sec.rows.append(amean_row)
            sec.rows.append(Row(name, "Stddev", "s", "lower",
                                {n: _clean(st.stddev(v)) for n, v in vals.items()}))
            self._test_iteration_row(f"{label}/duration/{name}", amean_row, vals)
        return sec

    def _vmstat_section(self, label: str, measured: dict[str, list[IterationResult]]) -> Section:
        sec = Section(f"vmstat: {label}", "vmstat")
        derived: dict[str, dict[str, float]] = {}
        for n, its in measured.items():
            with_delta = [it for it in its if it.vmstat_delta]
            if not with_delta:
                continue
            el = [it.duration["elapsed"] for it in with_delta if "elapsed" in it.duration]
            elapsed = float(np.mean(el)) if len(el) == len(with_delta) else None
            derived[n] = vm.derive(vm.mean_deltas(it.vmstat_delta for it in with_delta), elapsed)
        if not derived:
            return sec
        for rd in vm.ROWS:
            if not any(rd.name in d for d in derived.values()):
                continue
            sec.rows.append(Row(rd.name, "Amean", rd.unit, rd.better,
                                {n: _clean(derived.get(n, {}).get(rd.name)) for n in self.names}))
        return sec

    def _monitor_sections(self, label: str, measured: dict[str, list[IterationResult]]) -> list[Section]:
        names: dict[str, None] = {}
        for its in measured.values():
            for it in its:
                names.update(dict.fromkeys(it.monitors))
        if not names:
            return []
        try:
            from mmbench.monitors import registry
            reg = registry()
        except Exception as e:  # a broken monitor package must not break compare
            self.note(f"monitors: registry unavailable ({type(e).__name__}: {e}); monitor sections skipped")
            return []
        out = []
        run_by_name = dict(zip(self.names, self.runs))
        for mon in names:
            cls = reg.get(mon)
            if cls is None:
                self.note(f"monitor {mon} ({label}): not a known monitor; its section is skipped")
                continue
            defs: dict[str, MetricDef] = {}
            values: dict[str, dict[str, list[float]]] = {}
            for n, its in measured.items():
                run = run_by_name[n]
                for it in its:
                    meta = it.monitors.get(mon)
                    if meta is None:
                        continue
                    if "dir" not in meta:   # never started: unavailable on that kernel, or failed
                        why = meta.get("unavailable") or meta.get("error") or "no data"
                        self.note(f"monitor {mon} ({label}, run {n}): not recorded: {why}")
                        continue
                    try:
                        folder = Path(run.path or ".") / str(meta["dir"])
                        summ = load_summary(cls, folder, meta)
                    except Exception as e:
                        self.note(f"monitor {mon} ({label}, run {n}, iteration {it.index}): "
                                  f"summary failed: {type(e).__name__}: {e}")
                        continue
                    for t in summ.notes:
                        self.note(f"monitor {mon} ({label}, run {n}): {t}")
                    for md, vals in summ.metrics:
                        defs.setdefault(md.name, md)
                        values.setdefault(md.name, {}).setdefault(n, []).append(np.asarray(vals, dtype=float))
            sec = Section(f"monitor {mon}: {label}", "monitor")
            for mname, md in defs.items():
                per = values.get(mname, {})
                if md.kind == "latency":
                    # stall latencies (mm-trace): summarised and tested like a workload's latency
                    self._latency_rows(f"{mon}: {label}", sec, md, {n: per.get(n, []) for n in self.names})
                    continue
                pooled = {n: np.concatenate(per[n]) if per.get(n) else np.zeros(0) for n in self.names}
                for stat, fn in (("Amean", st.amean), ("Max", st.vmax)):
                    sec.rows.append(Row(mname, stat, md.unit, md.better,
                                        {n: _clean(fn(v)) if v.size else None for n, v in pooled.items()}))
            if sec.rows:
                out.append(sec)
        return out

    # ---- ratio ---------------------------------------------------------------------------------

    def _ratio_section(self, label: str, wsec: Section,
                       means: dict[str, tuple[MetricDef, str, dict[str, float | None]]]) -> Section:
        sec = Section(f"ratio: {label}", "ratio")
        oriented: dict[str, list[float]] = {n: [] for n in self.names}
        excluded: dict[str, int] = {n: 0 for n in self.names}
        for mname, (md, stat, vals) in means.items():
            b = vals.get(self.base)
            ratios: dict[str, float | None] = {}
            for n in self.names:
                v = vals.get(n)
                # One direction for every row: > 1 is better (new/base when higher is better,
                # base/new when lower is better); rows and the Gmean use the same ratio.
                why = None
                if b is None or v is None or b < 0 or v < 0:
                    why = "a mean is missing or negative"
                elif b == 0 or v == 0:
                    why = ("both means are 0" if b == v else
                           "baseline is 0" if b == 0 else "value is 0")
                if why is not None:
                    ratios[n] = None
                    excluded[n] += 1
                    if n != self.base:
                        self.note(f"ratio {label}: {mname} of {n} excluded from the Gmean ({why})")
                    continue
                o = v / b if md.better == "higher" else b / v
                ratios[n] = o
                oriented[n].append(o)
            sec.rows.append(Row(mname, f"Ratio {stat}", "ratio", "higher", ratios))
        gm_note = "geometric mean of ratios oriented so > 1 is better (new/base; base/new for lower-is-better)"
        skipped = {n: k for n, k in excluded.items() if k and n != self.base}
        if skipped:
            gm_note += "; rows that cannot be ratioed excluded: " + ", ".join(
                f"{k} of {len(means)} for {n}" for n, k in skipped.items())
        sec.rows.append(Row("All metrics", "Gmean", "ratio", "higher",
                            {n: _clean(st.gmean(o)) if o else None for n, o in oriented.items()},
                            note=gm_note))
        return sec

    # ---- significance adjust and percentages -----------------------------------------------------

    def _adjust(self) -> None:
        if not self.tests:
            return
        q = sig.bh_adjust([t.p for t in self.tests])
        for t, qv in zip(self.tests, q):
            for r in t.rows:
                r.p[t.run] = qv
                r.significant[t.run] = bool(qv < sig.ALPHA)

    def _pcts(self) -> None:
        for s in self.cmp.sections:
            for r in s.rows:
                for n in self.names:
                    r.significant.setdefault(n, False)
                    r.p.setdefault(n, None)
                    r.ci.setdefault(n, None)
                b = r.values.get(self.base)
                if not self.multi:
                    r.pct[self.base] = None
                    continue
                r.pct[self.base] = pct_diff(b, b, r.better)[0]
                reasons = set()
                for n in self.names[1:]:
                    r.pct[n], reason = pct_diff(b, r.values.get(n), r.better)
                    if reason in (PCT_BASE_ZERO, PCT_BASE_NEG):
                        reasons.add(reason)
                for reason in sorted(reasons):
                    r.add_note(f"no %: {reason}")


def _iteration_percentiles(per_iter: list[np.ndarray], q: float) -> np.ndarray:
    vals = [float(np.percentile(a[np.isfinite(a)], q)) for a in per_iter if np.isfinite(a).any()]
    return np.asarray(vals, dtype=float)


def _unique_names(runs: list[RunRecord]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for r in runs:
        seen[r.name] += 1
        out.append(r.name if seen[r.name] == 1 else f"{r.name}#{seen[r.name]}")
    return out


def _fmt(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "nan"


def vm_notes(runs: list[RunRecord], names: list[str]) -> list[str]:
    """What a reader must know about runs made in VMs (``mmbench run --kernel``): emulated times,
    and runs that differ in accelerator or in the host they ran on."""
    vms = {n: (r.fingerprint or {}).get("vm") for r, n in zip(runs, names)}
    out = []
    tcg = [n for n, v in vms.items() if v and v.get("accelerator") == "tcg"]
    if tcg:
        out.append(f"{', '.join(tcg)}: ran in a QEMU guest under TCG emulation: times are emulated (8-10x "
                   f"slower than hardware, unevenly); counts and ratios between runs under the same "
                   f"emulator stay meaningful")
    in_vm = {n: v for n, v in vms.items() if v}
    if in_vm and len(in_vm) < len(vms):
        out.append(f"only {', '.join(in_vm)} ran in a VM; {', '.join(n for n in vms if n not in in_vm)} "
                   f"ran on a host: their times and capacities are not comparable")
    for key, what in (("accelerator", "accelerator"), ("host", "host machine"), ("memory_mb", "guest memory"),
                      ("numa_nodes", "guest NUMA nodes"), ("qemu", "QEMU version")):
        seen = {str(v.get(key)) for v in in_vm.values()}
        if len(seen) > 1:
            out.append(f"the VM runs differ in {what}: " + ", ".join(f"{n}={v.get(key)}" for n, v in in_vm.items()))
    return out


def build_comparison(runs: list[RunRecord], *, pvalues: bool = False, ratio: bool = False,
                     seed: int = 0) -> Comparison:
    """Compare ``runs`` (the first is the baseline).  ``pvalues`` is recorded for the exporters
    (p-values are always computed); ``ratio`` adds the per-workload ratio sections."""
    if not runs:
        raise ValueError("build_comparison needs at least one run")
    return _Builder(list(runs), pvalues, ratio, seed).build()


# --------------------------------------------------------------------------------------------
# Regressions (--fail-on-regression)


@dataclass(frozen=True)
class Regression:
    section: str
    metric: str
    stat: str
    run: str
    pct: float
    p: float | None

    def __str__(self) -> str:
        p = f", p={self.p:.3g}" if self.p is not None else ""
        return f"{self.section}: {self.metric} {self.stat} in {self.run}: {self.pct:+.2f}%{p}"


def regressions(comparison: Comparison, threshold_pct: float) -> list[Regression]:
    """Significant changes in the bad direction larger than ``threshold_pct`` percent."""
    out = []
    for s in comparison.sections:
        for r in s.rows:
            for n in comparison.runs[1:]:
                pct = r.pct.get(n)
                if r.significant.get(n) and pct is not None and pct < -abs(threshold_pct):
                    out.append(Regression(s.title, r.metric, r.stat, n, pct, r.p.get(n)))
    return out
