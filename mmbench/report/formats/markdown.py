"""Markdown: the verdict, the primary summary (one line per outcome row: change, interval,
verdict) and the mechanism summary (moved up or down) first,
then one table per section with the row's family, a column per run with ``value (pct%)``, bold +
``*`` when a primary row is significant, ``~`` for an exploratory lead; q-values and intervals
with ``--pvalues``."""

from __future__ import annotations

from typing import Any

from mmbench.analysis.compare import Comparison
from mmbench.report.base import (
    LEGEND,
    Exporter,
    PrimaryText,
    fmt_mmtests,
    fmt_pct,
    fmt_q,
    fmt_value,
    mechanism_heading,
    mechanism_texts,
    primary_heading,
    primary_texts,
    verdict_texts,
)


def _esc(s: str) -> str:
    return str(s).replace("|", "\\|")


def _table(head: str, lines: list[PrimaryText]) -> list[str]:
    out = [
        f"| {head} | run | value | baseline | change | interval | q | verdict |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for t in lines:
        verdict = _esc(t.verdict).replace("*", "\\*")
        verdict = f"**{verdict}**" if t.cls else verdict
        out.append(
            f"| {_esc(t.what)} | {_esc(t.run)} | {_esc(t.value)} | {_esc(t.base)} | {_esc(t.pct)} | "
            f"{_esc(t.ci)} | {_esc(t.q)} | {verdict} |"
        )
    return out + [""]


class MarkdownExporter(Exporter):
    name = "markdown"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        pvalues = bool(options.get("pvalues"))
        runs = comparison.runs
        multi = len(runs) > 1
        out: list[str] = []
        if comparison.env_diff:
            out += [
                "### Environment differences",
                "",
                "| key | " + " | ".join(map(_esc, runs)) + " |",
                "|---|" + "---|" * len(runs),
            ]
            out += [
                f"| {_esc(k)} | " + " | ".join(_esc(str(v.get(n))) for n in runs) + " |" for k, v in comparison.env_diff
            ]
            out.append("")
        if comparison.warnings:
            out += ["### Warnings", ""] + [f"- **{_esc(w)}**" for w in comparison.warnings] + [""]
        if multi and verdict_texts(comparison):
            out += (
                ["### Verdict", ""]
                + [
                    f"- **{_esc(run)}** against {_esc(comparison.baseline)}: {_esc(line)}"
                    for run, line in verdict_texts(comparison)
                ]
                + [""]
            )
        if multi and comparison.primary:
            out += [f"### {_esc(primary_heading(comparison))}", ""] + _table("primary row", primary_texts(comparison))
        if multi and comparison.mechanisms.lines:
            out += [f"### {_esc(mechanism_heading(comparison))}", ""] + _table(
                "mechanism row", mechanism_texts(comparison)
            )
        if multi and any(sec.rows for sec in comparison.sections):
            out += [_esc(" ".join(f"{x}." for x in LEGEND)), ""]
        value = fmt_mmtests if comparison.convention == "mmtests" else fmt_value  # MMTests' %.2f
        for sec in comparison.sections:
            if not sec.rows:
                continue
            out += [
                f"### {_esc(sec.title)}",
                "",
                "| family | stat | metric | unit | " + " | ".join(map(_esc, runs)) + " |",
                "|---|---|---|---|" + "---:|" * len(runs),
            ]
            for r in sec.rows:
                cells = []
                for n in runs:
                    c = value(r.values.get(n))
                    if multi:
                        c += f" ({fmt_pct(r.pct.get(n))})"
                    if r.significant.get(n):
                        c = f"**{c}** \\*"
                    elif r.lead.get(n):
                        c += " ~"
                    if pvalues and r.p.get(n) is not None:
                        c += f" {fmt_q(r.p.get(n))}"
                    ci = r.ci.get(n)
                    if pvalues and ci is not None:
                        c += f" CI [{ci[0]:.3f}, {ci[1]:.3f}]"
                    cells.append(c)
                out.append(
                    f"| {r.family or ''} | {_esc(r.stat)} | {_esc(r.metric)} | {_esc(r.unit)} | "
                    + " | ".join(cells)
                    + " |"
                )
            notes = [f"- {_esc(r.stat)} {_esc(r.metric)}: {_esc(r.note)}" for r in sec.rows if r.note]
            if notes:
                out += [""] + notes
            out.append("")
        if comparison.notes:
            out += ["### Notes", ""] + [f"- {_esc(n)}" for n in comparison.notes]
        return "\n".join(out).rstrip("\n") + "\n"
