"""CSV: one line per (section, row, run) — long format, easy to load in a spreadsheet."""

from __future__ import annotations

import csv as _csv
import io
from typing import Any

from mmbench.analysis.compare import Comparison
from mmbench.report.base import Exporter

# "p" is the q-value (Benjamini-Hochberg within the row's family); "family": primary, mechanism,
# exploratory or empty (descriptive); "lead": an exploratory q < 0.05 ("~", never gating); a
# mechanism row has no better direction (empty) and its pct is the raw change
COLUMNS = [
    "section",
    "metric",
    "stat",
    "unit",
    "better",
    "run",
    "value",
    "pct",
    "significant",
    "p",
    "ci_lo",
    "ci_hi",
    "note",
    "family",
    "lead",
]


def _n(v: float | None) -> str:
    return "" if v is None else repr(float(v))


class CsvExporter(Exporter):
    name = "csv"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        buf = io.StringIO()
        w = _csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for sec in comparison.sections:
            for r in sec.rows:
                for n in comparison.runs:
                    ci = r.ci.get(n)
                    w.writerow(
                        [
                            sec.title,
                            r.metric,
                            r.stat,
                            r.unit,
                            "" if r.family == "mechanism" else r.better,
                            n,
                            _n(r.values.get(n)),
                            _n(r.pct.get(n)),
                            "1" if r.significant.get(n) else "0",
                            _n(r.p.get(n)),
                            _n(ci[0]) if ci else "",
                            _n(ci[1]) if ci else "",
                            r.note,
                            r.family or "",
                            "1" if r.lead.get(n) else "0",
                        ]
                    )
        return buf.getvalue()
