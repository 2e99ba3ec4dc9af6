"""stressng: stress-ng's memory stressors (Debian's stress-ng) with their bogo-ops/s.

Each stressor named in ``stressors`` runs on its own for ``duration``, so each figure belongs to
one stressor; ``memory`` (relative to the budget) is split between its workers.  For repeatable
figures the stressors run with ``--seed``, ``--no-madvise`` and one ``--vm-method``, and bigheap
under ``prlimit --data``, so that it fails an allocation inside the budget instead of being
OOM-killed.  Stressor names are checked against the installed stress-ng before anything runs.
Parameters, metrics and MMTests' worker ladder: docs/workloads.md, "stressng".
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from mmbench.model.params import Param, check_name_list, close_match
from mmbench.errors import EnvironmentUnsupported, UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads._topology import cpu_count, ladder
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

PACKAGE = "stress-ng"
# the default set: one stressor per mm path of the brief that Debian's 0.15.06 has (no compact, no pagein)
_DEFAULT = ["vm", "mmap", "madvise", "pagemove", "bigheap"]


def _stress_ng() -> str:
    exe = shutil.which("stress-ng")
    if exe is None:
        raise EnvironmentUnsupported(f"stress-ng not found: install Debian's {PACKAGE} package")
    return exe


@functools.cache
def available_stressors() -> tuple[str, ...]:
    """Every stressor this stress-ng knows (``stress-ng --stressors``)."""
    out = subprocess.run([_stress_ng(), "--stressors"], capture_output=True, text=True, check=True, timeout=30)
    return tuple(out.stdout.split())


@functools.cache
def vm_class() -> tuple[str, ...]:
    """stress-ng's "vm" class of stressors (``stress-ng --class vm?``), for error messages."""
    out = subprocess.run([_stress_ng(), "--class", "vm?"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    return tuple(text.split(":", 1)[1].split()) if ":" in text else ()


@functools.cache
def size_options() -> frozenset[str]:
    """Stressors with a ``--<stressor>-bytes`` option (from ``stress-ng --help``)."""
    out = subprocess.run([_stress_ng(), "--help"], capture_output=True, text=True, timeout=30)
    return frozenset(re.findall(r"^\s+--([a-z0-9-]+)-bytes\s", out.stdout, re.M))


@functools.cache
def vm_methods() -> tuple[str, ...]:
    """The vm stressor's methods (``stress-ng --vm-method which`` lists them)."""
    out = subprocess.run([_stress_ng(), "--vm-method", "which"], capture_output=True, text=True, timeout=30)
    text = (out.stdout + out.stderr).strip()
    return tuple(text.split(":", 1)[1].split()) if ":" in text else ()


@functools.cache
def version() -> str:
    out = subprocess.run([_stress_ng(), "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"version ([\w.]+)", out.stdout)
    return m.group(1) if m else "unknown"


def parse_stressng_yaml(text: str) -> dict[str, dict[str, float]]:
    """stress-ng's ``--yaml`` report: stressor → {"real": bogo-ops/s, "cpu": bogo-ops/s usr+sys,
    "ops": bogo-ops}.  ``--metrics-brief`` leaves out stressors that did no work."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise WorkloadError(f"stress-ng's YAML report does not parse: {str(e).splitlines()[0]}") from None
    out: dict[str, dict[str, float]] = {}
    for row in (doc or {}).get("metrics") or []:
        try:
            out[str(row["stressor"])] = {
                "real": float(row["bogo-ops-per-second-real-time"]),
                "cpu": float(row["bogo-ops-per-second-usr-sys-time"]),
                "ops": float(row["bogo-ops"]),
            }
        except (KeyError, TypeError, ValueError):
            raise WorkloadError(
                f"stress-ng's YAML report has a metrics row without bogo-ops figures: {row!r}"
            ) from None
    return out


class StressNg(Workload):
    name = "stressng"
    summary = "stress-ng memory stressors (vm, mmap, madvise, pagemove, bigheap, ...): bogo-ops/s each"
    requires = ["stress-ng", "prlimit"]
    packages = {"stress-ng": "stress-ng", "prlimit": "util-linux"}
    params = {
        "stressors": Param("str_list", _DEFAULT, "stress-ng stressors to run, one after the other"),
        "workers": Param("int", 2, "workers (processes) per stressor", minimum=1),
        "ladder": Param(
            "bool",
            False,
            "run every stressor with 1, 2, 4 ... 2xNCPU workers (MMTests' "
            "stressng configs' thread ladder) instead of `workers` once",
        ),
        "threads": Param(
            "int_list", [], "the worker counts to run instead of `workers` (a ladder of your own)", minimum=1
        ),
        "duration": Param("duration", "10s", "how long each stressor runs"),
        "memory": Param("size", "0.5x", "memory all workers of a stressor map together (split between them)"),
        "page_in": Param("bool", False, "stress-ng --page-in: touch pages not in core before use"),
        "vm_method": Param("str", "write64", "--vm-method of the vm stressor ('all' rotates through methods)"),
        "random_madvise": Param("bool", False, "let stress-ng apply random madvise advice to its mappings"),
        "seed": Param("int", 42, "stress-ng --seed: its random choices repeat from run to run", minimum=0),
        "bigheap_growth": Param("size", "64K", "bytes bigheap grows its heap by per step"),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"{s if n is None else f'{s}-{n}'} bogo-ops/s" for n in self.rungs(params) for s in params["stressors"]]

    @staticmethod
    def rungs(params: dict[str, Any]) -> list[int | None]:
        """The worker counts to run: None = the single ``workers`` run (metric names without a
        count), else the ladder's counts."""
        if params.get("threads") and params.get("ladder"):
            raise UsageError("workload.stressng.params: give ladder = true or threads = [...], not both")
        if params.get("ladder"):
            return ladder(1, 2 * cpu_count())
        if params.get("threads"):
            return sorted(set(params["threads"]))
        return [None]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out: list[MetricDef] = []
        for n in self.rungs(params):
            for s in params["stressors"]:
                tag = s if n is None else f"{s}-{n}"
                who = f"stress-ng {s}" + ("" if n is None else f", {n} workers")
                out += [
                    MetricDef(
                        f"{tag} bogo-ops/s",
                        "bogo-ops/s",
                        "higher",
                        "rate",
                        description=f"{who}: bogo operations per second of wall time",
                    ),
                    MetricDef(
                        f"{tag} bogo-ops/s usr+sys",
                        "bogo-ops/s",
                        "higher",
                        "rate",
                        description=f"{who}: bogo operations per CPU second (user + system)",
                    ),
                ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        where = "workload.stressng.params"
        check_name_list(f"{where}.stressors", params["stressors"], "one stress-ng stressor", "stressor")
        known = available_stressors()
        for s in params["stressors"]:
            if s not in known:
                raise UsageError(
                    f"{where}.stressors: {s!r} is not a stressor of stress-ng {version()}"
                    f"{close_match(s, list(known))}; its vm stressors: {', '.join(vm_class())}"
                )
        if "vm" in params["stressors"]:
            methods = vm_methods()
            if methods and params["vm_method"] not in methods:
                raise UsageError(
                    f"{where}.vm_method: {params['vm_method']!r} is not a vm method of stress-ng "
                    f"{version()}{close_match(params['vm_method'], list(methods))}; "
                    f"methods: {', '.join(methods)}"
                )
        if params["duration"] < 1:
            raise UsageError(f"{where}.duration: must be at least 1s")
        if params["memory"] >= budget:
            raise UsageError(f"{where}.memory: {params['memory']} bytes does not fit in the {budget} byte budget")
        most = max(n or params["workers"] for n in self.rungs(params))
        if params["memory"] // most < (1 << 20):
            raise UsageError(f"{where}.memory: less than 1M per worker (with {most} workers)")

    def argv(
        self, stressor: str, params: dict[str, Any], yaml_path: Path, temp: Path, workers: int | None = None
    ) -> list[str]:
        """The stress-ng command line for one stressor (``workers``: a rung of the ladder)."""
        workers = workers or params["workers"]
        per_worker = params["memory"] // workers
        argv = [
            "stress-ng",
            f"--{stressor}",
            str(workers),
            "--timeout",
            f"{max(1, round(params['duration']))}s",
            "--metrics-brief",
            "--yaml",
            str(yaml_path),
            "--temp-path",
            str(temp),
        ]
        if stressor in size_options():
            argv += [f"--{stressor}-bytes", str(per_worker)]
        if stressor == "bigheap":
            argv += ["--bigheap-growth", str(params["bigheap_growth"])]
            # RLIMIT_DATA bounds the heap inside the budget (see the module docstring)
            argv = ["prlimit", f"--data={per_worker}", "--", *argv]
        if stressor == "vm":
            argv += ["--vm-method", params["vm_method"]]
        if params["page_in"]:
            argv.append("--page-in")
        if not params["random_madvise"]:
            # by default stress-ng madvises every mapping it makes with a random advice
            # (MADV_HUGEPAGE or MADV_NOHUGEPAGE among them): rates then swing with the draw
            argv.append("--no-madvise")
        argv += ["--seed", str(params["seed"])]
        return argv

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        _stress_ng()  # gone since the suite was loaded: say which package, not "no such file"
        if "bigheap" in p["stressors"] and shutil.which("prlimit") is None:
            raise EnvironmentUnsupported("prlimit not found: install Debian's util-linux package")
        samples: Samples = {}
        for n in self.rungs(p):
            for s in p["stressors"]:
                tag = s if n is None else f"{s}-{n}"
                yaml_path = ctx.rawdir / f"stressng-{tag}.yaml"
                temp = ctx.workdir / tag
                temp.mkdir(parents=True, exist_ok=True)
                ctx.log(f"stress-ng --{s} {n or p['workers']} for {p['duration']:g}s")
                ctx.run(
                    self.argv(s, p, yaml_path, temp, n),
                    raw_name=f"stressng-{tag}.out",
                    timeout=p["duration"] + 120,
                    cwd=temp,
                )
                if not yaml_path.exists():
                    raise WorkloadError(f"stress-ng --{s} wrote no YAML report (see raw/stressng-{tag}.out)")
                figures = parse_stressng_yaml(yaml_path.read_text())
                if s not in figures:
                    raise WorkloadError(
                        f"stress-ng --{s} did no bogo operations in {p['duration']:g}s (see raw/stressng-{tag}.out)"
                    )
                samples[f"{tag} bogo-ops/s"] = [figures[s]["real"]]
                samples[f"{tag} bogo-ops/s usr+sys"] = [figures[s]["cpu"]]
        return samples
