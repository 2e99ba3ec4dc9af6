"""mm-trace: reclaim, compaction, extfrag, THP and OOM tracepoints, recorded raw, analysed after.

What it does: mounts tracefs at /sys/kernel/tracing if it is not mounted, creates a trace
instance of its own (``instances/mmbench-<pid>-<n>``: the top-level buffer and anybody else's
events are left alone), sets the instance's ``buffer_size_kb``, enables the configured events in
it (every change journaled before it is made) and copies the binary ring-buffer pages of
``per_cpu/cpuN/trace_pipe_raw`` to ``cpuN.raw`` every 100 ms without decoding them.  At stop it
disables the events, reads what is left, removes the instance (and unmounts tracefs if it
mounted it) and saves what decoding needs (``formats/``, ``header_page``, ``tasks.json``: comms,
saved_cmdlines, the workload's pids, pageblock_order).  Decoding (``trace/decode.py``: the C
walker ``trace/trace_decode.c``, the Python reader as the reference) pairs begin/end events per
pid and writes ``stalls.tsv``, ``stalls.txt`` and ``counts.json``: on a host run inside a fixed,
recorded gap after the workload (``decode_gap``); in a VM guest never: the host decodes the
capture after the guest powers off (``finish_deferred``).

Why raw ring-buffer pages: copying them costs ~6x less CPU than ``perf record`` or bpftrace and
keeps every field of every event for later analysis (measured: docs/monitors.md).  Decoding runs
after the workload, never beside it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from mmbench.model.guest import in_guest
from mmbench.monitors.trace import stalls as stall_analysis
from mmbench.model.kernel import pageblock_order
from mmbench.model.params import Param
from mmbench.model.quirks import KTHREADS, PER_PAGE_TRACEPOINTS, tracepoint_change
from mmbench.monitors.base import SUMMARY_CACHE, Monitor, MonitorContext, MonitorSummary, load_summary
from mmbench.monitors.trace.capture import RawCapture
from mmbench.monitors.trace.decode import decode_capture
from mmbench.monitors.trace.formats import expand_events
from mmbench.monitors.trace.tracefs import TRACEFS, ensure_mounted, unmount
from mmbench.model.results import MetricDef

DEFAULT_EVENTS = ["vmscan", "compaction", "kmem:mm_page_alloc_extfrag", "huge_memory", "oom"]
# Per-page events left out by default: mm_vmscan_write_folio fires once per page written by
# reclaim (230k of 420k events in a 4 s usemem-swap iteration) and the same count is in
# /proc/vmstat (nr_vmscan_write, "Page writes by reclaim").  Name it in `events` to get it back.
DEFAULT_EXCLUDE = list(PER_PAGE_TRACEPOINTS)
DEFAULT_GAP = 1.0  # s: decoding + summarising took 0.16 s for 1.3 M events, 0.77 s for 300k stalls


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
    row_patterns = (
        "* (us)",
        "* count",
        "* total (ms)",
        "* per stall",
        "* stalls *",
        "extfrag *",
        "* events",
        "*(trace)*",
        "Kswapd wake*",
    )
    summary = "mm tracepoints (reclaim, compaction, extfrag, THP, OOM) → stall latencies per who"
    default_interval = 0.1
    params = {
        "events": Param("str_list", DEFAULT_EVENTS, "tracepoints: 'system' (all its events) or 'system:event'"),
        "exclude": Param("str_list", DEFAULT_EXCLUDE, "tracepoints ('system:event') left out of `events`"),
        "buffer_kb": Param("int", 8192, "ring buffer per CPU (KiB)", minimum=64),
        "keep_raw": Param("bool", False, "keep the raw per-CPU pages after decoding"),
        "decoder": Param(
            "str", "c", "c (trace_decode.c) or python (the reference reader: 25-45x slower)", choices=("c", "python")
        ),
        "decode_in_guest": Param(
            "bool",
            False,
            "in a VM guest, decode there after each iteration as the host "
            "would (measurement only: 10-50x slower under TCG); default: the host decodes",
        ),
        "decode_gap": Param(
            "float",
            DEFAULT_GAP,
            "seconds from the workload's end to the end of mm-trace's "
            "stop, decoding included, the same for every iteration (0: no padding)",
            minimum=0,
        ),
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
        excluded = {
            tuple(e.split(":", 1)) for e in (p.get("exclude") if p.get("exclude") is not None else DEFAULT_EXCLUDE)
        }
        events = [e for e in events if e not in excluded or e in explicit]
        self._missing = missing
        # whole groups asked for: an event of such a group that the capture lacks is one the kernel lacks
        self._groups = [e for e in specs if ":" not in e]
        self._excluded = sorted(f"{g}:{e}" for g, e in excluded - explicit)
        fork, _ = expand_events(["sched:sched_process_fork"])
        events += [e for e in fork if e not in events]  # to follow the workload's children
        if missing:
            ctx.log(f"mm-trace: no such tracepoint(s) on this kernel: {', '.join(missing)}")
        if not events:
            raise RuntimeError(f"none of the tracepoints {specs} exist on this kernel")
        self._comms: dict[int, str] = _kthreads()
        self._wl: set[int] = set()
        self._polls = 0
        self._t0 = time.monotonic()
        self._cap = RawCapture(
            ctx.journal,
            ctx.outdir,
            events,
            int(p.get("buffer_kb") or 8192),
            poll=min(max(ctx.interval or 0.1, 0.05), 0.5),
            log=ctx.log,
            on_poll=self._poll_pids,
        )
        self._cap.mounted = False
        try:
            self._cap.start()
        except Exception:
            self._cap.stop() if self._cap.inst else None
            raise
        self._cap.mounted = self._mounted
        unmount(False)  # the capture holds tracefs from here (its own ensure_mounted); drop this one
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
        t_stop = time.monotonic()
        elapsed = t_stop - self._t0
        outdir = self._ctx.outdir
        p = self._ctx.params or {}
        keep = bool(p.get("keep_raw", False))
        _write_tasks(outdir, self._comms, self._wl, cmdlines)
        cap_meta["elapsed_s"] = round(elapsed, 3)
        (outdir / "capture.json").write_text(json.dumps(cap_meta, indent=1))
        files = [f"cpu{c}.raw" for c in cap_meta["cpus"]]
        meta: dict[str, Any] = {
            "files": ["capture.json", "tasks.json", "header_page", "header_event", "formats"],
            "bytes": cap_meta["bytes"],
            "reader_cpu_s": cap_meta.get("reader_cpu_s"),
            "errors": cap_meta.get("errors", []),
            "notes": [],
            "keep_raw": keep,
            "groups": self._groups,
            "excluded": self._excluded,
        }
        if self._missing:
            meta["notes"].append("missing tracepoints: " + ", ".join(self._missing))
        if in_guest() and not p.get("decode_in_guest"):
            # Decoding under emulation is 10-50x slower than on the host and would run between
            # iterations: the host decodes after the guest powers off (finish_deferred).
            meta.update(deferred="decode", files=meta["files"] + files)
            return meta
        meta["files"] += ["stalls.tsv", "stalls.txt", "counts.json"] + (files if keep else [])
        decoded = decode_capture(
            outdir,
            self._ctx.binary,
            keep_raw=keep,
            reference=p.get("decoder") == "python",
            where="VM guest" if in_guest() else "recording machine",
        )
        # the decode's notes add to the capture's ("missing tracepoints: ..."), as finish_deferred's do
        decoded["notes"] = meta["notes"] + decoded.get("notes", [])
        meta.update(decoded)
        _loss_notes(meta, cap_meta)
        # A fixed, recorded gap between the workload's end and the next iteration: after a few idle
        # seconds first touches run 25-50x slower (free page reporting), so a decode time that
        # varied with the event count would change what the next iteration measures.
        gap = float(p.get("decode_gap", DEFAULT_GAP))
        load_summary(type(self), outdir, meta)  # summarised inside the gap too
        spent = time.monotonic() - t_stop
        if spent < gap:
            time.sleep(gap - spent)
        elif gap > 0:
            meta["notes"].append(
                f"decoding took {spent:.2f} s, longer than the fixed gap of {gap:g} s "
                "(decode_gap): the pause before the next iteration was longer than the others'"
            )
            (outdir / SUMMARY_CACHE).unlink(missing_ok=True)  # summarised again with this note
        meta["gap_s"] = round(max(gap, spent), 3)
        return meta

    @classmethod
    def finish_deferred(
        cls,
        outdir: Path,
        meta: dict[str, Any],
        binary: Callable[[Path], str] | None,
    ) -> dict[str, Any]:
        """Decode a capture a VM guest brought back (on the host, after the guest powered off)."""
        if meta.get("deferred") != "decode" or not (Path(outdir) / "capture.json").exists():
            return meta
        keep = bool(meta.get("keep_raw", False))
        out = dict(meta)
        out.pop("deferred")
        raw = [f for f in out.get("files", []) if f.endswith(".raw")]
        out["files"] = (
            [f for f in out.get("files", []) if f not in raw]
            + ["stalls.tsv", "stalls.txt", "counts.json"]
            + (raw if keep else [])
        )
        out.update(decode_capture(Path(outdir), binary, keep_raw=keep, where="host, after the VM run"))
        out["notes"] = list(meta.get("notes", [])) + out.get("notes", [])
        _loss_notes(out, json.loads((Path(outdir) / "capture.json").read_text()))
        out["decoded_on_host"] = True
        (Path(outdir) / SUMMARY_CACHE).unlink(missing_ok=True)
        load_summary(cls, Path(outdir), out)
        return out

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        outdir = Path(outdir)
        out = MonitorSummary(notes=list(meta.get("notes", [])))
        path = outdir / "stalls.tsv"
        if not path.exists():
            if meta.get("deferred") == "decode":
                out.notes.append("the trace was recorded in a VM guest and not yet decoded on the host")
            else:
                out.notes.append("no stalls.tsv: the trace was not decoded")
            return out
        cols = stall_analysis.read_stall_columns(path, ("kind", "who", "dur_ns", "reclaimed", "scanned", "lost"))
        counts = {}
        if (outdir / "counts.json").exists():
            counts = json.loads((outdir / "counts.json").read_text())
        out.metrics = stall_analysis.metrics(cols, counts.get("extfrag"), wakes=counts.get("kswapd_wakes"))
        ev = counts.get("events", {})
        recorded = {f.name for f in (outdir / "formats").glob("*:*")}
        for name in ("mark_victim", "mm_compaction_deferred", "mm_vmscan_reclaim_pages", "mm_vmscan_write_folio"):
            if name in ev:
                out.metrics.append(
                    (MetricDef(f"{name} events", "events", "lower", kind="count", mean="amean"), [float(ev[name])])
                )
                continue
            ch = tracepoint_change(name)
            if (
                ch
                and ch.event not in recorded
                and ch.event.split(":")[0] in meta.get("groups", [])
                and ch.event not in meta.get("excluded", [])
            ):
                # its whole group was recorded and the kernel has no such event: said, not a silent gap
                out.notes.append(f"this kernel has no {ch.event} tracepoint ({ch.text()}): no '{name} events' row")
        out.metrics += _loss_metrics(counts)
        return out


def _loss_metrics(counts: dict[str, Any]) -> list[tuple[MetricDef, list[float]]]:
    """Events the ring buffer lost, per CPU and in all, and the stalls a loss may have cut."""
    cpus = counts.get("cpus")
    if cpus is None:  # decoded before per-CPU accounting
        return []
    out = []
    total = 0.0
    for cpu in sorted(cpus, key=int):
        n = float(max(cpus[cpu].get("lost_events", 0), cpus[cpu].get("overrun", 0)))
        total += n
        out.append(
            (
                MetricDef(
                    f"Trace events lost, CPU {cpu}",
                    "events",
                    "lower",
                    kind="count",
                    mean="amean",
                    description="ring-buffer overrun: events overwritten before mm-trace read them",
                ),
                [n],
            )
        )
    out.insert(
        0,
        (
            MetricDef(
                "Trace events lost",
                "events",
                "lower",
                kind="count",
                mean="amean",
                description="all CPUs; stalls and counts are missing these events",
            ),
            [total],
        ),
    )
    out.append(
        (
            MetricDef(
                "Stalls overlapping a trace loss",
                "stalls",
                "lower",
                kind="count",
                mean="amean",
                description="begin→end pairs whose interval overlaps lost events (lost=1 in "
                "stalls.tsv): their duration or pages may be wrong",
            ),
            [float(counts.get("stalls_in_loss", 0))],
        )
    )
    return out


def _loss_notes(meta: dict[str, Any], cap_meta: dict[str, Any]) -> None:
    rb = cap_meta.get("ring_buffer_per_cpu") or {}
    overrun = {c: v.get("overrun", 0) for c, v in rb.items() if v.get("overrun")}
    if overrun or meta.get("pages_with_lost_events"):
        per = ", ".join(f"CPU {c}: {n}" for c, n in sorted(overrun.items(), key=lambda x: int(x[0])))
        meta["notes"].append(
            f"the ring buffer overran and lost events ({per or str(meta.get('lost_events')) + ' events'}); "
            f"{meta.get('stalls_in_loss', 0)} of {meta.get('stalls', 0)} stall(s) overlap a loss and are flagged "
            "(lost=1 in stalls.tsv); raise buffer_kb"
        )


def _write_tasks(outdir: Path, comms: dict[int, str], wl: set[int], cmdlines: dict[int, str]) -> None:
    """What decoding needs to name and classify tasks, recorded before the machine goes away:
    comms of the kernel threads and the workload, then of every task alive now (threads too),
    saved_cmdlines, the workload's pids and pageblock_order."""
    allc = dict(comms)
    for tdir in _task_dirs():
        pid = int(tdir.name)
        if pid not in allc:
            try:
                allc[pid] = (tdir / "comm").read_text().rstrip("\n")
            except OSError:
                pass
    tasks = {
        "comms": {str(k): v for k, v in sorted(allc.items())},
        "saved_cmdlines": {str(k): v for k, v in sorted(cmdlines.items())},
        "workload_pids": sorted(wl),
        "pageblock_order": pageblock_order(),
    }
    (outdir / "tasks.json").write_text(json.dumps(tasks))


def _task_dirs() -> list[Path]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out += [t for t in (d / "task").iterdir() if t.name.isdigit()]
            except OSError:
                pass
    return out


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
