"""mmbench import-mmtests on MMTests result trees generated here in MMTests' layout and raw formats
(work/log/<run>/iter-N/{tests-timestamp,tests-sysstate[.gz],kernel.version,proc-vmstat-<T>[.gz],
<T>/logs/...}), gzipped and plain: imported values equal the generated ones, compare's Min, Amean
(Hmean), Stddev, Max and B-mean rows equal MMTests' formulas (mmtests-notes.md §3.4, computed here
independently), and bad names or malformed files exit 2 with one line and write nothing."""

from __future__ import annotations

import gzip
import json
import lzma
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mmbench.cli import main
from mmbench.store.fs import FileStore

# ---- the generator -------------------------------------------------------------------------------

BENCHES = ("time_unmap", "pft", "thpscale", "usemem", "simoop", "stutterp", "postmark", "highalloc")
HIGHER = {"pft", "postmark", "highalloc"}   # benchmarks whose metrics are higher-is-better (not mean-lat)
HMEAN = {"pft", "postmark"}                  # rates: MMTests' "_mean" of Higher data is the Hmean


@dataclass
class Expected:
    """What the generator wrote: [run][bench][iter] → metric → samples, durations, vmstat deltas."""

    samples: dict = field(default_factory=dict)
    duration: dict = field(default_factory=dict)
    vmstat: dict = field(default_factory=dict)
    monitors: dict = field(default_factory=dict)   # [run][bench][iter][monitor] → metric → values


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
        for _ in range(5):   # PFT_ITERATIONS runs appended to one log
            cpu, sec = round(rng.uniform(4e5, 7e5), 3), round(rng.uniform(5e5, 9e5), 3)
            text += ("   MappingSize  Threads CacheLine   UserTime  SysTime WallTime flt/cpu/s fault/wsec\n"
                     f"  268435456 {n:8d} {1:9d} {0.04:9.2f}s {0.38:7.2f}s {0.42:7.2f}s {cpu:10.3f} {sec:10.3f}\n")
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
            _write(logs / f"usemem-{n}-{i}",
                   f"0.{rng.randint(10, 99)}user {s:.2f}system {m}:{sec:05.2f}elapsed 99%CPU "
                   f"(0avgtext+0avgdata 123456maxresident)k\n0inputs+0outputs (0major+30000minor)pagefaults 0swaps\n",
                   gz)
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
                text += (f"{op} latency usec: (p50: {v[0]:,}) (p95: {v[1]:,}) (p99: {v[2]:,}) "
                         f"(max: {v[3]:,})\n")
                _add(exp, f"max-{op}", float(v[3]))
            else:
                text += f"{op} latency (p50: {v[0]:,}) (p95: {v[1]:,}) (p99: {v[2]:,})\n"
            for name, x in zip(("p50", "p95", "p99"), v):
                _add(exp, f"{name}-{op}", float(x))
        text += "work rate = 123.45/sec (avg 120.00/sec) (total 123)\n"
    text += "Final stats\nRead latency (p50: 9) (p95: 9) (p99: 9)\n"   # after Final stats: ignored
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
    return {"Transactions": [float(tx)], "FilesCreate": [float(cr)], "CreateTransact": [float(crm)],
            "FilesDeleted": [float(de)], "DeleteTransact": [float(dem)], "DataRead/MB": [rd],
            "DataWrite/MB": [wr]}


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
    hdr = ["procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
           " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"]
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


VMSTAT_KEYS = ("pgfault", "pgmajfault", "pswpin", "pswpout", "pgscan_kswapd", "pgsteal_kswapd",
               "pgscan_direct", "pgsteal_direct", "thp_fault_alloc", "thp_fault_fallback", "compact_stall")


