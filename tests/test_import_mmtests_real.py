"""import-mmtests on result trees MMTests itself wrote (tests/data/mmtests/<generation>/log: MMTests
HEAD 638401e0, v1.00 and v0.25 run in mmbench's VM, see each NOTE.md), and every cell of MMTests'
own reports of those trees: compare-kernels.sh (benchmark tables, duration, vmstat, schedstat,
iostat), compare-mmtests.pl --print-ratio, and the vmstat / proc-vmstat series compare-kernels
graphs and some it does not (compare-mmtests.pl --print-monitor ... --sub-heading ...; mmbench's
--monitor-view), kept as the expected text: every cell of the JSON, and the text report line for
line (MMTests' layout: diffing the two shows nothing but iostat's colour codes).

HEAD writes the generic GNU time files (time_unmap/logs/time-2-<I>, usemem/logs/time-<N>-<I>);
v1.00 and v0.25 the per-benchmark logs (unmap-<I>.log, usemem-<N>-<I>, thpscale's threads-<N>.log).
The complete v0.25 tree holds time_unmap and usemem; ``v0.25-thpscale`` is v0.25's thpscale
config run on its own (built with a gcc that links as 2022's did, v0.25-thpscale/NOTE.md), with
the config's own monitors (proc-vmstat, top, vmstat: no mpstat).  ``v0.25-unbuilt`` is a v0.25
tree as MMTests left it when thpscale could not be built (numaif.h missing): thp-never stopped
after its first iter-N, thp-always ran thpscale's logs with "cannot run ./thpscale" in them.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

import mmtests_report as report
from mmbench.cli import main
from mmbench.store.fs import FileStore

DATA = Path(__file__).parent / "data" / "mmtests"
RUNS = ["thp-never", "thp-always"]
GENERATIONS = {
    # generation: (benchmarks in the order MMTests ran them, layout, the cells MMTests prints at least)
    "head": (["time_unmap", "usemem"], "GNU time files", 500),
    # a kernel without CONFIG_SCHEDSTATS (mmbench's own 6.1 guest build): empty /proc/schedstat snapshots
    "head-noschedstat": (["time_unmap"], "GNU time files", 200),
    "v1.00": (["time_unmap", "usemem"], "per-benchmark logs", 400),
    "v0.25": (["time_unmap", "usemem"], "per-benchmark logs", 500),
    "v0.25-thpscale": (["thpscale"], "per-benchmark logs", 328),
    "v0.25-unbuilt": (["time_unmap", "usemem", "thpscale"], "per-benchmark logs", 500),
}
COMPLETE = ("head", "head-noschedstat", "v1.00", "v0.25", "v0.25-thpscale")
# the monitors each complete tree ran that mmbench imports (v0.25-thpscale: config-workload-thpscale's
# own, proc-vmstat, top and vmstat; top is not imported)
MONITORS = {"v0.25-thpscale": {"proc-vmstat", "vmstat"}}


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module", params=list(GENERATIONS))
def imported(request, tmp_path_factory):
    """Each tree imported once for the tests that only read it."""
    gen = request.param
    tree = DATA / gen / "log"
    if not tree.is_dir():
        pytest.skip(f"no {gen} tree in {DATA}")
    results = tmp_path_factory.mktemp(gen) / "results"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["import-mmtests", "--results", str(results), str(tree)])
    assert rc == 0, err.getvalue()
    return gen, results, err.getvalue()


def _compare(capsys, results: Path, *extra: str) -> dict:
    rc, out, err = _cli(
        capsys, "compare", "--results", str(results), "--convention", "mmtests", "--format", "json", *extra, *RUNS
    )
    assert rc == 0, err
    return json.loads(out)


def test_every_iteration_imports_with_its_samples(imported):
    gen, results, err = imported
    benches, layout, _ = GENERATIONS[gen]
    if gen not in COMPLETE:
        pytest.skip("a tree of a failed MMTests run: test_a_run_mmtests_aborted")
    store = FileStore(results)
    for run in RUNS:
        rec = store.load_run(run)
        assert [w.label for w in rec.workloads] == benches
        assert rec.fingerprint["mmtests"]["rules"] == gen.split("-")[0]
        for w in rec.workloads:
            assert w.params["mmtests_layout"] == layout
            assert [it.index for it in w.iterations] == [0, 1, 2]
            for it in w.iterations:
                # no failed iteration, no iteration without samples: the defect of issue 25
                assert it.status == "ok" and not it.reason, (run, w.label, it.index, it.reason)
                assert it.samples and all(len(v) for v in it.samples.values())
                assert it.duration["elapsed"] > 0 and it.vmstat_delta["pgfault"] > 0
                assert MONITORS.get(gen, {"proc-vmstat", "vmstat", "mpstat"}) <= set(it.monitors)
    assert "no benchmark samples" not in err and "failed" not in err


def test_compare_kernels_every_cell(imported, capsys):
    """Every cell of compare-kernels.sh's report, schedstat and iostat included: value (a NaN cell
    is MMTests' 0.00 in mmbench's row too), percentage and significance mark."""
    gen, results, _ = imported
    benches, _, least = GENERATIONS[gen]
    blocks = report.parse((DATA / gen / "compare-kernels.txt").read_text(), RUNS)
    checked = report.check(blocks, _compare(capsys, results), benches)
    assert checked == report.cells(blocks) >= least
    assert any(b.kind == "schedstat" for b in blocks)


def test_ratio_summary_every_cell(imported, capsys):
    gen, results, _ = imported
    benches, _, _ = GENERATIONS[gen]
    blocks = report.parse((DATA / gen / "compare-ratio.txt").read_text(), RUNS)
    checked = report.check(blocks, _compare(capsys, results, "--ratio"), benches, sections=("ratio",))
    assert checked == report.cells(blocks) >= 10


# compare --monitor-view: the series of monitor-views-extra.txt (compare-mmtests.pl --print-monitor
# M --sub-heading X of that generation's MMTests), beyond the ones compare-kernels.sh graphs
EXTRA_VIEWS = [
    "proc-vmstat:thp_fault_alloc",
    "proc-vmstat:thp_fault_fallback",
    "proc-vmstat:pgfault",
    "proc-vmstat:pgalloc_dma32",
    "proc-vmstat:nr_free_pages",
    "proc-vmstat:nr_inactive_anon",
    "vmstat:bi",
    "vmstat:bo",
    "vmstat:id",
    "vmstat:cache",
]


def _views_args() -> list[str]:
    return [a for v in EXTRA_VIEWS for a in ("--monitor-view", v)]


def test_monitor_views_every_cell(imported, capsys):
    gen, results, _ = imported
    cmp = _compare(capsys, results, *_views_args())
    for name, least in (("monitor-views.txt", 100), ("monitor-views-extra.txt", 40)):
        text = (DATA / gen / name).read_text()
        expected = sum(report.cells(report.parse(c.partition("\n")[2], RUNS)) for c in text.split("== ")[1:])
        assert report.check_monitor_views(text, cmp, RUNS) == expected >= least


def test_text_report_is_mmtests_own(imported, capsys):
    """``compare --convention mmtests`` prints compare-kernels.sh's report line for line (MMTests'
    %.2f, widths, header lines and blank lines), then each --print-monitor view and --print-ratio
    table as compare-mmtests.pl prints it: a diff against MMTests' own output shows nothing but
    sysstat's colour codes in iostat's device names, which MMTests prints and mmbench does not."""
    gen, results, _ = imported
    rc = main(["compare", "--results", str(results), "--convention", "mmtests", "--ratio", *_views_args(), *RUNS])
    out = capsys.readouterr().out
    assert rc == 0
    assert report.check_text((DATA / gen / "compare-kernels.txt").read_text(), out) > 100
    tail = report.tail_blocks(out)
    for name in ("monitor-views.txt", "monitor-views-extra.txt"):
        for chunk in (DATA / gen / name).read_text().split("== ")[1:]:
            title, _, body = chunk.partition("\n")
            assert tail.get(title) == body.rstrip("\n"), f"{name}: {title}"
    ratios = "\n".join(body for title, body in tail.items() if title.endswith(" ratio"))
    assert ratios == (DATA / gen / "compare-ratio.txt").read_text().rstrip("\n")


def test_a_run_mmtests_aborted(tmp_path, capsys):
    """MMTests v0.25 could not build thpscale: thp-never stopped after iter-0 (the benchmark wrote
    only its mmtests.log), thp-always ran it three times to "cannot run ./thpscale".  Everything
    imports without --partial; thpscale keeps every iteration's duration, vmstat and monitors."""
    results = tmp_path / "results"
    rc, _, err = _cli(capsys, "import-mmtests", "--results", str(results), str(DATA / "v0.25-unbuilt" / "log"))
    assert rc == 0, err
    assert "thpscale wrote no results in any iter-N (only mmtests.log" in err
    store = FileStore(results)
    never, always = store.load_run("thp-never"), store.load_run("thp-always")
    assert [it.index for it in never.workload("usemem").iterations] == [0]
    assert all(it.samples for w in ("time_unmap", "usemem") for it in always.workload(w).iterations)
    for it in always.workload("thpscale").iterations + never.workload("thpscale").iterations:
        assert it.status == "ok" and not it.samples and "no benchmark samples" in it.reason
    # thp-always's thpscale test ran (to its failure): its duration and vmstat are there
    assert all(it.duration and it.vmstat_delta for it in always.workload("thpscale").iterations)
    cmp = _compare(capsys, results)
    titles = {s["title"] for s in cmp["sections"]}
    assert {"duration: thpscale", "vmstat: thpscale"} <= titles


