"""A generator of MMTests result trees in MMTests' layout and raw formats, for the synthetic-input
tests of import-mmtests (bad names, malformed lines, compression) and for bench/import-mmtests-speed.
The readers' values are checked against trees MMTests itself wrote (tests/data/mmtests/); this
generator writes the formats those readers document, so edge cases can be made at will.  No pytest
here: the bench script imports it."""

from __future__ import annotations

import gzip
import lzma
import random
from dataclasses import dataclass, field
from pathlib import Path

# ---- the generator -------------------------------------------------------------------------------

BENCHES = ("time_unmap", "pft", "thpscale", "usemem", "simoop", "stutterp", "postmark", "highalloc")
HIGHER = {"pft", "postmark", "highalloc"}  # benchmarks whose metrics are higher-is-better (not mean-lat)
HMEAN = {"pft", "postmark"}  # rates: MMTests' "_mean" of Higher data is the Hmean


@dataclass
class Expected:
    """What the generator wrote: [run][bench][iter] → metric → samples, durations, vmstat deltas."""

    samples: dict = field(default_factory=dict)
    duration: dict = field(default_factory=dict)
    vmstat: dict = field(default_factory=dict)
    monitors: dict = field(default_factory=dict)  # [run][bench][iter][monitor] → metric → values


def _write(path: Path, text: str, gz: bool | str) -> None:
    """Write ``path`` plain, or as ``path.gz`` (gz true), or as ``path.xz`` (gz == "xz")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz == "xz":
        with lzma.open(path.with_name(path.name + ".xz"), "wt") as fh:
            fh.write(text)
    elif gz:
        with gzip.open(path.with_name(path.name + ".gz"), "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)


def _add(exp: dict, metric: str, v: float) -> None:
    exp.setdefault(metric, []).append(v)


def gen_time_unmap(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    for i in (1, 2, 3):
        vals = [rng.randint(1000, 90000) for _ in range(4)]
        _write(logs / f"unmap-{i}.log", "".join(f"{v}\n" for v in vals), gz)
        for v in vals:
            _add(exp, "Time", float(v))
    return exp


def gen_pft(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    for n in (1, 2):
        text = ""
        for _ in range(5):  # PFT_ITERATIONS runs appended to one log
            cpu, sec = round(rng.uniform(4e5, 7e5), 3), round(rng.uniform(5e5, 9e5), 3)
            text += (
                "   MappingSize  Threads CacheLine   UserTime  SysTime WallTime flt/cpu/s fault/wsec\n"
                f"  268435456 {n:8d} {1:9d} {0.04:9.2f}s {0.38:7.2f}s {0.42:7.2f}s {cpu:10.3f} {sec:10.3f}\n"
            )
            _add(exp, f"faults/cpu-{n}", cpu)
            _add(exp, f"faults/sec-{n}", sec)
        _write(logs / f"pft-{n}.log", text, gz)
    return exp


def gen_thpscale(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    for n in (1, 4):
        text = f"Running with {n} thread{'s' if n > 1 else ' '}\nUsing default advice\n\nanoninit 0 {123456:12d}\n"
        for k in range(12):
            kind = rng.choice(("huge", "base"))
            lat = rng.randint(50, 4000)
            text += f"fault {k % n} {kind} {lat:12d} 1600000000.{k} 1\n"
            _add(exp, f"fault-{kind}-{n}", float(lat))
            _add(exp, f"fault-both-{n}", float(lat))
        _write(logs / f"threads-{n}.log", text, gz)
    return exp


def gen_usemem(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    for n in (1, 2):
        for i in range(1, 8):
            s, m, sec = round(rng.uniform(0.5, 3), 2), rng.randint(0, 1), round(rng.uniform(1, 59), 2)
            _write(
                logs / f"usemem-{n}-{i}",
                f"0.{rng.randint(10, 99)}user {s:.2f}system {m}:{sec:05.2f}elapsed 99%CPU "
                f"(0avgtext+0avgdata 123456maxresident)k\n0inputs+0outputs (0major+30000minor)pagefaults 0swaps\n",
                gz,
            )
            _add(exp, f"syst-{n}", s)
            _add(exp, f"elsp-{n}", m * 60 + sec)
    return exp


def gen_simoop(logs: Path, rng: random.Random, gz: bool, head_format: bool) -> dict:
    exp: dict = {}
    # before the warm-up ends: ignored
    text = "Read latency (p50: 1) (p95: 2) (p99: 3)\nWarmup complete (300 seconds)\n"
    for t in range(1, 6):
        text += f"Run time: {t * 10} seconds\n"
        for op in ("Read", "Write", "Allocation"):
            v = sorted(rng.randint(100, 3_000_000) for _ in range(4))
            if head_format:
                text += f"{op} latency usec: (p50: {v[0]:,}) (p95: {v[1]:,}) (p99: {v[2]:,}) (max: {v[3]:,})\n"
                _add(exp, f"max-{op}", float(v[3]))
            else:
                text += f"{op} latency (p50: {v[0]:,}) (p95: {v[1]:,}) (p99: {v[2]:,})\n"
            for name, x in zip(("p50", "p95", "p99"), v):
                _add(exp, f"{name}-{op}", float(x))
        text += "work rate = 123.45/sec (avg 120.00/sec) (total 123)\n"
    text += "Final stats\nRead latency (p50: 9) (p95: 9) (p99: 9)\n"  # after Final stats: ignored
    _write(logs / "simoop.log", text, gz)
    return exp


def gen_stutterp(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    for w in (4, 8):
        text = ""
        for _ in range(6):
            c, ns = rng.choice((1, 1, 3, 10)), rng.randint(10_000, 9_000_000)
            text += f"{c} {ns}\n"
            for _ in range(c):
                _add(exp, f"mmap-{w}", ns / 1000.0)
        _write(logs / f"mmap-latency-{w}.log", text, gz)
    return exp


def gen_postmark(logs: Path, rng: random.Random, gz: bool) -> dict:
    tx, cr, crm, de, dem = (rng.randint(50, 900) for _ in range(5))
    rd, wr = round(rng.uniform(1, 60), 2), round(rng.uniform(1, 90), 2)
    text = f"""Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t123 seconds total
