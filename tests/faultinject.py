"""Fault injection for the "never leave the machine changed, never lose an iteration" promise.

A trial starts ``mmbench run --json-log`` on one of a few tiny suites that touch different machine
state (sysctls and THP, zram swap, a loop mount, the hugetlb pool, tracing), sends SIGKILL,
SIGINT or SIGTERM at a point chosen by a seeded random generator — a random time, a boundary
(0-20 ms after an iteration starts or ends, the last one included) or during the run's final
restore — and, after a SIGKILL, runs ``mmbench restore`` (itself SIGTERMed at a random moment in
some trials, then run again).  Then it compares the machine with a snapshot taken before and
checks the store: every iteration the run reported finished is stored, no partial folder, the
status agrees with how the run ended and the index never says "running".

Used by ``tests/test_fault_injection.py`` (a few trials) and ``bench/fault-campaign`` (many).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THP = Path("/sys/kernel/mm/transparent_hugepage")
SYSCTLS = ["vm/swappiness", "vm/dirty_ratio", "vm/dirty_background_ratio", "vm/nr_hugepages",
           "vm/min_free_kbytes", "vm/watermark_scale_factor"]
TRACEFS = Path("/sys/kernel/tracing")

_COMMON = """
[actions]
sync = false
"""

# Tiny suites (a few seconds each), one per kind of machine state.
SUITES: dict[str, str] = {
    "sysctl-thp": """
[suite]
iterations = 3
budget = "64M"
[settings]
vm.swappiness = 17
vm.dirty_ratio = 7
thp.enabled = "always"
thp.defrag = "defer"
[[workload]]
name = "faultin"
[workload.params]
size = "16M"
passes = 2
[monitors.meminfo]
interval = "100ms"
""" + _COMMON,
    "zram": """
[suite]
iterations = 2
budget = "48M"
[settings]
vm.swappiness = 100
[swap]
type = "zram"
size = "32M"
[[workload]]
name = "usemem"
[workload.params]
anon_size = "56M"
passes = 1
""" + _COMMON,
    "loop-mount": """
[suite]
iterations = 2
budget = "96M"
[[workload]]
name = "thpavail"
[workload.params]
size = "16M"
read_size = "16M"
loop_size = "64M"
write_bps = "0"
fill_timeout = "0.5s"
free_threshold = "0.9x"
""" + _COMMON,
    "hugetlb": """
[suite]
iterations = 2
budget = "64M"
[[workload]]
name = "highalloc"
[workload.params]
hugetlb_size = "8M"
collapse = false
load_anon = "8M"
load_file = "8M"
load_warmup = "0.2s"
rest = "0.1s"
""" + _COMMON,
    "tracing": """
