"""``mmbench history`` output: the series that exist, then a text table per series and metric, or
one self-contained HTML page with a chart per series and metric (inline SVG: a time axis, the
metric's unit, change points as red dashed lines, kernel changes as grey ones)."""

from __future__ import annotations

import time

from mmbench.analysis.history import KEY_FIELDS, PVALUE, History, Series, SeriesInfo, shortest_detectable

# A backslash ending a line below joins the next line to it: long lines are cut only to fit 120
# columns, the page is the same.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>mmbench history: {{ title }}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222 }
h2 { font-size: 16px; margin: 2em 0 .2em } h3 { font-size: 14px; margin: 1.2em 0 .3em }
svg { background: #fafafa; border: 1px solid #ddd }
.cp { color: #b00 } .key { color: #555 } .note { color: #777; font-size: 12px }
table { border-collapse: collapse; font-size: 12px } td, th { padding: 1px 8px; text-align: left }
</style></head><body>
<h1>History: {{ title }}</h1>
<p>{{ nseries }} series of {{ nruns }} runs. A series keeps {{ keeps }} fixed; the kernel (release,
patches, build) labels each point. Change points: E-Divisive means, p &le; {{ pvalue }}
({{ permutations }} permutations){% if common %}. All series: {{ common }}{% endif %}.</p>
<table><tr><th>series</th><th>runs</th><th>from</th><th>to</th><th>what differs</th></tr>
{% for s in infos %}<tr><td>[{{ s.id }}]</td><td>{{ s.n }}</td><td>{{ s.first }}</td><td>{{ s.last }}</td>\
<td class="key">{{ s.differs }}</td></tr>{% endfor %}
</table>
{% for s in infos %}
<section class="series">
<h2>[{{ s.id }}] {{ s.differs or "all runs" }}</h2>
{% if s.short %}<p class="note">{{ s.short }}</p>{% endif %}
{% for m in s.metrics %}
<h3>{{ m.workload }} / {{ m.metric }}{% if m.unit %} ({{ m.unit }}){% endif %}</h3>
<svg width="{{ width }}" height="{{ height }}" viewBox="0 0 {{ width }} {{ height }}" role="img"
     aria-label="{{ m.workload }} {{ m.metric }} over time">
  <line x1="{{ left }}" x2="{{ left }}" y1="{{ top }}" y2="{{ bottom }}" stroke="#999"/>
  <line x1="{{ left }}" x2="{{ right }}" y1="{{ bottom }}" y2="{{ bottom }}" stroke="#999"/>
  {% for y, label in m.yticks %}\
<text x="{{ left - 4 }}" y="{{ y + 3 }}" font-size="10" text-anchor="end">{{ label }}</text>
  <line x1="{{ left }}" x2="{{ right }}" y1="{{ y }}" y2="{{ y }}" stroke="#eee"/>{% endfor %}
  <text x="12" y="{{ (top + bottom) / 2 }}" font-size="10" text-anchor="middle" \
transform="rotate(-90 12 {{ (top + bottom) / 2 }})">{{ m.unit or "value" }}</text>
  {% for x, label, anchor in m.xticks %}\
<text x="{{ x }}" y="{{ bottom + 14 }}" font-size="10" text-anchor="{{ anchor }}">{{ label }}</text>
  <line x1="{{ x }}" x2="{{ x }}" y1="{{ bottom }}" y2="{{ bottom + 4 }}" stroke="#999"/>{% endfor %}
  {% for x, label in m.kernel_x %}\
<line x1="{{ x }}" x2="{{ x }}" y1="{{ top }}" y2="{{ bottom }}" stroke="#aaa" stroke-dasharray="2 3">\
<title>kernel: {{ label }}</title></line>{% endfor %}
  <polyline fill="none" stroke="#2a6fdb" stroke-width="1.5" points="{{ m.points }}"/>
  {% for x, y, tip in m.dots %}\
<circle cx="{{ x }}" cy="{{ y }}" r="2.5" fill="#2a6fdb"><title>{{ tip }}</title></circle>{% endfor %}
  {% for x in m.cp_x %}\
<line x1="{{ x }}" x2="{{ x }}" y1="{{ top }}" y2="{{ bottom }}" stroke="#b00" stroke-dasharray="4 3"/>{% endfor %}
</svg>
{% if m.cps %}<table>{% for c in m.cps %}
<tr class="cp"><td>change point</td><td>{{ c.before_run }} &rarr; {{ c.after_run }}</td>
<td>{{ c.before }} &rarr; {{ c.after }}</td><td>{{ c.step }}</td>\
<td>kernel {{ c.kernels }}</td></tr>{% endfor %}</table>{% endif %}
{% endfor %}
{% if s.kernels %}<table><tr><th>kernel</th><th>from run</th></tr>\
{% for k, r in s.kernels %}<tr><td>{{ k }}</td><td>{{ r }}</td></tr>{% endfor %}</table>{% endif %}
</section>
{% endfor %}
</body></html>
"""


def _fmt(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"


def _when(t: float, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return time.strftime(fmt, time.localtime(t or 0))


def _differs(key: dict[str, str], varying: list[str]) -> str:
    return "  ".join(f"{k}={key[k] or '-'}" for k in varying)


def _common(h: History) -> str:
    if not h.series:
        return ""
    key = h.series[0].key
    return "  ".join(f"{k}={key[k]}" for k in key if k not in h.varying and key[k])


def _short_note(n: int) -> str:
    need = shortest_detectable()
    return f"{n} run(s): too few for a change point at p <= {PVALUE:g} (about {need} needed)" if n < need else ""


def render_series(h: History) -> str:
    """Which series exist (``history --series`` and the head of the text output)."""
    keeps = ", ".join(KEY_FIELDS)
    lines = [
        f"{len(h.series)} series of {sum(len(s.runs) for s in h.series)} runs (a series keeps {keeps} "
        f"fixed; the kernel labels each point; --split-by FIELD splits, --where FIELD=GLOB filters, "
        f"--fields lists fields)"
    ]
    common = _common(h)
    if common:
        lines.append(f"  all series: {common}")
    for s in h.series:
        note = _short_note(len(s.runs))
        lines.append(
            f"  [{s.series_id}] {len(s.runs):4} run(s)  {_when(s.first)} .. {_when(s.last)}  "
            f"{_differs(s.key, h.varying)}" + (f"  ({note})" if note else "")
        )
    return "\n".join(lines) + "\n"


def render_text(h: History | list[Series]) -> str:
    if isinstance(h, list):
        h = History([], h, [])
    lines = [render_series(h)] if h.series else []
    for s in h.metrics:
        unit = f" ({s.unit})" if s.unit else ""
        tag = f"[{s.series_id}] " if h.series else ""
        lines.append(f"{tag}{s.workload} / {s.metric}{unit}")
        starts = {c.index: c for c in s.change_points}
        shown_kernel = None
        for i, (name, when, v, kernel) in enumerate(zip(s.runs, s.created, s.values, s.kernels or [""] * len(s.runs))):
            if i in starts:
                c = starts[i]
                lines.append(
                    f"  ---- change point: {_fmt(c.before_mean)} -> {_fmt(c.after_mean)}"
                    f"{' ' + s.unit if s.unit else ''} "
                    f"({c.step_pct:+.2f}%) between {c.before_run} and {c.after_run}"
                    + (f"; kernel {c.before_kernel} -> {c.after_kernel}" if c.before_kernel != c.after_kernel else "")
                )
                if c.bisect:
                    lines.append(f"       find the commit: {c.bisect}")
            label = kernel if kernel != shown_kernel else ""
            shown_kernel = kernel
            lines.append(f"  {_when(when)}  {name:28} {_fmt(v):>12}  {label}".rstrip())
        lines.append("")
    n = sum(len(s.change_points) for s in h.metrics)
    lines.append(f"{len(h.series) or 1} series, {len(h.metrics)} metric series, {n} change point(s)")
    return "\n".join(lines) + "\n"


def _ticks(lo: float, hi: float) -> list[float]:
    return [lo + (hi - lo) * k / 4 for k in range(5)] if hi > lo else [lo]


def render_html(h: History | list[Series], title: str) -> str:
    from jinja2 import Environment
    from mmbench.analysis.history import PERMUTATIONS

    if isinstance(h, list):
        h = History([SeriesInfo(0, {}, sorted({r for s in h for r in s.runs}), 0, 0)], h, [])
    width, height = 720, 200
    left, right, top, bottom = 64, width - 12, 10, height - 26
    infos = []
    for info in h.series:
        metrics = []
        for s in [m for m in h.metrics if m.series_id == info.series_id]:
            lo, hi = min(s.values), max(s.values)
            span = (hi - lo) or abs(hi) or 1.0
            lo_y, hi_y = (lo, hi) if hi > lo else (lo - span / 2, hi + span / 2)
            t0, t1 = min(s.created), max(s.created)

            def x(t: float) -> float:
                return round(left + (right - left) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.5), 1)

            def y(v: float) -> float:
                return round(bottom - (bottom - top) * (v - lo_y) / (hi_y - lo_y), 1)

            fmt = "%Y-%m-%d" if t1 - t0 > 2 * 86400 else "%m-%d %H:%M" if t1 - t0 > 3600 else "%H:%M:%S"
            kernels = s.kernels or [""] * len(s.runs)
            unit = f" {s.unit}" if s.unit else ""
            metrics.append(
                {
                    "workload": s.workload,
                    "metric": s.metric,
                    "unit": s.unit,
                    "points": " ".join(f"{x(t)},{y(v)}" for t, v in zip(s.created, s.values)),
                    "dots": [
                        (x(t), y(v), f"{name} {_when(t)}: {_fmt(v)}{unit}; kernel {k}")
                        for name, t, v, k in zip(s.runs, s.created, s.values, kernels)
                    ],
                    "xticks": [
                        (x(t), _when(t, fmt), "start" if i == 0 and t1 > t0 else "end" if i == 4 else "middle")
                        for i, t in enumerate(_ticks(t0, t1))
                    ],
                    "yticks": [(y(v), _fmt(v)) for v in _ticks(lo_y, hi_y)],
                    "kernel_x": [
                        (round((x(s.created[i - 1]) + x(s.created[i])) / 2, 1), kernels[i])
                        for i in range(1, len(kernels))
                        if kernels[i] != kernels[i - 1]
                    ],
                    "cp_x": [
                        round((x(s.created[c.index - 1]) + x(s.created[c.index])) / 2, 1) for c in s.change_points
                    ],
                    "cps": [
                        {
                            "before_run": c.before_run,
                            "after_run": c.after_run,
                            "before": _fmt(c.before_mean) + unit,
                            "after": _fmt(c.after_mean) + unit,
                            "step": f"{c.step_pct:+.2f}%",
                            "kernels": c.after_kernel
                            if c.before_kernel == c.after_kernel
                            else f"{c.before_kernel} → {c.after_kernel}",
                        }
                        for c in s.change_points
                    ],
                }
            )
        firsts: list[tuple[str, str]] = []
        for m in [m for m in h.metrics if m.series_id == info.series_id][:1]:
            for name, k in zip(m.runs, m.kernels or []):
                if not firsts or firsts[-1][0] != k:
                    firsts.append((k, name))
        infos.append(
            {
                "id": info.series_id,
                "n": len(info.runs),
                "first": _when(info.first),
                "last": _when(info.last),
                "differs": _differs(info.key, h.varying),
                "short": _short_note(len(info.runs)),
                "metrics": metrics,
                "kernels": firsts,
            }
        )
    env = Environment(autoescape=True)
    return env.from_string(PAGE).render(
        infos=infos,
        title=title,
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        nseries=len(h.series),
        nruns=sum(len(s.runs) for s in h.series),
        keeps=", ".join(KEY_FIELDS),
        common=_common(h),
        pvalue=PVALUE,
        permutations=PERMUTATIONS,
    )
