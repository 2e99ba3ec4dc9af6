"""Monitor plugins: one module each.  ``registry()`` finds them all."""

from __future__ import annotations

from functools import cache

from mmbench.monitors.base import Monitor, SamplingMonitor
from mmbench.plugins import discover

LOAD_ERRORS: dict[str, str] = {}


@cache
def registry() -> dict[str, type[Monitor]]:
    """Monitor name → class, for every module of this package defining a Monitor subclass."""
    return discover(__name__, __path__, (Monitor, SamplingMonitor), LOAD_ERRORS)
