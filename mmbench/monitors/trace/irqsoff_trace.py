"""IRQs-off offenders from samples of the kernel's irqsoff tracer (MMTests seed 003's report).

The ``irqsoff`` monitor saves, every interval, the ``trace`` file (the worst IRQs-off section
since ``tracing_max_latency`` was last reset to 0) after a ``time: <seconds>`` line.  ``analyze``
groups the samples by (started at, ended at, latency): one ``Event fnA..fnB N us count C`` line
per group, largest latency first, then each offender's stack.  The total is the sum of the
sampled sections only: the tracer keeps the worst section per interval, so it is not the real
total time IRQs were off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from mmbench.errors import UsageError


@dataclass
class IrqsoffTrace:
    latency_us: int
    started: str
    ended: str
    cpu: int = -1
    task: str = ""
    stack: list[str] = field(default_factory=list)
    time: float | None = None


def parse(text: str) -> list[IrqsoffTrace]:
    """Every irqsoff trace in ``text`` (one or many ``trace`` dumps, with or without ``time:``)."""
    out: list[IrqsoffTrace] = []
    cur: IrqsoffTrace | None = None
    when: float | None = None
    in_stack = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("time:"):
            try:
                when = float(line[5:].split()[0])
            except (ValueError, IndexError):
                when = None
            continue
        if line.startswith("# latency:"):
            rest = line[len("# latency:"):].split(",")
            try:
                lat = int(rest[0].split()[0])
            except (ValueError, IndexError):
                cur = None
                continue
            cpu = -1
            for part in rest:
                part = part.strip()
                if part.startswith("CPU#"):
                    try:
                        cpu = int(part[4:].split()[0])
                    except ValueError:
                        pass
            cur = IrqsoffTrace(lat, "", "", cpu, time=when)
            out.append(cur)
            in_stack = False
            continue
        if cur is None:
            continue
        if line.startswith("#") and "| task:" in line:
            cur.task = line.split("| task:", 1)[1].split("(")[0].strip()
        elif line.startswith("#") and "=> started at:" in line:
            cur.started = line.split("=> started at:", 1)[1].strip()
        elif line.startswith("#") and "=> ended at:" in line:
            cur.ended = line.split("=> ended at:", 1)[1].strip()
        elif line.endswith("<stack trace>"):
            in_stack = True
        elif in_stack and line.startswith("=> "):
            cur.stack.append(line[3:].strip())
        elif line.startswith("# tracer:"):
            in_stack = False
    return [t for t in out if t.started or t.ended]


def check_trace_file(path: str | Path) -> None:
    """A UsageError unless ``path`` holds irqsoff tracer output (``mmbench analyze irqsoff``).

    The tracer's ``trace`` file starts ``# tracer: irqsoff`` and each section has a
    ``# latency: N us`` line; a file with neither (empty, binary, a README) would otherwise be
    summarised as "0 us", which reads like a measurement.  A real dump with no section (nothing
    exceeded the threshold) is accepted: its 0 us is true."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"analyze irqsoff: {p}: is a directory; give the monitor's irqsoff.txt or a saved trace file")
    if p.exists() and not p.is_file():   # a FIFO or device could block or never end
        raise UsageError(f"analyze irqsoff: {p}: not a regular file")
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"analyze irqsoff: no such file: {p}") from None
    except OSError as e:
        raise UsageError(f"analyze irqsoff: {p}: cannot read: {e.strerror}") from None
    if not raw.strip():
        raise UsageError(f"analyze irqsoff: {p}: empty file, no irqsoff trace in it")
    if b"\0" in raw[:65536]:
        raise UsageError(f"analyze irqsoff: {p}: a binary file, not irqsoff tracer output")
    text = raw.decode("utf-8", errors="replace")
    if "# tracer: irqsoff" not in text and not parse(text):
        raise UsageError(f"analyze irqsoff: {p}: no irqsoff trace in it (expected the irqsoff tracer's "
                         f"'trace' file: '# tracer: irqsoff', '# latency: N us, ...')")


def analyze(paths: Iterable[str | Path]) -> str:
    traces: list[IrqsoffTrace] = []
    for p in paths:
        traces += parse(Path(p).read_text(errors="replace"))
    groups: dict[tuple[str, str, int], list[IrqsoffTrace]] = {}
    for t in traces:
        groups.setdefault((t.started, t.ended, t.latency_us), []).append(t)
    total = sum(t.latency_us for t in traces)
    order = sorted(groups.items(), key=lambda kv: (-kv[0][2], kv[0][0], kv[0][1]))
    lines = [f"Total sampled time IRQs off (not real total time): {total} us"]
    for (start, end, lat), ts in order:
        lines.append(f"Event {start}..{end} {lat} us count {len(ts)}")
    for (start, end, lat), ts in order:
        lines.append("")
        lines.append(f"Event {start}..{end} {lat} us count {len(ts)}")
        tasks = sorted({t.task for t in ts if t.task})
        if tasks:
            lines.append("  task: " + ", ".join(tasks))
        stacks: dict[tuple[str, ...], int] = {}
        for t in ts:
            stacks[tuple(t.stack)] = stacks.get(tuple(t.stack), 0) + 1
        for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
            if len(stacks) > 1:
                lines.append(f"  stack seen {n} time(s):")
            for fn in stack:
                lines.append(f"     => {fn}")
    return "\n".join(lines) + "\n"


def offenders(paths: Iterable[str | Path]) -> list[tuple[str, int, int]]:
    """(start..end, latency us, count) largest first: the Event lines as data."""
    traces: list[IrqsoffTrace] = []
    for p in paths:
        traces += parse(Path(p).read_text(errors="replace"))
    groups: dict[tuple[str, int], int] = {}
    for t in traces:
        k = (f"{t.started}..{t.ended}", t.latency_us)
        groups[k] = groups.get(k, 0) + 1
    return sorted(((k[0], k[1], n) for k, n in groups.items()), key=lambda x: -x[1])
