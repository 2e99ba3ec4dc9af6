"""The fleet: a PostgreSQL store behind the Store interface, push/pull, the job queue with two
agents (one SIGKILLed mid-job), interleaving, and history with change points.

Everything runs against a real PostgreSQL server started for the session (bench/lib/pgserver.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import REPO, mmbench, needs_root, wait_for
from mmbench.analysis.history import build_history, change_points
from mmbench.store import open_store
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun

CSV = """workload,metric,unit,better,iteration,value,kind
faultin,tput,faults/s,higher,0,100,rate
faultin,tput,faults/s,higher,1,110,rate
faultin,tput,faults/s,higher,2,104,rate
faultin,lat,us,lower,0,5,latency
faultin,lat,us,lower,0,7,latency
faultin,lat,us,lower,1,6,latency
faultin,lat,us,lower,2,6.5,latency
"""


def _csv(tmp_path: Path, scale: float, name: str) -> Path:
    lines = CSV.strip().splitlines()
    out = [lines[0]] + [
        ",".join(l.split(",")[:5] + [str(float(l.split(",")[5]) * scale)] + l.split(",")[6:]) for l in lines[1:]
    ]
    f = tmp_path / f"{name}.csv"
    f.write_text("\n".join(out) + "\n")
    return f


def test_pg_store_matches_file_store(tmp_path, pg_url):
    """import, list, show, compare, report against PostgreSQL; push/pull change no number."""
    a, b = _csv(tmp_path, 1.0, "a"), _csv(tmp_path, 1.2, "b")
    for f, name in ((a, "base"), (b, "new")):
        mmbench("import", "--results", pg_url, str(f), name, check=True)
    listed = mmbench("list", "--results", pg_url, check=True).stdout
    assert "base" in listed and "new" in listed
    assert "imported" in mmbench("show", "--results", pg_url, "new", check=True).stdout
    from_pg = mmbench("compare", "--results", pg_url, "--format", "json", "--pvalues", "base", "new", check=True).stdout
    folder = tmp_path / "results"
    out = mmbench("pull", "--results", str(folder), "--from", pg_url, "base", "new", check=True).stdout
    assert out.count("pulled") == 2
    from_dir = mmbench(
        "compare", "--results", str(folder), "--format", "json", "--pvalues", "base", "new", check=True
    ).stdout
    assert json.loads(from_pg) == json.loads(from_dir)
    # and back: a run of the same name is refused without --force, replaced with it
    dup = mmbench("push", "--results", str(folder), "--to", pg_url, "base")
    assert dup.returncode == 2 and "already exists" in dup.stderr
    mmbench("push", "--results", str(folder), "--to", pg_url, "--force", "base", check=True)
    again = mmbench("compare", "--results", pg_url, "--format", "json", "--pvalues", "base", "new", check=True).stdout
    assert json.loads(again) == json.loads(from_pg)
    html = tmp_path / "r.html"
    mmbench("report", "--results", pg_url, "-o", str(html), "base", "new", check=True)
    assert "tput" in html.read_text()


def test_pg_schema_is_versioned(pg_url):
    import psycopg

    store = open_store(pg_url)
    assert store.list_runs() == []
    with psycopg.connect(pg_url) as conn:
        from mmbench.store.pg import SCHEMA_VERSION

        assert conn.execute("SELECT max(version) FROM mmbench_schema").fetchone()[0] == SCHEMA_VERSION == 2
        conn.execute("INSERT INTO mmbench_schema VALUES (99)")
    out = mmbench("list", "--results", pg_url)
    assert out.returncode == 2 and "schema version 99" in out.stderr and "Traceback" not in out.stderr


def test_replaced_run_is_never_served_stale(tmp_path, pg_url):
    """push --force of a run the cache already holds: the next compare reads the new run, exactly as
    from an empty cache (issue 23: the same generation 0 kept the old copy in the cache)."""
    folder, first = tmp_path / "results", tmp_path / "first"
    mmbench("import", "--results", str(first), str(_csv(tmp_path, 1.0, "a")), "base", check=True)
    mmbench("push", "--results", str(first), "--to", pg_url, "base", check=True)
    mmbench("import", "--results", str(folder), str(_csv(tmp_path, 2.0, "b")), "base", check=True)
    warm = mmbench("compare", "--results", pg_url, "--format", "json", "base", check=True).stdout
    mmbench("push", "--results", str(folder), "--to", pg_url, "--force", "base", check=True)
    after = mmbench("compare", "--results", pg_url, "--format", "json", "base", check=True).stdout
    cold = mmbench(
        "compare",
        "--results",
        pg_url,
        "--format",
        "json",
        "base",
        check=True,
        env={"MMBENCH_CACHE": str(tmp_path / "empty-cache")},
    ).stdout
    from_folder = mmbench("compare", "--results", str(folder), "--format", "json", "base", check=True).stdout
    assert json.loads(after) == json.loads(cold) == json.loads(from_folder) != json.loads(warm)


def test_cache_is_keyed_by_the_server_not_the_url(tmp_path, pg_server, monkeypatch):
    """One service name pointing at two databases in turn never serves one's cached run for the
    other's (issue 23: the cache folder was named by the URL string)."""
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    one, two = pg_server.new_database(), pg_server.new_database()
    mmbench("import", "--results", one, str(_csv(tmp_path, 1.0, "a")), "base", check=True)
    mmbench("import", "--results", two, str(_csv(tmp_path, 3.0, "b")), "base", check=True)
    services = tmp_path / "services.conf"
    env = {"PGSERVICEFILE": str(services)}
    url = "postgresql:///?service=lab"
    outs = []
    for db in (one, two, one):
        services.write_text(
            f"[lab]\nhost={pg_server.dir}\nuser={pg_server.user}\ndbname={urlsplit(db).path.lstrip('/')}\n"
        )
        outs.append(
            json.loads(mmbench("compare", "--results", url, "--format", "json", "base", check=True, env=env).stdout)
        )
    direct = [
        json.loads(mmbench("compare", "--results", u, "--format", "json", "base", check=True).stdout)
        for u in (one, two)
    ]
    assert outs == [direct[0], direct[1], direct[0]] and direct[0] != direct[1]
    assert len(list((tmp_path / "cache" / "pg").iterdir())) == 2  # one cache per database


