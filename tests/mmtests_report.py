"""Reading MMTests' own report text (compare-kernels.sh, compare-mmtests.pl) into cells, and
checking mmbench's ``compare --convention mmtests --format json`` against every one of them.

MMTests prints blocks separated by blank lines: two header lines (run names split at their first
'-', Compare.pm _generateHeaderTable), then rows ``<stat> <op>  <value> [(<pct>%)]...`` where a
significant cell has ``*`` for its parentheses (PrintGeneric.pm).  A row's first word is the
statistic (Min, Amean, BAmean.95, Ops, Duration, Ratio, ...), the rest the op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_CELL = re.compile(
    r"(?<!\S)(-?\d+\.\d+|-?nan|NaN|-?inf)(?:\s*([(*])\s*(-?\d+\.\d+)%[)*])?(?:\s*([(*])\s*([+-]\d+\.\d+)s[)*])?"
)


@dataclass
class Cell:
    value: str
    pct: str | None = None
    significant: bool = False
    cidiff: str | None = None  # the ratio summary's "(+0.06s)"


@dataclass
class Block:
    runs: list[str]
    rows: list[tuple[str, str, list[Cell]]] = field(default_factory=list)
    title: str | None = None

    @property
    def kind(self) -> str:
        first = self.rows[0][0] if self.rows else ""
        op = self.rows[0][1] if self.rows else ""
        if first == "Duration":
            return "duration"
        if first == "Ops" and op == "Minor Faults":
            return "vmstat"
        if first == "Ops" and op.startswith("TTWU"):
            return "schedstat"
        if first in ("Ratio", "Gmean"):  # a benchmark without ops: only its Gmean row
            return "ratio"
        if first == "Percentage" and op.startswith("huge-"):
            return "huge"  # thpscale's "Percentage Faults Huge" (ExtractThpscalecounts.pm)
        if first == "Percentage" and op.startswith(("local-", "remote-", "uncertain-")):
            return "locality"  # thpscale's "Percentage Locality" (ExtractThpscalelocality.pm)
        if first == "Amean" and op.endswith("-avgqusz"):
            return "iostat"
        return "table"


def parse(text: str, runs: list[str]) -> list[Block]:
    """The tables of an MMTests report, each with the runs of its columns (a column MMTests
    could not load is absent from its block)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    title = None
    while i < len(lines):
        line = lines[i]
        if (
            i + 1 < len(lines)
            and not _CELL.search(line)
            and line.strip()
            and not _CELL.search(lines[i + 1])
            and lines[i + 1].strip()
            and i + 2 < len(lines)
            and _CELL.search(lines[i + 2])
        ):
            top, bottom = line.split(), lines[i + 1].split()
            names = [f"{a}-{b}" if b else a for a, b in zip(top, bottom)]
            unknown = [n for n in names if n not in runs]
            assert not unknown, f"header {names} names runs not in {runs}"
            blk = Block(names, title=title)
            i += 2
            while i < len(lines) and _CELL.search(lines[i]):
                row = lines[i]
                first = _CELL.search(row)
                assert first is not None
                label = _ANSI.sub("", row[: first.start()]).split()  # MMTests prints iostat's colours
                cells = [Cell(m[1], m[3], m[2] == "*", m[5]) for m in _CELL.finditer(row)]
                blk.rows.append((label[0], " ".join(label[1:]), cells))
                i += 1
            blocks.append(blk)
            title = None
            continue
        if line.strip() and not _CELL.search(line):
            title = line.strip()
        i += 1
    return blocks


def fmt(v: float | None) -> str:
    return "NaN" if v is None else f"{v:.2f}"


def same(got: float | None, cell: str) -> bool:
    """mmbench's value is MMTests' printed cell: to its two decimals, or undefined where MMTests
    printed NaN (a ratio table's Gmean of no op); mmbench holds MMTests' 0.00 for a NaN cell."""
    return fmt(got) == cell or (got is None and cell.lower() == "nan")