def make_tree(root: Path, runs: dict[str, int], *, gz: bool, seed: int = 1,
              benches: tuple[str, ...] = BENCHES) -> Expected:
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
                if b in ("pft", "simoop"):   # MMTests' vmstat and mpstat monitors for two of them
                    exp.monitors.setdefault(run, {}).setdefault(b, {})[n] = {
                        "vmstat": gen_vmstat_monitor(it, b, rng, gz), "mpstat": gen_mpstat_monitor(it, b, rng, gz)}
                u, sy, el = round(rng.uniform(1, 99), 2), round(rng.uniform(1, 99), 2), round(rng.uniform(100, 999), 2)
                ts += (f"test begin :: {b} {1700000100 + n}\ntest end :: {b} {1700000900 + n} 0\n"
                       f"time :: {b} {u:.2f} user {sy:.2f} system {el:.2f} elapsed\n")
                exp.duration.setdefault(run, {}).setdefault(b, {})[n] = {"user": u, "system": sy, "elapsed": el}
                before = {k: rng.randint(0, 10**9) for k in VMSTAT_KEYS}
                after = {k: v + rng.randint(0, 10**6) for k, v in before.items()}
                exp.vmstat.setdefault(run, {}).setdefault(b, {})[n] = {k: after[k] - before[k] for k in VMSTAT_KEYS}
                if b == "thpscale":
                    # this benchmark's vmstat comes from the proc-vmstat monitor instead (no snapshots)
                    mid = {k: v + 1 for k, v in before.items()}
                    frames = "".join(f"time: {1700000100 + j}\n" + "".join(f"{k} {v}\n" for k, v in f.items())
                                     for j, f in enumerate((before, mid, after)))
                    _write(it / f"proc-vmstat-{b}", frames, gz)
                    sysstate += f"test begin :: {b} 1\ntest end :: {b} 2 0\n"
                    continue
                sysstate += (f"test begin :: {b} {1700000100 + n}\nfile start :: /proc/vmstat\n"
                             + "".join(f"{k} {v}\n" for k, v in before.items())
                             + "file start :: /proc/zoneinfo\nNode 0, zone DMA\n  pages free 1\n"
                             + "file end :: /proc/vmstat\n" + "".join(f"{k} {v}\n" for k, v in after.items())
                             + f"file end :: /proc/zoneinfo\nNode 0, zone DMA\ntest end :: {b} {1700000900 + n} 0\n")
            ts += f"finish :: {1700001000 + n}\n"
            (it / "tests-timestamp").write_text(ts)
            _write(it / "tests-sysstate", sysstate, gz)
    return exp


# ---- MMTests' formulas (mmtests-notes.md §3.4), written out independently ----------------------


def mmtests_rows(x: list[float], higher: bool, harmonic: bool) -> dict[str, float]:
    s = sorted(x, reverse=higher)                 # best first
    n = len(s)
    am = sum(s) / n
    sd = math.sqrt(sum((v - am) ** 2 for v in s) / (n - 1)) if n > 1 else float("nan")
    k = max(1, math.floor(n * 95 / 100))
    best = s[:k]
    rows = {"Min": min(s), "Max": max(s), "Stddev": sd}
    if harmonic:
        rows["Hmean"] = n / sum(1 / v for v in s)
        rows["BHmean.95"] = k / sum(1 / v for v in best)
    else:
        rows["Amean"] = am
        rows["BAmean.95"] = sum(best) / k
    return rows


def mmtests_pct(new: float, base: float, higher: bool) -> float:
    """pdiff / pndiff (Stat.pm:83-149) on ordinary values (no zeroes)."""
    return new * 100 / base - 100 if higher else 100 - new * 100 / base


# ---- tests ---------------------------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.mark.parametrize("gz", [False, True, "xz"], ids=["plain", "gzip", "xz"])
def test_imported_values_equal_generated(tmp_path, results, capsys, gz):
    exp = make_tree(tmp_path / "mmtests", {"base": 2, "new": 1}, gz=gz)
    rc, out, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 0, err
    assert "imported MMTests run as base" in out and "imported MMTests run as new" in out
    store = FileStore(results)
    for run, benches in exp.samples.items():
        rec = store.load_run(run)
        assert rec.status == "imported"
        assert rec.fingerprint["kernel"]["release"].startswith("6.1.0-")
        assert [w.label for w in rec.workloads] == list(BENCHES)
        for b, iters in benches.items():
            w = rec.workload(b)
            assert [it.index for it in w.iterations] == sorted(iters)
            for it in w.iterations:
                assert it.status == "ok"
                assert it.samples.keys() == iters[it.index].keys(), (run, b, it.index)
                for metric, vals in iters[it.index].items():
                    assert it.samples[metric] == pytest.approx(vals, rel=1e-12), (run, b, it.index, metric)
                assert it.duration == exp.duration[run][b][it.index]
                assert it.vmstat_delta == exp.vmstat[run][b][it.index]


