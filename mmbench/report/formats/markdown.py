"""Markdown tables: one per section, a column per run with ``value (pct%)``, bold + ``*`` when
significant; p-values and CIs with ``--pvalues``."""

from __future__ import annotations

from typing import Any

from mmbench.analysis.compare import Comparison
from mmbench.report.base import Exporter, fmt_p, fmt_pct, fmt_value


def _esc(s: str) -> str:
    return str(s).replace("|", "\\|")


class MarkdownExporter(Exporter):
    name = "markdown"

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        pvalues = bool(options.get("pvalues"))
        runs = comparison.runs
        multi = len(runs) > 1
        out: list[str] = []
        if comparison.env_diff:
            out += ["### Environment differences", "", "| key | " + " | ".join(map(_esc, runs)) + " |",
                    "|---|" + "---|" * len(runs)]
            out += [f"| {_esc(k)} | " + " | ".join(_esc(str(v.get(n))) for n in runs) + " |"
                    for k, v in comparison.env_diff]
            out.append("")
        if comparison.warnings:
            out += ["### Warnings", ""] + [f"- **{_esc(w)}**" for w in comparison.warnings] + [""]
        for sec in comparison.sections:
            if not sec.rows:
                continue
            out += [f"### {_esc(sec.title)}", "",
                    "| stat | metric | unit | " + " | ".join(map(_esc, runs)) + " |",
                    "|---|---|---|" + "---:|" * len(runs)]
            for r in sec.rows:
                cells = []
                for n in runs:
                    c = fmt_value(r.values.get(n))
                    if multi:
                        c += f" ({fmt_pct(r.pct.get(n))})"
                    if r.significant.get(n):
                        c = f"**{c}** \\*"
                    if pvalues and r.p.get(n) is not None:
                        c += f" {fmt_p(r.p.get(n))}"
                    ci = r.ci.get(n)
                    if pvalues and ci is not None:
                        c += f" CI [{ci[0]:.3f}, {ci[1]:.3f}]"
                    cells.append(c)
                out.append(f"| {_esc(r.stat)} | {_esc(r.metric)} | {_esc(r.unit)} | " + " | ".join(cells) + " |")
            notes = [f"- {_esc(r.stat)} {_esc(r.metric)}: {_esc(r.note)}" for r in sec.rows if r.note]
            if notes:
                out += [""] + notes
            out.append("")
        if comparison.notes:
            out += ["### Notes", ""] + [f"- {_esc(n)}" for n in comparison.notes]
        return "\n".join(out).rstrip("\n") + "\n"