\t100 seconds of transactions ({tx} per second)

Files:
\t20092 created (163 per second)
\t\tCreation alone: 10000 files ({cr} per second)
\t\tMixed with transactions: 10092 files ({crm} per second)
\t9935 read (99 per second)
\t20092 deleted (163 per second)
\t\tDeletion alone: 10000 files ({de} per second)
\t\tMixed with transactions: 10092 files ({dem} per second)

Data:
\t5512.13 megabytes read ({rd} megabytes per second)
\t8123.45 megabytes written ({wr} megabytes per second)
"""
    _write(logs / "postmark.log", text, gz)
    return {
        "Transactions": [float(tx)],
        "FilesCreate": [float(cr)],
        "CreateTransact": [float(crm)],
        "FilesDeleted": [float(de)],
        "DeleteTransact": [float(dem)],
        "DataRead/MB": [rd],
        "DataWrite/MB": [wr],
    }


def gen_highalloc(logs: Path, rng: random.Random, gz: bool) -> dict:
    exp: dict = {}
    mlog = "Discovering number of pages to allocate: 900\n"
    for w in ("kernbench", "updatedb"):
        ok = att = 0
        lats = []
        for p in (1, 2, 3):
            mlog += f"Starting background workload: {w}\nBackground workload: {w} pid {1000 + p}, highalloc pass {p}\n"
            text = "Disabling OOM killer for running process\n"
            for i in range(rng.randint(5, 9)):
                s = rng.random() < 0.7
                lat = rng.randint(1000, 900000)
                text += f"{i} {'success' if s else 'failure'} {lat}\n"
                ok += s
                att += 1
                lats.append(lat)
            text += "Re-enabling OOM Killer status\n"
            _write(logs / f"highalloc-{w}-{p}.log", text, gz)
        exp[f"{w}-pass"] = [3.0]
        exp[f"{w}-success"] = [ok * 100 / att]
        exp[f"{w}-mean-lat"] = [sum(lats) / len(lats)]
    _write(logs / "mmtests.log", mlog, gz)
    return exp


def gen_vmstat_monitor(it: Path, bench: str, rng: random.Random, gz: bool) -> dict:
    """MMTests' vmstat monitor through latency-output (every line prefixed); the first data row is
    vmstat's since-boot average (not a sample)."""
    hdr = [
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
    ]
    rows = [[rng.randint(0, 99) for _ in range(17)] for _ in range(6)]
    lines = hdr + [" ".join(str(v) for v in r) for r in rows]
    text = "".join(f"{1700000000 + i:16.4f} {i:8.4f} {1:10.4f} -- {ln}\n" for i, ln in enumerate(lines))
    _write(it / f"vmstat-{bench}", text, gz)
    cols = hdr[1].split()
    return {c: [float(r[i]) for r in rows[1:]] for i, c in enumerate(cols)}


