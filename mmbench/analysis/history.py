"""Metrics across runs over time, one series per configuration, with change points.

A **series** is the runs that differ only in what history is there to find: it keeps fixed the
machine, the suite (its name and its effective content: the suite after ``--set``, without
iteration counts), the settings, the VM's shape (memory, CPUs, NUMA nodes, accelerator) and, for
interleaved runs, the arm (A and B of an interleave are two series).  The kernel, its patches and
build config label each point instead, so the kernel that moved a metric is named beside the
change point.  ``--split-by FIELD`` splits series further by any field of a run; ``--where
FIELD=GLOB`` (or ``FIELD!=GLOB``) keeps the runs that match.  A field is a flattened fingerprint
key (``kernel.release``, ``thp.enabled``, ``cpu.model``, ``vm.memory_mb`` ...), ``settings.KEY``,
or one of ``PSEUDO_FIELDS``.

Each run contributes one value per (workload, metric): the mean of its measured iterations' means
(iteration means come from the store's index, so nothing is downloaded).  Change points come from
E-Divisive means with a permutation test, as MongoDB's performance CI and Otava use it
(``analysis/changepoint.py``).  A change point is reported when the permutation p-value is at most
``PVALUE`` (0.001, with ``PERMUTATIONS`` = 999 permutations and a fixed seed, so the same history
gives the same answer); each says the runs on both sides, their kernels and the step: the mean of
the segment after over the mean of the segment before.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from mmbench.analysis.changepoint import PERMUTATIONS, PVALUE, change_points, shortest_detectable  # noqa: F401
from mmbench.errors import UsageError
from mmbench.model.results import flatten

# What a series keeps fixed (in this order when shown).
KEY_FIELDS = ("machine", "suite", "config", "settings", "vm-shape", "arm")
PSEUDO_FIELDS = {
    "machine": "the host the run ran on (a VM run: the host of the guest)",
    "suite": "the suite's name",
    "config": "digest of the effective suite (after --set), iteration counts and settings left out",
    "settings": "the settings the run applied (KEY=VALUE, ...)",
    "vm-shape": "memory, CPUs, NUMA nodes, accelerator and clock of the guest ('host': no VM)",
    "arm": "which configuration of an interleave ('arm 1 of 2'); '' when not interleaved",
    "kernel": "the kernel release with its patches and build (the point label)",
    "run": "the run's name",
}
# Parts of the effective suite that do not change what is measured, only how often (settings are
# a key field of their own).
_NOT_CONFIG = {"iterations", "warmup", "description", "headline", "notes"}


@dataclass
class ChangePoint:
    index: int  # first run of the new segment
    before_run: str
    after_run: str
    before_mean: float
    after_mean: float
    before_kernel: str = ""
    after_kernel: str = ""
    bisect: str = ""  # the mmbench bisect command between the two runs' git commits, if both have one

    @property
    def step_pct(self) -> float:
        return (self.after_mean - self.before_mean) / abs(self.before_mean) * 100 if self.before_mean else float("nan")


@dataclass
class Series:
    workload: str
    metric: str
    runs: list[str]
    created: list[float]
    values: list[float]
    change_points: list[ChangePoint] = field(default_factory=list)
    unit: str = ""
    kernels: list[str] = field(default_factory=list)  # the point labels
    key: dict[str, str] = field(default_factory=dict)  # what this series keeps fixed
    series_id: int = 0  # 1.. in the order of SeriesInfo


@dataclass
class SeriesInfo:
    """One configuration's runs over time (every metric of it shares this)."""

    series_id: int
    key: dict[str, str]
    runs: list[str]
    first: float
    last: float


@dataclass
class History:
    series: list[SeriesInfo]
    metrics: list[Series]
    varying: list[str]  # key fields that differ between the series shown


def kernel_label(fp: dict[str, Any]) -> str:
    """The kernel of a run as a point label: release, source, patches (count and names), build
    config digest, whatever of these the fingerprint has (kernel builds add the last three)."""
    kern = fp.get("kernel") if isinstance(fp.get("kernel"), dict) else {}
    vm = fp.get("vm") if isinstance(fp.get("vm"), dict) else {}
    release = str(kern.get("release") or vm.get("kernel_release") or "")
    parts = [release or "?"]
    if kern.get("source") and str(kern["source"]) not in release:
        parts.append(str(kern["source"]))
    patches = kern.get("patches") or []
    if isinstance(patches, list) and patches:
        names = [str(p.get("subject") or p.get("name")) if isinstance(p, dict) else str(p) for p in patches]
        parts.append(f"+{len(names)} patch{'es' if len(names) > 1 else ''} ({', '.join(names)})")
    for k in ("config_sha256", "series_sha256"):
        if kern.get(k):
            parts.append(f"{k.split('_')[0]} {str(kern[k])[:8]}")
    return " ".join(parts)