def test_writer_of_a_replaced_run_stops(tmp_path, pg_url):
    """A run replaced (push --force) while it is being written: the writer's next write fails and
    writes nothing into the replacement."""
    from mmbench.model.files import StoreError

    store = open_store(pg_url)
    w = store.create_run(
        "live", force=False, suite_text="", suite_hash="", suite_effective={}, fingerprint={"host": "lab1"}, settings={}
    )
    w.add_workload(WorkloadRun("pft", "pft", {}, [MetricDef("faults/sec", "faults/s", "higher", "rate")]))
    mmbench("import", "--results", pg_url, "--force", str(_csv(tmp_path, 1.0, "a")), "live", check=True)
    w.iteration_dir("pft", 0).mkdir(parents=True, exist_ok=True)
    with pytest.raises(StoreError, match="replaced or removed"):
        w.add_iteration(IterationResult("pft", 0, False, "ok", samples={"faults/sec": [1.0]}))
    assert not [p for p, _ in store.run_files("live") if p.startswith("pft/")]
    assert store.load_run("live").status == "imported"


def test_list_counts_warmups_as_the_folder_store_does(tmp_path, pg_url):
    """list on PostgreSQL: measured, warm-up and failed iterations as a folder store counts them
    (issue 23: 6/0 where the folder said 5/1)."""
    folder = tmp_path / "results"
    for store in (open_store(pg_url), open_store(folder)):
        w = store.create_run(
            "wu",
            force=True,
            suite_text="",
            suite_hash="",
            suite_effective={},
            fingerprint={"host": "lab1"},
            settings={},
        )
        w.add_workload(WorkloadRun("pft", "pft", {}, [MetricDef("faults/sec", "faults/s", "higher", "rate")]))
        for k in range(6):
            w.iteration_dir("pft", k).mkdir(parents=True, exist_ok=True)
            w.add_iteration(
                IterationResult("pft", k, k == 0, "ok" if k != 3 else "failed", samples={"faults/sec": [100.0 + k]})
            )
        w.finish("complete")
    (pg_row,) = open_store(pg_url).list_runs()
    (fs_row,) = open_store(folder).list_runs()
    keys = ("iterations", "warmup", "failed", "status")
    assert [pg_row[k] for k in keys] == [fs_row[k] for k in keys] == [5, 1, 1, "complete"]
    lines = [
        mmbench("list", "--results", u, check=True).stdout.splitlines()[1].split()[4:8] for u in (pg_url, str(folder))
    ]
    assert lines[0] == lines[1]


def test_pg_schema_1_is_migrated(tmp_path, pg_server, monkeypatch):
    """A database written by schema version 1 gets version 2's tables filled from its runs' files."""
    import psycopg
    from mmbench.store import pg

    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    url = pg_server.new_database()
    folder = tmp_path / "results"
    mmbench("import", "--results", str(folder), str(_csv(tmp_path, 1.0, "a")), "old", check=True)
    files = list(open_store(folder).run_files("old"))
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE mmbench_schema (version integer NOT NULL)")
        conn.execute(pg.MIGRATIONS[1])
        conn.execute("INSERT INTO mmbench_schema VALUES (1)")
        conn.execute("INSERT INTO mmbench_runs (name, status, created, updated) VALUES ('old', 'imported', 1, 1)")
        for rel, data in files:
            conn.execute(
                "INSERT INTO mmbench_files VALUES ('old', %s, %s, %s)",
                (rel, len(data), __import__("zlib").compress(data)),
            )
    (row,) = open_store(url).list_runs()
    assert (row["iterations"], row["warmup"]) == (3, 0)
    summary = open_store(url).run_summaries(["old"])["old"]
    assert summary["units"] == {"faultin.tput": "faults/s", "faultin.lat": "us"}
    assert json.loads(mmbench("compare", "--results", url, "--format", "json", "old", check=True).stdout) == json.loads(
        mmbench("compare", "--results", str(folder), "--format", "json", "old", check=True).stdout
    )


def test_bad_pg_url_is_one_line(tmp_path):
    out = mmbench("list", "--results", f"postgresql://nobody@/nodb?host={tmp_path}")
    assert out.returncode == 2 and "cannot connect" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@needs_root
