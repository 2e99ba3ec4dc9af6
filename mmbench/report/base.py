"""The exporter interface: one short module per output format in ``report/formats/``, found by
``mmbench.plugins.exporters()``.

An exporter has a ``name`` (the ``--format`` value) and ``render(comparison, options) -> str``;
``options`` is a dict with ``pvalues``, ``ratio`` and ``color`` (bools).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from mmbench.analysis.compare import Comparison
from mmbench.analysis.compare.model import MDE_SHOWN_MAX, PrimaryLine
from mmbench.analysis.compare.power import mde_text


class Exporter:
    name: ClassVar[str] = ""

    def render(self, comparison: Comparison, options: dict[str, Any]) -> str:
        raise NotImplementedError


def fmt_value(v: float | None) -> str:
    """Numbers as the tables show them: 2 decimals (3 significant digits below 1 so a small
    latency does not print as 0.00), '-' for undefined."""
    if v is None or not math.isfinite(v):
        return "-"
    if v != 0 and abs(v) < 0.995:  # 0.9998 is "1.00", not "1"
        return f"{v:.3g}"
    return f"{v:.2f}"


def fmt_pct(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v:.2f}%"


def fmt_p(v: float | None) -> str:
    return "" if v is None else f"p={v:.3g}"


def fmt_q(v: float | None) -> str:
    """A q-value (the Benjamini–Hochberg adjusted p of the row's family)."""
    return "" if v is None else f"q={v:.3g}"


FAMILY_TAG = {"primary": "P", "mechanism": "M", "exploratory": "e", None: " "}
LEGEND = (
    "% vs the baseline: positive = better (each row by its own direction); M rows: the raw change (+ up, - down)",
    "P primary row (the suite's declared outcomes): * = q < 0.05; only these gate --fail-on-regression",
    "M mechanism row (the suite's declared mechanisms, a family of its own): * = moved, q < 0.05; "
    "up or down, never better or worse, never gating",
    "e exploratory row (a family of its own): ~ = q < 0.05, a lead to follow, never gating",
    "* without q: judged deterministic (constant at the row's resolution in each run, more than it apart)",
    "no letter: descriptive, not tested; q: Benjamini-Hochberg adjusted p within the row's family; "
    "intervals: per row, 95%, not adjusted for the other rows",
    "mde (--pvalues): the true change the row's own test would mark 80% of the time, at its family's level",
)


@dataclass
class PrimaryText:
    """One line of the primary summary, as every format shows it."""

    what: str  # "Compaction stalls (vmstat: thpavail)"
    run: str
    base: str  # baseline value
    value: str  # the run's value
    unit: str
    pct: str  # "-12.30%" or ""
    ci: str  # "ratio 95% CI [0.81, 0.93]" or ""
    q: str  # "q=0.012" or ""
    verdict: str  # "* better", "no significant change (...)", "no test: ..."
    cls: str  # "good" | "bad" | "" (HTML colour)


def fmt_mmtests(v: float | None) -> str:
    """A number as MMTests prints one (``%.2f``); '-' for undefined."""
    return "-" if v is None or not math.isfinite(v) else f"{v:.2f}"


def primary_texts(cmp: Comparison) -> list[PrimaryText]:
    """The primary summary of a comparison: one line per primary row and run, entries in the
    order the suite declares them (numbers as MMTests prints them under ``--convention mmtests``)."""
    return family_texts(cmp, cmp.primary, mechanism=False)


def mechanism_texts(cmp: Comparison) -> list[PrimaryText]:
    """The mechanism summary: one line per declared mechanism row and run, moved up or down."""
    return family_texts(cmp, cmp.mechanisms.lines, mechanism=True)


def family_texts(cmp: Comparison, lines: list[PrimaryLine], mechanism: bool) -> list[PrimaryText]:
    value = fmt_mmtests if cmp.convention == "mmtests" else fmt_value
    out = []
    mark = "marked" if mechanism else "starred"
    for pl in lines:
        r = pl.row
        if r is None:
            out.append(
                PrimaryText(
                    pl.entry,
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "no such row in this comparison (these runs did not record it)",
                    "",
                )
            )
            continue
        n = pl.run
        b, v = r.values.get(cmp.baseline), r.values.get(n)
        pct = r.pct.get(n)
        ci = r.ci.get(n)
        q = r.p.get(n)
        cls = ""
        det = r.judged.get(n) == "deterministic"
        if r.significant.get(n):
            if mechanism:
                verdict = f"* moved {'up' if (v or 0) > (b or 0) else 'down'}"
            else:
                better = (
                    (pct > 0)
                    if pct is not None
                    else (v is not None and b is not None and ((v > b) == (r.better == "higher")))
                )
                verdict = f"* {'better' if better else 'worse'}"
                cls = "good" if better else "bad"
            if det:
                verdict += f" ({r.why.get(n, 'judged deterministic')})"
        elif n in r.why:
            verdict = r.why[n]
        elif q is None:
            verdict = "not tested"
        else:
            mde = r.mde.get(n)
            verdict = "no significant change" + (
                f" (a true change of {mde_text(mde, '.3g')} would be {mark} 80% of the time)"
                if mde is not None and abs(mde) <= MDE_SHOWN_MAX
                else " (these iterations could not detect any plausible change)"
                if mde is not None
                else f" ({r.mde_why[n]})"
                if n in r.mde_why
                else ""
            )
        where = pl.section or ""
        what = f"{r.metric}" + (f" {r.stat}" if r.stat.startswith("P") else "") + (f" ({where})" if where else "")
        out.append(
            PrimaryText(
                what,
                n,
                value(b),
                value(v),
                r.unit,
                fmt_pct(pct) if pct is not None else "",
                f"ratio 95% CI [{ci[0]:.3g}, {ci[1]:.3g}]" if ci is not None else "",
                fmt_q(q),
                verdict + (f" [{_TEST_NAMES.get(r.test, r.test)}]" if r.test and q is not None else ""),
                cls,
            )
        )
    return out


_TEST_NAMES = {
    "welch": "Welch t-test",
    "count-exact": "exact permutation test of counts",
    "count": "count test: pooled and Hsu t",
    "deterministic": "deterministic",
}


def primary_heading(cmp: Comparison) -> str:
    m = cmp.family_sizes.get("primary", 0)
    how = (
        "chosen at compare time with --primary"
        if cmp.primary_chosen_at_compare
        else f"declared; {cmp.primary_source}"
        if cmp.primary_source
        else "declared"
    )
    return (
        f"Primary rows (the outcomes, {len(cmp.primary_entries)} {how}; one Benjamini-Hochberg family of {m} "
        f"test(s); --fail-on-regression reads only these)"
    )


def mechanism_heading(cmp: Comparison) -> str:
    m = cmp.family_sizes.get("mechanism", 0)
    mf = cmp.mechanisms
    how = (
        "chosen at compare time with --mechanisms"
        if mf.chosen_at_compare
        else f"declared; {mf.source}"
        if mf.source
        else "declared"
    )
    return (
        f"Mechanism rows ({len(mf.entries)} {how}; a Benjamini-Hochberg family of its own, {m} test(s); "
        f"moved up or down, never better or worse; never gate)"
    )


def verdict_texts(cmp: Comparison) -> list[tuple[str, str]]:
    """(run, verdict line) for every compared run that has declared rows."""
    if not (cmp.primary or cmp.mechanisms.lines):
        return []
    return [(n, cmp.verdicts[n]) for n in cmp.runs[1:] if cmp.verdicts.get(n)]