def test_a_missing_log_keeps_the_iteration(tmp_path, capsys):
    """Issue 25: a benchmark reader that cannot read one iteration never hides that iteration's
    duration, vmstat and monitor rows; a tree whose benchmark is in no known layout exits 2."""
    tree = tmp_path / "log"
    shutil.copytree(DATA / "head" / "log", tree)
    for f in (tree / "thp-always" / "iter-1" / "usemem" / "logs").glob("time-*"):
        f.unlink()
    results = tmp_path / "results"
    rc, _, err = _cli(capsys, "import-mmtests", "--results", str(results), str(tree))
    assert rc == 0 and "iter-1 of usemem has no benchmark samples" in err
    it = FileStore(results).load_run("thp-always").workload("usemem").iterations[1]
    assert it.status == "ok" and not it.samples and it.duration and it.vmstat_delta and it.monitors
    cmp = _compare(capsys, results)
    assert any("iteration 1: no benchmark samples" in n for n in cmp["notes"])
    dur = next(s for s in cmp["sections"] if s["title"] == "duration: usemem")
    assert all(r["values"]["thp-always"] is not None for r in dur["rows"])
    # files of a layout no reader knows in every iteration: one error naming them
    for f in tree.glob("thp-always/iter-*/usemem/logs/time-*"):
        f.rename(f.with_name("usage-" + f.name))
    rc, _, err = _cli(capsys, "import-mmtests", "--results", str(tmp_path / "r2"), str(tree))
    assert rc == 2 and "usemem: unknown MMTests result layout" in err and "usage-time-1-1" in err
    assert "HEAD" in err and "v0.25" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _cli(capsys, "import-mmtests", "--partial", "--results", str(tmp_path / "r3"), str(tree))
    assert rc == 0 and "--partial" in err


