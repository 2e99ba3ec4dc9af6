"""The exporter interface: one short module per output format, found by ``exporters()``.

An exporter has a ``name`` (the ``--format`` value) and ``render(comparison, options) -> str``;
``options`` is a dict with ``pvalues``, ``ratio`` and ``color`` (bools).
"""

from __future__ import annotations

import importlib
import math
from functools import cache
from typing import Any, ClassVar

from mmbench.analysis.compare import Comparison

FORMAT_MODULES = ("text", "markdown", "csv", "json")


class Exporter:
    name: ClassVar[str] = ""

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        raise NotImplementedError


@cache
def exporters() -> dict[str, Exporter]:
    """Format name → exporter instance."""
    found: dict[str, Exporter] = {}
    for mod in FORMAT_MODULES:
        module = importlib.import_module(f"mmbench.report.{mod}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Exporter) and obj is not Exporter and obj.name:
                found[obj.name] = obj()
    return found


def fmt_value(v: float | None) -> str:
    """Numbers as the tables show them: 2 decimals (3 significant digits below 1 so a small
    latency does not print as 0.00), '-' for undefined."""
    if v is None or not math.isfinite(v):
        return "-"
    if v != 0 and abs(v) < 1:
        return f"{v:.3g}"
    return f"{v:.2f}"


def fmt_pct(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v:.2f}%"


def fmt_p(v: float | None) -> str:
    return "" if v is None else f"p={v:.3g}"