def test_real_run_with_monitors_into_pg(tmp_path, pg_url):
    """A run written straight into PostgreSQL keeps its monitor series; compare from PostgreSQL and
    from a pulled folder agree."""
    out = mmbench(
        "monitor",
        "--duration",
        "2s",
        "--results",
        pg_url,
        "--set",
        "monitors.proc-vmstat.interval=0.2",
        "idle-box",
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    store = open_store(pg_url)
    files = [p for p, _ in store.run_files("idle-box")]
    assert any("monitors" in p or "proc-vmstat" in p for p in files), files
    folder = tmp_path / "results"
    mmbench("pull", "--results", str(folder), "--from", pg_url, "idle-box", check=True)
    one = mmbench("compare", "--results", pg_url, "--format", "json", "idle-box", check=True).stdout
    two = mmbench("compare", "--results", str(folder), "--format", "json", "idle-box", check=True).stdout
    assert json.loads(one) == json.loads(two)
    assert "complete" in mmbench("list", "--results", pg_url, check=True).stdout


def _series_runs(store, values: list[float], host: str = "lab1", suite: str = "pft") -> None:
    for i, v in enumerate(values):
        w = store.create_run(
            f"r{i:03d}",
            force=True,
            suite_text="",
            suite_hash="",
            suite_effective={},
            fingerprint={"host": host, "kernel": {"release": f"6.1.{i}"}},
            settings={},
        )
        w.meta["suite"] = suite
        w.add_workload(WorkloadRun("pft", "pft", {}, [MetricDef("faults/sec", "faults/s", "higher", "rate")]))
        for k in range(2):
            w.iteration_dir("pft", k).mkdir(parents=True, exist_ok=True)
            w.add_iteration(IterationResult("pft", k, False, "ok", samples={"faults/sec": [v + 0.3 * k]}))
        w.finish("complete")


def test_change_points_on_known_steps_and_on_noise():
    """E-Divisive (analysis/changepoint.py): steps found where they are, none in noise,
    the same answer every time, and a split statistic that matches its definition."""
    import numpy as np
    from mmbench.analysis.changepoint import MIN_SIZE, shortest_detectable, split_statistics

    z = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.0])
    for t in range(MIN_SIZE, len(z) - MIN_SIZE + 1):
        x, y = z[:t], z[t:]
        m, k = len(x), len(y)
        within = lambda a: np.abs(a[:, None] - a[None, :]).sum() / (len(a) * (len(a) - 1))
        q = m * k / (m + k) * (2 * np.abs(x[:, None] - y[None, :]).mean() - within(x) - within(y))
        assert split_statistics(z)[t - MIN_SIZE] == pytest.approx(q)
    assert shortest_detectable() == 17
    rng = np.random.default_rng(7)
    step = list(100 + rng.normal(0, 1, 15)) + list(110 + rng.normal(0, 1, 15)) + list(95 + rng.normal(0, 1, 15))
    assert change_points(step) == [15, 30]
    noise_hits = sum(bool(change_points(list(100 + rng.normal(0, 2, 30)))) for _ in range(20))
    assert noise_hits == 0
    assert change_points(step) == change_points(step) == [15, 30]
    assert change_points([1.0] * 20) == [] and change_points([1.0, 2.0, 3.0]) == []


def test_change_points_in_c_are_numpys():
    """The C statistics (analysis/edivisive.c, O(n log n) a permutation; issue 23: history took a
    minute at 1,000 runs) draw numpy's own permutations and give numpy's largest split statistic
    and its place for each, over several segments, ties and a constant segment included, leaving
    the generator where numpy leaves it; so the search finds the same change points either way."""
    import numpy as np
    from mmbench.analysis import changepoint as cp

    assert cp._have_c()  # gcc is installed by scripts/setup.sh
    rng = np.random.default_rng(3)
    z = np.concatenate(
        [
            rng.normal(0, 1, 40),
            5 + rng.normal(0, 1, 35),
            np.round(rng.normal(0, 1, 30)),
            np.full(6, 2.0),
            1e6 + rng.normal(0, 1, 3),
        ]
    )
    for bounds in ([(0, len(z))], [(0, 40), (40, 75), (75, 105), (105, 111), (111, 114)]):
        for count, observed in ((0, True), (7, True), (40, False)):
            mine, numpys = np.random.default_rng(9), np.random.default_rng(9)
            for g in (mine, numpys):  # a 32-bit half left over in the generator's buffer
                g.integers(0, 5, size=1, dtype=np.uint32)
            q_c, at_c = cp.best_splits_c(z, bounds, mine, count, observed)
            q_np, at_np = cp.best_splits_numpy(z, bounds, numpys, count, observed)
            assert len(q_c) == count + observed
            assert np.allclose(q_c, q_np, rtol=1e-9, atol=1e-9) and (at_c == at_np).all()
            assert mine.bit_generator.state == numpys.bit_generator.state
    for i in range(12):
        s = 100 + rng.normal(0, 2, int(rng.integers(8, 90)))
        s[len(s) // (2 + i % 3) :] += (0, 3, 8)[i % 3]
        assert (
            cp.change_points(s)
            == cp.change_points(s, engine=cp.best_splits_numpy)
            == cp.change_points(s, engine=cp.best_splits_c)
        )
    long = np.concatenate([100 + rng.normal(0, 2, 300), 110 + rng.normal(0, 2, 400), 104 + rng.normal(0, 2, 300)])
    found = cp.change_points(long)
    assert len(found) == 2 and abs(found[0] - 300) <= 2 and abs(found[1] - 700) <= 2, found
    assert cp.change_points(100 + rng.normal(0, 2, 1000)) == []


@pytest.mark.parametrize("kind", ["folder", "postgresql"])
def test_history_marks_the_step(tmp_path, kind, request):
    url = request.getfixturevalue("pg_url") if kind == "postgresql" else str(tmp_path / "results")
    store = open_store(url)
    # 18 runs: p <= 0.001 needs at least 17 (shortest_detectable)
    values = [
        100.0,
        101.0,
        99.5,
        100.4,
        100.9,
        99.8,
        100.2,
        99.9,
        100.6,
        120.2,
        119.7,
        121.0,
        120.4,
        119.9,
        120.6,
        120.1,
        119.6,
        120.8,
    ]
    _series_runs(store, values)
    series = build_history(store, machine="lab1", suite="pft", metrics=None)
    assert len(series) == 1
    s = series[0]
    assert [c.index for c in s.change_points] == [9]
    cp = s.change_points[0]
    assert (cp.before_run, cp.after_run) == ("r008", "r009")
    assert 19 < cp.step_pct < 21
    text = mmbench("history", "--results", url, "--machine", "lab1", "--suite", "pft", check=True).stdout
    assert "change point" in text and "r008 and r009" in text
    page = tmp_path / "h.html"
    mmbench("history", "--results", url, "--machine", "lab1", "--suite", "pft", "-o", str(page), check=True)
    html = page.read_text()
    assert html.count("<svg") == 1 and "stroke-dasharray" in html
    bad = mmbench("history", "--results", url, "--machine", "nosuch", "--suite", "pft")
    assert bad.returncode == 2 and "no complete runs" in bad.stderr


def _agent(pg_url: str, results: str, tag: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "MMBENCH_AGENT_HEARTBEAT": "1", "MMBENCH_CACHE": str(log.parent / "cache")}
    with open(log, "a") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "mmbench", "agent", "--queue", pg_url, "--results", results, "--tags", tag],
            cwd=str(REPO),
            env=env,
            stdout=fh,
            stderr=fh,
            start_new_session=True,
        )


