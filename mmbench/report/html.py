"""The self-contained HTML report (``mmbench report -o FILE.html RUN...``).

One file, nothing fetched: the style sheet, the chart script (``templates/report.js``, a small
SVG renderer) and the chart data (inline JSON) are all in the page; a Content-Security-Policy
forbids any network access.  The page is a jinja2 template with autoescaping: every string from
the store (run names, kernel strings, settings, suite text, notes) is escaped, and the chart data
is JSON with ``<``, ``>`` and ``&`` written as ``\\u003c``-style escapes so it cannot close its
``<script>`` element; the script only ever inserts text with ``textContent``.

Contents: runs (when, where: host, kernel), environment differences, every comparison table of
:func:`mmbench.analysis.compare.build_comparison` (significant cells green/red by the sign of the
percentage, adjusted p and CI on hover), the figures of :mod:`mmbench.report.figures`
(distributions, monitor time series, stall latency CDFs), IRQs-off offenders, the suites as run
and the comparison's notes.  Rendering is cheap (no plotting library): Python writes JSON, the
browser draws.
"""

from __future__ import annotations

import json
import time
from functools import cache
from pathlib import Path
from typing import Any

from mmbench import __version__
from mmbench.analysis.compare import Comparison, Row, build_comparison
from mmbench.report import figures as figs
from mmbench.report.base import (
    LEGEND,
    fmt_pct,
    fmt_value,
    mechanism_heading,
    mechanism_texts,
    primary_heading,
    primary_texts,
    verdict_texts,
)
from mmbench.model.results import RunRecord

TEMPLATES = Path(__file__).parent / "templates"
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
OPEN_KINDS = ("workload", "duration", "ratio")


