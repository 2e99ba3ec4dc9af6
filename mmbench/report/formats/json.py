"""JSON in the ``mmbench-compare/1`` shape (see Comparison.to_dict; NaN → null)."""

from __future__ import annotations

import json as _json
from typing import Any

from mmbench.analysis.compare import Comparison
from mmbench.report.base import Exporter


class JsonExporter(Exporter):
    name = "json"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        return _json.dumps(comparison.to_dict(), indent=1, allow_nan=False) + "\n"
