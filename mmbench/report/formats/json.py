"""JSON in the ``mmbench-compare/1`` shape (see Comparison.to_dict; NaN → null).

Laid out one row per line: json's C encoder writes each piece (``indent=`` would switch to its
pure-Python encoder, most of a 20-run ``compare --format json``'s time), and the result still
reads and diffs line by line."""

from __future__ import annotations

import json as _json
from typing import Any

from mmbench.analysis.compare import Comparison
from mmbench.report.base import Exporter

_encode = _json.JSONEncoder(allow_nan=False, ensure_ascii=True).encode  # compact: the C encoder


def layout(document: dict[str, Any]) -> str:
    """``document`` as JSON: one key per line, list items one per line, and each section's rows
    one per line."""
    lines = []
    keys = list(document)
    for i, key in enumerate(keys):
        value = document[key]
        if key == "sections" and isinstance(value, list) and value:
            text = "[\n" + ",\n".join(_section(s) for s in value) + "]"
        elif isinstance(value, list) and value:
            text = "[\n" + ",\n".join("  " + _encode(v) for v in value) + "]"
        else:
            text = _encode(value)
        lines.append(f" {_encode(key)}: {text}" + ("," if i < len(keys) - 1 else ""))
    return "{\n" + "\n".join(lines) + "\n}\n"


def _section(section: Any) -> str:
    if not isinstance(section, dict) or not isinstance(section.get("rows"), list):
        return "  " + _encode(section)
    head = ", ".join(f"{_encode(k)}: {_encode(v)}" for k, v in section.items() if k != "rows")
    rows = ",\n".join("   " + _encode(r) for r in section["rows"])
    return "  {" + head + (", " if head else "") + '"rows": [' + ("\n" + rows if rows else "") + "]}"


class JsonExporter(Exporter):
    name = "json"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        return layout(comparison.to_dict())
