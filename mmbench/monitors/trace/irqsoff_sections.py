"""Every IRQs-off section, counted in the kernel by hist triggers, and attributed to mm code.

The ``irqsoff-sections`` monitor pairs each ``preemptirq:irq_disable`` with the ``irq_enable``
that ends it on the same CPU (a hist trigger saves the disable's timestamp and sites per CPU; the
enable's trigger emits a synthetic event with the section's length), and two histograms on that
synthetic event keep, per (caller, parent) of the disable, the count and summed length per log2
bucket of length, and the exact longest section.  This module reads the kernel's ``hist`` text
(both histograms, as the kernel prints them), names the sites from the symbols the monitor saved
(``symbols.tsv``: offset from ``_stext`` → function) and attributes each (caller, parent) to the
first function outside the locking helpers (``irqsoff_trace.LOCK_AND_TRACE_HELPERS``): a section
taken by ``_raw_spin_lock_irqsave`` is its caller's.  Sections that interrupt entry disabled are
"unattributed" (the interrupt path held IRQs off, not the interrupted code).  The functions are
then put in classes of mm code (``model.quirks.IRQSOFF_MM_CLASSES``) and, within a class, paths
such as compaction's free scanner (``IRQSOFF_MM_PATHS``) for the monitor's rows.

Unlike the irqsoff tracer, which keeps only the worst section since its last reset, this counts
all of them, so a section that is never the worst (a free scanner's 100 us beside a 5 ms softirq
under TCG) still shows as the longest and the total of its caller.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from mmbench.model.quirks import IRQSOFF_MM_CLASSES, IRQSOFF_MM_PATHS
from mmbench.monitors.trace.irqsoff_trace import UNATTRIBUTED, is_helper, is_irq_entry

HIST_FILE = "hist.txt"
SYMBOLS_FILE = "symbols.tsv"

_ENTRY = re.compile(r"^\{(?P<key>[^}]*)\}(?P<vals>.*)$")
_PAIR = re.compile(r"(\w+):\s*(~\s*2\^)?(-?\d+)")
_MAX = re.compile(r"^\s*max:\s*(\d+)")
_TRIGGER = re.compile(r"^# trigger info: (\S+)")


@dataclass
class SiteStats:
    """All sections one (caller, parent) pair of the disable began."""

    caller: int  # offset from _stext, as the tracepoint records it
    parent: int
    count: int = 0
    total_us: int = 0
    buckets: dict[int, int] = field(default_factory=dict)  # log2 bucket → sections
    longest_us: int | None = None  # exact, from the onmax histogram


@dataclass
class SectionsHist:
    sites: dict[tuple[int, int], SiteStats]
    dropped: int = 0
    exact_max: bool = False


def _s32(v: int) -> int:
    """The kernel prints an s32 key through a u64 (the key slot is zero-filled): undo that."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def parse_hist(text: str) -> SectionsHist:
    """Both histograms of the synthetic event's ``hist`` file → per-site statistics."""
    sites: dict[tuple[int, int], SiteStats] = {}
    dropped = 0
    exact_max = False
    last: SiteStats | None = None
    for line in text.splitlines():
        if _TRIGGER.match(line):
            last = None
            continue
        if line.strip().startswith("Dropped:"):
            dropped += int(line.split(":")[1])
            continue
        m = _MAX.match(line)
        if m and last is not None:
            last.longest_us = max(last.longest_us or 0, int(m.group(1)))
            exact_max = True
            continue
        m = _ENTRY.match(line.strip())
        if not m:
            continue
        key = {k: (int(v), bool(log)) for k, log, v in _PAIR.findall(m.group("key"))}
        vals = {k: int(v) for k, _, v in _PAIR.findall(m.group("vals"))}
        if "caller" not in key or "parent" not in key:
            continue
        site = (_s32(key["caller"][0]), _s32(key["parent"][0]))
        st = sites.setdefault(site, SiteStats(*site))
        last = st
        if "lat" in key and key["lat"][1]:  # the log2 histogram: count and sum per bucket
            st.count += vals.get("hitcount", 0)
            st.total_us += vals.get("lat", 0)
            st.buckets[key["lat"][0]] = st.buckets.get(key["lat"][0], 0) + vals.get("hitcount", 0)
        # else: the onmax histogram's entry; its "max:" line follows
    return SectionsHist(sites, dropped, exact_max)