[suite]
iterations = 3
budget = "32M"
[[workload]]
name = "idle"
[workload.params]
duration = "0.4s"
[monitors.mm-trace]
""" + _COMMON,
}


# The machine state each suite changes (what a trial compares).
SUITE_STATE: dict[str, set[str]] = {
    "sysctl-thp": {"sysctl vm/swappiness", "sysctl vm/dirty_ratio", "thp enabled", "thp defrag"},
    "zram": {"sysctl vm/swappiness", "swaps", "zram0 disksize"},
    "loop-mount": {"mounts", "loop devices"},
    "hugetlb": {"sysctl vm/nr_hugepages"},
    "tracing": {"trace instances", "tracefs mounted", "trace set_event"},
}


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "<unreadable>"


def snapshot(scratch: Path = Path("/var/tmp/mmbench")) -> dict[str, Any]:
    """The machine state mmbench may change, as comparable values."""
    st: dict[str, Any] = {}
    for s in SYSCTLS:
        st[f"sysctl {s}"] = _read(Path("/proc/sys") / s)
    for k in ("enabled", "defrag", "khugepaged/defrag"):
        st[f"thp {k}"] = _read(THP / k)
    st["swaps"] = sorted(line.split()[0] for line in _read(Path("/proc/swaps")).splitlines()[1:] if line.strip())
    if Path("/sys/block/zram0").exists():
        st["zram0 disksize"] = _read(Path("/sys/block/zram0/disksize"))
    st["cgroups"] = sorted(str(p) for root in [Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").glob("*")]
                           if root.is_dir() for p in root.glob("mmbench-*")
                           if not p.name.startswith("mmbench-test-"))
    mounts = [line.split() for line in _read(Path("/proc/mounts")).splitlines()]
    st["tracefs mounted"] = any(m[2] == "tracefs" for m in mounts if len(m) > 2)
    st["mounts"] = sorted(m[1] for m in mounts if len(m) > 1 and m[1].startswith(str(scratch)))
    if TRACEFS.joinpath("instances").is_dir():
        # in-process tests of other sessions trace with a private journal (not under the machine
        # lock): an instance whose creator (mmbench-PID-...) is alive is theirs, not a leak
        insts = [p.name for p in (TRACEFS / "instances").iterdir() if p.name.startswith("mmbench")]
        foreign = [n for n in insts if _alive(n)]
        st["trace instances"] = sorted(set(insts) - set(foreign))
        st["trace set_event"] = _read(TRACEFS / "set_event")
        st["_foreign trace"] = bool(foreign)
    st["loop devices"] = sorted(p.parent.parent.name for p in Path("/sys/block").glob("loop*/loop/backing_file")
                                if str(scratch) in _read(p))
    st["scratch"] = scratch.exists() and sorted(p.name for p in scratch.iterdir())
    st["journal"] = Path("/var/lib/mmbench/journal.jsonl").exists() and \
        bool(_read(Path("/var/lib/mmbench/journal.jsonl")))
    return st


def _alive(instance: str) -> bool:
    try:
        pid = int(instance.split("-")[1])
    except (IndexError, ValueError):
        return False
    return Path(f"/proc/{pid}").exists()


# what counts as an object (leaked) rather than a setting (left changed)
OBJECT_KEYS = {"swaps", "cgroups", "mounts", "trace instances", "loop devices", "scratch", "journal"}


@dataclass
class Trial:
    suite: str
    sig: str                  # SIGKILL, SIGINT, SIGTERM, SIGTERM-restore (SIGKILL, then restore SIGTERMed)
    point: str                # how the moment was chosen
    seed: int
    exit: int | None = None
    settings_changed: list[str] = field(default_factory=list)
    objects_leaked: list[str] = field(default_factory=list)
    iterations_lost: int = 0
    integrity: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.settings_changed or self.objects_leaked or self.iterations_lost or self.integrity
                    or self.tracebacks)


class _Reader(threading.Thread):
    """Collects the JSON progress events (and any other stderr lines) with their arrival time."""

    def __init__(self, stream: Any) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.other: list[str] = []
        self.cond = threading.Condition()

    def run(self) -> None:
        for line in self.stream:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = None
            with self.cond:
                if isinstance(ev, dict):
                    self.events.append((time.monotonic(), ev))
                else:
                    self.other.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_event(self, pred: Any, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for _, ev in self.events:
                    if pred(ev):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0 or not self.is_alive():
                    return None
                self.cond.wait(min(left, 0.05))


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "mmbench", *args]


def _ends(ev: dict[str, Any]) -> bool:
    return ev.get("event") == "iteration-end"


def run_trial(suite: str, sig: str, seed: int, workdir: Path, log: Any = None,
              at: tuple[str, int, float] | None = None) -> Trial:
    """One trial: run ``suite``, send ``sig`` at a seeded point, restore if needed, check all.

    ``at`` = (``"start"``/``"end"``, iteration index (-1: the last), seconds after) fixes the
    moment instead (boundary tests)."""
    rng = random.Random(seed)
    text = SUITES[suite]
    n_iter = int(text.split("iterations = ")[1].split()[0])
    point_kind = rng.choice(["time", "boundary", "boundary", "last"]) if at is None else "fixed"
    offset = rng.choice([0.0, 0.001, 0.002, 0.005, 0.0055, 0.01, 0.015, 0.02]) if at is None else at[2]
    trial = Trial(suite, sig, "", seed)
    cfg = workdir / f"{suite}.toml"
    cfg.write_text(text)
    results = workdir / "results"
    name = f"t{seed}"
    before = _locked_snapshot()
    env = {**os.environ, "MMBENCH_LOCK_WAIT": os.environ.get("MMBENCH_LOCK_WAIT", "900")}
    proc = subprocess.Popen(_cli("run", "--json-log", "--config", str(cfg), "--results", str(results), name),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    reader = _Reader(proc.stderr)
    reader.start()
    signum = signal.SIGKILL if sig.endswith("-restore") or sig == "SIGKILL" else getattr(signal, sig)
    try:
        started = reader.wait_event(lambda ev: ev.get("event") == "iteration-start", 300)
        if started is None:
            trial.notes.append("the run never started an iteration")
        elif point_kind == "time":
            delay = rng.uniform(0, 1.2)
            trial.point = f"{delay * 1000:.0f} ms after the first iteration started"
            time.sleep(delay)
        else:
            if point_kind == "fixed":
                assert at is not None
                what, k = at[0], at[1] % n_iter
            elif point_kind == "last":
                k = n_iter - 1
                what = "end"
            else:
                k = rng.randrange(n_iter)
                what = rng.choice(["start", "end"])
            ev_name = f"iteration-{what}"
            trial.point = f"{offset * 1000:g} ms after iteration {k + 1}/{n_iter} {what}ed"
            reader.wait_event(lambda ev: ev.get("event") == ev_name and ev.get("iteration") == k, 300)
            if offset:
                time.sleep(offset)
        if proc.poll() is None:
            proc.send_signal(signum)
        else:
            trial.notes.append("the run had ended before the signal")
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    trial.exit = proc.returncode
    trial.tracebacks += [line for line in reader.other if "Traceback" in line]
    if proc.returncode == -signal.SIGKILL:
        if sig.endswith("-restore"):
            _interrupted_restore(rng, trial, getattr(signal, sig.split("-")[0]))
        out = subprocess.run(_cli("restore"), capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            trial.integrity.append(f"mmbench restore exited {out.returncode}: {out.stdout.strip()} {out.stderr.strip()}")
        if "Traceback" in out.stderr:
            trial.tracebacks.append(out.stderr)
    after = _locked_snapshot()
    foreign = before.pop("_foreign trace", False) | after.pop("_foreign trace", False)
    # On a shared machine other sessions' in-process tests change knobs with private journals
    # (not under the machine lock): only what this suite touches is compared, and only the
    # cgroups and scratch folders of this run.
    for st in (before, after):
        st["cgroups"] = [c for c in st["cgroups"] if f"/mmbench-{name}-" in c]
        st["scratch"] = st["scratch"] and [d for d in st["scratch"] if d.startswith(f"{name}-")]
    keys = {"cgroups", "scratch"} | SUITE_STATE[suite]
    if not before.get("journal"):   # (a leftover journal of someone else's killed run is restored too)
        keys.add("journal")
    for k in sorted(keys):
        if foreign and k in ("tracefs mounted", "trace set_event"):
            continue   # another session's in-process trace test mounted or uses tracefs now
        if before.get(k) != after.get(k):
            msg = f"{k}: {before.get(k)!r} -> {after.get(k)!r}"
            (trial.objects_leaked if k in OBJECT_KEYS else trial.settings_changed).append(msg)
    _check_store(trial, results, name, reader, proc.returncode)
    if log:
        log(trial)
    return trial


def _locked_snapshot() -> dict[str, Any]:
    """A snapshot taken holding the machine-wide mmbench lock: another engineer's run on a shared
    machine changes knobs only while it holds the lock, and puts them back before it lets go."""
    from mmbench.run.journal import Journal
    os.environ.setdefault("MMBENCH_LOCK_WAIT", "900")
    j = Journal()
    j.lock()
    try:
        return snapshot()
    finally:
        j.entries = []   # only looked at: whatever is journaled stays for its own restore
        fcntl_release(j)


def fcntl_release(j: Any) -> None:
    import fcntl
    if j._lock_fd is not None:
        fcntl.flock(j._lock_fd, fcntl.LOCK_UN)
        os.close(j._lock_fd)
        j._lock_fd = None


def _interrupted_restore(rng: random.Random, trial: Trial, signum: int) -> None:
    """SIGTERM/SIGINT ``mmbench restore`` at a random moment: it must stop cleanly and leave the
    rest journaled, so the next restore finishes the job."""
    delay = rng.choice([0.0, 0.001, 0.002, 0.005, 0.01, 0.02])
    p = subprocess.Popen(_cli("restore"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = Path(os.environ.get("MMBENCH_STATE_DIR", "/var/lib/mmbench")) / "journal.lock"
    # from the moment the restore owns the journal (it writes its pid into the lock file)
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline and _read(lock) != str(p.pid):
        time.sleep(0.0005)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(signum)
    out, err = p.communicate(timeout=300)
    trial.point += (f"; restore got {signal.Signals(signum).name} {delay * 1000:g} ms after it took the "
                    f"journal (exit {p.returncode})")
    if "Traceback" in err:
        trial.tracebacks.append(err)
    if p.returncode not in (0, 128 + signum):
        trial.integrity.append(f"interrupted restore exited {p.returncode}: {err.strip()}")
    if p.returncode == 128 + signum and "again" not in err and "nothing is left" not in err:
        trial.integrity.append(f"interrupted restore did not say to run it again: {err.strip()}")


def _check_store(trial: Trial, results: Path, name: str, reader: _Reader, code: int | None) -> None:
    from mmbench.store.fs import FileStore
    import sqlite3
    reported = {(ev.get("workload"), ev.get("iteration")) for _, ev in reader.events if _ends(ev)}
    rundir = results / name
    if not (rundir / "run.json").exists():
        if reported:
            trial.iterations_lost += len(reported)
            trial.integrity.append("iterations were reported finished but no run was stored")
        return
    try:
        run = FileStore(results).load_run(name)
    except Exception as e:  # noqa: BLE001 - any failure to read back is an integrity failure
        trial.integrity.append(f"load_run: {type(e).__name__}: {e}")
        return
    stored = {(w.label, it.index) for w in run.workloads for it in w.iterations}
    lost = reported - stored
    trial.iterations_lost += len(lost)
    partial = [str(p.relative_to(rundir)) for p in rundir.glob("*/.iter-*")]
    if partial:
        trial.integrity.append(f"partial iteration folders left: {partial}")
    incomplete_dirs = [str(p.relative_to(rundir)) for p in rundir.glob("*/iter-*")
                       if not (p / "result.json").exists()]
    if incomplete_dirs:
        trial.integrity.append(f"iteration folders without result.json: {incomplete_dirs}")
    if run.status == "running":
        trial.integrity.append("the run is listed as running although its process is gone")
    try:
        db = sqlite3.connect(results / "index.sqlite")
        FileStore(results).list_runs()     # corrects a dead run's row, as list/show/compare do
        row = db.execute("SELECT status FROM runs WHERE name=?", (name,)).fetchone()
        db.close()
        if row and row[0] != run.status:
            trial.integrity.append(f"index says {row[0]!r}, run.json says {run.status!r}")
    except sqlite3.Error as e:
        trial.integrity.append(f"index: {e}")
    ended_ok = code == 0
    if ended_ok and run.status not in ("complete", "failed"):
        trial.integrity.append(f"exit 0 but status {run.status}")
    if code in (130, 143) and run.status not in ("incomplete", "complete"):
        trial.integrity.append(f"exit {code} but status {run.status}")
    if code in (130, 143):
        finished = [ev for _, ev in reader.events if ev.get("event") == "info"
                    and "machine state" in ev.get("message", "")]
        if not finished:
            trial.integrity.append("an interrupted run printed no final restore line")
    if code not in (0, 1, 130, 143, 4, -signal.SIGKILL):
        trial.integrity.append(f"unexpected exit status {code}")


def summarise(trials: list[Trial]) -> dict[str, int]:
    return {
        "trials": len(trials),
        "settings left changed": sum(len(t.settings_changed) for t in trials),
        "objects leaked": sum(len(t.objects_leaked) for t in trials),
        "iterations lost": sum(t.iterations_lost for t in trials),
        "integrity failures": sum(len(t.integrity) + len(t.tracebacks) for t in trials),
    }


def plan(n: int, seed: int, suites: list[str] | None = None) -> list[tuple[str, str, int]]:
    """``n`` (suite, signal, trial seed) triples, every suite and signal covered in turn."""
    rng = random.Random(seed)
    suites = suites or list(SUITES)
    sigs = ["SIGKILL", "SIGINT", "SIGTERM", "SIGTERM-restore"]
    out = []
    for i in range(n):
        out.append((suites[i % len(suites)], sigs[(i // len(suites) + i) % len(sigs)], rng.randrange(1 << 30)))
    return out