def test_gnu_time_files_as_extract_time_reads_them(tmp_path, capsys):
    """A command that failed still has its times (GNU time's first line says so; extract-time reads
    the line holding "elapsed"); a times line that is not GNU time's is one error naming the file."""
    tree = tmp_path / "log"
    shutil.copytree(DATA / "head" / "log", tree)
    f = tree / "thp-never" / "iter-0" / "time_unmap" / "logs" / "time-2-1"
    first = f.read_text()
    f.write_text("Command exited with non-zero status 1\n" + first)
    results = tmp_path / "results"
    assert _cli(capsys, "import-mmtests", "--results", str(results), str(tree))[0] == 0
    it = FileStore(results).load_run("thp-never").workload("time_unmap").iterations[0]
    user, system, clock = first.split()[:3]
    assert it.samples["User-2"][0] == float(user[:-4]) and it.samples["System-2"][0] == float(system[:-6])
    m, s = clock[: -len("elapsed")].split(":")
    assert it.samples["Elapsed-2"][0] == pytest.approx(int(m) * 60 + float(s))
    f.write_text(first.replace("elapsed", "x:elapsed", 1))
    rc, _, err = _cli(capsys, "import-mmtests", "--force", "--results", str(results), str(tree))
    assert rc == 2 and "time-2-1: line 1:" in err and len(err.strip().splitlines()) == 1


