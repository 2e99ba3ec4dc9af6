"""mmbench import-mmtests on MMTests result trees generated here in MMTests' layout and raw formats
(work/log/<run>/iter-N/{tests-timestamp,tests-sysstate[.gz],kernel.version,proc-vmstat-<T>[.gz],
<T>/logs/...}), gzipped and plain: imported values equal the generated ones, compare's Min, Amean
(Hmean), Stddev, Max and B-mean rows equal MMTests' formulas (mmtests-notes.md §3.4, computed here
independently), and bad names or malformed files exit 2 with one line and write nothing."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from mmbench.cli import main
from mmbench.store.fs import FileStore

from mmtests_synth import BENCHES, HIGHER, HMEAN, make_tree  # noqa: E402  (the generator)


def mmtests_rows(x: list[float], higher: bool, harmonic: bool) -> dict[str, float]:
    s = sorted(x, reverse=higher)  # best first
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
                if bmean_k is not None:  # mmbench's own B-mean: k = max(1, ceil(n·95/100))
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
                        mmtests_pct(vals[new_run][stat], vals[base_run][stat], higher), rel=1e-9, abs=1e-9
                    )
    return checked


SINGLEOPS = {"postmark", "highalloc"}  # MMTests prints one "Ops" row: the best value


def test_compare_mmtests_convention_reproduces_mmtests_rows(tmp_path, results, capsys):
    # two iter-N in the baseline: MMTests pools both, and so does --convention mmtests (here with
    # MMTests v0.25's rules: amean-based Stddev for every row, B-means named BAmean-95)
    exp = make_tree(tmp_path / "mmtests", {"base": 2, "new": 1}, gz=True, seed=7)
    assert (
        run_cli(
            capsys, "import-mmtests", "--results", str(results), "--mmtests-rules", "v0.25", str(tmp_path / "mmtests")
        )[0]
        == 0
    )
    rc, out, err = run_cli(
        capsys, "compare", "--results", str(results), "--format", "json", "--convention", "mmtests", "base", "new"
    )
    assert rc == 0, err
    rows = _rows(json.loads(out))
    renamed = {
        (b, m, {"BAmean.95": "BAmean-95", "BHmean.95": "BHmean-95"}.get(st, st)): r for (b, m, st), r in rows.items()
    }
    checked = _check_rows(
        renamed,
        exp,
        "base",
        "new",
        pooled_iters=([0, 1], [0]),
        bmean_k=None,
        skip=SINGLEOPS,
        names={"BAmean.95": "BAmean-95", "BHmean.95": "BHmean-95"},
    )
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
    assert (
        _check_rows(
            rows, exp, "base", "new", pooled_iters=([0], [0]), bmean_k=lambda n: max(1, math.ceil(n * 95 / 100))
        )
        > 300
    )
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
        sum(
            u + s
            for u, s in zip(
                exp.monitors["base"]["pft"][0]["vmstat"]["us"], exp.monitors["base"]["pft"][0]["vmstat"]["sy"]
            )
        )
        / 5
    )
    # duration and vmstat sections exist for every benchmark
    titles = {s["title"] for s in json.loads(out)["sections"]}
    for b in BENCHES:
        assert f"duration: {b}" in titles and f"vmstat: {b}" in titles
    dur = rows[("duration: pft", "Elapsed", "Amean")]
    assert dur["values"]["base"] == exp.duration["base"]["pft"][0]["elapsed"]
    vm = json.loads(out)
    vrows = {r["metric"]: r["values"]["base"] for s in vm["sections"] if s["title"] == "vmstat: pft" for r in s["rows"]}
    d = exp.vmstat["base"]["pft"][0]
    # MMTests' mmtests-vmstat definitions (mmtests-notes.md §3.9), elapsed from the time :: line
    assert vrows["Minor Faults"] == d["pgfault"] - d["pgmajfault"]
    assert vrows["Kswapd velocity"] == pytest.approx(d["pgscan_kswapd"] / exp.duration["base"]["pft"][0]["elapsed"])
    assert vrows["Kswapd efficiency %"] == pytest.approx(d["pgsteal_kswapd"] * 100 / d["pgscan_kswapd"])


def test_show_list_report_work_on_imported_runs(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 1, "new": 1}, gz=True, benches=("pft", "usemem"))
    assert (
        run_cli(
            capsys,
            "import-mmtests",
            "--results",
            str(results),
            "--prefix",
            "mm-",
            str(tmp_path / "mmtests" / "work" / "log"),
            "new",
        )[0]
        == 0
    )
    rc, out, _ = run_cli(capsys, "list", "--results", str(results))
    assert rc == 0 and "mm-new" in out and "imported" in out and "6.1.0-1" in out and "base" not in out
    rc, out, _ = run_cli(capsys, "show", "--results", str(results), "mm-new")
    assert rc == 0 and "pft (mmtests-pft)" in out and "elapsed" in out
    rc, _, err = run_cli(capsys, "report", "--results", str(results), "-o", str(tmp_path / "r.html"), "mm-new")
    assert rc == 0, err
    assert "faults/sec-2" in (tmp_path / "r.html").read_text()
    # importing again refuses to replace without --force, and writes nothing
    rc, _, err = run_cli(
        capsys, "import-mmtests", "--results", str(results), "--prefix", "mm-", str(tmp_path / "mmtests")
    )
    assert rc == 2 and "already exists" in err and not FileStore(results).exists("mm-base")


def _nothing_written(results: Path) -> bool:
    return not results.exists() or not list(results.glob("*/run.json"))


@pytest.mark.parametrize("name", ["../x", "a/b", ".", "", "..", "/abs"])
def test_bad_run_name_arguments(tmp_path, results, capsys, name):
    make_tree(tmp_path / "mmtests", {"base": 1}, gz=False, benches=("pft",))
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"), name)
    assert rc == 2
    assert err.count("\n") == 1 and ("path" in err or "empty" in err), err  # the shared name check (model/names.py)
    assert _nothing_written(results)


def test_bad_names_in_the_tree(tmp_path, results, capsys):
    make_tree(tmp_path / "mmtests", {"base": 1}, gz=False, benches=("pft",))
    log = tmp_path / "mmtests" / "work" / "log"
    (log / "bad name" / "iter-0").mkdir(parents=True)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2 and "'bad name'" in err and err.count("\n") == 1
    assert _nothing_written(results)
    # a run that was not asked for does not stand in the way
    rc, _, err = run_cli(
        capsys, "import-mmtests", "--results", str(results), "--prefix", "x-", str(tmp_path / "mmtests"), "base"
    )
    assert rc == 0, err
    results = results.with_name("results2")
    (log / "bad name" / "iter-0").rmdir()
    (log / "bad name").rmdir()
    (log / "base" / "iter-0" / "a b" / "logs").mkdir(parents=True)
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 2 and "benchmark folder 'a b'" in err and err.count("\n") == 1
    assert _nothing_written(results)
    rc, _, err = run_cli(
        capsys, "import-mmtests", "--results", str(results), "--prefix", "../", str(tmp_path / "mmtests")
    )
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
    (
        "highalloc",
        "highalloc/logs/highalloc-updatedb-2.log",
        lambda t: t.replace(" success ", " success 1e400", 1).replace(" failure ", " failure 1e400", 1),
        None,
    ),
    ("pft", "tests-timestamp", lambda t: t.replace(" user ", " usr ", 1), 4),
    ("pft", "tests-sysstate", lambda t: t.replace("pgfault ", "pgfault x", 1), 7),
    ("thpscale", "proc-vmstat-thpscale", lambda t: t.replace("pgfault ", "pgfault 1 ", 1), 2),
    ("pft", "vmstat-pft", lambda t: t.replace(" st\n", " st\n1700000000.0000   0.0000     1.0000 -- 1 2 3\n", 1), 3),
    ("simoop", "mpstat-simoop", lambda t: t.replace("AM     0", "AM  cpu0", 1), 6),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(
    "bench,rel,corrupt,line", MALFORMED, ids=[f"{m[0]}:{m[1].rsplit('/', 1)[-1]}" for m in MALFORMED]
)
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


def test_thpscale_fake_sample_and_huge_percentage(tmp_path, results, capsys):
    """ExtractThpscale.pm: an iteration whose threads-<N>.log has no fault of a kind adds one sample
    of 0 to fault-<kind>-<N>, pooled with the other iterations' real samples; compare-kernels.sh's
    "Percentage Faults Huge" is the largest iteration's huge * 100 / all faults (-a counts)."""
    make_tree(tmp_path / "mmtests", {"base": 2, "new": 2}, gz=False, benches=("thpscale",))
    log = tmp_path / "mmtests" / "work" / "log"
    faults = {
        ("base", 0): [("huge", 300), ("huge", 500)],
        ("base", 1): [("base", 100), ("huge", 200)],
        ("new", 0): [("base", 40), ("base", 60)],
        ("new", 1): [("base", 80), ("base", 20)],
    }
    for (run, i), fs in faults.items():
        logs = log / run / f"iter-{i}" / "thpscale" / "logs"
        for f in logs.glob("threads-*"):
            f.unlink()
        (logs / "threads-1.log").write_text(
            "Running with 1 thread \n\n"
            + "".join(f"fault 0 {kind} {lat:12d} 1600000000.{k} 1\n" for k, (kind, lat) in enumerate(fs))
        )
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 0, err
    rc, out, err = run_cli(
        capsys, "compare", "--results", str(results), "--convention", "mmtests", "--format", "json", "base", "new"
    )
    assert rc == 0, err
    rows = {(s["title"], r["metric"], r["stat"]): r["values"] for s in json.loads(out)["sections"] for r in s["rows"]}
    # base: fault-base-1 = [0 (iter-0 had none), 100]; new: fault-huge-1 = [0, 0] (one per iteration)
    assert rows[("thpscale", "fault-base-1", "Min")] == {"base": 0.0, "new": 20.0}
    assert rows[("thpscale", "fault-base-1", "Amean")] == {"base": 50.0, "new": 50.0}
    assert rows[("thpscale", "fault-huge-1", "Max")] == {"base": 500.0, "new": 0.0}
    assert rows[("thpscale", "fault-both-1", "Amean")] == {"base": 275.0, "new": 50.0}
    assert rows[("percentage faults huge: thpscale", "huge-1", "Percentage")] == {"base": 100.0, "new": 0.0}
    # the default convention keeps no fake samples: no base fault ever happened in base's iter-0
    rc, out, _ = run_cli(capsys, "compare", "--results", str(results), "--format", "json", "base", "new")
    assert not any(s["title"].startswith("percentage faults huge") for s in json.loads(out)["sections"])