class Symbols:
    """Offsets from ``_stext`` → the function containing them (from the saved ``symbols.tsv``)."""

    def __init__(self, rows: list[tuple[int, str]]) -> None:
        rows = sorted(rows)
        self._starts = [r[0] for r in rows]
        self._names = [r[1] for r in rows]

    @classmethod
    def from_kallsyms(cls, text: str) -> "Symbols":
        """``/proc/kallsyms`` text → text symbols as offsets from ``_stext`` (empty when the kernel
        hides addresses: kptr_restrict prints them all as 0)."""
        rows: list[tuple[int, str]] = []
        stext = None
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 3 or parts[1] not in "tTwW":
                continue
            addr = int(parts[0], 16)
            if parts[2] == "_stext":
                stext = addr
            rows.append((addr, parts[2]))
        if not stext:
            return cls([])
        return cls([(a - stext, n) for a, n in rows if a])

    @classmethod
    def load(cls, path: Path) -> "Symbols":
        rows = []
        for line in path.read_text().splitlines():
            off, _, name = line.partition("\t")
            if name:
                rows.append((int(off), name))
        return cls(rows)

    def dump(self, offsets: set[int]) -> str:
        """The symbols that name ``offsets`` (the start of each containing function), as TSV."""
        used = {}
        for off in offsets:
            i = bisect.bisect_right(self._starts, off) - 1
            if i >= 0:
                used[self._starts[i]] = self._names[i]
        return "".join(f"{o}\t{n}\n" for o, n in sorted(used.items()))

    def name(self, off: int) -> str:
        i = bisect.bisect_right(self._starts, off) - 1
        if i < 0:  # before the first symbol: parent_offs of 0 - _stext without frame pointers
            return f"0x{off & 0xFFFFFFFF:x}"
        return self._names[i]

    def __bool__(self) -> bool:
        return bool(self._starts)


def who(caller: str, parent: str) -> str:
    """The function that held IRQs off: the disabling site unless it is a locking helper, then its
    caller; interrupt entry (the CPU took an interrupt) is unattributed."""
    for name in (caller, parent):
        if is_irq_entry(name):
            return UNATTRIBUTED
        if not is_helper(name) and not name.startswith("0x"):
            return name
    return UNATTRIBUTED


def mm_class(func: str) -> str:
    """The class of mm code a function belongs to (``IRQSOFF_MM_CLASSES``), or "other"."""
    if func == UNATTRIBUTED:
        return "interrupts"
    for cls, patterns in IRQSOFF_MM_CLASSES.items():
        if any(fnmatchcase(func, p) for p in patterns):
            return cls
    return "other"


def mm_path(func: str) -> str | None:
    """The path inside a class a function belongs to (``IRQSOFF_MM_PATHS``: "free scanner"), if any."""
    for path, patterns in IRQSOFF_MM_PATHS.items():
        if any(fnmatchcase(func, p) for p in patterns):
            return path
    return None


# Sections longer than this count as long.  6.1's scanners drop their lock every
# COMPACT_CLUSTER_MAX (32) pfns (3.18, "mm, compaction: periodically drop lock and restore IRQs in
# scanners"); such a section lasts ~5 us in a TCG guest, so one over 32 us held the lock for more
# than a cluster or lost its vCPU to the host.  A power of two: the histogram's buckets are log2.
LONG_SECTION_US = 32


def sections_over(buckets: dict[int, int], us: int = LONG_SECTION_US) -> int:
    """Sections longer than ``us`` (a power of two) in log2 buckets, where bucket b is (2^(b-1), 2^b] us."""
    edge = us.bit_length() - 1
    return sum(n for b, n in buckets.items() if b > edge)


@dataclass
class Offender:
    who: str
    mm_class: str
    count: int = 0
    total_us: int = 0
    longest_us: int = 0  # exact where the onmax histogram was read, else the top bucket's bound
    p99_bucket: int = 0  # log2 bucket holding the 99th percentile section: <= 2^b us
    sites: set[str] = field(default_factory=set)
    buckets: dict[int, int] = field(default_factory=dict)


def offenders(hist: SectionsHist, symbols: Symbols) -> list[Offender]:
    """Sections grouped by the function that held IRQs off, longest section first."""
    by: dict[str, Offender] = {}
    for st in hist.sites.values():
        caller, parent = symbols.name(st.caller), symbols.name(st.parent)
        w = who(caller, parent)
        o = by.setdefault(w, Offender(w, mm_class(w)))
        o.count += st.count
        o.total_us += st.total_us
        top = max(st.buckets) if st.buckets else 0
        # a log2 key holds ilog2(roundup_pow_of_two(us)): bucket b is (2^(b-1), 2^b] us
        longest = st.longest_us if st.longest_us is not None else (2**top if st.buckets else 0)
        o.longest_us = max(o.longest_us, longest)
        o.sites.add(f"{caller}<-{parent}")
        for b, n in st.buckets.items():
            o.buckets[b] = o.buckets.get(b, 0) + n
    for o in by.values():
        _set_p99(o)
    return sorted(by.values(), key=lambda o: (-o.longest_us, -o.total_us, o.who))