def test_monitor_view_bad_input_is_one_line(tmp_path, capsys):
    """--monitor-view: a counter no run's kernel has, an unknown monitor or vmstat column, no
    --convention mmtests, a run not imported from MMTests: each one line naming it, exit 2."""
    results = tmp_path / "results"
    assert _cli(capsys, "import-mmtests", "--results", str(results), str(DATA / "head" / "log"))[0] == 0
    base = ["compare", "--results", str(results)]
    for args, says in (
        (
            ["--convention", "mmtests", "--monitor-view", "proc-vmstat:thp_fault_aloc"],
            "no /proc/vmstat counter 'thp_fault_aloc'",
        ),
        (["--convention", "mmtests", "--monitor-view", "iostat:await"], "no monitor view 'iostat'"),
        (["--convention", "mmtests", "--monitor-view", "vmstat:sys"], "vmstat has no series 'sys'"),
        (["--convention", "mmtests", "--monitor-view", "proc-vmstat"], "expected MONITOR:SERIES"),
        (["--monitor-view", "proc-vmstat:thp_fault_alloc"], "needs --convention mmtests"),
    ):
        rc, out, err = _cli(capsys, *base, *args, *RUNS)
        assert rc == 2 and says in err and len(err.strip().splitlines()) == 1, (args, err)
    csv = tmp_path / "s.csv"
    csv.write_text("workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\nw,t,s,lower,1,2\n")
    assert _cli(capsys, "import", "--results", str(results), str(csv), "native")[0] == 0
    rc, _, err = _cli(capsys, *base, "--convention", "mmtests", "--monitor-view", "vmstat:cs", "native", "thp-never")
    assert rc == 2 and "run native was not imported from MMTests" in err


def test_a_kernel_without_schedstats(tmp_path, capsys):
    """A guest kernel without CONFIG_SCHEDSTATS has no /proc/schedstat: MMTests' tests-sysstate
    holds empty snapshots, and its report still prints the schedstat table, all zeros (and 100 for
    the efficiencies).  mmbench prints the same table, cell for cell (test_compare_kernels_every_cell),
    and says that the kernel had no schedstats; a kernel that has them but counted nothing (the
    other trees: schedstats off at run time) gets its own note."""
    results = tmp_path / "results"
    assert _cli(capsys, "import-mmtests", "--results", str(results), str(DATA / "head-noschedstat" / "log"))[0] == 0
    for run in RUNS:
        for it in FileStore(results).load_run(run).workload("time_unmap").iterations:
            assert it.imported["mmtests_schedstat"] == {}
    cmp = _compare(capsys, results)
    sched = next(s for s in cmp["sections"] if s["title"] == "schedstat: time_unmap")
    assert len(sched["rows"]) == 18 and {r["values"][RUNS[0]] for r in sched["rows"]} == {0.0, 100.0}
    for run in RUNS:
        assert any(f"schedstat: time_unmap ({run}): the kernel had no schedstats" in n for n in cmp["notes"])
    assert not any("TTWU Count is 0" in n for n in cmp["notes"])
    assert _cli(capsys, "import-mmtests", "--results", str(tmp_path / "r2"), str(DATA / "head" / "log"))[0] == 0
    notes = _compare(capsys, tmp_path / "r2")["notes"]
    assert any("TTWU Count is 0 in 3 iteration(s)" in n for n in notes)
    assert not any("had no schedstats" in n for n in notes)
