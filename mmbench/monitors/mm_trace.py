"""mm-trace: reclaim, compaction, extfrag, THP and OOM tracepoints, recorded raw, analysed after.

What it does: mounts tracefs at /sys/kernel/tracing if it is not mounted, creates a trace
instance of its own (``instances/mmbench-<pid>-<n>``: the top-level buffer and anybody else's
events are left alone), sets the instance's ``buffer_size_kb``, enables the configured events in
it (every change journaled before it is made) and copies the binary ring-buffer pages of
``per_cpu/cpuN/trace_pipe_raw`` to ``cpuN.raw`` every 100 ms without decoding them.  At stop it
disables the events, reads what is left, removes the instance (and unmounts tracefs if it
mounted it), then decodes the pages with the field layouts read from each event's ``format``
file on this kernel (saved under ``formats/``), pairs begin/end events per pid
(``mmbench.monitors.trace.stalls``) and writes ``stalls.tsv``, ``stalls.txt`` and ``counts.json``.

Why raw ring-buffer pages (measured, ``bench/trace-measure 4``, 2 vCPU
Firecracker VM, kernel 6.18, page-cache + anon thrash in a 128M memcg, ~4-5k events/s of
vmscan/compaction/extfrag/huge_memory/oom, 4 alternating rounds):

    method     workload elapsed (mean, min-max)  recorder CPU per run  post-processing
    none       2.40 s (2.17-2.66)                 -                     -
    raw pages  2.23 s (2.15-2.38)                 0.04 s                0.02 s decode (~2 us/event)
    perf rec.  2.31 s (2.08-2.52)                 0.25 s                0.13 s perf script alone
    bpftrace   2.53 s (2.34-2.60)                 0.26 s (LLVM start)   0 (aggregated in kernel)

The elapsed differences are inside the run-to-run noise; the recorder's own CPU is the
difference that stays: copying pages costs ~6x less CPU than ``perf record`` (which also writes
twice the bytes: 1.5 MB vs 0.85 MB for ~11k events) and than bpftrace (whose start costs a
second and whose in-kernel maps lose the per-stall detail unless it prints per event).  The raw
pages keep every field of every event for later analysis.  Decoding is a Python loop over
records but runs after the workload, never beside it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from mmbench.monitors.trace import stalls as stall_analysis
from mmbench.model.kernel import pageblock_order
from mmbench.model.params import Param
from mmbench.model.quirks import KTHREADS, PER_PAGE_TRACEPOINTS
from mmbench.monitors.base import Monitor, MonitorContext, MonitorSummary
from mmbench.monitors.trace.capture import RawCapture
from mmbench.monitors.trace.formats import expand_events
from mmbench.monitors.trace.ringbuffer import Decoded, decode_files
from mmbench.monitors.trace.tracefs import TRACEFS, ensure_mounted
from mmbench.model.results import MetricDef

DEFAULT_EVENTS = ["vmscan", "compaction", "kmem:mm_page_alloc_extfrag", "huge_memory", "oom"]
# Per-page events left out by default: mm_vmscan_write_folio fires once per page written by
# reclaim (230k of 420k events in a 4 s usemem-swap iteration) and the same count is in
# /proc/vmstat (nr_vmscan_write, "Page writes by reclaim").  Name it in `events` to get it back.
DEFAULT_EXCLUDE = list(PER_PAGE_TRACEPOINTS)


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _kthreads() -> dict[int, str]:
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            c = _comm(int(d))
            if c and c.startswith(KTHREADS):
                out[int(d)] = c
    return out


class MmTrace(Monitor):
    name = "mm-trace"
    row_patterns = ("* (us)", "* count", "* total (ms)", "* per stall", "* stalls *", "extfrag *", "* events",
                    "*(trace)*")
    summary = "mm tracepoints (reclaim, compaction, extfrag, THP, OOM) → stall latencies per who"
    default_interval = 0.1
    params = {
        "events": Param("str_list", DEFAULT_EVENTS,
                        "tracepoints: 'system' (all its events) or 'system:event'"),
        "exclude": Param("str_list", DEFAULT_EXCLUDE, "tracepoints ('system:event') left out of `events`"),
        "buffer_kb": Param("int", 8192, "ring buffer per CPU (KiB)", minimum=64),
        "keep_raw": Param("bool", False, "keep the raw per-CPU pages and formats after decoding"),
    }

    def unavailable_reason(self) -> str | None:
        if os.geteuid() != 0:
            return "mm-trace needs root to use tracefs; tracepoints are not recorded"
        if not Path("/sys/kernel/tracing").is_dir():
            return "this kernel has no /sys/kernel/tracing (CONFIG_TRACING off); tracepoints are not recorded"
        return None

    def start(self, ctx: MonitorContext) -> None:
        self._ctx = ctx
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        p = ctx.params or {}
        specs = p.get("events") or DEFAULT_EVENTS
        self._mounted = ensure_mounted(ctx.journal)
        events, missing = expand_events(specs)
        explicit = {tuple(e.split(":", 1)) for e in specs if ":" in e}
        excluded = {tuple(e.split(":", 1)) for e in (p.get("exclude") if p.get("exclude") is not None
                                                    else DEFAULT_EXCLUDE)}
        events = [e for e in events if e not in excluded or e in explicit]
        self._missing = missing
        fork, _ = expand_events(["sched:sched_process_fork"])
        events += [e for e in fork if e not in events]   # to follow the workload's children
        if missing:
            ctx.log(f"mm-trace: no such tracepoint(s) on this kernel: {', '.join(missing)}")
        if not events:
            raise RuntimeError(f"none of the tracepoints {specs} exist on this kernel")
        self._comms: dict[int, str] = _kthreads()
        self._wl: set[int] = set()
        self._polls = 0
        self._t0 = time.monotonic()
        self._cap = RawCapture(ctx.journal, ctx.outdir, events, int(p.get("buffer_kb") or 8192),
                                      poll=min(max(ctx.interval or 0.1, 0.05), 0.5), log=ctx.log,
                                      on_poll=self._poll_pids)
        self._cap.mounted = False
        try:
            self._cap.start()
        except Exception:
            self._cap.stop() if self._cap.inst else None
            raise
        self._cap.mounted = self._mounted
        self._poll_pids(force=True)

    def _poll_pids(self, force: bool = False) -> None:
        self._polls += 1
        try:
            pids = self._ctx.sandbox_pids() or []
        except Exception:
            return
        for pid in pids:
            if pid not in self._wl:
                self._wl.add(pid)
                c = _comm(pid)
                if c:
                    self._comms[pid] = c

    def stop(self) -> dict[str, Any]:
        self._poll_pids(force=True)
        cmdlines = _saved_cmdlines()
        cap_meta = self._cap.stop()
        elapsed = time.monotonic() - self._t0
        outdir = self._ctx.outdir
        files = {c: outdir / f"cpu{c}.raw" for c in cap_meta["cpus"]}
        t0 = time.monotonic()
        dec = decode_files(files, self._cap.formats, page_size=cap_meta["page_size"])
        _follow_forks(dec, self._wl)
        # comms of pids seen in events that we do not know yet
        seen = {r[2] for rows in dec.events.values() for r in rows}
        for pid in seen - set(self._comms):
            c = _comm(pid)
            if c:
                self._comms[pid] = c
        self._comms.update({pid: c for pid, c in cmdlines.items() if pid in seen and pid not in self._comms})
        stalls = stall_analysis.find_stalls(dec.events, dec.columns, self._comms, self._wl)
        extfrag = stall_analysis.extfrag_counts(dec.events, dec.columns, pageblock_order())
        decode_s = time.monotonic() - t0
        stall_analysis.write_stalls(outdir / "stalls.tsv", stalls)
        (outdir / "stalls.txt").write_text(stall_analysis.report(stalls) + "\n")
        counts = {"events": dec.counts, "extfrag": extfrag, "unknown_records": dec.unknown,
                  "pages_with_lost_events": dec.pages_with_loss, "ring_buffer": cap_meta.get("ring_buffer", {}),
                  "elapsed_s": elapsed, "decode_s": decode_s, "workload_pids": sorted(self._wl)}
        (outdir / "counts.json").write_text(json.dumps(counts, indent=1))
        keep = bool((self._ctx.params or {}).get("keep_raw", False))
        if not keep:
            for f in files.values():
                f.unlink(missing_ok=True)
        notes = []
        lost = cap_meta.get("ring_buffer", {}).get("overrun", 0) or dec.pages_with_loss
        if lost:
            notes.append(f"the ring buffer overran ({lost}): some events were lost; raise buffer_kb")
        if self._missing:
            notes.append("missing tracepoints: " + ", ".join(self._missing))
        return {"files": ["stalls.tsv", "stalls.txt", "counts.json", "capture.json"] + (
                    [f.name for f in files.values()] if keep else []),
                "events": sum(dec.counts.values()), "stalls": len(stalls), "bytes": cap_meta["bytes"],
                "reader_cpu_s": cap_meta.get("reader_cpu_s"),
                "decode_s": round(decode_s, 3), "errors": cap_meta.get("errors", []), "notes": notes}

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        outdir = Path(outdir)
        out = MonitorSummary(notes=list(meta.get("notes", [])))
        path = outdir / "stalls.tsv"
        if not path.exists():
            out.notes.append("no stalls.tsv: the trace was not decoded")
            return out
        stalls = stall_analysis.read_stalls(path)
        counts = {}
        if (outdir / "counts.json").exists():
            counts = json.loads((outdir / "counts.json").read_text())
        out.metrics = stall_analysis.metrics(stalls, counts.get("extfrag"))
        ev = counts.get("events", {})
        for name in ("mark_victim", "mm_compaction_deferred", "mm_vmscan_reclaim_pages", "mm_vmscan_write_folio"):
            if name in ev:
                out.metrics.append((MetricDef(f"{name} events", "events", "lower", kind="count", mean="amean"),
                                    [float(ev[name])]))
        return out


def _follow_forks(dec: Decoded, wl: set[int]) -> None:
    """Add to ``wl`` every task forked (process or thread) by a task already in it."""
    rows = dec.events.get("sched_process_fork")
    cols = dec.columns.get("sched_process_fork", [])
    if not rows or "parent_pid" not in cols or "child_pid" not in cols:
        return
    ip, ic = cols.index("parent_pid") + 3, cols.index("child_pid") + 3
    for r in sorted(rows):
        if r[ip] in wl:
            wl.add(r[ic])


def _saved_cmdlines() -> dict[int, str]:
    out = {}
    try:
        text = (TRACEFS / "saved_cmdlines").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        pid, _, comm = line.partition(" ")
        if pid.isdigit():
            out[int(pid)] = comm
    return out
