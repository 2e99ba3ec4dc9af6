"""Workload plugins: one module each (C sources beside them).  ``registry()`` finds them all."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from mmbench.workloads.base import Workload


LOAD_ERRORS: dict[str, str] = {}


@cache
def registry() -> dict[str, type[Workload]]:
    """Plugin name → class, for every module of this package defining a Workload subclass."""
    found: dict[str, type[Workload]] = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("_") or mod.name == "base":
            continue
        try:
            module = importlib.import_module(f"{__name__}.{mod.name}")
        except Exception as e:  # one broken plugin must not take the others down; said by `list`
            LOAD_ERRORS[mod.name] = f"{type(e).__name__}: {e}"
            continue
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Workload) and obj is not Workload and obj.name:
                found[obj.name] = obj
    return dict(sorted(found.items()))
