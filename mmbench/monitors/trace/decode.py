"""A raw mm-trace capture folder decoded into ``stalls.tsv``, ``stalls.txt`` and ``counts.json``:
by ``trace_decode.c`` (the default, built by the project like the workloads' C programs) or by the
pure-Python reference reader (``ringbuffer.py`` + ``stalls.py``; used when no C compiler is there,
and by the tests that check both agree).

Everything decoding needs is in the folder, so it runs anywhere, later: ``cpuN.raw`` (the pages),
``formats/`` (each event's ``format`` file), ``header_page``, ``capture.json`` (page size, event
order, ring-buffer statistics) and ``tasks.json`` (pid → comm of the kernel threads, the workload
and every task alive at stop, ``saved_cmdlines``, the workload's pids, ``pageblock_order``).  A VM
guest records these and the host decodes them (``mm_trace.MmTrace.finish_deferred``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from mmbench.model.quirks import KTHREADS
from mmbench.monitors.trace import stalls as sa
from mmbench.monitors.trace.formats import EventFormat, parse_format
from mmbench.monitors.trace.ringbuffer import PageLayout, decode_files, event_table, parse_header_page

SOURCE = Path(__file__).with_name("trace_decode.c")

# roles of trace_decode.c's spec
R_COUNT, R_BEGIN, R_END, R_LRU, R_THROTTLED, R_EXTFRAG, R_FORK, R_DUMP = range(8)
KINDS = [*sa.PAIRS, "throttled"]
ROLE_FIELDS = {
    R_END: ["nr_reclaimed"],
    R_LRU: ["nr_scanned"],
    R_THROTTLED: ["usec_delayed"],
    R_EXTFRAG: ["change_ownership", "fallback_order"],
    R_FORK: ["parent_pid", "child_pid"],
}


def event_roles() -> dict[str, tuple[int, int]]:
    """event name → (role, kind index) for the stall analysis."""
    out: dict[str, tuple[int, int]] = {}
    for k, (b, e, _) in sa.PAIRS.items():
        out[b] = (R_BEGIN, KINDS.index(k))
        out[e] = (R_END, KINDS.index(k))
    out["mm_vmscan_lru_shrink_inactive"] = (R_LRU, 0)
    out["mm_vmscan_throttled"] = (R_THROTTLED, KINDS.index("throttled"))
    out["mm_page_alloc_extfrag"] = (R_EXTFRAG, 0)
    out["sched_process_fork"] = (R_FORK, 0)
    return out


class Capture:
    """A capture folder's metadata: formats in recording order, page layout, tasks, files."""

    def __init__(self, outdir: Path) -> None:
        self.dir = Path(outdir)
        self.meta: dict[str, Any] = json.loads((self.dir / "capture.json").read_text())
        self.tasks: dict[str, Any] = {}
        if (self.dir / "tasks.json").exists():
            self.tasks = json.loads((self.dir / "tasks.json").read_text())
        page_size = int(self.meta.get("page_size", 4096))
        hp = self.dir / "header_page"
        self.layout = parse_header_page(hp.read_text(), page_size) if hp.exists() else PageLayout(page_size)
        order = self.meta.get("events") or sorted(p.name for p in (self.dir / "formats").iterdir())
        self.formats: list[EventFormat] = []
        for full in order:
            system, _, name = full.partition(":")
            path = self.dir / "formats" / full
            if path.exists():
                self.formats.append(parse_format(system, name, path.read_text()))
        self.files = {int(c): self.dir / f"cpu{c}.raw" for c in self.meta.get("cpus", [])}

    def comms(self) -> dict[int, str]:
        """pid → comm: the recorded map, then saved_cmdlines for pids it lacks."""
        out = {int(p): c for p, c in (self.tasks.get("comms") or {}).items()}
        for p, c in (self.tasks.get("saved_cmdlines") or {}).items():
            out.setdefault(int(p), c)
        return out

    def workload_pids(self) -> set[int]:
        return {int(p) for p in self.tasks.get("workload_pids") or []}

    def pageblock_order(self) -> int:
        return int(self.tasks.get("pageblock_order", 9))

    def raw_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files.values() if p.exists())


