"""Workload plugins: one module each (C sources beside them).  ``registry()`` finds them all."""

from __future__ import annotations

from functools import cache

from mmbench.plugins import discover
from mmbench.workloads.base import Workload

LOAD_ERRORS: dict[str, str] = {}


@cache
def registry() -> dict[str, type[Workload]]:
    """Plugin name → class, for every module of this package defining a Workload subclass."""
    return discover(__name__, __path__, (Workload,), LOAD_ERRORS)