def test_compare_cells_baseline_minus_one():
    """Compare.pm prints a -1 (v0.25's Hmean of a series with a value <= 0) as 0, and a baseline's
    -1 as 0 in every run (the thp-always nr_dirty Hmean of tests/data/mmtests/v0.25-thpscale)."""
    from mmbench.analysis import mmtests as mt
    from mmbench.analysis import mmtests_monitors as mmv

    assert mmv.monitor_summary_v025([5, 0, 7], "Higher")[1] == -1
    assert mt.compare_cells({"a": -1.0, "b": 4.5}, "a") == {"a": None, "b": None}
    assert mt.compare_cells({"a": 2.0, "b": -1.0, "c": float("nan")}, "a") == {"a": 2.0, "b": None, "c": None}


def test_thpscale_locality_table(tmp_path, results, capsys):
    """ExtractThpscalelocality.pm: field 6 of each fault line (1 local, 0 remote, else uncertain),
    as percentages of the faults of that kind per iter-N, the largest iteration; a run with a log
    where one kind never happened is left out (MMTests divides by zero) and the next run is the
    baseline of the percentages."""
    make_tree(tmp_path / "mmtests", {"a": 1, "b": 2, "c": 1}, gz=True, benches=("thpscale",))
    log = tmp_path / "mmtests" / "work" / "log"
    faults = {
        ("a", 0): [("huge", 1), ("huge", 1)],
        ("b", 0): [("base", 1), ("base", 0), ("huge", 1), ("huge", -1)],
        ("b", 1): [("base", 1), ("base", 1), ("huge", 0), ("huge", 1)],
        ("c", 0): [("base", 0), ("huge", 1)],
    }
    for (run, i), fs in faults.items():
        logs = log / run / f"iter-{i}" / "thpscale" / "logs"
        for f in logs.glob("threads-*"):
            f.unlink()
        (logs / "threads-2.log.gz").write_bytes(
            gzip.compress(
                "".join(
                    f"fault 0 {kind} {100 + k:12d} 1600000000.{k} {loc}\n" for k, (kind, loc) in enumerate(fs)
                ).encode()
            )
        )
    rc, _, err = run_cli(capsys, "import-mmtests", "--results", str(results), str(tmp_path / "mmtests"))
    assert rc == 0, err
    it = FileStore(results).load_run("b").workload("thpscale").iterations[0]
    assert it.imported["mmtests_thpscale_locality"] == {"2": {"base": [2, 1, 1], "huge": [2, 1, 0], "uncertain": 1}}
    rc, out, err = run_cli(
        capsys, "compare", "--results", str(results), "--convention", "mmtests", "--format", "json", "a", "b", "c"
    )
    assert rc == 0, err
    cmp = json.loads(out)
    sec = next(s for s in cmp["sections"] if s["title"] == "percentage locality: thpscale")
    rows = {r["metric"]: r for r in sec["rows"]}
    assert list(rows) == ["local-base-2", "local-huge-2", "remote-base-2", "remote-huge-2", "uncertain-2"]
    assert {k: r["values"]["b"] for k, r in rows.items()} == {
        "local-base-2": 100.0,
        "local-huge-2": 50.0,
        "remote-base-2": 50.0,
        "remote-huge-2": 50.0,
        "uncertain-2": 25.0,
    }
    assert rows["local-base-2"]["values"]["a"] is None and rows["local-base-2"]["values"]["c"] == 0.0
    # pdiff against b, the first run in the table (a new value of 0 gives 0 %, as Stat.pm's pdiff)
    assert rows["local-base-2"]["pct"]["c"] == 0.0 and rows["local-base-2"]["pct"]["b"] == 0.0
    assert rows["remote-base-2"]["pct"]["c"] == pytest.approx(100.0)
    assert any("percentage locality: thpscale (a)" in n for n in cmp["notes"])