def _spec_lines(cap: Capture, dump: Path | None) -> list[str]:
    lay = cap.layout
    lines = [f"page {lay.page_size} {lay.data_offset} {lay.commit_size}"]
    pid = next((f.fields["common_pid"] for f in cap.formats if "common_pid" in f.fields), (4, 4, True))
    lines.append(f"pid {pid[0]} {pid[1]}")
    lines.append(f"pageblock_order {cap.pageblock_order()}")
    for i, k in enumerate(KINDS):
        lines.append(f"kind {i} {int(k in sa.RECLAIM_KINDS)} {k}")
    lines += [f"who {w}" for w in KTHREADS]
    roles = event_roles()
    spec_masks = speculative_masks(cap)
    for order, (fmt, st, cols) in enumerate(event_table(cap.formats)):
        if dump is not None:
            role, kind = R_DUMP, 0
            names = [c for c in cols if c != "common_pid"]
        else:
            role, kind = roles.get(fmt.name, (R_COUNT, 0))
            names = ROLE_FIELDS.get(role, [])
            if role in (R_END, R_LRU, R_THROTTLED):
                names = [n for n in names if n in cols]
            elif role == R_FORK and not all(n in cols for n in names):
                names = []
        fields = []
        for n in names:
            if n in cols:
                off, size, signed = fmt.fields[n]
                fields.append(f"{off} {size} {int(signed)}")
            else:
                fields.append("-1 0 0")
        lines.append(f"event {fmt.id} {order} {st.size} {role} {kind} {len(fields)} {' '.join(fields)}".rstrip())
        if fmt.name in sa.HIGH_ORDER_EVENTS and "order" in cols:
            off, size, signed = fmt.fields["order"]
            line = f"order {fmt.id} {off} {size} {int(signed)}"
            masks = spec_masks.get(fmt.name)
            if masks is not None and "gfp_flags" in cols:
                goff, gsize, _ = fmt.fields["gfp_flags"]
                line += f" {goff} {gsize} {masks[0]} {masks[1]}"
            lines.append(line)
    for cpu, path in sorted(cap.files.items()):
        lines.append(f"cpu {cpu} {path}")
    return lines


def speculative_masks(cap: Capture) -> dict[str, tuple[int, int]]:
    """Event name → ``stalls.speculative_masks`` for the capture's mm_vmscan_wakeup_kswapd."""
    out = {}
    for fmt in cap.formats:
        if fmt.name == sa.WAKEUP_KSWAPD and (m := sa.speculative_masks(fmt)) is not None:
            out[fmt.name] = m
    return out


def _parse_stats(text: str, cap: Capture) -> dict[str, Any]:
    out: dict[str, Any] = {"events": {}, "cpus": {}, "windows": [], "high_order": {}, "speculative": {}}
    names = [f.name for f in cap.formats]
    for line in text.splitlines():
        p = line.split()
        if not p:
            continue
        if p[0] == "event":
            out["events"][names[int(p[1])]] = int(p[2])
        elif p[0] in ("unknown", "truncated"):
            out[p[0]] = int(p[1])
        elif p[0] == "cpu":
            out["cpus"][int(p[1])] = {p[i]: int(p[i + 1]) for i in range(2, len(p) - 1, 2)}
        elif p[0] == "window":
            out["windows"].append((int(p[1]), int(p[2])))
        elif p[0] == "extfrag":
            out["extfrag"] = {
                "extfrag": int(p[1]),
                "extfrag_change_ownership": int(p[2]),
                "extfrag_fragmenting": int(p[3]),
            }
        elif p[0] == "high_order":
            out["high_order"][names[int(p[1])]] = int(p[2])
            if len(p) > 3:
                out["speculative"][names[int(p[1])]] = int(p[3])
        elif p[0] == "unpaired":
            out["unpaired"] = {"begins": int(p[1]), "ends": int(p[2])}
        elif p[0] == "stalls":
            out["stalls"], out["lost_stalls"] = int(p[1]), int(p[2])
        elif p[0] == "seconds":
            out["phases_s"] = {"walk": float(p[1]), "pair": float(p[2]), "write": float(p[3])}
        elif p[0] == "peak_rss_kb":
            out["peak_rss_kb"] = int(p[1])
        elif p[0] == "kept":
            out["kept"] = {"pairing": int(p[1]), "forks": int(p[2]), "throttled": int(p[3])}
    return out


WHO_CODES = [*KTHREADS, "workload", "other"]
TABLE_ROW = [("dur_ns", "<i8"), ("kind", "u1"), ("who", "u1"), ("lost", "u1"), ("pad", "V5")]