def check(
    blocks: list[Block],
    comparison: dict,
    bench_order: list[str],
    *,
    sections: tuple[str, ...] = ("table", "huge", "locality", "duration", "vmstat", "schedstat", "iostat"),
) -> int:
    """Assert that every MMTests cell of ``blocks`` equals mmbench's row of the same section, op and
    statistic (value and percentage to MMTests' two decimals, significance marks); returns the
    number of cells checked, which is every cell of every block of those kinds: a block of another
    kind is an error, not a skip."""
    by_title = {s["title"]: s for s in comparison["sections"]}
    kinds = {
        "table": "{b}",
        "duration": "duration: {b}",
        "vmstat": "vmstat: {b}",
        "schedstat": "schedstat: {b}",
        "ratio": "ratio: {b}",
        "iostat": "iostat: {b}",
        "huge": "percentage faults huge: {b}",
        "locality": "percentage locality: {b}",
    }
    # MMTests prints each benchmark's blocks in turn: assign blocks to benchmarks in that order
    bench_iter = iter(bench_order)
    bench = None
    checked = 0
    for blk in blocks:
        assert blk.kind in sections, f"a {blk.kind} block ({blk.rows[0][:2]}) in a report of {sections}"
        if blk.kind in ("table", "ratio") or bench is None:
            bench = next(bench_iter)
        sec = by_title.get(kinds[blk.kind].format(b=bench))
        assert sec is not None, f"mmbench has no section {kinds[blk.kind].format(b=bench)!r}"
        rows = {(r["stat"], r["metric"]): r for r in sec["rows"]}
        for stat, op, cells in blk.rows:
            key = (stat, op)
            assert key in rows, f"{sec['title']}: no row {stat} {op} (rows: {list(rows)[:8]}...)"
            r = rows[key]
            assert len(cells) == len(blk.runs), f"{sec['title']} {stat} {op}: {len(cells)} cells, runs {blk.runs}"
            for run, cell in zip(blk.runs, cells):
                got = r["values"][run]
                assert same(got, cell.value), f"{sec['title']} {stat} {op} {run}: mmbench {got!r}, MMTests {cell.value}"
                if cell.cidiff is not None:
                    c = {x["stat"]: x for x in sec["rows"] if x["metric"] == op}["CIdiff"]["values"][run]
                    assert c is not None and f"{c:+.2f}" == cell.cidiff, (
                        f"{sec['title']} {stat} {op} {run}: cidiff mmbench {c!r}, MMTests {cell.cidiff}"
                    )
                if cell.pct is not None:
                    pct = r["pct"][run]
                    assert pct is not None and f"{pct:.2f}" == cell.pct, (
                        f"{sec['title']} {stat} {op} {run}: mmbench {pct!r}%, MMTests {cell.pct}%"
                    )
                    assert bool(r["significant"][run]) == cell.significant, (
                        f"{sec['title']} {stat} {op} {run}: significance mmbench {r['significant'][run]}, "
                        f"MMTests {cell.significant}"
                    )
                checked += 1
    return checked


def check_monitor_views(text: str, comparison: dict, runs: list[str]) -> int:
    """``== <bench> <monitor> <sub-heading>`` followed by compare-mmtests.pl --print-monitor's
    Amean/Max block: every cell equals mmbench's "monitor <monitor> (MMTests): <bench>" rows."""
    by_title = {s["title"]: s for s in comparison["sections"]}
    checked = 0
    chunks = re.split(r"^== ", text, flags=re.M)[1:]
    for chunk in chunks:
        head, _, body = chunk.partition("\n")
        bench, mon, heading = head.split()
        blocks = parse(body, runs)
        if not blocks:
            continue
        sec = by_title.get(f"monitor {mon} (MMTests): {bench}")
        assert sec is not None, f"mmbench has no section 'monitor {mon} (MMTests): {bench}'"
        rows = {(r["stat"], r["metric"]): r for r in sec["rows"]}
        for stat, op, cells in blocks[0].rows:
            r = rows.get((stat, heading))
            assert r is not None, f"{sec['title']}: no row {stat} {heading}"
            for run, cell in zip(blocks[0].runs, cells):
                got = r["values"][run]
                assert same(got, cell.value), (
                    f"{sec['title']} {stat} {heading} {run}: mmbench {got!r}, MMTests {cell.value}"
                )
                checked += 1
    return checked


def cells(blocks: list[Block]) -> int:
    """How many cells MMTests printed in ``blocks``."""
    return sum(len(c) for blk in blocks for _, _, c in blk.rows)


def _tokens(line: str) -> list[str]:
    return _ANSI.sub("", line).split()


def check_text(expected: str, got: str) -> int:
    """Assert that mmbench's text report starts with MMTests' report ``expected``, line for line
    and byte for byte; only where MMTests prints sysstat's colour codes inside iostat's device
    names (its documented iostat bug) are the lines compared without them, field by field.
    Returns the number of lines compared."""
    exp, out = expected.splitlines(), got.splitlines()
    assert len(out) >= len(exp), f"mmbench's report has {len(out)} lines, MMTests' {len(exp)}"
    blocks = "\n".join(exp).split("\n\n")
    coloured = {line for b in blocks if "\x1b[" in b for line in b.splitlines()}
    for i, (e, g) in enumerate(zip(exp, out), 1):
        if e in coloured:
            assert _tokens(e) == _tokens(g), f"line {i}: MMTests {e!r}, mmbench {g!r}"
        else:
            assert e == g, f"line {i}: MMTests {e!r}, mmbench {g!r}"
    return len(exp)


def tail_blocks(text: str) -> dict[str, str]:
    """The ``== TITLE`` blocks after MMTests' report in mmbench's text: title → its lines."""
    out = {}
    for chunk in re.split(r"^== ", text, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        out[head] = body.split("\n\n")[0].rstrip("\n")
    return out
