"""IRQs-off offenders from samples of the kernel's irqsoff tracer (MMTests seed 003's report).

The ``irqsoff`` monitor saves, every interval, the ``trace`` file (the worst IRQs-off section
since ``tracing_max_latency`` was last reset to 0) after a ``time: <seconds>`` line.  Each section
is attributed to the code that held IRQs off (``attribute``): the first function outside the
locking, tracing and IRQ-entry code, from the tracer's own sites, the function trace's
``<-caller`` fields and the section's stack trace; a section that interrupt entry/exit held is
"unattributed", never given the interrupted function's name.  ``analyze`` groups the sections by
that caller: one ``Event CALLER (started..ended) N us count C`` line per group (N the worst
latency), largest first, then each group's stacks.  The total is the sum of the sampled sections
only: the tracer keeps the worst section per interval, so it is not the real total time IRQs were
off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterable

from mmbench.errors import UsageError
from mmbench.model.userfile import read_user_file

# Functions that only take/drop a lock or trace the IRQ toggle: skipped when looking for the code
# that held IRQs off.  Why the tracer names them at all (verified in Debian's 6.1.192 source and
# in the guest traces of a self-built 6.1.192): on x86 the spinlock/rwlock helpers are out of line
# (kernel/Kconfig.locks: CONFIG_INLINE_SPIN_LOCK_IRQSAVE etc. depend on ARCH_INLINE_*, which
# arm64, s390, csky and loongarch select and x86 does not; only INLINE_SPIN_UNLOCK_IRQ is on, with
# PREEMPTION off), and the tracer records a site as ``parent_ip ?: ip`` (trace_irqsoff.c
# start/stop_critical_timing) where parent_ip is CALLER_ADDR1, which is 0 without
# CONFIG_FRAME_POINTER (include/linux/ftrace.h; x86_64 defaults to UNWINDER_ORC since 4.15).  So a
# 6.1 section reads ``_raw_spin_lock_irqsave..__raw_spin_unlock_irqrestore`` (``__raw_*`` out of
# line too under CONFIG_CC_OPTIMIZE_FOR_SIZE), where 2.6.38 (frame pointers) named the caller,
# e.g. ``compaction_alloc``.
LOCK_AND_TRACE_HELPERS: tuple[str, ...] = (
    "_raw_spin_*",
    "__raw_spin_*",
    "do_raw_spin_*",
    "raw_spin_rq_*",
    "_raw_read_*",
    "__raw_read_*",
    "_raw_write_*",
    "__raw_write_*",
    "*_irqsave",
    "*_irqrestore",
    "*lock_irq",
    "*unlock_irq",  # e.g. folio_lruvec_lock_irqsave
    "queued_spin_lock_slowpath",
    "native_queued_spin_lock_slowpath",
    "__pv_queued_spin_*",
    "preempt_count_add",
    "preempt_count_sub",
    "trace_hardirqs_*",
    "tracer_hardirqs_*",
    "lockdep_hardirqs_*",
    "trace_irq_*",
    "check_critical_timing",
    "start_critical_timing*",
    "stop_critical_timing*",
    "__trace_stack",
    "__ftrace_trace_stack",
    "ftrace_trace_stack",
    "__trace_function",
    "trace_function",
)

# Interrupt/softirq entry and exit, and the bottoms of every stack: where one of these disabled or
# enabled IRQs, or a stack walk reaches one, the interrupt path held IRQs off and the frames below
# belong to the interrupted code, which had IRQs on (6.1: ``irqentry_enter..irqentry_exit`` over
# ``native_safe_halt``).  Such sections are unattributed rather than named after the wrong code.
IRQ_ENTRY_AND_STACK_BOTTOMS: tuple[str, ...] = (
    "irqentry_*",
    "irq_enter*",
    "irq_exit*",
    "__irq_exit_rcu",
    "handle_softirqs",
    "__do_softirq",
    "do_softirq",
    "do_softirq_own_stack",
    "__local_bh_enable_ip",
    "local_bh_enable",
    "sysvec_*",
    "__sysvec_*",
    "asm_sysvec_*",
    "asm_common_interrupt",
    "common_interrupt",
    "__common_interrupt",
    "asm_exc_*",
    "exc_*",
    "irq_exit_rcu",
    "run_ksoftirqd",
    "do_syscall_64",
    "entry_SYSCALL_*",
    "ret_from_fork*",
    "kthread",
    "secondary_startup_64*",
    "start_kernel",
    "cpu_startup_entry",
)

UNATTRIBUTED = "unattributed"

_ENTRY = re.compile(r"\d+us\S?\s*:\s+(?P<func>\S+)(?:\s+<-(?P<parent>\S+))?\s*$")
_SUFFIX = re.compile(r"(\+0x[0-9a-f]+(/0x[0-9a-f]+)?|\.(isra|constprop|part|cold|lto_priv)(\.\d+)?)+$")


def _base(name: str) -> str:
    """A symbol without its offset (``+0x1a/0x40``) and GCC clone suffixes (``.isra.0``)."""
    return _SUFFIX.sub("", name.strip())


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def is_helper(name: str) -> bool:
    """True for locking and IRQ-tracing helpers (``LOCK_AND_TRACE_HELPERS``)."""
    return _matches(_base(name), LOCK_AND_TRACE_HELPERS)


def is_irq_entry(name: str) -> bool:
    """True for interrupt entry/exit code and stack bottoms (``IRQ_ENTRY_AND_STACK_BOTTOMS``)."""
    return _matches(_base(name), IRQ_ENTRY_AND_STACK_BOTTOMS)


@dataclass
class IrqsoffTrace:
    latency_us: int
    started: str
    ended: str
    cpu: int = -1
    task: str = ""
    stack: list[str] = field(default_factory=list)
    time: float | None = None
    # the function trace's lines: (function, its caller or "") in order, the stack line excluded
    entries: list[tuple[str, str]] = field(default_factory=list)

    @property
    def sites(self) -> str:
        """The tracer's raw sites, ``started..ended``."""
        return f"{self.started}..{self.ended}"