def _config_digest(effective: dict[str, Any]) -> str:
    if not effective:
        return ""

    def strip(doc: Any, top: bool = False) -> Any:
        if isinstance(doc, dict):
            return {k: strip(v) for k, v in doc.items() if k not in _NOT_CONFIG and not (top and k == "settings")}
        if isinstance(doc, list):
            return [strip(v) for v in doc]
        return doc

    doc = strip(effective, True)
    if isinstance(doc.get("vm"), dict):  # the kernel labels points; it is no part of the configuration
        doc["vm"] = {k: v for k, v in doc["vm"].items() if not k.startswith("kernel")}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _vm_shape(fp: dict[str, Any]) -> str:
    vm = fp.get("vm") if isinstance(fp.get("vm"), dict) else {}
    if "guest_host" not in fp and "accelerator" not in vm:
        return "host"
    clock = ", instruction clock" if vm.get("clock") == "instructions" else ""
    if vm.get("below_4g_mb"):
        clock += f", {vm['below_4g_mb']} MiB below 4 GiB"
    return (
        f"{vm.get('memory_mb', '?')} MiB, {vm.get('cpus', '?')} CPUs, {vm.get('numa_nodes', 1)} node(s), "
        f"{vm.get('accelerator', '?')}{clock}"
    )


def run_fields(name: str, row: dict[str, Any], summary: dict[str, Any]) -> dict[str, str]:
    """Every field of a run that --where and --split-by can name (see the module docstring)."""
    fp, meta = summary.get("fingerprint") or {}, summary.get("meta") or {}
    out = {
        k: (", ".join(map(str, v)) if isinstance(v, list) else "" if v is None or v == {} else str(v))
        for k, v in flatten(fp).items()
    }
    settings = meta.get("settings") or {}
    out.update({f"settings.{k}": str(v) for k, v in settings.items()})
    inter = meta.get("interleave")
    arm = (
        f"arm {inter['arm'] + 1} of {inter['arms']}"
        if isinstance(inter, dict)
        else "interleaved"
        if meta.get("interleaved_from")
        else ""
    )
    out.update(
        {
            "machine": str(row.get("host") or fp.get("host") or ""),
            "suite": str(row.get("suite") or meta.get("suite") or ""),
            "config": _config_digest(summary.get("effective") or {}),
            "settings": ", ".join(f"{k}={v}" for k, v in sorted(settings.items())),
            "vm-shape": _vm_shape(fp),
            "arm": arm,
            "kernel": kernel_label(fp),
            "run": name,
        }
    )
    return out


def _parse_filter(text: str) -> tuple[str, bool, str]:
    for op, negate in (("!=", True), ("=", False)):
        if op in text:
            name, value = text.split(op, 1)
            if name.strip():
                return name.strip(), negate, value
    raise UsageError(f"--where {text!r}: give FIELD=GLOB or FIELD!=GLOB (fields: mmbench history --fields)")


def _check_field(name: str, known: set[str], option: str) -> None:
    if name in known or name in PSEUDO_FIELDS:
        return
    from mmbench.model.params import close_match

    raise UsageError(
        f"{option} {name!r}: no run has this field{close_match(name, sorted(known))}; "
        f"'mmbench history --fields' lists them"
    )


def _segments_means(values: list[float], cps: list[int]) -> list[float]:
    bounds = [0, *cps, len(values)]
    return [sum(values[a:b]) / (b - a) for a, b in zip(bounds, bounds[1:])]


def candidate_runs(store: Any) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """The complete (or imported) runs of the store, oldest first, each one's fields and each
    one's metric units ("workload.metric" -> unit)."""
    runs = [r for r in store.list_runs() if r["status"] in ("complete", "imported")]
    runs.sort(key=lambda r: r["created"] or 0)
    summaries = store.run_summaries([r["name"] for r in runs]) if runs else {}
    fields = {r["name"]: run_fields(r["name"], r, summaries.get(r["name"], {})) for r in runs}
    units = {n: s.get("units", {}) for n, s in summaries.items()}
    return runs, fields, units


def build_history(
    store: Any,
    *,
    machine: str | None = None,
    suite: str | None = None,
    metrics: list[str] | None = None,
    where: list[str] | None = None,
    split_by: list[str] | None = None,
) -> list[Series]:
    """Every (series, workload, metric) of the matching runs, oldest point first (see ``history``)."""
    return history(store, machine=machine, suite=suite, metrics=metrics, where=where, split_by=split_by).metrics