def run_c(cap: Capture, binary: str, stalls_path: Path | None, dump: Path | None = None) -> dict[str, Any]:
    """Run ``trace_decode`` on the capture; its statistics (and stalls.tsv / dump files written).
    With ``stalls_path``, ``["table"]`` holds the columns the stall table needs (kind, who,
    dur_ns, lost), read from the program's binary table instead of parsing stalls.tsv back."""
    with tempfile.TemporaryDirectory(prefix="mmbench-decode-") as tmp:
        t = Path(tmp)
        lines = _spec_lines(cap, dump)
        comms = cap.comms()
        with open(t / "comms", "w", encoding="utf-8", errors="replace") as fh:
            for pid, c in comms.items():
                if c:
                    fh.write(f"{pid}\t{c.replace(chr(9), ' ').replace(chr(10), ' ')}\n")
        (t / "workload").write_text("".join(f"{p}\n" for p in sorted(cap.workload_pids())))
        lines += [f"comms {t / 'comms'}", f"workload {t / 'workload'}", f"stats {t / 'stats'}"]
        if stalls_path is not None:
            lines += [f"stalls {stalls_path}", f"table {t / 'table'}"]
        if dump is not None:
            lines.append(f"dump {dump}")
        (t / "spec").write_text("\n".join(lines) + "\n")
        proc = subprocess.run([binary, str(t / "spec")], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"trace_decode failed: {proc.stderr.strip() or proc.returncode}")
        out = _parse_stats((t / "stats").read_text(), cap)
        if stalls_path is not None:
            import numpy as np

            rows = np.fromfile(t / "table", dtype=TABLE_ROW)
            out["table"] = {
                "kind": sa.Coded(rows["kind"], KINDS),
                "who": sa.Coded(rows["who"], WHO_CODES),
                "dur_ns": rows["dur_ns"],
                "lost": rows["lost"],
            }
        return out


def run_reference(cap: Capture, stalls_path: Path | None) -> dict[str, Any]:
    """The pure-Python reference: the same statistics as ``run_c`` (and stalls.tsv)."""
    dec = decode_files(cap.files, cap.formats, page_size=cap.layout.page_size, layout=cap.layout)
    wl = cap.workload_pids()
    sa.follow_forks(dec.events, dec.columns, wl)
    unpaired: dict[str, int] = {}
    stalls = sa.find_stalls(dec.events, dec.columns, cap.comms(), wl, dec.loss_windows(), unpaired)
    if stalls_path is not None:
        sa.write_stalls(stalls_path, stalls)
    return {
        "events": {f.name: dec.counts.get(f.name, 0) for f in cap.formats},
        "unknown": dec.unknown,
        "truncated": dec.truncated,
        "cpus": {c: st.as_dict() for c, st in dec.cpus.items()},
        "windows": dec.loss_windows(),
        "extfrag": sa.extfrag_counts(dec.events, dec.columns, cap.pageblock_order()),
        "high_order": sa.high_order_counts(dec.events, dec.columns),
        "speculative": sa.speculative_counts(dec.events, dec.columns, speculative_masks(cap)),
        "unpaired": unpaired,
        "stalls": len(stalls),
        "lost_stalls": sum(s.lost for s in stalls),
    }


SLOWER = "decoded by the Python reference reader, 25-45x slower than trace_decode.c"


def fallback_warning(e: BaseException) -> str:
    """Why the C decoder was not used, naming the file: its source missing from an installed
    mmbench (a wheel without its package data), no compiler, or a build or run that failed."""
    if isinstance(e, FileNotFoundError) and Path(e.filename or "") == SOURCE:
        return (
            f"{SOURCE.name} is missing from the installed mmbench ({SOURCE}): {SLOWER}; "
            "reinstall mmbench with its package data (pip install .)"
        )
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{SLOWER} ({SOURCE}: {type(e).__name__}: {first})"


