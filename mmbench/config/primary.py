"""The suite's declared rows: ``[suite] primary``, its outcomes (what a user of the kernel gets:
throughput, latency, THP availability, CPU cost; each with a better direction), and ``[suite]
mechanisms``, how the kernel got there (scans, stalls, compaction, kswapd activity; reported as
up or down, never better or worse), declared before the run.

A compare report tests many rows; the outcomes form one small Benjamini–Hochberg family with real
power, marked ``*`` and the only rows ``--fail-on-regression`` reads; the mechanisms a second small
family of their own, which never gates; every other tested row is exploratory (docs/statistics.md
§4).  ``compare --primary``/``--mechanisms`` replace the stored families with the same syntax.

An entry is ``[SECTION:]NAME[@STAT]`` (docs/suites.md):

* NAME: a row's metric name as a compare report shows it, matched case-insensitively: a workload
  metric ("Percentage huge"), a vmstat row ("Compaction stalls"), a duration row ("System"), or a
  metric of a monitor in the suite ("kswapd0 CPU (s)").
* SECTION (optional): only rows of that section: ``vmstat``, ``duration``, a workload label or
  plugin name, or a monitor name.  Only such a name counts as a prefix, so a NAME may hold ':'.
* STAT (optional): the row of the metric: the mean row by default, or ``P50``/``P90``/``P95``/
  ``P99`` of a latency metric.

An entry names one row: in a suite of several workloads a vmstat, duration or monitor row exists
once per workload, so its entry needs the workload's label as SECTION ("pagealloc:System").  The
cap of :data:`MAX_PRIMARY` counts rows.  A suite that names none gets the defaults of
:func:`default_families` (its headline metrics and the outcome rows of its aims; the mechanism
rows of its aims), resolved when the suite is loaded and stored with the run
(suite-effective.json).  This module has no heavy imports: ``mmbench compare`` reads it too.
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
    "Minor Faults",
    "Major Faults",
    "Swap Ins",
    "Swap Outs",
    "Allocation stalls",
    "Direct pages scanned",
    "Kswapd pages scanned",
    "Kswapd pages reclaimed",
    "Direct pages reclaimed",
    "Kswapd efficiency %",
    "Kswapd velocity",
    "Kswapd low wmark quickly",
    "Kswapd high wmark quickly",
    "Direct efficiency %",
    "Direct velocity",
    "Percentage direct scans",
    "Pages scanned anon",
    "Pages scanned file",
    "Pages reclaimed anon",
    "Pages reclaimed file",
    "Memcg limit pages scanned",
    "Memcg limit pages reclaimed",
    "Memcg efficiency %",
    "Page writes by reclaim",
    "Page writes file",
    "Page writes anon",
    "Page reclaim immediate",
    "Slabs scanned",
    "Workingset refaults anon",
    "Workingset refaults file",
    "Zswap ins",
    "Zswap outs",
    "Zswap writebacks",
    "Swap outs zero-filled",
    "Swap ins zero-filled",
    "Sector Reads",
    "Sector Writes",
    "THP fault alloc",
    "THP fault fallback",
    "THP collapse alloc",
    "THP collapse fail",
    "THP split",
    "Compaction stalls",
    "Compaction success",
    "Compaction failures",
    "Compaction efficiency",
    "Page migrate success",
    "Page migrate failure",
    "Compaction pages isolated",
    "Compaction migrate scanned",
    "Compaction free scanned",
    "Kcompactd wake",
    "NUMA alloc hit %",
    "NUMA alloc miss",
    "NUMA alloc local %",
    "NUMA base-page range updates",
    "NUMA PTE updates",
    "NUMA PMD updates",
    "NUMA hint faults",
    "NUMA hint local percent",
    "NUMA pages migrated",
)

# The default rows per aim (vmstat and duration rows: every suite has them), for a suite that
# declares neither family: outcomes (a better direction a user feels) join the headline metrics in
# the primary family; mechanisms (how the kernel got there) form the mechanism family.
AIM_OUTCOMES: dict[str, tuple[str, ...]] = {
    "kswapd": (),
    "direct-reclaim": (),
    "compaction": (),
    "fragmentation": ("vmstat:THP fault fallback",),
    "thp": ("vmstat:THP fault alloc", "vmstat:THP fault fallback"),
    "swap": (),
    "allocator": ("duration:System",),
    "numa": ("vmstat:NUMA alloc local %", "vmstat:NUMA alloc miss"),
    "writeback": (),
    "latency": (),
}
AIM_MECHANISMS: dict[str, tuple[str, ...]] = {
    "kswapd": ("vmstat:Kswapd pages scanned", "vmstat:Kswapd efficiency %"),
    "direct-reclaim": ("vmstat:Direct pages scanned", "vmstat:Allocation stalls"),
    "compaction": ("vmstat:Compaction stalls", "vmstat:Compaction failures"),
    "fragmentation": ("vmstat:Compaction stalls",),
    "thp": (),
    "swap": ("vmstat:Swap Outs", "vmstat:Swap Ins"),
    "allocator": (),
    "numa": (),
    "writeback": ("vmstat:Page reclaim immediate", "vmstat:Page writes file"),
    "latency": (),
}
FAMILIES = ("primary", "mechanisms")


@dataclass(frozen=True)
class Entry:
    text: str  # as written
    sections: tuple[str, ...]  # lower case, each a name of the row's section (empty: any section)
    name: str  # lower case
    stat: str | None  # "mean", "p99", ... (lower case) or None (the mean row)

    @property
    def section(self) -> str | None:
        return self.sections[0] if self.sections else None

    def matches(self, section_names: set[str], metric: str, stat: str, mean_stats: tuple[str, ...]) -> bool:
        """Does this entry name the row ``metric``/``stat`` of a section known by ``section_names``
        (its kind, label, plugin or monitor name, lower case)?"""
        if any(s not in section_names for s in self.sections):
            return False
        if metric.lower() != self.name:
            return False
        want = self.stat or "mean"
        return stat in mean_stats if want == "mean" else stat.lower() == want


def parse_entry(text: str, sections: set[str]) -> Entry:
    """Split ``[SECTION:[SECTION:]]NAME[@STAT]``; ``sections`` are the names a prefix may be (lower
    case): a section kind (vmstat, duration, workload, monitor), a workload label or plugin, a
    monitor name.  Two prefixes name a section by both ("duration:pagealloc:System")."""
    body, stat = text.strip(), None
    head, at, tail = body.rpartition("@")
    if at and tail.strip().lower() in {s.lower() for s in STATS}:
        body, stat = head.strip(), tail.strip().lower()
    found: list[str] = []
    while len(found) < 2:
        pre, colon, rest = body.partition(":")
        if not (colon and pre.strip().lower() in sections and rest.strip()):
            break
        found.append(pre.strip().lower())
        body = rest.strip()
    return Entry(text, tuple(found), body.lower(), stat)


def _qualified(entry: str, label: str | None) -> str:
    """``vmstat:NAME`` as the entry of one workload's row: ``LABEL:NAME`` (None: unchanged)."""
    if label is None:
        return entry
    return f"{label}:{entry.split(':', 1)[1] if ':' in entry else entry}"