def _rows(cmp_json: dict) -> dict[tuple[str, str, str], dict]:
    return {(s["title"].split(" (")[0], r["metric"], r["stat"]): r for s in cmp_json["sections"] for r in s["rows"]}


def _check_rows(rows, exp, base_run, new_run, *, pooled_iters, bmean_k, skip=(), names=None) -> int:
    checked = 0
    for b in BENCHES:
        if b in skip:
            continue
        for metric in exp.samples[base_run][b][0]:
            higher = b in HIGHER and not metric.endswith("-mean-lat")
            vals = {}
            for run, r_iters in ((base_run, pooled_iters[0]), (new_run, pooled_iters[1])):
                x = [v for n in r_iters for v in exp.samples[run][b][n][metric]]
                harmonic = b in HMEAN
                vals[run] = mmtests_rows(x, higher, harmonic)
                if bmean_k is not None:   # mmbench's own B-mean: k = max(1, ceil(n·95/100))
                    s = sorted(x, reverse=higher)
                    k = bmean_k(len(s))
                    key = "BHmean.95" if harmonic else "BAmean.95"
                    vals[run][key] = (k / sum(1 / v for v in s[:k])) if harmonic else sum(s[:k]) / k
            for stat in vals[base_run]:
                row = rows[(b, metric, (names or {}).get(stat, stat))]
                for run in (base_run, new_run):
                    want = vals[run][stat]
                    got = row["values"][run]
                    if math.isnan(want):
                        assert got is None, (b, metric, stat, run)
                    else:
                        assert got == pytest.approx(want, rel=1e-9), (b, metric, stat, run)
                        checked += 1
                if stat in ("Amean", "Hmean", "Min", "Max") and row["values"][base_run]:
                    assert row["pct"][new_run] == pytest.approx(
                        mmtests_pct(vals[new_run][stat], vals[base_run][stat], higher), rel=1e-9, abs=1e-9)
    return checked


SINGLEOPS = {"postmark", "highalloc"}     # MMTests prints one "Ops" row: the best value


def test_compare_mmtests_convention_reproduces_mmtests_rows(tmp_path, results, capsys):
    # two iter-N in the baseline: MMTests pools both, and so does --convention mmtests (here with
    # MMTests v0.25's rules: amean-based Stddev for every row, B-means named BAmean-95)
    exp = make_tree(tmp_path / "mmtests", {"base": 2, "new": 1}, gz=True, seed=7)
    assert run_cli(capsys, "import-mmtests", "--results", str(results), "--mmtests-rules", "v0.25",
                   str(tmp_path / "mmtests"))[0] == 0
    rc, out, err = run_cli(capsys, "compare", "--results", str(results), "--format", "json", "--convention",
                           "mmtests", "base", "new")
    assert rc == 0, err
    rows = _rows(json.loads(out))
    renamed = {(b, m, {"BAmean.95": "BAmean-95", "BHmean.95": "BHmean-95"}.get(st, st)): r
               for (b, m, st), r in rows.items()}
    checked = _check_rows(renamed, exp, "base", "new", pooled_iters=([0, 1], [0]), bmean_k=None,
                          skip=SINGLEOPS, names={"BAmean.95": "BAmean-95", "BHmean.95": "BHmean-95"})
    assert checked > 250
    for b in SINGLEOPS:
        for metric in exp.samples["base"][b][0]:
            higher = not metric.endswith("-mean-lat")
            for run, its in (("base", [0, 1]), ("new", [0])):
                x = [v for n in its for v in exp.samples[run][b][n][metric]]
                assert rows[(b, metric, "Ops")]["values"][run] == (max(x) if higher else min(x))


