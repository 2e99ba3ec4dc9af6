"""Stall analysis of mm tracepoints: begin→end pairs per pid, split by who stalled.

Input: decoded events (``name → [(ts_ns, cpu, pid, *fields)]`` with their field names, as
``mmbench.monitors.trace.ringbuffer.decode_files`` returns them).  Output: one record per stall
(kind, who, pid, comm, start, duration, pages reclaimed, pages scanned, overlaps a loss) and
per-kind statistics: count, total, mean, P50/P90/P95/P99, max and latency bins; plus extfrag
counts and kswapd wake-ups by allocation order.  ``find_stalls`` is the reference
``trace_decode.c`` must match stall for stall.

Pairs (begin → end, same pid, in time order; a begin without its end is dropped and counted as
unpaired, a later begin of the same kind and pid replaces an open one): direct reclaim, memcg
reclaim (and memcg soft-limit reclaim), node reclaim, compaction, kswapd awake (kswapd_wake →
kswapd_sleep), kcompactd awake, shrink_slab.  ``mm_vmscan_throttled`` carries its own duration
(``usec_delayed``).  Pages scanned during a reclaim stall are the ``nr_scanned`` of the
``mm_vmscan_lru_shrink_inactive`` events of that pid inside the pair; pages reclaimed are the end
event's ``nr_reclaimed``.  A stall whose interval overlaps a window in which a CPU's ring buffer
lost events is flagged (``lost``): its end, its scans or whole stalls inside it may be missing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from mmbench.model.lazy import numpy as np

from mmbench.model.quirks import KTHREADS
from mmbench.model.results import MetricDef
from mmbench.monitors.trace.formats import EventFormat, flag_bits

# kind → (begin event, end event, label)
PAIRS: dict[str, tuple[str, str, str]] = {
    "direct": ("mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end", "Direct reclaim"),
    "memcg": ("mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end", "Memcg reclaim"),
    "memcg_softlimit": (
        "mm_vmscan_memcg_softlimit_reclaim_begin",
        "mm_vmscan_memcg_softlimit_reclaim_end",
        "Memcg softlimit reclaim",
    ),
    "node": ("mm_vmscan_node_reclaim_begin", "mm_vmscan_node_reclaim_end", "Node reclaim"),
    "compaction": ("mm_compaction_begin", "mm_compaction_end", "Compaction run"),
    "kswapd": ("mm_vmscan_kswapd_wake", "mm_vmscan_kswapd_sleep", "Kswapd awake"),
    "kcompactd": ("mm_compaction_kcompactd_wake", "mm_compaction_kcompactd_sleep", "Kcompactd awake"),
    "shrink_slab": ("mm_shrink_slab_start", "mm_shrink_slab_end", "Shrink slab"),
}
LABELS = {k: v[2] for k, v in PAIRS.items()} | {"throttled": "Reclaim throttled"}
RECLAIM_KINDS = ("direct", "memcg", "memcg_softlimit", "node")
# Latency bins (us): upper edges
BINS_US = [10, 100, 1_000, 10_000, 100_000]
BIN_LABELS = ["<10us", "10-100us", "100us-1ms", "1-10ms", "10-100ms", ">=100ms"]
WHO = (*KTHREADS, "workload", "other")


@dataclass
class Stall:
    kind: str
    who: str
    pid: int
    comm: str
    start_ns: int
    dur_ns: int
    reclaimed: int = -1
    scanned: int = -1
    lost: int = 0  # 1: the stall overlaps a window where the ring buffer lost events


def classify(pid: int, comm: str, workload_pids: set[int]) -> str:
    for w in KTHREADS:
        if comm.startswith(w):
            return w
    if pid in workload_pids:
        return "workload"
    return "other"


def s64(x: int) -> int:
    """A time (ns) as the signed 64-bit number the C reader computes (u64 stamps, int64 times)."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def merge_windows(windows: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Loss windows (lo, hi) sorted and merged into disjoint intervals."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((min(w), max(w)) for w in windows):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def overlaps_loss(merged: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end] overlaps a loss window (lo, hi) of ``merge_windows``: events of the
    stall (its real end, a scan inside it, or the end and begin of stalls in between) may be lost."""
    i = bisect.bisect_left(merged, (end, end))  # first window with lo >= end
    return i > 0 and merged[i - 1][1] > start


def find_stalls(
    events: dict[str, list[tuple]],
    columns: dict[str, list[str]],
    comms: dict[int, str] | None = None,
    workload_pids: Iterable[int] = (),
    loss_windows: Iterable[tuple[int, int]] = (),
    unpaired: dict[str, int] | None = None,
) -> list[Stall]:
    """Stalls from decoded events (the reference; ``trace_decode.c`` does the same in C).
    ``loss_windows``: (lo, hi) ns intervals in which a CPU lost events: a stall overlapping one is
    flagged ``lost``.  ``unpaired`` (if given) gets the count of begins never ended (or replaced by
    a later begin of the same pid) and of ends without a begin."""
    comms = comms or {}
    wl = set(workload_pids)
    merged = merge_windows(loss_windows)
    role: dict[str, tuple[str, bool]] = {}
    for kind, (b, e, _) in PAIRS.items():
        role[b] = (kind, True)
        role[e] = (kind, False)
    stream: list[tuple] = []
    for name, rows in events.items():
        if name in role or name == "mm_vmscan_lru_shrink_inactive":
            stream.extend((r[0], name, r) for r in rows)
    stream.sort(key=lambda x: x[0])
    lru_cols = columns.get("mm_vmscan_lru_shrink_inactive", [])
    i_scanned = lru_cols.index("nr_scanned") + 3 if "nr_scanned" in lru_cols else None
    reclaimed_idx: dict[str, int | None] = {}
    for kind, (_b, e, _) in PAIRS.items():
        cols = columns.get(e, [])
        reclaimed_idx[e] = cols.index("nr_reclaimed") + 3 if "nr_reclaimed" in cols else None
    open_: dict[tuple[str, int], list] = {}
    open_reclaim: dict[int, list] = {}  # pid → the open reclaim pair's record (for scanned pages)
    stalls: list[Stall] = []
    replaced = ends_alone = 0
    for ts, name, row in stream:
        pid = row[2]
        if name == "mm_vmscan_lru_shrink_inactive":
            rec = open_reclaim.get(pid)
            if rec is not None and i_scanned is not None:
                rec[1] += row[i_scanned]
            continue
        kind, is_begin = role[name]
        key = (kind, pid)
        if is_begin:
            rec = [ts, 0]
            replaced += key in open_
            open_[key] = rec
            if kind in RECLAIM_KINDS:
                open_reclaim[pid] = rec
            continue
        rec = open_.pop(key, None)
        if rec is None:
            ends_alone += 1
            continue
        if kind in RECLAIM_KINDS and open_reclaim.get(pid) is rec:
            del open_reclaim[pid]
        comm = comms.get(pid, "")
        ri = reclaimed_idx.get(name)
        start = s64(rec[0])
        stalls.append(
            Stall(
                kind,
                classify(pid, comm, wl),
                pid,
                comm,
                start,
                s64(ts - rec[0]),
                row[ri] if ri is not None else -1,
                rec[1] if kind in RECLAIM_KINDS and i_scanned is not None else -1,
                int(overlaps_loss(merged, start, s64(ts))),
            )
        )
    if unpaired is not None:
        unpaired["begins"] = replaced + len(open_)
        unpaired["ends"] = ends_alone
    thr = events.get("mm_vmscan_throttled", [])
    tcols = columns.get("mm_vmscan_throttled", [])
    if thr and "usec_delayed" in tcols:
        j = tcols.index("usec_delayed") + 3
        for row in thr:
            pid = row[2]
            comm = comms.get(pid, "")
            start = s64(row[0] - row[j] * 1000)
            stalls.append(
                Stall(
                    "throttled",
                    classify(pid, comm, wl),
                    pid,
                    comm,
                    start,
                    row[j] * 1000,
                    lost=int(overlaps_loss(merged, start, s64(row[0]))),
                )
            )
    stalls.sort(key=lambda s: s.start_ns)
    return stalls


def follow_forks(events: dict[str, list[tuple]], columns: dict[str, list[str]], wl: set[int]) -> None:
    """Add to ``wl`` every task forked (process or thread) by a task already in it, in time order."""
    rows = events.get("sched_process_fork")
    cols = columns.get("sched_process_fork", [])
    if not rows or "parent_pid" not in cols or "child_pid" not in cols:
        return
    ip, ic = cols.index("parent_pid") + 3, cols.index("child_pid") + 3
    for r in sorted(rows, key=lambda r: (r[0], r[1])):
        if r[ip] in wl:
            wl.add(r[ic])


def extfrag_counts(
    events: dict[str, list[tuple]], columns: dict[str, list[str]], pageblock_order: int
) -> dict[str, int]:
    rows = events.get("mm_page_alloc_extfrag", [])
    cols = columns.get("mm_page_alloc_extfrag", [])
    out = {"extfrag": len(rows), "extfrag_change_ownership": 0, "extfrag_fragmenting": 0}
    if not rows:
        return out
    ic = cols.index("change_ownership") + 3 if "change_ownership" in cols else None
    io = cols.index("fallback_order") + 3 if "fallback_order" in cols else None
    for r in rows:
        if ic is not None and r[ic]:
            out["extfrag_change_ownership"] += 1
        if io is not None and r[io] < pageblock_order:
            out["extfrag_fragmenting"] += 1
    return out


# Kswapd wake-ups by allocation order (MMTests' trace-vmscan-postprocess reports the requests as
# "Wake kswapd requests"): mm_vmscan_wakeup_kswapd fires when an allocation finds kswapd asleep and
# the node unbalanced and wakes it (a request, for the allocation's order); mm_vmscan_kswapd_wake
# when kswapd starts a balance_pgdat() cycle, for the highest order asked of it since the last one
# (6.1's kswapd() traces it before every cycle, also when it did not sleep in between: more of them
# than "Kswapd awake count", which pairs a wake with the next sleep).  The question they answer:
# who woke kswapd for a high-order allocation.  Seed 000's known-answer patch lets SLUB's
# speculative high-order slab allocations wake kswapd again (vanilla 6.1's allocate_slab() clears
# __GFP_RECLAIM for that attempt when it may reclaim directly; atomic slab allocations and other
# high-order callers wake kswapd on vanilla too: 91-445 high-order requests per seed000 iteration).
WAKEUP_KSWAPD, KSWAPD_WAKE = "mm_vmscan_wakeup_kswapd", "mm_vmscan_kswapd_wake"
HIGH_ORDER_EVENTS = (WAKEUP_KSWAPD, KSWAPD_WAKE)  # events whose records with order > 0 are counted
# A speculative high-order attempt of a caller that could have reclaimed: it will neither reclaim
# directly, retry nor dip into the reserves, because it falls back to a smaller order at once,
# though its context may do IO.  SLUB's preferred-order slab (allocate_slab() adds __GFP_NORETRY,
# and __GFP_NOMEMALLOC for a caller that may block) is the one seed 000 is about; vanilla 6.1 also
# clears __GFP_KSWAPD_RECLAIM there.  __GFP_IO keeps out the high-order requests vanilla 6.1 does
# make with that signature (two seed000 guest iterations: 154 and 16; the raw capture of the second
# shows them): mempool_alloc()'s first
# attempt (gfp 0xd2800: GFP_NOIO less __GFP_DIRECT_RECLAIM, the writeback flusher's bios) and
# atomic callers (__GFP_HIGH, no __GFP_IO); TCP's skb_page_frag_refill() order-3 attempt has no
# __GFP_NOMEMALLOC.  The patched kernel adds GFP_NOFS slab attempts (0xd2850, from tar and python).
# The bits are read from each kernel's own print fmt (formats.flag_bits), never carried here.
SPECULATIVE_SET = ("__GFP_NORETRY", "__GFP_NOMEMALLOC", "__GFP_IO")
SPECULATIVE_CLEAR = ("__GFP_DIRECT_RECLAIM",)
# counts.json "kswapd_wakes" key → (event, which records: all / order > 0 / order > 0 and
# speculative, row, description)
KSWAPD_WAKE_ROWS = {
    "requests": (
        WAKEUP_KSWAPD,
        "all",
        "Kswapd wake requests",
        "mm_vmscan_wakeup_kswapd: an allocation found kswapd asleep and the node unbalanced, and woke it",
    ),
    "requests_high_order": (
        WAKEUP_KSWAPD,
        "high",
        "Kswapd wake requests, high-order",
        "wake requests for an allocation of order > 0",
    ),
    "requests_speculative": (
        WAKEUP_KSWAPD,
        "speculative",
        "Kswapd wake requests, speculative high-order",
        "high-order wake requests whose gfp_flags have __GFP_NORETRY, __GFP_NOMEMALLOC "
        "and __GFP_IO but not __GFP_DIRECT_RECLAIM: the attempt of a caller that could "
        "reclaim, falling back at once instead (SLUB's preferred slab order)",
    ),
    "wakes_high_order": (
        KSWAPD_WAKE,
        "high",
        "Kswapd wakes, high-order",
        "mm_vmscan_kswapd_wake with order > 0: kswapd balanced the node for a high order",
    ),
}


def speculative_masks(fmt: EventFormat) -> tuple[int, int] | None:
    """(bits that must be set, bits that must be clear) in ``fmt``'s gfp_flags for a speculative
    high-order attempt, from the kernel's own flag names; None when the format has no gfp_flags
    field or does not name those flags."""
    if "gfp_flags" not in fmt.fields or "order" not in fmt.fields:
        return None
    bits = flag_bits(fmt, "gfp_t", "__GFP_")
    if not all(n in bits for n in (*SPECULATIVE_SET, *SPECULATIVE_CLEAR)):
        return None
    return sum(bits[n] for n in SPECULATIVE_SET), sum(bits[n] for n in SPECULATIVE_CLEAR)


def high_order_counts(events: dict[str, list[tuple]], columns: dict[str, list[str]]) -> dict[str, int]:
    """Event name → its records with ``order`` > 0, for the HIGH_ORDER_EVENTS recorded whose format
    has an ``order`` field (``trace_decode.c``'s "order" lines)."""
    out = {}
    for name in HIGH_ORDER_EVENTS:
        cols = columns.get(name)
        if cols is not None and "order" in cols:
            i = cols.index("order") + 3
            out[name] = sum(1 for r in events.get(name, ()) if r[i] > 0)
    return out


def speculative_counts(
    events: dict[str, list[tuple]], columns: dict[str, list[str]], masks: dict[str, tuple[int, int]]
) -> dict[str, int]:
    """Event name → its records with ``order`` > 0 whose gfp_flags match the event's
    ``speculative_masks`` (the "order" lines' gfp part in ``trace_decode.c``)."""
    out = {}
    for name, (want, clear) in masks.items():
        cols = columns.get(name)
        if cols is None or "order" not in cols or "gfp_flags" not in cols:
            continue
        io, ig = cols.index("order") + 3, cols.index("gfp_flags") + 3
        out[name] = sum(1 for r in events.get(name, ()) if r[io] > 0 and r[ig] & want == want and not r[ig] & clear)
    return out


def kswapd_wakes(
    events: dict[str, int], high_order: dict[str, int], speculative: dict[str, int] | None = None
) -> tuple[dict[str, int], list[str]]:
    """The counts of KSWAPD_WAKE_ROWS from the decoder's event counts (every recorded event, 0s
    included), ``high_order_counts`` and ``speculative_counts``; a count the capture cannot give
    is left out (its row is absent, never 0), with a note when the event was recorded but its
    format lacks what the count needs."""
    out: dict[str, int] = {}
    notes = []
    for key, (name, which, row, _) in KSWAPD_WAKE_ROWS.items():
        if name not in events:
            continue
        if which == "all":
            out[key] = events[name]
        elif which == "high" and name in high_order:
            out[key] = high_order[name]
        elif which == "speculative" and name in (speculative or {}):
            out[key] = speculative[name]
        elif which == "high" or name not in high_order:
            notes.append(f"this kernel's {name} tracepoint has no order field: no {row!r} row")
        else:
            notes.append(
                f"this kernel's {name} tracepoint has no gfp_flags field naming "
                f"{', '.join((*SPECULATIVE_SET, *SPECULATIVE_CLEAR))}: no {row!r} row"
            )
    return out, notes


# -- stalls file -----------------------------------------------------------------------------

COLUMNS = ["kind", "who", "pid", "comm", "start_ns", "dur_ns", "reclaimed", "scanned", "lost"]
HEADER = "\t".join(COLUMNS)
INT_COLUMNS = ("pid", "start_ns", "dur_ns", "reclaimed", "scanned", "lost")


def clean_comm(comm: str) -> str:
    """A comm as one TSV field (a task may name itself with tabs or newlines)."""
    return comm.replace("\t", " ").replace("\n", " ") or "-"


def write_stalls(path: Path | str, stalls: list[Stall]) -> None:
    with open(path, "w") as fh:
        fh.write(HEADER + "\n")
        for s in stalls:
            fh.write(
                f"{s.kind}\t{s.who}\t{s.pid}\t{clean_comm(s.comm)}\t{s.start_ns}\t{s.dur_ns}\t"
                f"{s.reclaimed}\t{s.scanned}\t{s.lost}\n"
            )


def read_stall_columns(path: Path | str, columns: Iterable[str] = COLUMNS) -> dict[str, Any]:
    """``stalls.tsv`` as columns (only ``columns``): kind, who and comm as lists of str, the rest
    int64 arrays (a file written before the ``lost`` column gets lost = 0)."""
    with open(path) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        text = fh.read()
    if header[:8] != COLUMNS[:8]:
        raise ValueError(f"{path}: not an mm-trace stalls.tsv (header {header!r})")
    ncol = len(header)
    flat = text.replace("\n", "\t").split("\t")
    if flat and flat[-1] == "":
        flat.pop()
    if len(flat) % ncol:  # a damaged line: keep the whole ones
        lines = [ln for ln in text.split("\n") if ln.count("\t") == ncol - 1]
        flat = "\t".join(lines).split("\t") if lines else []
    n = len(flat) // ncol
    out: dict[str, Any] = {}
    for name in columns:
        i = COLUMNS.index(name)
        col = flat[i::ncol] if i < ncol else None
        if name in INT_COLUMNS:
            out[name] = np.array(col, dtype=np.int64) if col is not None else np.zeros(n, np.int64)
        else:
            out[name] = [("" if c == "-" else c) for c in col] if name == "comm" else col
    return out


def columns_of(stalls: list[Stall]) -> dict[str, Any]:
    """The columns of ``read_stall_columns`` from Stall records."""
    out: dict[str, Any] = {}
    for name in COLUMNS:
        vals = [getattr(s, name) for s in stalls]
        out[name] = np.array(vals, dtype=np.int64) if name in INT_COLUMNS else vals
    return out


def read_stalls(path: Path | str) -> list[Stall]:
    c = read_stall_columns(path)
    ints = [c[k].tolist() for k in INT_COLUMNS]
    return [
        Stall(k, w, pid, comm, st, d, r, sc, lo)
        for k, w, comm, (pid, st, d, r, sc, lo) in zip(c["kind"], c["who"], c["comm"], zip(*ints))
    ]


# -- statistics ------------------------------------------------------------------------------


def stats(durations_us: list[float] | np.ndarray) -> dict[str, Any]:
    a = np.asarray(durations_us, dtype=float)
    if not len(a):
        return {"count": 0, "total_us": 0.0}
    bins = np.searchsorted(BINS_US, a, side="right")
    counts = np.bincount(bins, minlength=len(BIN_LABELS))
    p50, p90, p95, p99 = (float(x) for x in np.percentile(a, [50, 90, 95, 99]))
    return {
        "count": int(len(a)),
        "total_us": float(a.sum()),
        "mean_us": float(a.mean()),
        "p50_us": p50,
        "p90_us": p90,
        "p95_us": p95,
        "p99_us": p99,
        "max_us": float(a.max()),
        "bins": dict(zip(BIN_LABELS, map(int, counts))),
    }


@dataclass
class Coded:
    """A column of a few distinct strings as small integer codes (8x less memory than numpy
    strings, and a comparison per name instead of per row)."""

    codes: Any
    names: list[str]

    @classmethod
    def of(cls, values: Any) -> "Coded":
        if isinstance(values, Coded):
            return values
        names = sorted(set(values.tolist() if isinstance(values, np.ndarray) else values))
        idx = {n: i for i, n in enumerate(names)}
        return cls(np.fromiter((idx[v] for v in values), dtype=np.int32, count=len(values)), names)

    def __len__(self) -> int:
        return len(self.codes)

    def mask(self, name: str) -> Any:
        return self.codes == (self.names.index(name) if name in self.names else -1)

    def take(self, sel: Any) -> "Coded":
        return Coded(self.codes[sel], self.names)


def _groups(cols: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """kind → {"all": durations µs (float array), "_sel": its rows, who: durations µs, ...}, kinds
    in LABELS order (then any other kind the file holds)."""
    if not len(cols["kind"]):
        return {}
    kind = Coded.of(cols["kind"])
    who = Coded.of(cols["who"])
    dur = np.asarray(cols["dur_ns"]) / 1e3
    out: dict[str, dict[str, Any]] = {}
    order = [k for k in LABELS if k in kind.names] + sorted(k for k in kind.names if k not in LABELS)
    for k in order:
        sel = kind.mask(k)
        if not sel.any():
            continue
        d: dict[str, Any] = {"all": dur[sel], "_sel": sel}
        kw = who.take(sel)
        for w in WHO:
            m = kw.mask(w)
            if m.any():
                d[w] = d["all"][m]
        out[k] = d
    return out


def table(stalls: list[Stall] | dict[str, Any]) -> dict[str, dict[str, Any]]:
    """kind → {"all": stats, who: stats, ...}"""
    cols = stalls if isinstance(stalls, dict) else columns_of(stalls)
    return {k: {w: stats(v) for w, v in d.items() if w != "_sel"} for k, d in _groups(cols).items()}


# Compaction's begin→end pair is one compact_zone() run: direct compaction (several zones per
# allocation), kcompactd and proactive compaction alike; /proc/vmstat compact_stall counts direct
# compaction attempts instead.  Its rows say "runs" so the two are not read as the same count.
COMPACTION_RUNS = "Compaction runs (trace)"


def _base(kind: str) -> tuple[str, str]:
    """(row name stem, noun) of a stall kind."""
    label = LABELS.get(kind, kind)
    if kind == "compaction":
        return "Compaction run time", "run"
    if kind in ("kswapd", "kcompactd"):
        return label, "awake"
    return f"{label} stall", "stall"


def metrics(
    stalls: list[Stall] | dict[str, Any],
    extfrag: dict[str, int] | None = None,
    duration_s: float | None = None,
    wakes: dict[str, int] | None = None,
) -> list[tuple[MetricDef, list[float]]]:
    """MonitorSummary metrics: per kind (and per who) stall latencies, count, total, pages; extfrag
    counts; ``wakes`` (``kswapd_wakes``' counts): the kswapd wake-up rows it holds."""
    cols = stalls if isinstance(stalls, dict) else columns_of(stalls)
    out: list[tuple[MetricDef, list[float]]] = []
    for kind, g in _groups(cols).items():
        if kind not in LABELS:
            continue
        label = LABELS[kind]
        base, noun = _base(kind)
        d = g["all"]
        what = "compact_zone() run" if kind == "compaction" else f"{label.lower()} {noun}"
        out.append(
            (
                MetricDef(f"{base} (us)", "us", "lower", kind="latency", description=f"duration of each {what}"),
                d.tolist(),
            )
        )
        if kind == "compaction":
            kc = float(len(g.get("kcompactd", ())))
            out.append(
                (
                    MetricDef(
                        COMPACTION_RUNS,
                        "runs",
                        "lower",
                        kind="count",
                        mean="amean",
                        description="mm_compaction_begin→end pairs: one per compact_zone() run, "
                        "kcompactd's included (not vmstat's compact_stall)",
                    ),
                    [float(len(d))],
                )
            )
            out.append(
                (
                    MetricDef(
                        "Compaction runs, direct (trace)",
                        "runs",
                        "lower",
                        kind="count",
                        mean="amean",
                        description="compact_zone() runs outside kcompactd: direct compaction",
                    ),
                    [float(len(d)) - kc],
                )
            )
            out.append(
                (MetricDef("Compaction runs, kcompactd (trace)", "runs", "lower", kind="count", mean="amean"), [kc])
            )
        else:
            out.append((MetricDef(f"{base} count", "events", "lower", kind="count", mean="amean"), [float(len(d))]))
        out.append(
            (
                MetricDef(
                    f"{base} total (ms)", "ms", "lower", kind="time", mean="amean", description="sum of the durations"
                ),
                [float(d.sum()) / 1e3],
            )
        )
        whos = [w for w in WHO if w in g]
        if len(whos) > 1 or (whos and whos[0] != "other"):
            for who in sorted(whos):
                out.append((MetricDef(f"{base} {who} (us)", "us", "lower", kind="latency"), g[who].tolist()))
        if kind in RECLAIM_KINDS:
            sel = g["_sel"]
            rec = cols["reclaimed"][sel]
            scn = cols["scanned"][sel]
            rec = rec[rec >= 0]
            scn = scn[scn >= 0]
            if len(rec):
                out.append(
                    (
                        MetricDef(f"{label} pages reclaimed per stall", "pages", "higher", kind="count", mean="amean"),
                        rec.astype(float).tolist(),
                    )
                )
            if len(scn):
                out.append(
                    (
                        MetricDef(f"{label} pages scanned per stall", "pages", "lower", kind="count", mean="amean"),
                        scn.astype(float).tolist(),
                    )
                )
        if noun != "awake":
            counts = stats(d)["bins"]
            stem = "Compaction runs" if kind == "compaction" else f"{base}s"
            for b, c in counts.items():
                out.append((MetricDef(f"{stem} {b}", "events", "lower", kind="count", mean="amean"), [float(c)]))
    if extfrag is not None:
        out.append(
            (
                MetricDef("Extfrag fallbacks", "events", "lower", kind="count", mean="amean"),
                [float(extfrag.get("extfrag", 0))],
            )
        )
        out.append(
            (
                MetricDef(
                    "Extfrag pageblock ownership changes",
                    "events",
                    "lower",
                    kind="count",
                    mean="amean",
                    description="fallbacks that steal the pageblock",
                ),
                [float(extfrag.get("extfrag_change_ownership", 0))],
            )
        )
        out.append(
            (
                MetricDef(
                    "Extfrag fragmenting fallbacks",
                    "events",
                    "lower",
                    kind="count",
                    mean="amean",
                    description="fallback_order below pageblock order: mixes migrate types",
                ),
                [float(extfrag.get("extfrag_fragmenting", 0))],
            )
        )
    for key, (_, _, row, desc) in KSWAPD_WAKE_ROWS.items():
        if key in (wakes or {}):
            out.append(
                (MetricDef(row, "events", "lower", kind="count", mean="amean", description=desc), [float(wakes[key])])
            )
    return out


def report(stalls: list[Stall] | dict[str, Any]) -> str:
    """A plain-text table: one row per kind and who."""
    lines = [
        f"{'stall':28s} {'who':10s} {'count':>7s} {'total ms':>10s} {'mean us':>9s} {'p50':>8s} "
        f"{'p90':>8s} {'p95':>8s} {'p99':>8s} {'max us':>9s}"
    ]
    for kind, d in table(stalls).items():
        for who, st in d.items():
            if not st["count"]:
                continue
            lines.append(
                f"{LABELS.get(kind, kind):28s} {who:10s} {st['count']:7d} {st['total_us'] / 1e3:10.2f} "
                f"{st['mean_us']:9.1f} {st['p50_us']:8.1f} {st['p90_us']:8.1f} {st['p95_us']:8.1f} "
                f"{st['p99_us']:8.1f} {st['max_us']:9.1f}"
            )
    cols = stalls if isinstance(stalls, dict) else columns_of(stalls)
    lost = int(np.asarray(cols["lost"]).sum()) if len(cols["lost"]) else 0
    if lost:
        lines.append(
            f"{lost} stall(s) overlap a window where the ring buffer lost events (lost=1 in stalls.tsv): "
            "their durations or pages may be wrong"
        )
    return "\n".join(lines)


def read_stall_durations(path: Path) -> dict[str, list[float]]:
    """kind → stall durations (µs) from an mm-trace ``stalls.tsv``."""
    c = read_stall_columns(path, ("kind", "dur_ns"))
    dur = c["dur_ns"] / 1e3
    kind = np.asarray(c["kind"])
    return {k: dur[kind == k].tolist() for k in dict.fromkeys(c["kind"])}