@dataclass
class Attribution:
    caller: str | None  # None: unattributed
    source: str  # where the name came from, or why there is none


def attribute(t: IrqsoffTrace) -> Attribution:
    """The first function outside the locking, tracing and IRQ-entry code that held IRQs off.

    Looked for, most direct evidence first: the tracer's end site, the ``<-caller`` of the
    function trace's closing lines (``_raw_spin_unlock_irq <-shrink_inactive_list``), the start
    site and the opening line's ``<-caller``, then the stack (frames in order).  Helpers are
    skipped; IRQ-entry code at a site or in the stack ends the search unattributed, as does an
    unresolved address.  The sites come first because the stack is less exact: in the 6.1.192
    guests' traces (ORC unwinder; the tracer skips a fixed 5 frames in check_critical_timing) its
    first frame is above the code that held IRQs off (blk_mq_dispatch_rq_list where
    virtio_queue_rq holds its queue lock; __filemap_add_folio for a ``charge_memcg..charge_memcg``
    section), so a name from the stack can be a call or two above the lock's taker."""
    if t.started and is_irq_entry(t.started) or t.ended and is_irq_entry(t.ended):
        return Attribution(None, "the section began or ended in interrupt entry/exit code")
    candidates: list[tuple[str, str]] = [(t.ended, "end site")]
    tail = t.entries[1:]
    for func, parent in reversed(tail):  # the closing helper calls: unlock, trace_hardirqs_on
        if not is_helper(func):
            break
        candidates.append((parent, "function trace"))
    candidates.append((t.started, "start site"))
    # the opening line (``_raw_spin_lock_irq <-shrink_inactive_list``): the last one naming the
    # start site, since a 6.1 dump can carry earlier sections' lines before it ("#163/2451761")
    for func, parent in reversed(t.entries):
        if func == t.started:
            candidates.append((parent, "function trace"))
            break
    candidates += [(f, "stack") for f in t.stack]
    for name, source in candidates:
        if not name:
            continue
        if name.startswith("0x") or name.startswith("<"):
            return Attribution(None, "an unresolved address before any caller")
        if is_irq_entry(name):
            return Attribution(None, "only locking and interrupt entry/exit code in the stack")
        if not is_helper(name):
            return Attribution(_base(name), source)
    if not t.stack:
        return Attribution(None, "only locking code at the sites and no stack trace")
    return Attribution(None, "only locking code in the stack")


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
            rest = line[len("# latency:") :].split(",")
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
        elif not in_stack and not line.startswith("#") and (m := _ENTRY.search(line)):
            cur.entries.append((m["func"], m["parent"] or ""))
    return [t for t in out if t.started or t.ended]