def test_mmtests_rules_of_the_renderer():
    """Facts of MMTests' Perl the real trees do not exercise: Compare.pm's header split of a name
    without '-' (substr with index -1 drops its last character) and past "-rcN"; a proc-vmstat
    view drops a value of exactly -1 (MonitorProcvmstat.pm: "next if $val == -1"), after a 0 reading
    a delta is 0, and the last frame is never read."""
    from mmbench.analysis import mmtests as mt
    from mmbench.analysis import mmtests_monitors as mmv

    assert mt.header_names("thp-never") == ("thp", "never")
    assert mt.header_names("vanilla") == ("vanill", "vanilla")
    assert mt.header_names("6.1-rc3-patched") == ("6.1-rc3", "patched")
    frames = [{"nr_zspages": v} for v in (0, 10, 9, 12, 12, 40)]
    assert mmv.ProcVmstatView("nr_zspages").series(frames) == [0.0, 0.0, 3.0, 0.0]  # 10→9 is -1: dropped
    assert mmv.ProcVmstatView("nr_free_pages").series([{"nr_free_pages": 5}, {"nr_free_pages": 7}, {}]) == [5, 7]
    assert mt.table_layout("gnu-time", "head") == (18, 2) and mt.table_layout("pft", "v0.25") == (14, 4)
    assert mmv.monitor_field("vmstat", "v0.25") == 15 and mmv.monitor_field("view", "v1.00") == 12
