"""Plain-text tables in the layout of the LKML mails: the row's family letter (P primary, M
mechanism, e exploratory), row label and ``[unit]``, then ``value (  pct%)`` per run, ``*`` after a
significant primary or mechanism cell and ``~`` after an exploratory lead, ``q=`` and the minimum
detectable effect with ``--pvalues``.  Environment differences first, then warnings, then the
verdict (one line per run: mechanisms moved, outcomes better, worse or not resolved), the primary
summary (one line per outcome row: change, interval, verdict) and the mechanism summary (moved up
or down), the legend, the tables; notes last (``--convention mmtests`` of MMTests runs: MMTests'
own layout first, report/mmtests_text.py).  Colour (significant better green, worse red) only when
``options["color"]`` is set and NO_COLOR is not; the plain path needs nothing but the standard library.
"""

from __future__ import annotations

from mmbench.analysis.compare.power import mde_text

import os
from typing import Any

from mmbench.analysis.compare import Comparison, Row
from mmbench.report.base import (
    LEGEND,
    Exporter,
    PrimaryText,
    fmt_q,
    fmt_value,
    mechanism_heading,
    mechanism_texts,
    primary_heading,
    primary_texts,
    verdict_texts,
)


def _cell(r: Row, run: str, multi: bool, pvalues: bool) -> tuple[str, str, str]:
    """(value text, pct text, p text)."""
    v = fmt_value(r.values.get(run))
    if not multi:
        return v, "", ""
    pct = r.pct.get(run)
    ptxt = f"({pct:7.2f}%)" if pct is not None else "(    n/a)"
    ptxt += r.mark(run) or " "
    ptext = fmt_q(r.p.get(run)) if pvalues else ""
    mde = r.mde.get(run) if pvalues else None
    if mde is not None:
        ptext += f" mde {mde_text(mde)}"  # minimum detectable effect at 80 % power
    return v, ptxt, ptext


class TextExporter(Exporter):
    name = "text"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        if comparison.convention == "mmtests":  # MMTests' own layout (report/mmtests_text.py)
            from mmbench.report import mmtests_text

            return mmtests_text.render(comparison, options, lambda c, secs: self._render(c, options, secs))
        return self._render(comparison, options, comparison.sections)

    def _render(self, comparison: Comparison, options: dict[str, Any], sections: list) -> str:
        pvalues = bool(options.get("pvalues"))
        color = bool(options.get("color")) and not os.environ.get("NO_COLOR")
        paint = _painter() if color else None
        runs = comparison.runs
        multi = len(runs) > 1
        out: list[str] = []
        if comparison.env_diff:
            out.append("Environment differences")
            kw = max(len(k) for k, _ in comparison.env_diff)
            for k, vals in comparison.env_diff:
                out.append(f"  {k:<{kw}}  " + "  ".join(f"{n}={vals.get(n)!s}" for n in runs))
            out.append("")
        if comparison.warnings:  # what could not have been detected, before any table
            out.append("Warnings")
            out += [f"  ! {w}" for w in comparison.warnings]
            out.append("")
        if multi:
            for run, line in verdict_texts(comparison):
                out.append(f"Verdict, {run} against {comparison.baseline}: {line}")
            if verdict_texts(comparison):
                out.append("")
        if multi and comparison.primary:
            out.append(primary_heading(comparison))
            out += _summary(primary_texts(comparison))
            out.append("")
        if multi and comparison.mechanisms.lines:
            out.append(mechanism_heading(comparison))
            out += _summary(mechanism_texts(comparison))
            out.append("")
        if multi and any(sec.rows for sec in sections):
            # said once: every row's percentage is signed by its own direction
            out += list(LEGEND)
            out.append("")
        for sec in sections:
            if not sec.rows:
                continue
            sw = max(10, *(len(r.stat) for r in sec.rows))  # "Stddev.samples" is wider than "Amean"
            labels = [f"{_tag(r, multi)}{r.stat:<{sw}} {r.metric}{_unit(r)}" for r in sec.rows]
            lw = max(len(x) for x in labels + [sec.title])
            cells = [[_cell(r, n, multi, pvalues) for n in runs] for r in sec.rows]
            extra = 12 if multi else 0  # " (%7.2f%%)" and the significance mark
            vw = [max([len(n) - extra] + [len(c[i][0]) for c in cells]) for i, n in enumerate(runs)]
            pw = [max(len(c[i][2]) for c in cells) for i in range(len(runs))]
            out.append(sec.title)
            out.append(
                (
                    " " * lw
                    + "".join(
                        "  " + f"{n:>{vw[i] + extra}}" + (" " * (pw[i] + 1) if pw[i] else "")
                        for i, n in enumerate(runs)
                    )
                ).rstrip()
            )
            for r, label, rc in zip(sec.rows, labels, cells):
                line = f"{label:<{lw}}"
                for i, (v, p, pv) in enumerate(rc):
                    cell = f"{v:>{vw[i]}}" + (f" {p}" if multi else "") + (f" {pv:<{pw[i]}}" if pw[i] else "")
                    if paint and r.mark(runs[i]) and r.family != "mechanism":
                        pct = r.pct.get(runs[i])
                        cell = paint(cell, pct is not None and pct > 0)
                    line += "  " + cell
                out.append(line.rstrip())
            row_notes = [f"  {r.stat} {r.metric}: {r.note}" for r in sec.rows if r.note]
            out += row_notes
            out.append("")
        if comparison.notes:
            out.append("Notes")
            out += [f"  - {n}" for n in comparison.notes]
        return "\n".join(out).rstrip("\n") + "\n"


def _summary(lines: list[PrimaryText]) -> list[str]:
    """The lines of a declared family's summary."""
    out = []
    ww = max(len(t.what) for t in lines)
    for t in lines:
        if not t.run:
            out.append(f"  {t.what:<{ww}}  {t.verdict}")
            continue
        unit = f" {t.unit}" if t.unit and t.unit != "%" else ("%" if t.unit == "%" else "")
        parts = [f"{t.run}: {t.value} vs {t.base}{unit}", f"({t.pct})" if t.pct else "", t.ci, t.q, t.verdict]
        out.append(f"  {t.what:<{ww}}  " + "  ".join(x for x in parts if x))
    return out


def _tag(r: Row, multi: bool) -> str:
    """The row's family letter: P primary, M mechanism, e exploratory, blank descriptive
    (comparisons only)."""
    if not multi:
        return ""
    return {"primary": "P ", "mechanism": "M ", "exploratory": "e "}.get(r.family or "", "  ")


def _unit(r: Row) -> str:
    """The row's unit after its name, unless the name already ends with it ("Free memory (MiB)")."""
    unit = r.unit.strip()
    if not unit or r.metric.endswith((f"({unit})", f" {unit}")):
        return ""
    return f" [{unit}]"


def _painter():
    from rich.style import Style  # only on the colour path

    good, bad = Style(color="green", bold=True), Style(color="red", bold=True)
    return lambda text, better: (good if better else bad).render(text)
