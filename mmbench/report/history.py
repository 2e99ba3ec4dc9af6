"""``mmbench history`` output: a text table per metric, or one self-contained HTML page with one
chart per metric (inline SVG, change points drawn as vertical lines)."""

from __future__ import annotations

import time
from typing import Any

from mmbench.analysis.history import Series

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>mmbench history: {{ title }}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222 }
h2 { font-size: 15px; margin: 1.6em 0 .3em }
svg { background: #fafafa; border: 1px solid #ddd }
.cp { color: #b00 }
table { border-collapse: collapse; font-size: 12px } td, th { padding: 1px 8px; text-align: left }
</style></head><body>
<h1>History: {{ title }}</h1>
<p>{{ nruns }} runs, oldest first. Change points: E-Divisive means, p &le; {{ pvalue }}
({{ permutations }} permutations).</p>
{% for s in series %}
<section class="metric">
<h2>{{ s.workload }} / {{ s.metric }}</h2>
<svg width="{{ width }}" height="{{ height }}" viewBox="0 0 {{ width }} {{ height }}" role="img"
     aria-label="{{ s.workload }} {{ s.metric }} across runs">
  <polyline fill="none" stroke="#2a6fdb" stroke-width="1.5" points="{{ s.points }}"/>
  {% for x, y, name, v in s.dots %}<circle cx="{{ x }}" cy="{{ y }}" r="2.5" fill="#2a6fdb"><title>{{ name }}: {{ v }}</title></circle>{% endfor %}
  {% for x in s.cp_x %}<line x1="{{ x }}" x2="{{ x }}" y1="0" y2="{{ height }}" stroke="#b00" stroke-dasharray="4 3"/>{% endfor %}
  <text x="4" y="12" font-size="10">{{ s.hi }}</text><text x="4" y="{{ height - 4 }}" font-size="10">{{ s.lo }}</text>
</svg>
{% if s.cps %}<table>{% for c in s.cps %}
<tr class="cp"><td>change point</td><td>{{ c.before_run }} &rarr; {{ c.after_run }}</td>
<td>{{ c.before }} &rarr; {{ c.after }}</td><td>{{ c.step }}</td></tr>{% endfor %}</table>{% endif %}
</section>
{% endfor %}
</body></html>
"""


def _fmt(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"


def render_text(series: list[Series]) -> str:
    lines = []
    for s in series:
        lines.append(f"{s.workload} / {s.metric}")
        starts = {c.index: c for c in s.change_points}
        for i, (name, when, v) in enumerate(zip(s.runs, s.created, s.values)):
            if i in starts:
                c = starts[i]
                lines.append(f"  ---- change point: {_fmt(c.before_mean)} -> {_fmt(c.after_mean)} "
                             f"({c.step_pct:+.2f}%) between {c.before_run} and {c.after_run}")
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when or 0))
            lines.append(f"  {stamp}  {name:28} {_fmt(v):>12}")
        lines.append("")
    n = sum(len(s.change_points) for s in series)
    lines.append(f"{len(series)} metric(s), {n} change point(s)")
    return "\n".join(lines) + "\n"


def render_html(series: list[Series], title: str) -> str:
    from jinja2 import Environment
    from mmbench.analysis.history import PERMUTATIONS, PVALUE
    width, height, pad = 640, 160, 8
    shown: list[dict[str, Any]] = []
    for s in series:
        lo, hi = min(s.values), max(s.values)
        span = (hi - lo) or 1.0
        n = len(s.values)

        def x(i: int) -> float:
            return round(pad + (width - 2 * pad) * (i / (n - 1) if n > 1 else 0.5), 1)

        def y(v: float) -> float:
            return round(height - pad - (height - 2 * pad) * (v - lo) / span, 1)
        shown.append({
            "workload": s.workload, "metric": s.metric, "lo": _fmt(lo), "hi": _fmt(hi),
            "points": " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(s.values)),
            "dots": [(x(i), y(v), name, _fmt(v)) for i, (name, v) in enumerate(zip(s.runs, s.values))],
            "cp_x": [round((x(c.index - 1) + x(c.index)) / 2, 1) for c in s.change_points],
            "cps": [{"before_run": c.before_run, "after_run": c.after_run, "before": _fmt(c.before_mean),
                     "after": _fmt(c.after_mean), "step": f"{c.step_pct:+.2f}%"} for c in s.change_points]})
    env = Environment(autoescape=True)
    return env.from_string(PAGE).render(series=shown, title=title, width=width, height=height,
                                        nruns=len({r for s in series for r in s.runs}),
                                        pvalue=PVALUE, permutations=PERMUTATIONS)