def test_compare_default_convention_single_iteration(tmp_path, results, capsys):
    # one iter-N a side (MMTests' default MMTEST_ITERATIONS=1): mmbench's own Min/Amean/Stddev/Max
    # are MMTests'; its B-mean keeps ceil(95 %) of the samples where MMTests floors (documented)
    exp = make_tree(tmp_path / "mmtests", {"base": 1, "new": 1}, gz=False, seed=3)
    assert run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))[0] == 0
    rc, out, err = run_cli(capsys, "compare", "--results", str(results), "--format", "json", "base", "new")
    assert rc == 0, err
    rows = _rows(json.loads(out))
    assert _check_rows(rows, exp, "base", "new", pooled_iters=([0], [0]),
                       bmean_k=lambda n: max(1, math.ceil(n * 95 / 100))) > 300
    # thpscale's proc-vmstat monitor frames (t = 0, 1, 2 s; the first interval moves every counter
    # by 1) became mmbench's proc-vmstat monitor: per-interval rates, Amean and Max
    d = exp.vmstat["base"]["thpscale"][0]["pgscan_kswapd"]
    assert rows[("monitor proc-vmstat: thpscale", "Kswapd scan (pages/s)", "Amean")]["values"]["base"] == d / 2
    assert rows[("monitor proc-vmstat: thpscale", "Kswapd scan (pages/s)", "Max")]["values"]["base"] == max(1, d - 1)
    # MMTests' vmstat and mpstat monitors became mmbench's: Amean and Max of every column
    for b in ("pft", "simoop"):
        for mon, metrics in exp.monitors["base"][b][0].items():
            for metric, vals in metrics.items():
                for stat, want in (("Amean", sum(vals) / len(vals)), ("Max", max(vals))):
                    got = rows[(f"monitor {mon}: {b}", metric, stat)]["values"]["base"]
                    assert got == pytest.approx(want, rel=1e-12), (b, mon, metric, stat)
    assert rows[("monitor vmstat: pft", "totalcpu", "Amean")]["values"]["base"] == pytest.approx(
        sum(u + s for u, s in zip(exp.monitors["base"]["pft"][0]["vmstat"]["us"],
                                  exp.monitors["base"]["pft"][0]["vmstat"]["sy"])) / 5)
    # duration and vmstat sections exist for every benchmark
    titles = {s["title"] for s in json.loads(out)["sections"]}
    for b in BENCHES:
        assert f"duration: {b}" in titles and f"vmstat: {b}" in titles
    dur = rows[("duration: pft", "Elapsed", "Amean")]
    assert dur["values"]["base"] == exp.duration["base"]["pft"][0]["elapsed"]
    vm = json.loads(out)
    vrows = {r["metric"]: r["values"]["base"] for s in vm["sections"] if s["title"] == "vmstat: pft"
             for r in s["rows"]}
    d = exp.vmstat["base"]["pft"][0]
    # MMTests' mmtests-vmstat definitions (mmtests-notes.md §3.9), elapsed from the time :: line
    assert vrows["Minor Faults"] == d["pgfault"] - d["pgmajfault"]
    assert vrows["Kswapd velocity"] == pytest.approx(d["pgscan_kswapd"] / exp.duration["base"]["pft"][0]["elapsed"])
    assert vrows["Kswapd efficiency %"] == pytest.approx(d["pgsteal_kswapd"] * 100 / d["pgscan_kswapd"])


def test_show_list_report_work_on_imported_runs(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 1, "new": 1}, gz=True, benches=("pft", "usemem"))
    assert run_cli(capsys, "import-mmtests", "--results", str(results), "--prefix", "mm-",
                   str(tmp_path / "mmtests" / "work" / "log"), "new")[0] == 0
    rc, out, _ = run_cli(capsys, "list", "--results", str(results))
    assert rc == 0 and "mm-new" in out and "imported" in out and "6.1.0-1" in out and "base" not in out
    rc, out, _ = run_cli(capsys, "show", "--results", str(results), "mm-new")
    assert rc == 0 and "pft (mmtests-pft)" in out and "elapsed" in out
    rc, _, err = run_cli(capsys, "report", "--results", str(results), "-o", str(tmp_path / "r.html"), "mm-new")
    assert rc == 0, err
    assert "faults/sec-2" in (tmp_path / "r.html").read_text()
    # importing again refuses to replace without --force, and writes nothing
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), "--prefix", "mm-",
                         str(tmp_path / "mmtests"))
    assert rc == 2 and "already exists" in err and not FileStore(results).exists("mm-base")


