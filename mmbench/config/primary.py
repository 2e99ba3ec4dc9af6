"""The suite's primary rows (``[suite] primary``): what the suite is about, declared before the run.

A compare report tests many rows; the few a suite's aims are about (its headline and mechanism
rows) form one small Benjamini–Hochberg family with real power, marked ``*`` and the only rows
``--fail-on-regression`` reads; every other tested row is exploratory (docs/statistics.md §4).

An entry is ``[SECTION:]NAME[@STAT]`` (docs/suites.md):

* NAME: a row's metric name as a compare report shows it, matched case-insensitively: a workload
  metric ("Percentage huge"), a vmstat row ("Compaction stalls"), a duration row ("System"), or a
  metric of a monitor in the suite ("kswapd0 CPU (s)").
* SECTION (optional): only rows of that section: ``vmstat``, ``duration``, a workload label or
  plugin name, or a monitor name.  Only such a name counts as a prefix, so a NAME may hold ':'.
* STAT (optional): the row of the metric: the mean row by default, or ``P50``/``P90``/``P95``/
  ``P99`` of a latency metric.

A suite that names none gets the default of :func:`default_primary` (its headline metrics, then
rows per aim), resolved when the suite is loaded and stored with the run (suite-effective.json).
This module has no heavy imports: ``mmbench compare`` reads it too.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

MAX_PRIMARY = 6
STATS = ("mean", "P50", "P90", "P95", "P99")
DURATION_ROWS = ("User", "System", "Elapsed")
# The vmstat section's row names (analysis/vmstat.py ROWS; a test keeps the two equal): the
# loader checks primary names against them without importing the analysis stage.
VMSTAT_ROWS = (
    "Minor Faults", "Major Faults", "Swap Ins", "Swap Outs", "Allocation stalls", "Direct pages scanned",
    "Kswapd pages scanned", "Kswapd pages reclaimed", "Direct pages reclaimed", "Kswapd efficiency %",
    "Kswapd velocity", "Kswapd low wmark quickly", "Kswapd high wmark quickly", "Direct efficiency %",
    "Direct velocity", "Percentage direct scans", "Pages scanned anon", "Pages scanned file",
    "Pages reclaimed anon", "Pages reclaimed file", "Memcg limit pages scanned", "Memcg limit pages reclaimed",
    "Memcg efficiency %", "Page writes by reclaim", "Page writes file", "Page writes anon",
    "Page reclaim immediate", "Slabs scanned", "Workingset refaults anon", "Workingset refaults file",
    "Zswap ins", "Zswap outs", "Sector Reads", "Sector Writes", "THP fault alloc", "THP fault fallback",
    "THP collapse alloc", "THP collapse fail", "THP split", "Compaction stalls", "Compaction success",
    "Compaction failures", "Compaction efficiency", "Page migrate success", "Page migrate failure",
    "Compaction pages isolated", "Compaction migrate scanned", "Compaction free scanned", "Kcompactd wake",
    "NUMA alloc hit %", "NUMA alloc miss", "NUMA alloc local %", "NUMA base-page range updates",
    "NUMA PTE updates", "NUMA PMD updates", "NUMA hint faults", "NUMA hint local percent",
    "NUMA pages migrated")

# The default primary rows per aim (vmstat and duration rows: every suite has them), used after
# the suite's headline metrics when a suite declares no primary rows.
AIM_PRIMARY: dict[str, tuple[str, ...]] = {
    "kswapd": ("vmstat:Kswapd pages scanned", "vmstat:Kswapd efficiency %"),
    "direct-reclaim": ("vmstat:Direct pages scanned", "vmstat:Allocation stalls"),
    "compaction": ("vmstat:Compaction stalls", "vmstat:Compaction failures"),
    "fragmentation": ("vmstat:THP fault fallback", "vmstat:Compaction stalls"),
    "thp": ("vmstat:THP fault alloc", "vmstat:THP fault fallback"),
    "swap": ("vmstat:Swap Outs", "vmstat:Swap Ins"),
    "allocator": ("duration:System",),
    "numa": ("vmstat:NUMA alloc miss", "vmstat:NUMA alloc local %"),
    "writeback": ("vmstat:Page reclaim immediate", "vmstat:Page writes file"),
    "latency": (),
}


@dataclass(frozen=True)
class Entry:
    text: str                # as written
    section: str | None      # lower case, or None
    name: str                # lower case
    stat: str | None         # "mean", "p99", ... (lower case) or None (the mean row)

    def matches(self, section_names: set[str], metric: str, stat: str, mean_stats: tuple[str, ...]) -> bool:
        """Does this entry name the row ``metric``/``stat`` of a section known by ``section_names``
        (its kind, label, plugin or monitor name, lower case)?"""
        if self.section is not None and self.section not in section_names:
            return False
        if metric.lower() != self.name:
            return False
        want = self.stat or "mean"
        return stat in mean_stats if want == "mean" else stat.lower() == want


def parse_entry(text: str, sections: set[str]) -> Entry:
    """Split ``[SECTION:]NAME[@STAT]``; ``sections`` are the names a prefix may be (lower case)."""
    body, stat = text.strip(), None
    head, at, tail = body.rpartition("@")
    if at and tail.strip().lower() in {s.lower() for s in STATS}:
        body, stat = head.strip(), tail.strip().lower()
    section = None
    pre, colon, rest = body.partition(":")
    if colon and pre.strip().lower() in sections and rest.strip():
        section, body = pre.strip().lower(), rest.strip()
    return Entry(text, section, body.lower(), stat)


def default_primary(aims: list[str], headline: list[str]) -> list[str]:
    """The primary rows of a suite that declares none: its headline metrics, then each aim's
    rows of :data:`AIM_PRIMARY`, without repeats, at most :data:`MAX_PRIMARY`."""
    out: list[str] = []
    for name in [*headline, *(r for a in aims for r in AIM_PRIMARY.get(a, ()))]:
        if name not in out:
            out.append(name)
    return out[:MAX_PRIMARY]


def pattern_match(patterns: tuple[str, ...] | list[str], name: str) -> bool:
    """A monitor's declared row names (fnmatch patterns) against a metric name, case-insensitively."""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p.lower()) for p in patterns)