def history(
    store: Any,
    *,
    machine: str | None = None,
    suite: str | None = None,
    metrics: list[str] | None = None,
    where: list[str] | None = None,
    split_by: list[str] | None = None,
) -> History:
    runs, fields, units = candidate_runs(store)
    known = {k for f in fields.values() for k in f}
    filters = [_parse_filter(w) for w in where or []]
    if machine is not None:
        filters.append(("machine", False, machine))
    if suite is not None:
        filters.append(("suite", False, suite))
    for name, _, _ in filters:
        _check_field(name, known, "--where")
    for name in split_by or []:
        _check_field(name, known, "--split-by")
    chosen = [
        r for r in runs if all(fnmatch.fnmatchcase(fields[r["name"]].get(n, ""), v) != neg for n, neg, v in filters)
    ]
    if not chosen:
        said = " and ".join(f"{n}{'!=' if neg else '='}{v}" for n, neg, v in filters) or "any"
        known_series = sorted({(f["machine"], f["suite"]) for f in fields.values()})
        raise UsageError(
            f"no complete runs with {said} in {store}"
            + (
                f"; there are: {', '.join(f'{m}/{s}' for m, s in known_series if s)}"
                if known_series
                else " (it holds no complete runs)"
            )
        )
    key_names = [*KEY_FIELDS, *(s for s in split_by or [] if s not in KEY_FIELDS)]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in chosen:
        groups.setdefault(tuple(fields[r["name"]].get(k, "") for k in key_names), []).append(r)
    infos = []
    for i, (key, members) in enumerate(sorted(groups.items(), key=lambda kv: kv[1][0]["created"] or 0), 1):
        infos.append(
            SeriesInfo(
                i,
                dict(zip(key_names, key)),
                [r["name"] for r in members],
                members[0]["created"] or 0,
                members[-1]["created"] or 0,
            )
        )
    varying = [k for k in key_names if len({s.key[k] for s in infos}) > 1]

    created = {r["name"]: r["created"] or 0 for r in chosen}
    names = [r["name"] for r in chosen]
    per: dict[tuple[str, str, str], list[float]] = {}
    for run, workload, metric, _idx, value in store.iteration_values(names):
        if value is None:
            continue
        if metrics and metric not in metrics and f"{workload}.{metric}" not in metrics:
            continue
        per.setdefault((run, workload, metric), []).append(value)
    if metrics and not per:
        raise UsageError(f"--metric: none of {', '.join(metrics)} is in these runs")
    out = []
    for info in infos:
        members = set(info.runs)
        by_metric: dict[tuple[str, str], dict[str, float]] = {}
        for (run, workload, metric), vals in per.items():
            if run in members:
                by_metric.setdefault((workload, metric), {})[run] = sum(vals) / len(vals)
        for (workload, metric), by_run in sorted(by_metric.items()):
            ordered = sorted(by_run, key=lambda n: (created[n], n))
            values = [by_run[n] for n in ordered]
            unit = next(
                (
                    units[n][f"{workload}.{metric}"]
                    for n in reversed(ordered)
                    if units.get(n, {}).get(f"{workload}.{metric}")
                ),
                "",
            )
            s = Series(
                workload,
                metric,
                ordered,
                [created[n] for n in ordered],
                values,
                unit=unit,
                kernels=[fields[n]["kernel"] for n in ordered],
                key=info.key,
                series_id=info.series_id,
            )
            cps = change_points(values)
            means = _segments_means(values, cps)
            s.change_points = [
                ChangePoint(
                    i,
                    ordered[i - 1],
                    ordered[i],
                    means[k],
                    means[k + 1],
                    s.kernels[i - 1],
                    s.kernels[i],
                    bisect_command(fields[ordered[i - 1]], fields[ordered[i]], workload, metric),
                )
                for k, i in enumerate(cps)
            ]
            out.append(s)
    return History(infos, out, varying)


def bisect_command(before: dict[str, str], after: dict[str, str], workload: str, metric: str) -> str:
    """``mmbench bisect`` between two runs of kernels built from commits of one git repository
    (their fingerprints' ``kernel.git_repo``/``kernel.git_commit``), those runs as the ends' pilot;
    "" when they are not such runs or have the same commit."""
    repo, good, bad = before.get("kernel.git_repo"), before.get("kernel.git_commit"), after.get("kernel.git_commit")
    if not repo or not good or not bad or good == bad or after.get("kernel.git_repo") != repo:
        return ""
    import shlex

    args = [
        "mmbench",
        "bisect",
        repo,
        good[:12],
        bad[:12],
        "--config",
        before.get("suite") or "SUITE",
        "--row",
        f"{workload}:{metric}",
        "--good-runs",
        before["run"],
        "--bad-runs",
        after["run"],
    ]
    return " ".join(shlex.quote(a) for a in args)


def field_values(store: Any) -> dict[str, list[str]]:
    """Every field of the store's complete runs with its distinct values (``history --fields``)."""
    _, fields, _ = candidate_runs(store)
    out: dict[str, set[str]] = {}
    for f in fields.values():
        for k, v in f.items():
            out.setdefault(k, set()).add(v)
    return {k: sorted(v) for k, v in sorted(out.items())}