def _nothing_written(results: Path) -> bool:
    return not results.exists() or not list(results.glob("*/run.json"))


@pytest.mark.parametrize("name", ["../x", "a/b", ".", "", "..", "/abs"])
def test_bad_run_name_arguments(tmp_path, results, capsys, name):
    make_tree(tmp_path / "mmtests", {"base": 1}, gz=False, benches=("pft",))
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"), name)
    assert rc == 2
    assert err.count("\n") == 1 and ("path" in err or "empty" in err), err   # the shared name check (model/names.py)
    assert _nothing_written(results)


def test_bad_names_in_the_tree(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 1}, gz=False, benches=("pft",))
    log = tmp_path / "mmtests" / "work" / "log"
    (log / "bad name" / "iter-0").mkdir(parents=True)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2 and "'bad name'" in err and err.count("\n") == 1
    assert _nothing_written(results)
    # a run that was not asked for does not stand in the way
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), "--prefix", "x-",
                         str(tmp_path / "mmtests"), "base")
    assert rc == 0, err
    results = results.with_name("results2")
    (log / "bad name" / "iter-0").rmdir()
    (log / "bad name").rmdir()
    (log / "base" / "iter-0" / "a b" / "logs").mkdir(parents=True)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2 and "benchmark folder 'a b'" in err and err.count("\n") == 1
    assert _nothing_written(results)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), "--prefix", "../",
                         str(tmp_path / "mmtests"))
    assert rc == 2 and _nothing_written(results)