def _jobs(pg_url: str) -> list[dict]:
    return json.loads(mmbench("jobs", "--queue", pg_url, "--json", check=True).stdout)


@needs_root
def test_two_agents_ten_jobs_one_killed(tmp_path, pg_url):
    results = pg_url
    for i in range(10):
        mmbench(
            "submit",
            "--queue",
            pg_url,
            "--config",
            "monitor",
            "--set",
            "idle.duration=1.5",
            "--set",
            "monitors.slabinfo=false",
            "--machines",
            "lab",
            f"job{i}",
            check=True,
        )
    assert [j["status"] for j in _jobs(pg_url)] == ["queued"] * 10
    a, b = _agent(pg_url, results, "lab", tmp_path / "a.log"), _agent(pg_url, results, "lab", tmp_path / "b.log")
    try:
        # kill agent a while it runs a job (its own, by its pid)
        def a_running():
            return [j["id"] for j in _jobs(pg_url) if j["status"] == "running" and j["agent_pid"] == a.pid]

        assert wait_for(lambda: bool(a_running()), timeout=90, interval=0.2)
        killed_job = a_running()[0]
        os.kill(a.pid, signal.SIGKILL)
        a.wait(timeout=10)
        assert wait_for(
            lambda: all(j["status"] in ("done", "failed") for j in _jobs(pg_url)), timeout=240, interval=1.0
        ), _jobs(pg_url)
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in (a, b):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    jobs = _jobs(pg_url)
    assert len(jobs) == 10
    assert all(j["status"] == "done" for j in jobs), jobs
    runs = {r["name"]: r for r in open_store(pg_url).list_runs()}
    assert sorted(runs) == sorted(f"job{i}" for i in range(10))
    assert all(r["status"] == "complete" for r in runs.values())
    import psycopg

    with psycopg.connect(pg_url) as conn:
        attempts = conn.execute("SELECT job_id, attempt, outcome FROM mmbench_job_attempts ORDER BY 1, 2").fetchall()
    # the killed agent's job was re-queued once and completed by the other agent; none ran twice
    assert [(r[0], r[1]) for r in attempts if r[2] == "lost"] == [(killed_job, 1)]
    done = [r[0] for r in attempts if r[2] == "complete"]
    assert sorted(done) == sorted(set(done)) and len(done) == 10
    assert not [r for r in attempts if r[2] not in ("lost", "complete")]
    listing = mmbench("jobs", "--queue", pg_url, check=True).stdout
    assert "10 done" in listing


@needs_root
def test_interleave_runs_alternately(tmp_path, pg_url):
    folder = tmp_path / "results"
    mmbench(
        "submit",
        "--queue",
        pg_url,
        "--results",
        str(folder),
        "--machines",
        "solo",
        "--rounds",
        "2",
        "--interleave",
        "monitor,idle.duration=0.5,monitors.slabinfo=false",
        "monitor,idle.duration=1,monitors.slabinfo=false",
        "--",
        "short",
        "long",
        check=True,
    )
    agent = _agent(pg_url, str(folder), "solo", tmp_path / "agent.log")
    try:
        assert wait_for(
            lambda: all(j["status"] in ("done", "failed") for j in _jobs(pg_url)), timeout=180, interval=1.0
        )
    finally:
        agent.send_signal(signal.SIGINT)
        agent.wait(timeout=30)
    assert _jobs(pg_url)[0]["status"] == "done", (tmp_path / "agent.log").read_text()[-3000:]
    store = open_store(folder)
    short, long_ = store.load_run("short"), store.load_run("long")
    s_its, l_its = short.workloads[0].iterations, long_.workloads[0].iterations
    assert [it.index for it in s_its if not it.warmup] and len([i for i in l_its if not i.warmup]) == 2
    # A B, B A: "short" first in round 1, "long" first in round 2, each round after the previous one
    starts = sorted(
        [(it.started, "short") for it in s_its if not it.warmup]
        + [(it.started, "long") for it in l_its if not it.warmup]
    )
    assert [k for _, k in starts] == ["short", "long", "long", "short"]
    assert len(json.loads((folder / "short" / "fingerprint.json").read_text())["rounds"]) == 2
    # compare summarises the rounds (issue 23: kilobytes of per-round fingerprints on one line)
    text = mmbench("compare", "--results", str(folder), "short", "long", check=True).stdout
    assert max(len(line) for line in text.splitlines()) < 400, max(text.splitlines(), key=len)[:300]
    assert "short: interleaved, 2 rounds" in text and "long: interleaved, 2 rounds" in text
    assert json.loads((folder / "short" / "run.json").read_text())["interleave"] == {"arm": 0, "arms": 2}


