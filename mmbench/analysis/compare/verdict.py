"""One line per compared run that puts the declared families together: which mechanisms moved
(up or down) and what became of each outcome (better, worse, or not resolved at this n with the
change it could have seen), e.g. "mechanism Compaction stalls moved down (413.2 -> 0, q=0.001);
outcome THP fault alloc not resolved at n=5 (MDE -55%)".  A mechanism that moved beside outcomes
that did not is the case a reader would otherwise misread as an improvement."""

from __future__ import annotations

import math

from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import MDE_SHOWN_MAX, Comparison, PrimaryLine, Row


def _v(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.4g}"


def _name(r: Row) -> str:
    return r.metric + (f" {r.stat}" if r.stat.startswith("P") else "")


def _n(r: Row, run: str) -> str:
    got = r.n.get(run)
    if not got:
        return ""
    nb, nn = got
    return f" at n={nb}" if nb == nn else f" at n={nb} vs {nn}"


def _q(r: Row, run: str) -> str:
    if r.judged.get(run) == "deterministic":
        return "judged deterministic"
    q = r.p.get(run)
    return f"q={q:.2g}" if q is not None else ""


def _mde(r: Row, run: str) -> str:
    mde = r.mde.get(run)
    if mde is None:
        why = r.mde_why.get(run)
        return f" ({why})" if why else ""
    if abs(mde) > MDE_SHOWN_MAX:
        return " (these iterations could not detect any plausible change)"
    return f" (MDE {mde:+.3g}%)"


def _rows(lines: list[PrimaryLine], run: str) -> list[Row]:
    out: list[Row] = []
    for pl in lines:
        if pl.row is not None and pl.run == run and all(pl.row is not r for r in out):
            out.append(pl.row)
    return out


def verdict_line(ctx: Context, cmp: Comparison, run: str) -> str:
    """The verdict of ``run`` against the baseline (docs/reports.md, "Verdict")."""
    parts: list[str] = []
    mech = _rows(cmp.mechanisms.lines, run)
    moved = []
    for r in mech:
        if r.significant.get(run):
            b, v = r.values.get(cmp.baseline), r.values.get(run)
            way = "up" if (v or 0) > (b or 0) else "down"
            how = ", ".join(x for x in (f"{_v(b)} -> {_v(v)}", _q(r, run)) if x)
            moved.append(f"mechanism {_name(r)} moved {way} ({how})")
    if moved:
        parts += moved
    elif mech:
        parts.append(f"no declared mechanism moved ({len(mech)} row{'s' if len(mech) > 1 else ''})")
    outcomes = _rows(cmp.primary, run)
    for r in outcomes:
        b, v = r.values.get(cmp.baseline), r.values.get(run)
        if r.significant.get(run):
            pct = r.pct.get(run)
            better = (pct > 0) if pct is not None else ((v or 0) > (b or 0)) == (r.better == "higher")
            how = ", ".join(
                x for x in (f"{_v(b)} -> {_v(v)}", f"{pct:+.1f}%" if pct is not None else "", _q(r, run)) if x
            )
            parts.append(f"outcome {_name(r)} {'better' if better else 'worse'} ({how})")
        elif r.p.get(run) is not None:
            parts.append(f"outcome {_name(r)} not resolved{_n(r, run)}{_mde(r, run)}")
        elif run in r.why:
            parts.append(f"outcome {_name(r)}: {r.why[run]}")
        else:
            parts.append(f"outcome {_name(r)} not tested")
    if not outcomes:
        parts.append(
            "no outcome row declared (--primary names them)"
            if not cmp.primary_entries
            else "no declared outcome row in this comparison"
        )
    return "; ".join(parts)
