"""The text report of ``compare --convention mmtests`` in MMTests' own layout, so that ``diff``
against compare-kernels.sh's output shows only real differences: per benchmark, in
compare-kernels.sh's order and with its blank lines, the title it echoes, the benchmark table,
thpscale's two percentage tables, duration, vmstat, schedstat and (when compare-kernels.sh would)
iostat, each printed as Compare.pm and PrintGeneric.pm print it: the header lines of the run names
split at their first '-', ``%-Ns`` statistic and op columns as wide as their longest entry,
``%<field>.<decimals>f`` cells of the module's width, `` (%7.2f%)`` percentages and ``*`` for
the parentheses of a significant cell.  After that, what compare-kernels.sh does not print: the
``compare-mmtests.pl --print-monitor`` views (``== BENCH MONITOR SERIES`` before each),
``--print-ratio`` tables (``== BENCH ratio``), an iostat table compare-kernels.sh leaves out, then
mmbench's environment differences, warnings, primary rows and notes.  The widths are
analysis/mmtests.py's; the sections carry them in ``Section.layout``.
"""

from __future__ import annotations

from typing import Any

from mmbench.analysis.compare import Comparison, Section
from mmbench.analysis.mmtests import header_names

COMPARED = ("table", "huge", "locality")


def _header(runs: list[str], first: int, width: int) -> list[str]:
    names = [header_names(n) for n in runs]
    return [
        f"{'':>{first}}" + "".join(f"{top:>{width}}" for top, _ in names),
        f"{'':>{first}}" + "".join(f"{bottom:>{width}}" for _, bottom in names),
    ]


def table(sec: Section, runs: list[str]) -> list[str]:
    """One table as compare-mmtests.pl prints it (Compare.pm _generateRenderTable)."""
    shown = [n for n in sec.layout.get("runs", runs) if n in runs]
    field, decimals = sec.layout["field"], sec.layout["decimals"]
    compare = sec.layout["part"] in COMPARED
    sw = max(len(r.stat) for r in sec.rows)
    ow = max(len(r.metric) for r in sec.rows)
    lines = _header(shown, sw + ow + 1, field + (11 if compare else 0))
    for r in sec.rows:
        line = f"{r.stat:<{sw}} {r.metric:<{ow}}"
        for n in shown:
            line += f"{_num(r.values.get(n)):{field}.{decimals}f}"
            if compare:
                pct = _num(r.pct.get(n))
                line += f" *{pct:7.2f}%*" if r.significant.get(n) else f" ({pct:7.2f}%)"
        lines.append(line)
    return lines


def ratio_table(sec: Section, runs: list[str]) -> list[str]:
    """compare-mmtests.pl --print-ratio (Compare.pm _generateRenderRatioTable): per op its ratio,
    the percentage and the interval distance, then the Dmean/Dmin/Dmax and Gmean rows.  As there:
    the formats are made for one run more than there are ops, so a column past them takes
    PrintGeneric's default ``%<field>.2f`` for all three of its cells, and an empty cell prints as
    spaces as wide as its format gives 0."""
    field, decimals = sec.layout["field"], sec.layout["decimals"]
    ratios = [r for r in sec.rows if r.stat == "Ratio"]
    cidiff = {r.metric: r for r in sec.rows if r.stat == "CIdiff"}
    width = max([len(r.metric) for r in ratios] or [0]) + 6
    formats = len(ratios) + 1

    def cells(k: int, value: float | None, pct: float | None, cid: float | None, summary: bool) -> str:
        if k >= formats:  # PrintGeneric's default format, for each of the three
            if summary:
                return _cell(value, field, 2) + " " * field * 2
            return f"{_num(value):{field}.2f}{_num(pct):{field}.2f}" + (
                f"{cid:{field}.2f}" if cid is not None else f"{'NaN':>{field}}"
            )
        if summary:
            return _cell(value, field, decimals) + " " * 17
        return f"{_num(value):{field}.{decimals}f} ({_num(pct):.2f}%)" + (
            f" ({cid:+.2f}s)" if cid is not None else " (NaNs)"
        )

    lines = _header(runs, width, field + 11)
    for r in ratios:
        lines.append(
            f"{'Ratio ' + r.metric:<{width}}"
            + "".join(
                cells(
                    k,
                    r.values.get(n),
                    r.pct.get(n),
                    cidiff[r.metric].values.get(n) if r.metric in cidiff else None,
                    False,
                )
                for k, n in enumerate(runs)
            )
        )
    for r in sec.rows:
        if r.stat in ("Dmean", "Dmin", "Dmax", "Gmean"):
            lines.append(
                f"{r.stat + ' ' * (6 - len(r.stat)) + r.metric:<{width}}"
                + "".join(cells(k, r.values.get(n), None, None, True) for k, n in enumerate(runs))
            )
    return lines