def test_rounds_summarised_with_their_drift():
    from mmbench.model.results import summarise_rounds

    fp = {"host": "a", "thp": {"enabled": "never"}}
    same = {**fp, "rounds": [{"run": f"x.round{i}", "fingerprint": fp} for i in range(3)]}
    assert summarise_rounds(same)["rounds"] == "3 rounds, no drift"
    moved = {**fp, "rounds": [{"fingerprint": fp}, {"fingerprint": {**fp, "thp": {"enabled": "always"}}}]}
    assert summarise_rounds(moved)["rounds"] == "2 rounds, drifted: thp.enabled (never -> always)"
    assert summarise_rounds(fp) is fp


@needs_root
def test_no_password_reaches_the_job_table_ps_or_a_log(tmp_path):
    """With a server that really asks for a password: submit and agent refuse a URL holding it (one
    line); other commands accept it; a job runs with it in the agent's environment only; afterwards
    no table, stored file, log, cache file or process command line seen while the job ran holds it."""
    import secrets
    import zlib
    import psycopg
    from pgserver import PgServer

    secret = f"Pw{secrets.token_hex(8)}"
    server = PgServer(password=secret)
    try:
        url = server.url()
        with_pw = url.replace(f"//{server.user}@", f"//{server.user}:{secret}@")
        env = {
            "MMBENCH_CACHE": str(tmp_path / "cache"),
            "MMBENCH_CRASH_DIR": str(tmp_path / "crash"),
            "PGPASSFILE": str(tmp_path / "no-pgpass"),
            "MMBENCH_AGENT_HEARTBEAT": "1",
        }
        denied = mmbench("list", "--results", url, env=env)
        assert denied.returncode == 2 and "password" in denied.stderr  # the password is really needed
        for argv in (
            ["submit", "--queue", with_pw, "--config", "monitor", "--machines", "lab", "j"],
            ["submit", "--queue", url, "--results", with_pw, "--config", "monitor", "--machines", "lab", "j"],
            ["agent", "--queue", with_pw, "--tags", "lab"],
        ):
            out = mmbench(*argv, env=env)
            assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
            assert "PGPASSWORD" in out.stderr and "service file" in out.stderr and secret not in out.stderr
        mmbench("import", "--results", with_pw, str(_csv(tmp_path, 1.0, "a")), "by-hand", check=True, env=env)
        assert "by-hand" in mmbench("list", "--results", with_pw, check=True, env=env).stdout
        agent_env = {**env, "PGPASSWORD": secret}
        mmbench(
            "submit",
            "--queue",
            url,
            "--config",
            "monitor",
            "--set",
            "idle.duration=3",
            "--set",
            "monitors.slabinfo=false",
            "--machines",
            "lab",
            "by-agent",
            check=True,
            env=agent_env,
        )
        with open(tmp_path / "agent.log", "w") as log:
            agent = subprocess.Popen(
                [sys.executable, "-m", "mmbench", "agent", "--queue", url, "--tags", "lab"],
                cwd=str(REPO),
                env={**os.environ, **agent_env},
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        command_lines: set[str] = set()

        def done() -> bool:
            command_lines.update(
                subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
            )
            jobs = json.loads(mmbench("jobs", "--queue", url, "--json", check=True, env=agent_env).stdout)
            return all(j["status"] in ("done", "failed") for j in jobs)

        try:
            assert wait_for(done, timeout=180, interval=0.3)
        finally:
            agent.send_signal(signal.SIGINT)
            agent.wait(timeout=30)
        assert any("mmbench run --config monitor" in c for c in command_lines)  # the child was seen
        assert not [c for c in command_lines if secret in c]
        with psycopg.connect(url, password=secret) as conn:
            status = conn.execute("SELECT status::text FROM procrastinate_jobs").fetchall()
            assert status == [("succeeded",)], (tmp_path / "agent.log").read_text()[-2000:]
            text = []
            for table in (
                "procrastinate_jobs",
                "procrastinate_events",
                "mmbench_runs",
                "mmbench_job_attempts",
                "mmbench_values",
                "mmbench_metrics",
                "mmbench_iterations",
            ):
                text += [str(r) for r in conn.execute(f"SELECT * FROM {table}").fetchall()]
            blobs = [zlib.decompress(d) for (d,) in conn.execute("SELECT data FROM mmbench_files").fetchall()]
        assert len(blobs) > 10 and not [t for t in text if secret in t]
        assert not [b for b in blobs if secret.encode() in b]
        leaked = [f for f in tmp_path.rglob("*") if f.is_file() and secret.encode() in f.read_bytes()]
        assert leaked == [] and list((tmp_path / "cache" / "agent-logs").glob("job-*.log"))
    finally:
        server.stop()


def test_a_crash_report_keeps_no_password(tmp_path, monkeypatch):
    from mmbench import cli

    monkeypatch.setenv("MMBENCH_CRASH_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["mmbench", "compare", "--results", "postgresql://me:Hunter2@db/lab", "a"])
    path = cli._save_traceback(RuntimeError("postgresql://me:Hunter2@db/lab?password=Hunter2 broke"))
    text = Path(path).read_text()
    assert "Hunter2" not in text and "postgresql://me@db/lab" in text


def _stalled_job(pg_url: str) -> int:
    """A queued job made to look taken by a worker that stopped sending heartbeats a minute ago."""
    import psycopg
    from mmbench.fleet.queue import ensure_schema, submit

    ensure_schema(pg_url)
    job_id = submit(
        pg_url,
        "lab",
        {
            "kind": "run",
            "config": "monitor",
            "text": None,
            "set": [],
            "kernel": None,
            "name": "stalled",
            "iterations": None,
        },
    )
    with psycopg.connect(pg_url) as conn:
        worker = conn.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '60 s') RETURNING id"
        ).fetchone()[0]
        conn.execute("UPDATE procrastinate_jobs SET status='doing', worker_id=%s WHERE id=%s", (worker, job_id))
        conn.execute(
            "INSERT INTO mmbench_job_attempts (job_id, attempt, machine, agent_pid, started) "
            "VALUES (%s, 1, 'gone', 1, 0)",
            (job_id,),
        )
    return job_id