def decode_capture(
    outdir: Path,
    binary: Callable[[Path], str] | None,
    *,
    keep_raw: bool = False,
    reference: bool = False,
    where: str = "recording machine",
) -> dict[str, Any]:
    """Decode the capture in ``outdir`` in place: writes stalls.tsv, stalls.txt and counts.json,
    removes the raw pages unless ``keep_raw``; returns what goes into the monitor's metadata."""
    t0 = time.monotonic()
    cpu0 = _cpu()
    cap = Capture(outdir)
    notes: list[str] = []
    warnings: list[str] = []
    decoder = "python"
    st: dict[str, Any] | None = None
    if not reference and binary is None:
        warnings.append(f"{SLOWER} (no C build in this context)")
    if not reference and binary is not None:
        try:
            prog = binary(SOURCE)
            decoder = "c"
            st = run_c(cap, prog, outdir / "stalls.tsv")
        except Exception as e:  # no compiler, a failed build: the reference decodes instead (slower)
            warnings.append(fallback_warning(e))
            decoder = "python"
    if st is None:
        st = run_reference(cap, outdir / "stalls.tsv")
    wakes, wake_notes = sa.kswapd_wakes(st["events"], st["high_order"], st["speculative"])
    notes += wake_notes
    cols = st.pop("table", None) or sa.read_stall_columns(outdir / "stalls.tsv")
    (outdir / "stalls.txt").write_text(sa.report(cols) + "\n")
    decode_s = time.monotonic() - t0
    per_cpu = cap.meta.get("ring_buffer_per_cpu") or {}
    # the kernel's overrun count is exact; a page stores its count only when it has room
    cpus = {str(c): {**v, "overrun": int((per_cpu.get(str(c)) or {}).get("overrun", 0))} for c, v in st["cpus"].items()}
    lost_events = sum(v["lost_events"] for v in st["cpus"].values())
    lost_pages = sum(v["lost_pages"] for v in st["cpus"].values())
    rb = cap.meta.get("ring_buffer", {})
    counts = {
        "events": {k: v for k, v in st["events"].items() if v},
        "extfrag": st["extfrag"],
        "kswapd_wakes": wakes,
        "unknown_records": st["unknown"],
        "truncated_records": st.get("truncated", 0),
        "pages_with_lost_events": lost_pages,
        "lost_events": lost_events,
        "cpus": cpus,
        "loss_windows": len(st["windows"]),
        "stalls_in_loss": st["lost_stalls"],
        "unpaired": st["unpaired"],
        "ring_buffer": rb,
        "elapsed_s": cap.meta.get("elapsed_s"),
        "decoder": decoder,
        "decode_s": round(decode_s, 4),
        "decode_cpu_s": round(_cpu() - cpu0, 4),
        "raw_bytes": cap.raw_bytes(),
        "workload_pids": sorted(cap.workload_pids()),
        "decoded_on": where,
    }
    (outdir / "counts.json").write_text(json.dumps(counts, indent=1))
    if not keep_raw:
        for f in cap.files.values():
            f.unlink(missing_ok=True)
    events = sum(st["events"].values())
    return {
        "events": events,
        "stalls": st["stalls"],
        "decode_s": round(decode_s, 3),
        "decoder": decoder,
        "decoder_peak_rss_kb": st.get("peak_rss_kb"),
        "warnings": warnings,
        "notes": [f"warning: {w}" for w in warnings] + notes,
        "lost_events": lost_events,
        "pages_with_lost_events": lost_pages,
        "stalls_in_loss": st["lost_stalls"],
    }


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def c_records(cap: Capture, binary: str, workdir: Path) -> dict[str, list[tuple]]:
    """Every record of every event as ``trace_decode`` reads it, in the reference's row form
    (ts, cpu, pid, *numeric fields): what the tests and bench/trace-measure compare with
    ``ringbuffer.decode_files``."""
    import numpy as np

    run_c(cap, binary, None, dump=workdir)
    out: dict[str, list[tuple]] = {}
    for order, (fmt, st, cols) in enumerate(event_table(cap.formats)):
        names = [c for c in cols if c != "common_pid"]
        a = np.fromfile(workdir / f"ev{order}.bin", dtype=np.int64).reshape(-1, 3 + len(names))
        cols_out = [a[:, 0].view(np.uint64).tolist(), a[:, 1].tolist(), a[:, 2].tolist()]
        for j, n in enumerate(names):
            col = a[:, 3 + j]
            off, size, signed = fmt.fields[n]
            if size == 8 and not signed:
                col = col.view(np.uint64)
            cols_out.append(col.tolist())
        out[fmt.name] = list(zip(*cols_out)) if len(a) else []
    return out