# (benchmark, file under iter-0 relative path, corrupt(text) → text, line number expected)
MALFORMED = [
    ("time_unmap", "time_unmap/logs/unmap-2.log", lambda t: t.replace("\n", "\nabc\n", 1), 2),
    ("pft", "pft/logs/pft-2.log", lambda t: t.replace("0.42s", "0.42 0.1", 1), 2),
    ("thpscale", "thpscale/logs/threads-4.log", lambda t: t.replace("fault 0 ", "fault 0 giant ", 1), 5),
    ("usemem", "usemem/logs/usemem-1-3", lambda t: t.replace("elapsed", "elapsed", 1).replace(":", "x", 1), 1),
    ("simoop", "simoop/logs/simoop.log", lambda t: t.replace("(p99:", "(p99 ", 2), 4),
    ("stutterp", "stutterp/logs/mmap-latency-8.log", lambda t: t.replace("\n", " 7\n", 1), 1),
    ("postmark", "postmark/logs/postmark.log", lambda t: t.replace("seconds of transactions", "s", 1), 19),
    ("highalloc", "highalloc/logs/highalloc-updatedb-2.log", lambda t: t.replace(" success ", " success 1e400", 1)
     .replace(" failure ", " failure 1e400", 1), None),
    ("pft", "tests-timestamp", lambda t: t.replace(" user ", " usr ", 1), 4),
    ("pft", "tests-sysstate", lambda t: t.replace("pgfault ", "pgfault x", 1), 7),
    ("thpscale", "proc-vmstat-thpscale", lambda t: t.replace("pgfault ", "pgfault 1 ", 1), 2),
    ("pft", "vmstat-pft", lambda t: t.replace(" st\n", " st\n1700000000.0000   0.0000     1.0000 -- 1 2 3\n", 1), 3),
    ("simoop", "mpstat-simoop", lambda t: t.replace("AM     0", "AM  cpu0", 1), 6),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("bench,rel,corrupt,line", MALFORMED,
                         ids=[f"{m[0]}:{m[1].rsplit('/', 1)[-1]}" for m in MALFORMED])
def test_malformed_file_exits_2_and_writes_nothing(tmp_path, results, capsys, bench, rel, corrupt, line, gz):
    make_tree(tmp_path / "mmtests", {"base": 1, "new": 1}, gz=gz, benches=(bench,))
    it = tmp_path / "mmtests" / "work" / "log" / "new" / "iter-0"
    path = it / rel
    gzipped = gz and not rel.endswith("tests-timestamp")
    if gzipped:
        path = path.with_name(path.name + ".gz")
        text = gzip.decompress(path.read_bytes()).decode()
    else:
        text = path.read_text()
    bad = corrupt(text)
    assert bad != text
    if gzipped:
        path.write_bytes(gzip.compress(bad.encode()))
    else:
        path.write_text(bad)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2, err
    assert err.count("\n") == 1 and str(path) in err, err
    if line is not None:
        assert f": line {line}:" in err, err
    assert _nothing_written(results)


def test_corrupt_gzip_and_missing_logs(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 2}, gz=True, benches=("thpscale", "postmark"))
    it0 = tmp_path / "mmtests" / "work" / "log" / "base" / "iter-0"
    (it0 / "thpscale" / "logs" / "threads-1.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2 and "threads-1.log.gz: cannot read" in err and _nothing_written(results)
    # a benchmark whose raw log is missing from one iteration: that iteration keeps its duration,
    # vmstat and monitors, has no samples and says why (a warning, and a note in compare)
    (it0 / "thpscale" / "logs" / "threads-1.log.gz").unlink()
    (it0 / "thpscale" / "logs" / "threads-4.log.gz").unlink()
    (it0 / "tests-timestamp").unlink()
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 0, err
    assert "threads-<N>.log[.gz|.xz] is missing" in err and "tests-timestamp is missing" in err
    w = FileStore(results).load_run("base").workload("thpscale")
    assert [(it.index, it.status) for it in w.iterations] == [(0, "ok"), (1, "ok")]
    assert not w.iterations[0].samples and "threads-<N>.log" in (w.iterations[0].reason or "")
    assert w.iterations[0].vmstat_delta and not w.iterations[0].duration and w.iterations[1].samples
    rc, out, err = run_cli(capsys, "compare", "--results", str(results), "--format", "json", "base", "base")
    notes = " ".join(json.loads(out)["notes"])
    assert rc == 0 and "iteration 0: no benchmark samples" in notes
    titles = {s["title"] for s in json.loads(out)["sections"]}
    assert "vmstat: thpscale" in titles


def test_unknown_layout_exits_2_unless_partial(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 1}, gz=False, benches=("pft",))
    it = tmp_path / "mmtests" / "work" / "log" / "base" / "iter-0"
    (it / "pft").rename(it / "kernbench")
    for f in ("tests-timestamp", "tests-sysstate"):
        (it / f).write_text((it / f).read_text().replace(":: pft ", ":: kernbench "))
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    # one line naming the benchmark, the files found and the layouts supported
    assert rc == 2 and len(err.strip().splitlines()) == 1 and _nothing_written(results)
    assert "kernbench: unknown MMTests result layout" in err and "pft-1.log" in err
    assert "v0.25" in err and "v1.00" in err and "HEAD" in err and "time-<A>-<I>" in err
    rc, _, err = run_cli(capsys, "import-mmtests", "--partial", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 0 and "--partial: only its duration, vmstat and monitors" in err
    it0 = FileStore(results).load_run("base").workload("kernbench").iterations[0]
    assert it0.samples == {} and it0.duration["elapsed"] > 0 and it0.vmstat_delta["pgfault"] >= 0


def test_bmean_k_conventions():
    from mmbench.analysis.stats import bmean, bmean_k
    # MMTests: k = max(1, floor(n·95/100)), so n = 5 keeps 4 (notes §3.4); mmbench rounds up
    assert [bmean_k(n, 95, "mmtests") for n in (1, 2, 5, 19, 20, 21, 40)] == [1, 1, 4, 18, 19, 19, 38]
    assert [bmean_k(n, 95) for n in (1, 2, 5, 19, 20, 21, 40)] == [1, 2, 5, 19, 19, 20, 38]
    assert bmean([5, 1, 4, 2, 3], 95, "lower", "amean", "mmtests") == 2.5
    assert bmean([5, 1, 4, 2, 3], 95, "higher", "amean", "mmtests") == 3.5