def check_trace_file(path: str | Path) -> None:
    """A UsageError unless ``path`` holds irqsoff tracer output (``mmbench analyze irqsoff``).

    The tracer's ``trace`` file starts ``# tracer: irqsoff`` and each section has a
    ``# latency: N us`` line; a file with neither (empty, binary, a README) would otherwise be
    summarised as "0 us", which reads like a measurement.  A real dump with no section (nothing
    exceeded the threshold) is accepted: its 0 us is true."""
    p = Path(path)
    raw = read_user_file(
        p,
        "analyze irqsoff:",
        "irqsoff tracer output (give the monitor's irqsoff.txt or a saved trace file)",
        regular_only=True,
    )
    if not raw.strip():
        raise UsageError(f"analyze irqsoff: {p}: empty file, no irqsoff trace in it")
    text = raw.decode("utf-8", errors="replace")
    if "# tracer: irqsoff" not in text and not parse(text):
        raise UsageError(
            f"analyze irqsoff: {p}: no irqsoff trace in it (expected the irqsoff tracer's "
            f"'trace' file: '# tracer: irqsoff', '# latency: N us, ...')"
        )


@dataclass
class Offender:
    """One group of sampled sections: the code that held IRQs off, the tracer's raw sites seen
    (``started..ended``, comma-separated when several), the worst latency and how many sections."""

    caller: str | None
    sites: str
    worst_us: int
    count: int
    why: str = ""  # attribution source, or why none
    traces: list[IrqsoffTrace] = field(default_factory=list, repr=False)

    @property
    def name(self) -> str:
        return self.caller or UNATTRIBUTED

    def event(self) -> str:
        """The seed's line: ``Event CALLER (started..ended) N us count K``."""
        return f"Event {self.name} ({self.sites}) {self.worst_us} us count {self.count}"


def _read(paths: Iterable[str | Path]) -> list[IrqsoffTrace]:
    traces: list[IrqsoffTrace] = []
    for p in paths:
        traces += parse(Path(p).read_text(errors="replace"))
    return traces


def group(traces: list[IrqsoffTrace]) -> list[Offender]:
    """Sections grouped by caller (unattributed ones by their raw sites), worst latency first."""
    groups: dict[tuple[str | None, str], Offender] = {}
    for t in traces:
        a = attribute(t)
        key = (a.caller, "" if a.caller else t.sites)
        g = groups.get(key)
        if g is None:
            g = groups[key] = Offender(a.caller, t.sites, t.latency_us, 0, a.source)
        elif t.sites not in g.sites.split(", "):
            g.sites += f", {t.sites}"
        g.worst_us = max(g.worst_us, t.latency_us)
        g.count += 1
        g.traces.append(t)
    return sorted(groups.values(), key=lambda g: (-g.worst_us, -g.count, g.name, g.sites))


def analyze(paths: Iterable[str | Path]) -> str:
    """The ``mmbench analyze irqsoff`` report: total, one Event line per offender, then stacks."""
    traces = _read(paths)
    offs = group(traces)
    total = sum(t.latency_us for t in traces)
    lines = [f"Total sampled time IRQs off (not real total time): {total} us"]
    lines += [o.event() for o in offs]
    for o in offs:
        lines.append("")
        lines.append(o.event())
        lines.append(f"  caller: {o.name} ({o.why})")
        tasks = sorted({t.task for t in o.traces if t.task})
        if tasks:
            lines.append("  task: " + ", ".join(tasks))
        stacks: dict[tuple[str, ...], int] = {}
        for t in o.traces:
            stacks[tuple(t.stack)] = stacks.get(tuple(t.stack), 0) + 1
        for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
            if len(stacks) > 1:
                lines.append(f"  stack seen {n} time(s):")
            if not stack:
                lines.append("     (no stack trace)")
            for fn in stack:
                lines.append(f"     => {fn}")
    return "\n".join(lines) + "\n"


def offenders(paths: Iterable[str | Path]) -> list[Offender]:
    """The Event lines as data: caller, raw sites, worst latency (us), count; largest first."""
    return group(_read(paths))
