"""The exporter interface: one short module per output format in ``report/formats/``, found by
``mmbench.plugins.exporters()``.

An exporter has a ``name`` (the ``--format`` value) and ``render(comparison, options) -> str``;
``options`` is a dict with ``pvalues``, ``ratio`` and ``color`` (bools).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from mmbench.analysis.compare import Comparison

class Exporter:
    name: ClassVar[str] = ""

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        raise NotImplementedError


def fmt_value(v: float | None) -> str:
    """Numbers as the tables show them: 2 decimals (3 significant digits below 1 so a small
    latency does not print as 0.00), '-' for undefined."""
    if v is None or not math.isfinite(v):
        return "-"
    if v != 0 and abs(v) < 0.995:   # 0.9998 is "1.00", not "1"
        return f"{v:.3g}"
    return f"{v:.2f}"


def fmt_pct(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v:.2f}%"


def fmt_p(v: float | None) -> str:
    return "" if v is None else f"p={v:.3g}"