def json_for_script(data: Any) -> str:
    """JSON that is safe inside ``<script>``: no ``<``, ``>``, ``&`` or line separators appear
    literally (they are written as JSON unicode escapes, which JSON.parse reads back)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


@cache
def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _took(a: float | None, b: float | None) -> str:
    if not a or not b or b < a:
        return ""
    s = b - a
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def _description(run: RunRecord) -> str:
    try:
        meta = json.loads((Path(run.path) / "run.json").read_text()) if run.path else {}
    except (OSError, ValueError):
        return ""
    d = meta.get("description", "")
    note = meta.get("note", "")
    return f"{d} ({note})" if note else str(d)


def _run_info(run: RunRecord, name: str, color: str) -> dict[str, Any]:
    fp = run.fingerprint or {}
    kernel = fp.get("kernel") if isinstance(fp.get("kernel"), dict) else {}
    return {
        "name": name,
        "status": run.status,
        "created": _when(run.created),
        "finished": _when(run.finished),
        "took": _took(run.created, run.finished),
        "host": str(fp.get("host", "")),
        "kernel": str(kernel.get("release", "")),
        "kernel_version": str(kernel.get("version", "")),
        "settings": ", ".join(f"{k}={v}" for k, v in (run.settings or {}).items()) or "none",
        "description": _description(run),
        "suite_text": run.suite_text,
        "suite_hash": run.suite_hash[:12],
        "color": color,
    }


def _cell(row: Row, run: str, multi: bool, base: str) -> dict[str, str]:
    pct = row.pct.get(run) if multi else None
    cls = ""
    if multi and row.significant.get(run) and row.family != "mechanism":  # a mechanism is neither
        cls = "good" if pct is not None and pct > 0 else ("bad" if pct is not None and pct < 0 else "")
    tips = []
    p = row.p.get(run)
    if p is not None:
        fam = row.family or ""
        tips.append(
            f"q={p:.3g} (Benjamini-Hochberg adjusted within the {fam} family)"
            + (", significant" if row.significant.get(run) else ", a lead (exploratory)" if row.lead.get(run) else "")
        )
    if row.why.get(run):
        tips.append(row.why[run])
    ci = row.ci.get(run)
    if ci is not None:
        tips.append(f"95% CI of {run}/{base}: [{ci[0]:.4g}, {ci[1]:.4g}]")
    mde = row.mde.get(run)
    if mde is not None:
        tips.append(
            f"minimum detectable effect: a true change of {mde:+.1f}% is marked 80% of the time "
            f"(this row's test, at its family's level)"
        )
    return {
        "value": fmt_value(row.values.get(run)),
        "pct": fmt_pct(pct) if multi and run != base else "",
        "cls": cls,
        "title": "; ".join(tips),
        "mark": row.mark(run) if multi else "",
    }


def _sections(cmp: Comparison) -> list[dict[str, Any]]:
    multi = len(cmp.runs) > 1
    out = []
    for i, s in enumerate(cmp.sections):
        if not s.rows:
            continue
        rows = [
            {
                "stat": r.stat,
                "metric": r.metric,
                "unit": r.unit,
                "note": r.note,
                "family": r.family or "",
                "cells": [_cell(r, n, multi, cmp.baseline) for n in cmp.runs],
            }
            for r in s.rows
        ]
        nsig = sum(1 for r in s.rows for n in cmp.runs[1:] if r.significant.get(n))
        out.append(
            {
                "id": f"sec-{i}",
                "title": s.title,
                "kind": s.kind,
                "open": s.kind in OPEN_KINDS,
                "rows": rows,
                "nsig": nsig,
            }
        )
    return out


def _groups(figures: list[figs.Figure], group: str) -> list[dict[str, Any]]:
    out: dict[str, list[dict[str, str]]] = {}
    for f in figures:
        if f.group == group:
            out.setdefault(f.workload, []).append({"id": f.id, "title": f.title, "note": f.note})
    return [{"workload": w, "figures": fs} for w, fs in out.items()]


def _dedupe_ids(figures: list[figs.Figure]) -> None:
    seen: dict[str, int] = {}
    for f in figures:
        k = seen.get(f.id, 0)
        seen[f.id] = k + 1
        if k:
            f.id = f"{f.id}-{k}"


def render_report(
    runs: list[RunRecord],
    comparison: Comparison | None = None,
    primary: list[str] | None = None,
    mechanisms: list[str] | None = None,
) -> str:
    """The report page as a string (``write_report`` writes it); ``primary``/``mechanisms``: the
    declared families chosen at report time (``report --primary``)."""
    cmp = comparison or build_comparison(runs, pvalues=True, primary=primary, mechanisms=mechanisms)
    names = list(cmp.runs)
    skipped: list[str] = []
    figures = figs.collect(runs, names, skipped)
    _dedupe_ids(figures)
    data = {"runs": names, "colors": COLORS, "figures": [f.to_dict() for f in figures]}
    from markupsafe import Markup

    ctx = {
        "run_names": names,
        "generated": _when(time.time()),
        "version": __version__,
        "runs": [_run_info(r, n, COLORS[i % len(COLORS)]) for i, (r, n) in enumerate(zip(runs, names))],
        "env_diff": [
            (k, ["-" if vals.get(n) is None else str(vals.get(n)) for n in names]) for k, vals in cmp.env_diff
        ],
        "sections": _sections(cmp),
        "dist_groups": _groups(figures, "distribution"),
        "monitor_groups": _groups(figures, "monitor"),
        "stall_groups": _groups(figures, "stalls"),
        "zero_series": ", ".join(skipped),
        "irqsoff": figs.irqsoff_tables(runs, names),
        "notes": list(cmp.notes),
        "warnings": list(cmp.warnings),
        "primary_heading": primary_heading(cmp) if cmp.primary else "",
        "primary": [t.__dict__ for t in primary_texts(cmp)] if len(cmp.runs) > 1 else [],
        "mechanism_heading": mechanism_heading(cmp) if cmp.mechanisms.lines else "",
        "mechanisms": [t.__dict__ for t in mechanism_texts(cmp)] if len(cmp.runs) > 1 else [],
        "verdicts": verdict_texts(cmp) if len(cmp.runs) > 1 else [],
        "baseline": cmp.baseline,
        "legend": list(LEGEND),
        "nfigures": len(figures),
        "css": Markup((TEMPLATES / "report.css").read_text()),
        "js": Markup(_safe_script((TEMPLATES / "report.js").read_text())),
        "data_json": Markup(json_for_script(data)),
    }
    return _env().get_template("report.html.j2").render(**ctx)


def _safe_script(js: str) -> str:
    if "</script" in js.lower():  # our own file; never let it end its element early
        raise ValueError("report.js must not contain '</script'")
    return js


def write_report(
    runs: list[RunRecord], path: str | Path, primary: list[str] | None = None, mechanisms: list[str] | None = None
) -> str:
    """Write the self-contained HTML report of ``runs`` (the first is the baseline) to ``path``
    (a regular file, or ``-`` for stdout: report/output.py); returns where it went."""
    from mmbench.report.output import write_output

    return write_output(str(path), render_report(runs, primary=primary, mechanisms=mechanisms))