def test_stalled_job_recovered_once_by_racing_agents(pg_url):
    """Three agents find the same stalled job at once: it is re-queued exactly once, the others skip
    it with a line, none raises (issue 23: the loser's retry_job raised and its loop died)."""
    import asyncio
    import psycopg
    from mmbench.fleet.queue import make_app, recover_stalled

    job_id = _stalled_job(pg_url)

    async def race() -> list[list[str]]:
        apps = [make_app(pg_url) for _ in range(3)]
        for a in apps:
            await a.open_async()
        try:
            return await asyncio.gather(*(recover_stalled(a, pg_url) for a in apps))
        finally:
            for a in apps:
                await a.close_async()

    said = [line for lines in asyncio.run(race()) for line in lines]
    assert sum("re-queued" in s for s in said) == 1 and sum("skipped" in s for s in said) == 2, said
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(
            "SELECT status::text, attempts FROM procrastinate_jobs WHERE id=%s", (job_id,)
        ).fetchone() == ("todo", 1)
        assert conn.execute("SELECT outcome FROM mmbench_job_attempts WHERE job_id=%s", (job_id,)).fetchall() == [
            ("lost",)
        ]
        # taken again by a live worker: a recovery finds nothing to do
        live = conn.execute("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id").fetchone()[0]
        conn.execute("UPDATE procrastinate_jobs SET status='doing', worker_id=%s WHERE id=%s", (live, job_id))
        conn.commit()
    assert asyncio.run(_once(pg_url)) == []


async def _once(url: str) -> list[str]:
    from mmbench.fleet.queue import make_app, recover_stalled

    app = make_app(url)
    async with app.open_async():
        return await recover_stalled(app, url)


def test_attempt_end_is_recorded_only_while_the_job_is_the_attempts(pg_url):
    """An agent whose job was re-queued meanwhile (its heartbeat stalled) must not record "complete":
    the queue would hear "done" from two attempts (bench/fleet-faults found 3 jobs in 100 so)."""
    import psycopg
    from mmbench.fleet.queue import _attempt_row

    job_id = _stalled_job(pg_url)
    with psycopg.connect(pg_url) as conn:
        worker = conn.execute("SELECT worker_id FROM procrastinate_jobs WHERE id=%s", (job_id,)).fetchone()[0]
    # still its own: recorded
    assert _attempt_row(pg_url, job_id, 1, "gone", outcome="complete", worker_id=worker, attempts=0) is True
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT outcome FROM mmbench_job_attempts WHERE job_id=%s", (job_id,)).fetchall() == [
            ("complete",)
        ]
        conn.execute("UPDATE mmbench_job_attempts SET outcome=NULL, finished=NULL WHERE job_id=%s", (job_id,))
        # re-queued by recovery (attempts counted, back to todo), then taken by another worker
        conn.execute("UPDATE procrastinate_jobs SET status='todo', attempts=1, worker_id=NULL WHERE id=%s", (job_id,))
    assert _attempt_row(pg_url, job_id, 1, "gone", outcome="complete", worker_id=worker, attempts=0) is False
    with psycopg.connect(pg_url) as conn:
        other = conn.execute("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id").fetchone()[0]
        conn.execute("UPDATE procrastinate_jobs SET status='doing', worker_id=%s WHERE id=%s", (other, job_id))
    assert _attempt_row(pg_url, job_id, 1, "gone", outcome="complete", worker_id=worker, attempts=0) is False
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT outcome FROM mmbench_job_attempts WHERE job_id=%s", (job_id,)).fetchall() == [
            (None,)
        ]


def test_stalled_job_whose_attempt_ended_is_finished_not_rerun(pg_url):
    """A stalled job whose attempt recorded its end (the agent died before telling the queue) is
    finished as the attempt ended, never re-queued to run a second time."""
    import asyncio
    import psycopg

    job_id = _stalled_job(pg_url)
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "UPDATE mmbench_job_attempts SET finished=%s, outcome='complete' WHERE job_id=%s",
            (__import__("time").time(), job_id),
        )
    said = asyncio.run(_once(pg_url))
    assert said == [
        f"job {job_id}: its attempt ended (complete) but its agent stopped before telling the queue; "
        f"finished as complete"
    ], said
    with psycopg.connect(pg_url) as conn:
        assert (
            conn.execute("SELECT status::text, attempts FROM procrastinate_jobs WHERE id=%s", (job_id,)).fetchone()[0]
            == "succeeded"
        )
        assert conn.execute("SELECT outcome FROM mmbench_job_attempts WHERE job_id=%s", (job_id,)).fetchall() == [
            ("complete",)
        ]
    assert asyncio.run(_once(pg_url)) == []


def test_recovery_loop_survives_errors(pg_url):
    """The loop says what went wrong and runs again (it used to die at the first exception)."""
    import asyncio
    from mmbench.fleet import queue

    queue.ensure_schema(pg_url)

    class Flaky:
        calls = 0

        async def get_stalled_jobs(self, **kw):
            Flaky.calls += 1
            if Flaky.calls <= 2:
                raise RuntimeError('Job was not found or not in "doing" status')
            return []

    class App:
        job_manager = Flaky()

    said: list[str] = []

    async def run() -> None:
        task = asyncio.create_task(queue.recovery_loop(App(), pg_url, said.append, every=0.01))
        while Flaky.calls < 4:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(run())
    assert Flaky.calls >= 4 and len(said) == 2 and all("trying again" in s for s in said)