def default_families(
    aims: list[str],
    headline: list[tuple[str, str]],
    labels: list[str],
    declared_primary: list[str] | None = None,
    declared_mechanisms: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """The primary and mechanism entries of a suite that declares one or neither family.

    ``headline``: (workload label, metric) of its headline metrics (else each workload's first
    metric); ``labels``: its workloads.  Primary: the headline metrics, then each aim's outcome rows
    (:data:`AIM_OUTCOMES`); mechanisms: each aim's mechanism rows (:data:`AIM_MECHANISMS`), only
    when the suite declares no primary rows (a suite that declares its primary family chose what
    to judge).  Without repeats, at most :data:`MAX_PRIMARY` rows each; a declared family is kept
    as it is, and a default entry naming a row the other family declares is left out.  With
    several workloads every entry carries its workload's label, so each names one row."""
    multi = len(labels) > 1
    per_label: list[str | None] = list(labels) if multi else [None]

    def fill(first: list[str], table: dict[str, tuple[str, ...]], taken: list[str]) -> list[str]:
        out: list[str] = []
        taken_low = {_key(t) for t in taken}
        for name in [*first, *(_qualified(r, lab) for a in aims for r in table.get(a, ()) for lab in per_label)]:
            if name not in out and _key(name) not in taken_low:
                out.append(name)
        return out[:MAX_PRIMARY]

    clash = {n.lower() for n in (*VMSTAT_ROWS, *DURATION_ROWS)}
    heads = [("workload:" if m.lower() in clash else "") + (f"{lab}:" if multi else "") + m for lab, m in headline]
    mech_decl = list(declared_mechanisms or [])
    primary = list(declared_primary) if declared_primary else fill(heads, AIM_OUTCOMES, mech_decl)
    if mech_decl:
        mechanisms = mech_decl
    elif declared_primary:
        mechanisms = []
    else:
        mechanisms = fill([], AIM_MECHANISMS, primary)
    return primary, mechanisms


def _key(entry: str) -> str:
    """An entry without its ``vmstat:``/``duration:`` prefix, lower case (for overlap of defaults)."""
    low = entry.strip().lower()
    for pre in ("vmstat:", "duration:"):
        if low.startswith(pre):
            return low[len(pre) :]
    return low


def default_primary(aims: list[str], headline: list[str]) -> list[str]:
    """The primary entries of a one-workload suite that declares none (:func:`default_families`)."""
    return default_families(aims, [("", h) for h in headline], [""])[0]


def pattern_match(patterns: tuple[str, ...] | list[str], name: str) -> bool:
    """A monitor's declared row names (fnmatch patterns) against a metric name, case-insensitively."""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p.lower()) for p in patterns)
