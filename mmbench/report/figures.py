"""The graphs of a report as plain data, shared by the HTML report and ``mmbench plot``.

``collect(runs, names)`` reads the runs (and the monitor files in their folders) and returns
:class:`Figure` objects; the renderers (``html.py``: inline JSON drawn by a small script,
``plots.py``: matplotlib) only draw them.  Three kinds:

* ``box``: a workload metric's distribution per run: box (quartiles, Tukey whiskers, mean) over
  the samples of all measured iterations, and one point per iteration (its mean);
* ``line``: a monitor time series, one chart per series, one line per run: the first measured
  iteration solid, the others faint; x is seconds since the iteration started;
* ``cdf``: the latency distribution of one mm-trace stall kind per run (log x), pooled over the
  measured iterations.

Nothing here is a statistic of the comparison (that is ``mmbench.analysis.compare``); the box
and CDF summaries only describe what the chart shows.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mmbench.analysis import stats as st
from mmbench.model.results import IterationResult, RunRecord, workload_labels
from mmbench.monitors.base import SeriesSpec

FigureKind = Literal["box", "line", "cdf"]
MAX_LINE_POINTS = 600  # per line; longer series are thinned (every k-th point)
MAX_CDF_POINTS = 300  # per run
MAX_STRIP_POINTS = 200  # iteration points drawn per box


@dataclass
class Series:
    run: int  # index into the run names
    x: list[float | None]
    y: list[float | None]
    label: str = ""
    faint: bool = False


@dataclass
class Box:
    run: int
    n: int
    q1: float
    med: float
    q3: float
    lo: float  # whisker ends (Tukey: furthest data within 1.5 IQR)
    hi: float
    mean: float
    points: list[float]  # one per measured iteration (its mean)
    point_labels: list[str] = field(default_factory=list)


@dataclass
class Figure:
    id: str  # unique, safe for a file name
    group: str  # "distribution", "monitor" or "stalls"
    workload: str
    kind: FigureKind
    title: str
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    yzero: bool = False  # the y axis starts at 0 (rates, percentages)
    series: list[Series] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "xlabel": self.xlabel,
            "ylabel": self.ylabel,
            "logx": self.logx,
            "yzero": self.yzero,
        }
        if self.kind == "box":
            d["boxes"] = [
                {
                    "run": b.run,
                    "n": b.n,
                    "q1": _r(b.q1),
                    "med": _r(b.med),
                    "q3": _r(b.q3),
                    "lo": _r(b.lo),
                    "hi": _r(b.hi),
                    "mean": _r(b.mean),
                    "points": [_r(p) for p in b.points],
                    "labels": b.point_labels,
                }
                for b in self.boxes
            ]
        else:
            d["series"] = [{"run": s.run, "label": s.label, "faint": s.faint, "x": s.x, "y": s.y} for s in self.series]
        return d


def _r(v: float | None) -> float | None:
    if v is None or not math.isfinite(v):
        return None
    return float(f"{v:.6g}")


def _round_list(a: np.ndarray, sig: int = 5) -> list[float | None]:
    """Round to ``sig`` significant digits (keeps the embedded JSON small); NaN → None."""
    a = np.asarray(a, dtype=float)
    out: list[float | None] = []
    fmt = f"{{:.{sig}g}}".format
    for v in a.tolist():
        out.append(float(fmt(v)) if math.isfinite(v) else None)
    return out


_slug_re = re.compile(r"[^A-Za-z0-9._-]+")


def slug(*parts: str) -> str:
    return "-".join(_slug_re.sub("_", p).strip("_") or "x" for p in parts)[:120]


# --------------------------------------------------------------------------------------------
# Workload metric distributions


def _box(values: np.ndarray, points: list[float], labels: list[str], run: int) -> Box | None:
    v = values[np.isfinite(values)]
    if not v.size:
        return None
    q1, med, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    lo, hi = (float(inside.min()), float(inside.max())) if inside.size else (q1, q3)
    if len(points) > MAX_STRIP_POINTS:
        step = math.ceil(len(points) / MAX_STRIP_POINTS)
        points, labels = points[::step], labels[::step]
    return Box(run, int(v.size), q1, med, q3, lo, hi, float(v.mean()), points, labels)


def distribution_figures(runs: list[RunRecord], names: list[str]) -> list[Figure]:
    out: list[Figure] = []
    for label in workload_labels(runs):
        metrics: dict[str, Any] = {}
        for r in runs:
            w = r.workload(label)
            if w is not None:
                for m in w.metrics:
                    metrics.setdefault(m.name, m)
        for mname, md in metrics.items():
            fig = Figure(slug("dist", label, mname), "distribution", label, "box", mname, ylabel=md.unit)
            for i, r in enumerate(runs):
                w = r.workload(label)
                if w is None:
                    continue
                its = [it for it in w.measured() if len(it.samples.get(mname, ()))]
                if not its:
                    continue
                arrays = [np.asarray(it.samples[mname], dtype=float) for it in its]
                pooled = np.concatenate(arrays)
                means = [st.mean(a[np.isfinite(a)], md.mean_kind) for a in arrays]
                pts = [m for m in means if math.isfinite(m)]
                plabels = [f"iteration {it.index}" for it, m in zip(its, means) if math.isfinite(m)]
                b = _box(pooled, pts, plabels, i)
                if b is not None:
                    fig.boxes.append(b)
            if fig.boxes:
                many = any(b.n > len(b.points) for b in fig.boxes)
                fig.note = (
                    "box: all samples of the measured iterations; points: iteration means"
                    if many
                    else "box and points: one value per measured iteration"
                )
                out.append(fig)
    return out


# --------------------------------------------------------------------------------------------
# Monitor time series


def series_specs() -> list[tuple[str, SeriesSpec]]:
    """(monitor name, series) for every graphable series the monitor plugins declare."""
    from mmbench.plugins import monitors

    return [(name, spec) for name, cls in monitors().items() for spec in cls.series]


def _series_values(
    spec: SeriesSpec, t: np.ndarray, cols: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray] | None:
    have = [c for c in spec.columns if c in cols]
    if not have or len(t) == 0:
        return None
    v = sum(cols[c] for c in have)
    if spec.mode == "gauge":
        return t, v * spec.scale
    if len(t) < 2:
        return None
    if spec.minus:
        v = v - sum((cols[c] for c in spec.minus if c in cols), np.zeros_like(t))
    dt = np.diff(t)
    dv = np.diff(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(dt > 0, dv / np.where(dt > 0, dt, 1), np.nan)
    if spec.mode == "rate":
        r = np.maximum(r, 0.0)  # a counter reset (or the subtraction's skew) is not a negative rate
    else:  # psi: total is µs stalled → % of the interval
        r = np.clip(r / 1e4, 0.0, 100.0)
    return t[1:], r * (spec.scale if spec.mode == "rate" else 1.0)


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(x) <= MAX_LINE_POINTS:
        return x, y
    step = math.ceil(len(x) / MAX_LINE_POINTS)
    return x[::step], y[::step]


def monitor_figures(runs: list[RunRecord], names: list[str], skipped: list[str] | None = None) -> list[Figure]:
    """One chart per declared monitor series and workload; series zero throughout in every run are
    left out (their titles are appended to ``skipped``).  Each monitor reads its own files."""
    from mmbench.plugins import monitors

    plugins = monitors()
    specs = series_specs()
    with_series = list(dict.fromkeys(mon for mon, _ in specs))
    out: list[Figure] = []
    for label in workload_labels(runs):
        # (run index, iteration, monitor) → (t, columns), read once per file
        loaded: dict[tuple[int, int, str], tuple[np.ndarray, dict[str, np.ndarray]]] = {}
        its_by_run: dict[int, list[IterationResult]] = {}
        for i, r in enumerate(runs):
            w = r.workload(label)
            its_by_run[i] = w.measured() if w is not None else []
            for it in its_by_run[i]:
                for mon in with_series:
                    meta = it.monitors.get(mon)
                    if not meta or "dir" not in meta:
                        continue
                    try:
                        loaded[(i, it.index, mon)] = plugins[mon].load_columns(
                            Path(r.path or ".") / str(meta["dir"]), meta
                        )
                    except (OSError, ValueError, IndexError):
                        continue
        if not loaded:
            continue
        for mon, spec in specs:
            fig = Figure(
                slug("mon", label, mon, spec.key),
                "monitor",
                label,
                "line",
                spec.title,
                xlabel="seconds since the iteration started",
                ylabel=spec.unit,
                yzero=spec.mode != "gauge",
            )
            nonzero = False
            for i in range(len(runs)):
                first = True
                for it in its_by_run[i]:
                    got = loaded.get((i, it.index, mon))
                    if got is None:
                        continue
                    xy = _series_values(spec, *got)
                    if xy is None:
                        continue
                    x, y = _thin(*xy)
                    if np.any(np.nan_to_num(y) != 0):
                        nonzero = True
                    fig.series.append(
                        Series(i, _round_list(x, 6), _round_list(y), f"iteration {it.index}", faint=not first)
                    )
                    first = False
            if fig.series and nonzero:
                fig.note = f"monitor {mon}; solid: first measured iteration, faint: the others"
                out.append(fig)
            elif fig.series and skipped is not None:
                skipped.append(f"{spec.title} ({label})")
    return out


# --------------------------------------------------------------------------------------------
# Stall latencies (mm-trace)


def stall_figures(runs: list[RunRecord], names: list[str]) -> list[Figure]:
    from mmbench.monitors.trace.stalls import LABELS, read_stall_durations

    out: list[Figure] = []
    for label in workload_labels(runs):
        per_run: dict[int, dict[str, list[float]]] = {}
        for i, r in enumerate(runs):
            w = r.workload(label)
            for it in w.measured() if w is not None else []:
                meta = it.monitors.get("mm-trace")
                if not meta or "dir" not in meta:
                    continue
                path = Path(r.path or ".") / str(meta["dir"]) / "stalls.tsv"
                try:
                    got = read_stall_durations(path)
                except (OSError, ValueError):
                    continue
                dst = per_run.setdefault(i, {})
                for k, v in got.items():
                    dst.setdefault(k, []).extend(v)
        kinds: dict[str, None] = {}
        for d in per_run.values():
            kinds.update(dict.fromkeys(d))
        order = list(LABELS)
        for kind in sorted(kinds, key=lambda k: order.index(k) if k in order else len(order)):
            name = LABELS.get(kind, kind)
            # LABELS already say "Kswapd awake": "Kswapd awake time", not "Kswapd awake awake time"
            what = "time" if kind in ("kswapd", "kcompactd") else "stall latency"
            fig = Figure(
                slug("stall", label, kind),
                "stalls",
                label,
                "cdf",
                f"{name} {what}",
                xlabel="µs (log scale)",
                ylabel="fraction ≤ x",
                logx=True,
            )
            for i in range(len(runs)):
                v = np.sort(np.asarray(per_run.get(i, {}).get(kind, []), dtype=float))
                v = v[np.isfinite(v)]
                if not v.size:
                    continue
                v = np.maximum(v, 0.001)  # log scale: a 0 µs stall is drawn at 1 ns
                n = v.size
                if n > MAX_CDF_POINTS:
                    idx = np.unique(np.linspace(0, n - 1, MAX_CDF_POINTS).round().astype(int))
                else:
                    idx = np.arange(n)
                fig.series.append(
                    Series(
                        i,
                        _round_list(v[idx]),
                        _round_list((idx + 1) / n, 4),
                        f"{names[i]} (n={n}, P50 {np.percentile(v, 50):.3g} µs, "
                        f"P99 {np.percentile(v, 99):.3g} µs, max {v[-1]:.3g} µs)",
                    )
                )
            if fig.series:
                fig.note = "mm-trace, all measured iterations pooled"
                out.append(fig)
    return out


# --------------------------------------------------------------------------------------------
# IRQs-off offenders


def irqsoff_tables(runs: list[RunRecord], names: list[str], top: int = 20) -> list[dict[str, Any]]:
    """Per run with irqsoff output: the offenders (``irqsoff_trace.Offender``: caller, raw
    start..end sites, worst latency µs, count), largest first."""
    from mmbench.monitors.trace.irqsoff_trace import offenders

    out = []
    for n, r in zip(names, runs):
        paths = []
        for w in r.workloads:
            for it in w.measured():
                meta = it.monitors.get("irqsoff")
                if meta and "dir" in meta:
                    p = Path(r.path or ".") / str(meta["dir"]) / "irqsoff.txt"
                    if p.exists():
                        paths.append(p)
        if not paths:
            continue
        try:
            rows = offenders(paths)
        except (OSError, ValueError):
            continue
        out.append({"run": n, "files": len(paths), "rows": rows[:top], "more": max(0, len(rows) - top)})
    return out


def collect(runs: list[RunRecord], names: list[str], skipped: list[str] | None = None) -> list[Figure]:
    return distribution_figures(runs, names) + monitor_figures(runs, names, skipped) + stall_figures(runs, names)
