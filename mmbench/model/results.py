"""The data model every stage after the runner reads (documented in docs/results-format.md).

A ``RunRecord`` (one ``mmbench run NAME``) holds ``WorkloadRun``s (one per workload of the suite),
each holding ``IterationResult``s.  An iteration keeps its within-iteration samples per metric, so
statistics can use iteration means or the samples themselves; nothing is pooled here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

Better = Literal["higher", "lower"]
MetricKind = Literal["time", "rate", "latency", "count", "percent", "size"]
MeanKind = Literal["amean", "hmean", "gmean"]


@dataclass(frozen=True)
class MetricDef:
    """A metric a workload (or monitor) declares: its name, unit and which direction is better.

    ``kind`` decides the summary rows: ``latency`` gets percentiles, ``rate`` is summarised with the
    harmonic mean unless ``mean`` says otherwise.  ``resolution``: the smallest difference the
    measurement can express, in ``unit`` (None: :func:`default_resolution`); a row constant at its
    resolution within each of two runs, more than it apart, is a change (docs/statistics.md §4).
    """

    name: str
    unit: str
    better: Better
    kind: MetricKind = "time"
    mean: MeanKind | None = None
    description: str = ""
    resolution: float | None = None

    @property
    def effective_resolution(self) -> float:
        return self.resolution if self.resolution is not None else default_resolution(self.unit, self.kind)

    @property
    def mean_kind(self) -> MeanKind:
        if self.mean:
            return self.mean
        return "hmean" if self.kind == "rate" else "amean"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["resolution"] is None:  # stated only when a metric states one
            del d["resolution"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MetricDef":
        return cls(
            **{k: d[k] for k in ("name", "unit", "better", "kind", "mean", "description", "resolution") if k in d}
        )


# The resolution of a metric that states none, by unit: a clock's nanosecond in the metric's time
# unit, one event or page of a count, 0.01 of a percentage (its printed precision).  Rates, sizes
# and other units: none beyond float noise (significance.REL_TOL of the value).
_TIME_UNITS = {"ns": 1.0, "us": 1e-3, "µs": 1e-3, "ms": 1e-6, "s": 1e-9}
_COUNT_UNITS = {
    "events",
    "pages",
    "faults",
    "stalls",
    "runs",
    "sections",
    "passes",
    "ops",
    "thps",
    "wakes",
    "allocations",
    "instructions",
    "calls",
    "iterations",
}


def default_resolution(unit: str, kind: str = "time") -> float:
    """The resolution of a metric that states none (``MetricDef.resolution``)."""
    u = unit.strip().lower()
    if kind == "count" or u in _COUNT_UNITS:
        return 1.0
    if kind == "rate" or "/" in u:
        return 0.0
    if u == "%" or kind == "percent":
        return 0.01
    return _TIME_UNITS.get(u, 0.0)


IterationStatus = Literal["ok", "failed", "oom"]


@dataclass
class IterationResult:
    """One iteration of one workload.

    ``samples``: metric name → values measured within the iteration (one value for a single-shot
    metric, many for per-fault latencies).  ``duration``: user, system and elapsed seconds of the
    workload's whole process tree.  ``vmstat_delta``: /proc/vmstat after − before, raw counter
    names.  ``monitors``: monitor name → files it wrote (relative to the run folder).
    ``imported``: what an importer read that has no mmbench counterpart (MMTests' /proc/schedstat
    deltas around a test, docs/mmtests-import.md); empty for runs mmbench made.
    """

    workload: str
    index: int
    warmup: bool
    status: IterationStatus
    reason: str | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    duration: dict[str, float] = field(default_factory=dict)
    vmstat_delta: dict[str, int] = field(default_factory=dict)
    memcg: dict[str, float] = field(default_factory=dict)
    monitors: dict[str, dict[str, Any]] = field(default_factory=dict)
    imported: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "IterationResult":
        return cls(**d)


@dataclass
class WorkloadRun:
    """A workload of the suite as run: its label, plugin, resolved parameters and metrics."""

    label: str
    plugin: str
    params: dict[str, Any]
    metrics: list[MetricDef]
    iterations: list[IterationResult] = field(default_factory=list)

    def metric(self, name: str) -> MetricDef | None:
        return next((m for m in self.metrics if m.name == name), None)

    def measured(self) -> list[IterationResult]:
        """Iterations that count for statistics: completed and not warm-up."""
        return [it for it in self.iterations if it.status == "ok" and not it.warmup]


# a run whose run.json says "running" but whose writer cannot be proved alive on this machine (no
# boot id or process start time recorded, or written during another boot or on another machine)
OWNER_UNKNOWN = "interrupted (owner unknown)"
RunStatus = Literal["running", "complete", "incomplete", "failed", "imported", "interrupted (owner unknown)"]


@dataclass
class RunRecord:
    """One named run: suite as run, environment fingerprint, status, workloads."""

    name: str
    status: RunStatus
    created: float
    finished: float | None
    suite_text: str
    suite_hash: str
    fingerprint: dict[str, Any]
    settings: dict[str, Any]
    workloads: list[WorkloadRun] = field(default_factory=list)
    path: Path | None = None
    mmbench_version: str = ""

    def workload(self, label: str) -> WorkloadRun | None:
        return next((w for w in self.workloads if w.label == label), None)


def workload_labels(runs: Sequence[RunRecord]) -> list[str]:
    """The workload labels of ``runs``, each once, in the order they first appear."""
    return list(dict.fromkeys(w.label for r in runs for w in r.workloads))


def summarise_rounds(fp: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint with an interleaved run's per-round copies (``rounds``: one whole fingerprint
    per round) replaced by one line: "3 rounds, no drift", or the fields that changed between
    rounds with their values, so a comparison shows drift instead of kilobytes of fingerprints."""
    rounds = fp.get("rounds")
    if not isinstance(rounds, list):
        return fp
    flat = [flatten(r.get("fingerprint") or {}) if isinstance(r, dict) else {} for r in rounds]
    keys = sorted({k for f in flat for k in f})
    drift = []
    for k in keys:
        seen = list(dict.fromkeys(str(f.get(k)) for f in flat))
        if len(seen) > 1:
            drift.append(f"{k} ({' -> '.join(s[:40] for s in seen[:4])}{' ...' if len(seen) > 4 else ''})")
    text = f"{len(rounds)} rounds, " + (
        "no drift"
        if not drift
        else f"drifted: {'; '.join(drift[:8])}" + (f"; and {len(drift) - 8} more" if len(drift) > 8 else "")
    )
    return {**{k: v for k, v in fp.items() if k != "rounds"}, "rounds": text}


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys ({"thp": {"enabled": "never"}} → {"thp.enabled": "never"}); an
    empty dict stays a value, so a key that exists with nothing under it is not lost."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out