@needs_root
def test_hung_run_fails_its_job_at_the_time_limit(tmp_path, pg_url):
    """A run that hangs (SIGSTOP) is stopped at its suite's budget plus the allowance, and its job is
    failed with that reason, never retried; the agent goes on to the next job."""
    suite = tmp_path / "short.toml"
    # the idle iteration lasts 3 s so that the SIGSTOP below lands inside it, not after the run has finished
    # (with 1 s, a loaded machine let the run complete before the test saw it hold the lock)
    suite.write_text(
        '[suite]\niterations = 1\nwarmup = 0\ntimeout = "5s"\n[[workload]]\nname = "idle"\n'
        '[workload.params]\nduration = "3s"\n'
    )
    mmbench("submit", "--queue", pg_url, "--config", str(suite), "--machines", "lab", "hangs", check=True)
    mmbench("submit", "--queue", pg_url, "--config", str(suite), "--machines", "lab", "after", check=True)
    log = tmp_path / "agent.log"
    env = {
        **os.environ,
        "MMBENCH_AGENT_HEARTBEAT": "1",
        "MMBENCH_CACHE": str(tmp_path / "cache"),
        "MMBENCH_JOB_ALLOWANCE": "4",
    }
    with open(log, "a") as fh:
        agent = subprocess.Popen(
            [sys.executable, "-m", "mmbench", "agent", "--queue", pg_url, "--tags", "lab"],
            cwd=str(REPO),
            env=env,
            stdout=fh,
            stderr=fh,
            start_new_session=True,
        )
    try:

        def child() -> int | None:
            out = subprocess.run(
                ["pgrep", "-f", "-P", str(agent.pid), "mmbench run --config"], capture_output=True, text=True
            ).stdout.split()
            return int(out[0]) if out else None

        from mmbench.fleet.queue import _lock_owner

        # hang it once it holds the machine-wide lock (until then it queues behind other runs)
        assert wait_for(lambda: child() is not None and _lock_owner() == child(), timeout=900, interval=0.05)
        hung = child()
        os.kill(hung, signal.SIGSTOP)
        assert wait_for(
            lambda: all(j["status"] in ("done", "failed") for j in _jobs(pg_url)), timeout=900, interval=0.5
        ), _jobs(pg_url)
    finally:
        if "hung" in locals():
            try:
                os.kill(hung, signal.SIGCONT)
            except ProcessLookupError:
                pass
        agent.send_signal(signal.SIGINT)
        agent.wait(timeout=120)
    jobs = {j["name"]: j for j in _jobs(pg_url)}
    assert jobs["hangs"]["status"] == "failed" and "time limit exceeded" in jobs["hangs"]["reason"]
    assert jobs["hangs"]["attempt"] == 1 and jobs["after"]["status"] == "done"
    assert "time limit exceeded" in mmbench("jobs", "--queue", pg_url, check=True).stdout
    runs = {r["name"]: r["status"] for r in open_store(pg_url).list_runs()}
    assert runs["after"] == "complete" and runs.get("hangs") in (None, "incomplete")  # stopped before or after it began


def _history_run(
    store,
    name: str,
    value: float,
    *,
    settings: dict,
    kernel: dict,
    vm: dict | None = None,
    arm: tuple[int, int] | None = None,
    host: str = "lab1",
) -> None:
    fp = {"host": host, "kernel": kernel, "thp": {"enabled": settings.get("thp.enabled", "madvise")}}
    if vm:
        fp.update(vm=vm, guest_host="guest")
    w = store.create_run(
        name,
        force=True,
        suite_text="",
        suite_hash="h",
        settings=settings,
        fingerprint=fp,
        suite_effective={
            "suite": {"iterations": 2},
            "settings": settings,
            "workload": [{"name": "pft", "params": {"size": "1x"}}],
        },
    )
    w.meta["suite"] = "pft"
    if arm:
        w.meta["interleave"] = {"arm": arm[0], "arms": arm[1]}
    w.add_workload(WorkloadRun("pft", "pft", {}, [MetricDef("faults/sec", "faults/s", "higher", "rate")]))
    for k in range(2):
        w.iteration_dir("pft", k).mkdir(parents=True, exist_ok=True)
        w.add_iteration(IterationResult("pft", k, False, "ok", samples={"faults/sec": [value + 0.2 * k]}))
    w.finish("complete")