def gen_mpstat_monitor(it: Path, bench: str, rng: random.Random, gz: bool) -> dict:
    cols = "%usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle".split()
    text = "Linux 6.1.0 (testhost) \t11/23/2026 \t_x86_64_\t(2 CPU)\n\n"
    exp: dict = {f"all {c}": [] for c in cols}
    exp["max-cpu %busy"] = []
    for t in range(4):
        text += f"time: {1700000000 + t}\n10:00:0{t} AM  CPU " + " ".join(cols) + "\n"
        idles = []
        for cpu in ("all", "0", "1"):
            vals = [round(rng.uniform(0, 50), 2) for _ in cols]
            text += f"10:00:0{t} AM  {cpu:>4} " + " ".join(f"{v:7.2f}" for v in vals) + "\n"
            if cpu == "all":
                for c, v in zip(cols, vals):
                    exp[f"all {c}"].append(v)
            else:
                idles.append(vals[-1])
        exp["max-cpu %busy"].append(100 - min(idles))
        text += "\n"
    text += "Average:     all " + " ".join("1.00" for _ in cols) + "\n"
    _write(it / f"mpstat-{bench}", text, gz)
    return exp


VMSTAT_KEYS = (
    "pgfault",
    "pgmajfault",
    "pswpin",
    "pswpout",
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "pgscan_direct",
    "pgsteal_direct",
    "thp_fault_alloc",
    "thp_fault_fallback",
    "compact_stall",
)


def make_tree(
    root: Path, runs: dict[str, int], *, gz: bool, seed: int = 1, benches: tuple[str, ...] = BENCHES
) -> Expected:
    """Write work/log/<run>/iter-<N>/ for every run (name → number of iter-N) and benchmark."""
    rng = random.Random(seed)
    exp = Expected()
    for r, (run, n_iter) in enumerate(runs.items()):
        for n in range(n_iter):
            it = root / "work" / "log" / run / f"iter-{n}"
            it.mkdir(parents=True)
            (it / "kernel.version").write_text(f"Linux testhost 6.1.0-{r} #1 SMP PREEMPT_DYNAMIC x86_64 GNU/Linux\n")
            ts = f"start :: {1700000000 + n}\n"
            sysstate = "version :: 638401e0\narch :: x86_64\nfile start :: /proc/meminfo\nMemTotal: 1 kB\n"
            for b in benches:
                logs = it / b / "logs"
                logs.mkdir(parents=True)
                gen = globals()[f"gen_{b}"]
                s = gen(logs, rng, gz, head_format=bool(r % 2)) if b == "simoop" else gen(logs, rng, gz)
                exp.samples.setdefault(run, {}).setdefault(b, {})[n] = s
                if b in ("pft", "simoop"):  # MMTests' vmstat and mpstat monitors for two of them
                    exp.monitors.setdefault(run, {}).setdefault(b, {})[n] = {
                        "vmstat": gen_vmstat_monitor(it, b, rng, gz),
                        "mpstat": gen_mpstat_monitor(it, b, rng, gz),
                    }
                u, sy, el = round(rng.uniform(1, 99), 2), round(rng.uniform(1, 99), 2), round(rng.uniform(100, 999), 2)
                ts += (
                    f"test begin :: {b} {1700000100 + n}\ntest end :: {b} {1700000900 + n} 0\n"
                    f"time :: {b} {u:.2f} user {sy:.2f} system {el:.2f} elapsed\n"
                )
                exp.duration.setdefault(run, {}).setdefault(b, {})[n] = {"user": u, "system": sy, "elapsed": el}
                before = {k: rng.randint(0, 10**9) for k in VMSTAT_KEYS}
                after = {k: v + rng.randint(0, 10**6) for k, v in before.items()}
                exp.vmstat.setdefault(run, {}).setdefault(b, {})[n] = {k: after[k] - before[k] for k in VMSTAT_KEYS}
                if b == "thpscale":
                    # this benchmark's vmstat comes from the proc-vmstat monitor instead (no snapshots)
                    mid = {k: v + 1 for k, v in before.items()}
                    frames = "".join(
                        f"time: {1700000100 + j}\n" + "".join(f"{k} {v}\n" for k, v in f.items())
                        for j, f in enumerate((before, mid, after))
                    )
                    _write(it / f"proc-vmstat-{b}", frames, gz)
                    sysstate += f"test begin :: {b} 1\ntest end :: {b} 2 0\n"
                    continue
                sysstate += (
                    f"test begin :: {b} {1700000100 + n}\nfile start :: /proc/vmstat\n"
                    + "".join(f"{k} {v}\n" for k, v in before.items())
                    + "file start :: /proc/zoneinfo\nNode 0, zone DMA\n  pages free 1\n"
                    + "file end :: /proc/vmstat\n"
                    + "".join(f"{k} {v}\n" for k, v in after.items())
                    + f"file end :: /proc/zoneinfo\nNode 0, zone DMA\ntest end :: {b} {1700000900 + n} 0\n"
                )
            ts += f"finish :: {1700001000 + n}\n"
            (it / "tests-timestamp").write_text(ts)
            _write(it / "tests-sysstate", sysstate, gz)
    return exp


# ---- MMTests' formulas (mmtests-notes.md §3.4), written out independently ----------------------