def _set_p99(o: Offender) -> None:
    seen, need = 0, 0.99 * o.count
    for b in sorted(o.buckets):
        seen += o.buckets[b]
        if seen >= need:
            o.p99_bucket = b
            return


def report(offs: list[Offender], hist: SectionsHist, top: int = 25, per_class: int = 3) -> str:
    """The offender table: one line per function, longest section first, mm classes summed."""
    total = sum(o.total_us for o in offs)
    n = sum(o.count for o in offs)
    lines = [f"IRQs-off sections: {n}, total {total} us (every section, from preemptirq hist triggers)"]
    if hist.dropped:
        lines.append(f"! {hist.dropped} sections dropped: the kernel's histogram was full")
    if not hist.exact_max:
        lines.append("! longest sections are log2 bucket bounds (the onmax histogram was not read)")
    over = f">{LONG_SECTION_US} us"
    lines.append(
        f"{'longest us':>10} {'total us':>10} {'count':>8} {over:>8} {'p99 <=':>7}  class         function (sites)"
    )
    for o in offs[:top]:
        sites = ", ".join(sorted(o.sites)[:3]) + (" ..." if len(o.sites) > 3 else "")
        lines.append(
            f"{o.longest_us:>10} {o.total_us:>10} {o.count:>8} {sections_over(o.buckets):>8} "
            f"{2**o.p99_bucket:>7}  {o.mm_class:<13} {o.who} ({sites})"
        )
    classes: dict[str, list[Offender]] = {}
    for o in offs:
        classes.setdefault(o.mm_class, []).append(o)
    lines.append("By class of code:")
    for c, group in sorted(classes.items(), key=lambda kv: -max(o.longest_us for o in kv[1])):
        lead = max(group, key=lambda o: o.longest_us)
        lines.append(
            f"  {c:<13} longest {lead.longest_us} us ({lead.who}), total "
            f"{sum(o.total_us for o in group)} us, {sum(o.count for o in group)} sections, "
            f"{sum(sections_over(o.buckets) for o in group)} over {LONG_SECTION_US} us"
        )
    # the mm classes' own leaders: under TCG the whole-machine list above is interrupt paths and
    # scheduler sections, and a compaction scanner never reaches its top 25
    lines.append("Top functions of each class of mm code:")
    for c in IRQSOFF_MM_CLASSES:
        for o in sorted(classes.get(c, []), key=lambda o: (-o.longest_us, -o.total_us, o.who))[:per_class]:
            sites = ", ".join(sorted(o.sites)[:2]) + (" ..." if len(o.sites) > 2 else "")
            lines.append(
                f"{o.longest_us:>10} {o.total_us:>10} {o.count:>8} {sections_over(o.buckets):>8} "
                f"{2**o.p99_bucket:>7}  {c:<13} {o.who} ({sites})"
            )
    return "\n".join(lines) + "\n"


def load(outdir: Path) -> tuple[SectionsHist, Symbols] | None:
    hp, sp = outdir / HIST_FILE, outdir / SYMBOLS_FILE
    if not hp.exists() or not sp.exists():
        return None
    return parse_hist(hp.read_text(errors="replace")), Symbols.load(sp)


def analyze_dirs(dirs: list[Path]) -> str:
    """The offender table over several iterations' monitor folders (sections summed per function,
    the longest kept).  A folder without the monitor's files is a usage error, never skipped."""
    from mmbench.errors import UsageError

    merged: dict[str, Offender] = {}
    dropped, exact = 0, True
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"{d}: not a folder (expected an irqsoff-sections monitor folder)")
        loaded = load(d)
        if loaded is None:
            raise UsageError(f"{d}: no {HIST_FILE} and {SYMBOLS_FILE} (not an irqsoff-sections monitor folder)")
        hist, symbols = loaded
        dropped += hist.dropped
        exact = exact and hist.exact_max
        for o in offenders(hist, symbols):
            m = merged.setdefault(o.who, Offender(o.who, o.mm_class))
            m.count += o.count
            m.total_us += o.total_us
            m.longest_us = max(m.longest_us, o.longest_us)
            m.sites |= o.sites
            for b, n in o.buckets.items():
                m.buckets[b] = m.buckets.get(b, 0) + n
    for m in merged.values():
        _set_p99(m)
    offs = sorted(merged.values(), key=lambda o: (-o.longest_us, -o.total_us, o.who))
    return f"{len(dirs)} iteration(s)\n" + report(offs, SectionsHist({}, dropped, exact))