@pytest.mark.parametrize("kind", ["folder", "postgresql"])
def test_history_keeps_configurations_apart(tmp_path, kind, request):
    """issue 23: --set variants, interleaved arms and VM shapes were one line, and a thp=always point
    hid a real 15 % step.  Now each is a series; the step is found and labelled with the kernels."""
    import random

    url = request.getfixturevalue("pg_url") if kind == "postgresql" else str(tmp_path / "results")
    store = open_store(url)
    rng = random.Random(3)
    old = {"release": "6.1.0-47-cloud-amd64"}
    new = {
        "release": "6.1.0-53-cloud-amd64",
        "source": "linux-source-6.1",
        "patches": ["0001-mm-vmscan-fix"],
        "config_sha256": "9f1c2a7b3e",
    }
    n = 0
    for i in range(18):  # thp=never: 100 on the old kernel, 115 after; thp=always runs in between at 140
        _history_run(
            store,
            f"never{i:02d}",
            (100 if i < 9 else 115) + rng.gauss(0, 0.5),
            settings={"thp.enabled": "never"},
            kernel=old if i < 9 else new,
        )
        if i % 3 == 0:
            _history_run(
                store,
                f"always{n}",
                140 + rng.gauss(0, 0.5),
                settings={"thp.enabled": "always"},
                kernel=old if i < 9 else new,
            )
            n += 1
    for arm in (0, 1):  # an A/A interleave: same settings, two arms, two series
        _history_run(store, f"arm{arm}", 120, settings={"thp.enabled": "madvise"}, kernel=new, arm=(arm, 2))
    _history_run(
        store,
        "guest",
        90,
        settings={"thp.enabled": "never"},
        kernel=new,
        vm={"memory_mb": 512, "cpus": 2, "numa_nodes": 1, "accelerator": "tcg"},
    )
    series = build_history(store, machine="lab1", suite="pft")
    by_first = {s.runs[0]: s for s in series}
    assert sorted(by_first) == ["always0", "arm0", "arm1", "guest", "never00"]
    never = by_first["never00"]
    assert len(never.runs) == 18 and never.unit == "faults/s"
    assert [c.index for c in never.change_points] == [9]
    cp = never.change_points[0]
    assert 14 < cp.step_pct < 16 and cp.before_kernel == "6.1.0-47-cloud-amd64"
    assert cp.after_kernel.startswith("6.1.0-53-cloud-amd64 linux-source-6.1 +1 patch (0001-mm-vmscan-fix)")
    assert by_first["always0"].change_points == [] and len(by_first["always0"].runs) == 6
    text = mmbench("history", "--results", url, "--machine", "lab1", "--suite", "pft", check=True).stdout
    assert "5 series of 27 runs" in text and "settings=thp.enabled=never" in text and "arm=arm 2 of 2" in text
    assert "512 MiB, 2 CPUs, 1 node(s), tcg" in text and "too few for a change point" in text
    assert "kernel 6.1.0-47-cloud-amd64 -> 6.1.0-53-cloud-amd64" in text and "(faults/s)" in text
    listing = mmbench("history", "--results", url, "--series", check=True).stdout
    assert listing.count("] ") == 5 and "change point:" not in listing
    split = mmbench(
        "history",
        "--results",
        url,
        "--where",
        "settings.thp.enabled=never",
        "--where",
        "vm-shape=host",
        "--split-by",
        "kernel.release",
        "--series",
        check=True,
    ).stdout
    assert "2 series of 18 runs" in split and "kernel.release=6.1.0-53-cloud-amd64" in split
    fields = mmbench("history", "--results", url, "--fields", check=True).stdout
    assert "kernel.patches" in fields and "settings.thp.enabled" in fields and "vm-shape" in fields
    for bad in (["--split-by", "kernal.release"], ["--where", "thp.enabeld=never"], ["--where", "nonsense"]):
        out = mmbench("history", "--results", url, *bad)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert (
        "did you mean 'kernel.release'" in mmbench("history", "--results", url, "--split-by", "kernal.release").stderr
    )
    page = tmp_path / "h.html"
    mmbench("history", "--results", url, "--where", "settings.thp.enabled=never", "-o", str(page), check=True)
    html = page.read_text()
    import re

    assert html.count("<svg") == 2 and ">faults/s</text>" in html  # the unit's axis
    assert (
        len(re.findall(r'text-anchor="(?:start|middle|end)">\d\d:\d\d:\d\d</text>', html)) == 5 + 1
    )  # time axes: 5 ticks, 1 for one point
    assert "kernel: 6.1.0-53-cloud-amd64" in html and 'stroke="#b00"' in html


def test_finished_attempt_the_queue_missed_is_acknowledged(pg_url):
    """An agent that recorded its attempt's outcome but lost the database before telling the queue
    (its worker still alive): the job would stay running for ever; recovery finishes it."""
    import asyncio
    import psycopg

    job_id = _stalled_job(pg_url)
    with psycopg.connect(pg_url) as conn:
        live = conn.execute("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id").fetchone()[0]
        conn.execute("UPDATE procrastinate_jobs SET worker_id=%s WHERE id=%s", (live, job_id))
        conn.execute("UPDATE mmbench_job_attempts SET finished=1, outcome='complete' WHERE job_id=%s", (job_id,))
    said = asyncio.run(_once(pg_url))
    assert said == [f"job {job_id}: its attempt ended (complete) but the queue was not told; now it is"]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT status::text FROM procrastinate_jobs WHERE id=%s", (job_id,)).fetchone() == (
            "succeeded",
        )
    assert asyncio.run(_once(pg_url)) == []


@needs_root
def test_agent_whose_job_was_taken_over_stops_it(tmp_path, pg_url):
    """The lease: an agent that finds its running job belongs to another worker now (it was re-queued
    while this agent was out of reach) stops the run and exits 75 at once, reporting nothing."""
    import psycopg

    suite = tmp_path / "long.toml"
    suite.write_text(
        '[suite]\niterations = 1\nwarmup = 0\n[[workload]]\nname = "idle"\n[workload.params]\nduration = "60s"\n'
    )
    mmbench("submit", "--queue", pg_url, "--config", str(suite), "--machines", "lab", "taken", check=True)
    agent = _agent(pg_url, pg_url, "lab", tmp_path / "agent.log")
    try:
        from mmbench.fleet.queue import _lock_owner

        def child() -> int | None:
            out = subprocess.run(
                ["pgrep", "-f", "-P", str(agent.pid), "mmbench run --config"], capture_output=True, text=True
            ).stdout.split()
            return int(out[0]) if out else None

        assert wait_for(lambda: child() is not None and _lock_owner() == child(), timeout=900, interval=0.05)
        run_child = child()
        with psycopg.connect(pg_url) as conn:
            other = conn.execute("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id").fetchone()[0]
            conn.execute("UPDATE procrastinate_jobs SET worker_id=%s", (other,))
        assert agent.wait(timeout=30) == 75
        assert wait_for(lambda: not Path(f"/proc/{run_child}").exists(), timeout=120)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    log = (tmp_path / "agent.log").read_text()
    assert "no longer this agent's" in log and "another agent took it over" in log
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT status::text FROM procrastinate_jobs").fetchone() == ("doing",)
        assert conn.execute("SELECT outcome FROM mmbench_job_attempts").fetchall() == [(None,)]
    assert open_store(pg_url).list_runs()[0]["status"] == "incomplete"
