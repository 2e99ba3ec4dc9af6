"""Measure the recording methods mm-trace could use (the numbers in mm_trace's docstring).

    python -m mmbench.monitors.trace.measure [pairs]

Runs a page-cache/anon thrash in a 128M memcg with: nothing, raw per-CPU ring buffers copied
by a Python thread (RawCapture), ``perf record -a``, and a bpftrace script pairing begin/end
in the kernel.  Prints workload elapsed time, recorder CPU time, events recorded, and the time
to turn the recording into stall records afterwards.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mmbench.monitors._testing import TestMemcg, thrash_command
from mmbench.monitors.trace import ftrace
from mmbench.run.journal import Journal

EVENTS = ["vmscan", "compaction", "kmem:mm_page_alloc_extfrag", "huge_memory", "oom"]

BT = r"""
tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin, tracepoint:vmscan:mm_vmscan_direct_reclaim_begin { @s[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_memcg_reclaim_end, tracepoint:vmscan:mm_vmscan_direct_reclaim_end /@s[tid]/ {
  printf("%s %d %s %d %d\n", probe, tid, comm, nsecs - @s[tid], args->nr_reclaimed); delete(@s[tid]); }
tracepoint:vmscan:mm_vmscan_lru_shrink_inactive /@s[tid]/ { @scan[tid] = @scan[tid] + args->nr_scanned; }
tracepoint:vmscan:*, tracepoint:compaction:*, tracepoint:huge_memory:*, tracepoint:oom:*, tracepoint:kmem:mm_page_alloc_extfrag { @n[probe] = count(); }
"""


_WL_CPU = [0.0]


def _run_workload(tmp: Path) -> float:
    with TestMemcg("measure", 128 << 20) as cg:
        c0 = _children_cpu()
        t0 = time.monotonic()
        p = cg.spawn(thrash_command(tmp, 300, 10, anon_mb=16))
        p.wait()
        el = time.monotonic() - t0
        _WL_CPU[0] = _children_cpu() - c0
        return el


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_method(method: str, tmp: Path) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"mm-{method}-", dir=tmp))
    res: dict = {"method": method}
    if method == "none":
        res["elapsed"] = _run_workload(tmp)
        res["recorder_cpu"] = 0.0
    elif method == "raw":
        os.environ["MMBENCH_STATE_DIR"] = str(out / "state")
        j = Journal()
        j.acquire()
        try:
            evs, _ = ftrace.expand_events(EVENTS) if ftrace.is_mounted() else ([], [])
            if not evs:
                ftrace.ensure_mounted(j)
                evs, _ = ftrace.expand_events(EVENTS)
            cap = ftrace.RawCapture(j, out, evs, 8192)
            cpu0 = os.times()
            cap.start()
            res["elapsed"] = _run_workload(tmp)
            meta = cap.stop()
            cpu1 = os.times()
            res["recorder_cpu"] = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
            t0 = time.monotonic()
            files = {c: out / f"cpu{c}.raw" for c in meta["cpus"]}
            dec = ftrace.decode_files(files, ftrace.load_formats(out), page_size=meta["page_size"])
            res["decode_s"] = time.monotonic() - t0
            res["events"] = sum(dec.counts.values())
            res["bytes"] = meta["bytes"]
        finally:
            j.restore()
            j.release()
    elif method == "perf":
        argv = ["perf", "record", "-q", "-a", "-o", str(out / "perf.data")]
        for e in EVENTS:
            argv += ["-e", e if ":" in e else f"{e}:*"]
        c0 = _children_cpu()
        rec = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        res["elapsed"] = _run_workload(tmp)
        rec.send_signal(signal.SIGINT)
        rec.wait()
        res["recorder_cpu"] = _children_cpu() - c0 - _WL_CPU[0]
        t0 = time.monotonic()
        p = subprocess.run(["perf", "script", "-i", str(out / "perf.data"), "-F", "comm,tid,cpu,time,event,trace"],
                           capture_output=True, text=True)
        res["decode_s"] = time.monotonic() - t0
        res["events"] = p.stdout.count("\n")
        res["bytes"] = (out / "perf.data").stat().st_size
    elif method == "bpftrace":
        if not ftrace.is_mounted():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(ftrace.TRACEFS)], check=True)
            mounted = True
        else:
            mounted = False
        (out / "m.bt").write_text(BT)
        c0 = _children_cpu()
        rec = subprocess.Popen(["bpftrace", str(out / "m.bt")], stdout=open(out / "bt.out", "w"),
                               stderr=subprocess.STDOUT)
        for _ in range(100):
            time.sleep(0.1)
            if "Attaching" in (out / "bt.out").read_text():
                break
        time.sleep(0.5)
        res["elapsed"] = _run_workload(tmp)
        rec.send_signal(signal.SIGINT)
        rec.wait()
        res["recorder_cpu"] = _children_cpu() - c0 - _WL_CPU[0]
        res["decode_s"] = 0.0
        txt = (out / "bt.out").read_text()
        res["events"] = sum(int(l.rsplit(":", 1)[1]) for l in txt.splitlines() if l.startswith("@n["))
        if mounted:
            subprocess.run(["umount", str(ftrace.TRACEFS)])
    shutil.rmtree(out, ignore_errors=True)
    return res


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    methods = sys.argv[2].split(",") if len(sys.argv) > 2 else ["none", "raw", "perf", "bpftrace"]
    tmp = Path(tempfile.mkdtemp(prefix="mmbench-measure-", dir="/var/tmp"))
    try:
        results: dict[str, list[dict]] = {m: [] for m in methods}
        for i in range(pairs):
            for m in methods:
                r = run_method(m, tmp)
                results[m].append(r)
                print(r, flush=True)
        base = sum(r["elapsed"] for r in results.get("none", [])) / max(1, len(results.get("none", [])))
        for m, rs in results.items():
            el = [r["elapsed"] for r in rs]
            print(f"{m:9s} elapsed mean {sum(el)/len(el):.2f}s min {min(el):.2f} max {max(el):.2f} "
                  f"ratio {sum(el)/len(el)/base if base else 0:.3f} "
                  f"events {sum(r.get('events', 0) for r in rs)/len(rs):.0f} "
                  f"decode {sum(r.get('decode_s', 0) for r in rs)/len(rs):.2f}s "
                  f"recorder cpu {sum(r['recorder_cpu'] for r in rs)/len(rs):.2f}s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
