"""Stall analysis of mm tracepoints: begin→end pairs per pid, split by who stalled.

Input: decoded events (``name → [(ts_ns, cpu, pid, *fields)]`` with their field names, as
``mmbench.monitors.trace.ringbuffer.decode_files`` returns them).  Output: one record per stall
(kind, who, pid, comm, start, duration, pages reclaimed, pages scanned) and per-kind statistics:
count, total, mean, P50/P90/P95/P99, max and latency bins; plus extfrag counts.

Pairs (begin → end, same pid; a begin without its end, e.g. after lost events, is dropped):
direct reclaim, memcg reclaim (and memcg soft-limit reclaim), node reclaim, compaction,
kswapd awake (kswapd_wake → kswapd_sleep), kcompactd awake, shrink_slab.  ``mm_vmscan_throttled``
carries its own duration (``usec_delayed``).  Pages scanned during a reclaim stall are the
``nr_scanned`` of the ``mm_vmscan_lru_shrink_inactive`` events of that pid inside the pair; pages
reclaimed are the end event's ``nr_reclaimed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from mmbench.model.lazy import numpy as np

from mmbench.model.quirks import KTHREADS
from mmbench.model.results import MetricDef

# kind → (begin event, end event, label)
PAIRS: dict[str, tuple[str, str, str]] = {
    "direct": ("mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end", "Direct reclaim"),
    "memcg": ("mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end", "Memcg reclaim"),
    "memcg_softlimit": ("mm_vmscan_memcg_softlimit_reclaim_begin", "mm_vmscan_memcg_softlimit_reclaim_end",
                        "Memcg softlimit reclaim"),
    "node": ("mm_vmscan_node_reclaim_begin", "mm_vmscan_node_reclaim_end", "Node reclaim"),
    "compaction": ("mm_compaction_begin", "mm_compaction_end", "Compaction"),
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


def classify(pid: int, comm: str, workload_pids: set[int]) -> str:
    for w in KTHREADS:
        if comm.startswith(w):
            return w
    if pid in workload_pids:
        return "workload"
    return "other"


def find_stalls(events: dict[str, list[tuple]], columns: dict[str, list[str]],
                comms: dict[int, str] | None = None, workload_pids: Iterable[int] = ()) -> list[Stall]:
    comms = comms or {}
    wl = set(workload_pids)
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
    open_reclaim: dict[int, list] = {}   # pid → the open reclaim pair's record (for scanned pages)
    stalls: list[Stall] = []
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
            open_[key] = rec
            if kind in RECLAIM_KINDS:
                open_reclaim[pid] = rec
            continue
        rec = open_.pop(key, None)
        if rec is None:
            continue
        if kind in RECLAIM_KINDS and open_reclaim.get(pid) is rec:
            del open_reclaim[pid]
        comm = comms.get(pid, "")
        ri = reclaimed_idx.get(name)
        stalls.append(Stall(kind, classify(pid, comm, wl), pid, comm, rec[0], ts - rec[0],
                            row[ri] if ri is not None else -1,
                            rec[1] if kind in RECLAIM_KINDS and i_scanned is not None else -1))
    thr = events.get("mm_vmscan_throttled", [])
    tcols = columns.get("mm_vmscan_throttled", [])
    if thr and "usec_delayed" in tcols:
        j = tcols.index("usec_delayed") + 3
        for row in thr:
            pid = row[2]
            comm = comms.get(pid, "")
            stalls.append(Stall("throttled", classify(pid, comm, wl), pid, comm, row[0] - row[j] * 1000,
                                row[j] * 1000))
    stalls.sort(key=lambda s: s.start_ns)
    return stalls


def extfrag_counts(events: dict[str, list[tuple]], columns: dict[str, list[str]],
                   pageblock_order: int) -> dict[str, int]:
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


# -- stalls file -----------------------------------------------------------------------------

HEADER = "kind\twho\tpid\tcomm\tstart_ns\tdur_ns\treclaimed\tscanned"


def write_stalls(path, stalls: list[Stall]) -> None:
    with open(path, "w") as fh:
        fh.write(HEADER + "\n")
        for s in stalls:
            comm = s.comm.replace("\t", " ") or "-"
            fh.write(f"{s.kind}\t{s.who}\t{s.pid}\t{comm}\t{s.start_ns}\t{s.dur_ns}\t{s.reclaimed}\t{s.scanned}\n")


def read_stalls(path) -> list[Stall]:
    out = []
    with open(path) as fh:
        fh.readline()
        for line in fh:
            p = line.rstrip("\n").split("\t")
            if len(p) == 8:
                out.append(Stall(p[0], p[1], int(p[2]), "" if p[3] == "-" else p[3], int(p[4]), int(p[5]),
                                 int(p[6]), int(p[7])))
    return out


# -- statistics ------------------------------------------------------------------------------

def stats(durations_us: list[float] | np.ndarray) -> dict[str, Any]:
    a = np.asarray(durations_us, dtype=float)
    if not len(a):
        return {"count": 0, "total_us": 0.0}
    bins = np.searchsorted(BINS_US, a, side="right")
    counts = np.bincount(bins, minlength=len(BIN_LABELS))
    return {"count": int(len(a)), "total_us": float(a.sum()), "mean_us": float(a.mean()),
            "p50_us": float(np.percentile(a, 50)), "p90_us": float(np.percentile(a, 90)),
            "p95_us": float(np.percentile(a, 95)), "p99_us": float(np.percentile(a, 99)),
            "max_us": float(a.max()), "bins": dict(zip(BIN_LABELS, map(int, counts)))}


def table(stalls: list[Stall]) -> dict[str, dict[str, Any]]:
    """kind → {"all": stats, who: stats, ...}"""
    out: dict[str, dict[str, Any]] = {}
    kinds = sorted({s.kind for s in stalls}, key=lambda k: list(LABELS).index(k) if k in LABELS else 99)
    for kind in kinds:
        ks = [s for s in stalls if s.kind == kind]
        d = {"all": stats([s.dur_ns / 1e3 for s in ks])}
        for who in WHO:
            ws = [s.dur_ns / 1e3 for s in ks if s.who == who]
            if ws:
                d[who] = stats(ws)
        out[kind] = d
    return out


def metrics(stalls: list[Stall], extfrag: dict[str, int] | None = None,
            duration_s: float | None = None) -> list[tuple[MetricDef, list[float]]]:
    """MonitorSummary metrics: per kind (and per who) stall latencies, count, total, pages."""
    out: list[tuple[MetricDef, list[float]]] = []
    by_kind: dict[str, list[Stall]] = {}
    for s in stalls:
        by_kind.setdefault(s.kind, []).append(s)
    for kind in [k for k in LABELS if k in by_kind]:
        ks = by_kind[kind]
        label = LABELS[kind]
        d = [s.dur_ns / 1e3 for s in ks]
        noun = "awake" if kind in ("kswapd", "kcompactd") else "stall"
        base = label if noun == "awake" else f"{label} stall"
        out.append((MetricDef(f"{base} (us)", "us", "lower", kind="latency",
                              description=f"duration of each {label.lower()} {noun}"), d))
        out.append((MetricDef(f"{base} count", "events", "lower", kind="count", mean="amean"), [float(len(ks))]))
        out.append((MetricDef(f"{base} total (ms)", "ms", "lower", kind="time", mean="amean",
                              description="sum of the durations"), [sum(d) / 1e3]))
        whos = sorted({s.who for s in ks})
        if len(whos) > 1 or (whos and whos[0] != "other"):
            for who in whos:
                wd = [s.dur_ns / 1e3 for s in ks if s.who == who]
                out.append((MetricDef(f"{base} {who} (us)", "us", "lower", kind="latency"), wd))
        if kind in RECLAIM_KINDS:
            rec = [float(s.reclaimed) for s in ks if s.reclaimed >= 0]
            scn = [float(s.scanned) for s in ks if s.scanned >= 0]
            if rec:
                out.append((MetricDef(f"{label} pages reclaimed per stall", "pages", "higher", kind="count",
                                      mean="amean"), rec))
            if scn:
                out.append((MetricDef(f"{label} pages scanned per stall", "pages", "lower", kind="count",
                                      mean="amean"), scn))
        if noun == "stall":
            counts = stats(d)["bins"]
            for b, c in counts.items():
                out.append((MetricDef(f"{base}s {b}", "events", "lower", kind="count", mean="amean"), [float(c)]))
    if extfrag is not None:
        out.append((MetricDef("Extfrag fallbacks", "events", "lower", kind="count", mean="amean"),
                    [float(extfrag.get("extfrag", 0))]))
        out.append((MetricDef("Extfrag pageblock ownership changes", "events", "lower", kind="count",
                              mean="amean", description="fallbacks that steal the pageblock"),
                    [float(extfrag.get("extfrag_change_ownership", 0))]))
        out.append((MetricDef("Extfrag fragmenting fallbacks", "events", "lower", kind="count", mean="amean",
                              description="fallback_order below pageblock order: mixes migrate types"),
                    [float(extfrag.get("extfrag_fragmenting", 0))]))
    return out


def report(stalls: list[Stall]) -> str:
    """A plain-text table: one row per kind and who."""
    lines = [f"{'stall':28s} {'who':10s} {'count':>7s} {'total ms':>10s} {'mean us':>9s} {'p50':>8s} "
             f"{'p90':>8s} {'p95':>8s} {'p99':>8s} {'max us':>9s}"]
    for kind, d in table(stalls).items():
        for who, st in d.items():
            if not st["count"]:
                continue
            lines.append(f"{LABELS.get(kind, kind):28s} {who:10s} {st['count']:7d} {st['total_us'] / 1e3:10.2f} "
                         f"{st['mean_us']:9.1f} {st['p50_us']:8.1f} {st['p90_us']:8.1f} {st['p95_us']:8.1f} "
                         f"{st['p99_us']:8.1f} {st['max_us']:9.1f}")
    return "\n".join(lines)


def _finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


def read_stall_durations(path: Path) -> dict[str, list[float]]:
    """kind → stall durations (µs) from an mm-trace ``stalls.tsv``."""
    cols = HEADER.split("\t")
    ik, idur = cols.index("kind"), cols.index("dur_ns")
    out: dict[str, list[float]] = {}
    with open(path) as fh:
        fh.readline()
        for line in fh:
            p = line.split("\t")
            if len(p) == len(cols):
                out.setdefault(p[ik], []).append(int(p[idur]) / 1e3)
    return out