def _cell(v: float | None, field: int, decimals: int) -> str:
    """A summary row's cell: undefined is Perl's NaN (the Gmean of no op)."""
    return f"{'NaN':>{field}}" if v is None else f"{v:{field}.{decimals}f}"


def _num(v: float | None) -> float:
    return 0.0 if v is None else v


def _views(sec: Section, runs: list[str]) -> list[tuple[str, Section]]:
    """A monitor-view section as one table per series (compare-mmtests.pl --print-monitor M
    --sub-heading X prints one): (series, its two-row section)."""
    out: dict[str, Section] = {}
    for r in sec.rows:
        out.setdefault(r.metric, Section(sec.title, sec.kind, layout=sec.layout)).rows.append(r)
    return list(out.items())


def benchmark(label: str, secs: list[Section], runs: list[str]) -> tuple[list[str], list[str]]:
    """One benchmark's part of compare-kernels.sh's report (from the blank line it echoes first),
    and what goes after the report (its views, ratio table, an iostat table it leaves out)."""
    out: list[str] = []
    tail: list[str] = []
    parts = {s.layout.get("part"): s for s in secs if s.rows}
    main = parts.get("table")
    out += ["", main.layout["title"] if main is not None else label]
    if main is not None:
        out += table(main, runs)
    for part in ("huge", "locality"):
        if part in parts:
            out += ["", parts[part].layout["title"], *table(parts[part], runs)]
    out.append("")
    for part in ("duration", "vmstat", "schedstat"):
        if part in parts:
            out += table(parts[part], runs)
        if part != "schedstat":
            out.append("")
    io = parts.get("iostat")
    if io is not None and not io.layout.get("omitted"):
        out += ["", *table(io, runs)]
    elif io is not None:
        tail += [f"== {label} iostat (not in compare-kernels.sh's report: {io.layout['omitted']})", *table(io, runs)]
    for sec in secs:
        if sec.layout.get("part") == "monitor-view" and sec.rows:
            for series, one in _views(sec, runs):
                tail += [f"== {label} {sec.layout['monitor']} {series}", *table(one, runs)]
        elif sec.layout.get("part") == "ratio" and sec.rows:
            tail += [f"== {label} ratio", *ratio_table(sec, runs)]
    return out, tail


def render(cmp: Comparison, options: dict[str, Any], rest: Any) -> str:
    """The report; ``rest(cmp, sections)`` renders mmbench's own parts (environment, warnings,
    primary rows, notes) after MMTests'."""
    runs = cmp.runs
    out: list[str] = []
    tail: list[str] = []
    groups: dict[str, list[Section]] = {}
    for sec in cmp.sections:
        groups.setdefault(sec.label or sec.title.split(": ", 1)[-1], []).append(sec)
    for label, secs in groups.items():
        lines, after = benchmark(label, secs, runs)
        left_out = next((s.layout["benchmark_omitted"] for s in secs if s.layout.get("benchmark_omitted")), "")
        if left_out:  # compare-kernels.sh does not report it: after its report, said why
            tail += [f"== {label} (not in compare-kernels.sh's report: {left_out})", *lines[1:], *after]
        else:
            out += lines
            tail += after
    text = "\n".join(out) + "\n"
    if tail:
        text += "\n" + "\n".join(tail) + "\n"
    more = rest(cmp, [])
    return text + ("\n" + more if more.strip() else "")
