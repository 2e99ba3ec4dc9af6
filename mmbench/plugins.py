"""Plugin discovery for every plugin kind, in one place.

A plugin is one module of its kind's package defining a subclass of the kind's base class with a
``name``: workloads in ``mmbench/workloads/``, monitors in ``mmbench/monitors/``, exporters (the
``compare --format`` values) in ``mmbench/report/formats/``.  Packages are imported by name, so
this bottom module imports no stage.  A module that fails to import, or a plugin that declares a
parameter name the suite grammar reserves, is recorded in ``LOAD_ERRORS`` (``mmbench list``
shows it) instead of taking the other plugins down.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Kind:
    package: str
    base_module: str
    bases: tuple[str, ...]  # the first is the kind's interface; all are excluded as plugins


KINDS: dict[str, Kind] = {
    "workload": Kind("mmbench.workloads", "mmbench.workloads.base", ("Workload",)),
    "monitor": Kind("mmbench.monitors", "mmbench.monitors.base", ("Monitor", "SamplingMonitor")),
    "exporter": Kind("mmbench.report.formats", "mmbench.report.base", ("Exporter",)),
}

# Keys of a suite's [[workload]] table (and of `--set LABEL.KEY`): a plugin parameter with one of
# these names could never be set, so such a plugin is refused when it loads.
RESERVED_PARAMS = frozenset({"name", "label", "iterations", "warmup", "timeout", "params", "with"})

LOAD_ERRORS: dict[str, dict[str, str]] = {k: {} for k in KINDS}


def _check(kind: str, cls: type) -> str | None:
    from typing import get_args

    from mmbench.model.results import MeanKind, MetricKind

    for m in getattr(cls, "metrics", None) or []:  # a stored run must read back (model/files.py)
        if m.kind not in get_args(MetricKind) or (m.mean is not None and m.mean not in get_args(MeanKind)):
            return (
                f"{kind} {cls.name!r}: metric {m.name!r} has kind {m.kind!r} / mean {m.mean!r}; "
                f"kinds: {', '.join(get_args(MetricKind))}"
            )
    params = getattr(cls, "params", None) or {}
    bad = sorted(RESERVED_PARAMS & set(params))
    if bad:  # exporters declare no parameters
        return (
            f"{kind} {cls.name!r} declares the parameter {bad[0]!r}, a name the suite grammar "
            f"reserves ({', '.join(sorted(RESERVED_PARAMS))}); rename it"
        )
    return None


@cache
def plugins(kind: str) -> dict[str, type]:
    """Plugin name → class for ``kind`` ("workload", "monitor", "exporter"), sorted by name."""
    spec = KINDS[kind]
    base_mod = importlib.import_module(spec.base_module)
    bases = tuple(getattr(base_mod, b) for b in spec.bases)
    package = importlib.import_module(spec.package)
    errors = LOAD_ERRORS[kind]
    found: dict[str, type] = {}
    for mod in pkgutil.iter_modules(package.__path__):
        if mod.name.startswith("_") or mod.name == "base" or mod.ispkg:
            continue
        try:
            module = importlib.import_module(f"{spec.package}.{mod.name}")
        except Exception as e:  # one broken plugin must not take the others down
            errors[mod.name] = f"{type(e).__name__}: {e}"
            continue
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, bases[0])
                and obj not in bases
                and obj.__module__ == module.__name__
                and getattr(obj, "name", "")
            ):
                problem = _check(kind, obj)
                if problem:
                    errors[mod.name] = problem
                    continue
                found[obj.name] = obj
    return dict(sorted(found.items()))


def workloads() -> dict[str, Any]:
    return plugins("workload")


def monitors() -> dict[str, Any]:
    return plugins("monitor")


def module_names(kind: str) -> list[str]:
    """Plugin module names of ``kind`` without importing them (cheap: the CLI's ``--format``
    choices; an exporter's ``name`` is its module's name, which the tests check)."""
    package = importlib.import_module(KINDS[kind].package)
    return sorted(
        m.name
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_") and m.name != "base" and not m.ispkg
    )


@cache
def exporters() -> dict[str, Any]:
    """Format name → exporter instance."""
    return {name: cls() for name, cls in plugins("exporter").items()}
