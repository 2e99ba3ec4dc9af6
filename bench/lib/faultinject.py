"""Fault injection for the "never leave the machine changed, never lose an iteration" promise.

A trial starts ``mmbench run --json-log`` on one of a few tiny suites that touch different machine
state (sysctls and THP, zram swap, a loop mount, the hugetlb pool, tracing), sends SIGKILL,
SIGINT or SIGTERM at a point chosen by a seeded random generator — a random time, a boundary
(0-20 ms after an iteration starts or ends), or 0-100 ms after the last iteration ended (while the
run is stored and the machine put back) — and, after a SIGKILL, runs ``mmbench restore`` (itself
SIGTERMed at a random moment in some trials, then run again).  Every trial's suite keeps its
scratch under folders that do not exist yet (they must be gone afterwards, parents included).

Other faults the tool must survive, as trial kinds of their own: ``SIGKILL-junk`` (a non-UTF-8
line lands in the machine journal before the restore: it must be named, set aside and the rest
restored), ``import-force`` (``mmbench import --force`` of the run's name while it is written: it
must be refused and the run finish whole) and ``full-disk`` (the results directory is a nearly full
tmpfs of the trial's own: one line "no space left", the run stored as incomplete, the machine put
back).

Then it compares the machine with a snapshot taken before: every sysctl under /proc/sys/vm and
/proc/sys/kernel (bar a few counters), every THP and khugepaged knob, zswap's parameters, the
hugetlb pools (global and per node), swap devices and zram devices, mmbench's cgroups in every
hierarchy (never the platform's own), mounts (tracefs, loop and scratch mounts), loop devices,
trace instances and the tracer state, scratch folders, the journal, and processes the run
started.  It checks the store: every iteration the run reported finished is stored, no partial
folder, the status agrees with how the run ended and the index never says "running".  A trial
whose signal reached a process that had already exited is "not exercised" (a signal delivered to
a live run must show in its exit status: 130, 143 or killed).  For SIGKILL trials it also records
what the kill left before ``mmbench restore`` put it back.

Used by ``tests/test_fault_injection.py`` (a few trials) and ``bench/fault-campaign`` (many).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THP = Path("/sys/kernel/mm/transparent_hugepage")
TRACEFS = Path("/sys/kernel/tracing")
# Counters and write-only triggers among the knobs: not machine state a run could leave changed.
VOLATILE = {
    "/proc/sys/kernel/ns_last_pid",
    "/proc/sys/kernel/tainted",
    # the kernel lowers it itself when perf interrupts take too long (kernel/events/core.c)
    "/proc/sys/kernel/perf_event_max_sample_rate",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/vm/compact_memory",
    "/proc/sys/vm/stat_refresh",
    str(THP / "khugepaged" / "pages_collapsed"),
    str(THP / "khugepaged" / "full_scans"),
}
VOLATILE_DIRS = (
    "/proc/sys/kernel/random",
    "/proc/sys/kernel/pty",
    "/proc/sys/kernel/keys",
    "/proc/sys/kernel/usermodehelper",
)

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
"""
    + _COMMON,
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
"""
    + _COMMON,
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
"""
    + _COMMON,
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
"""
    + _COMMON,
    "tracing": """
[suite]
iterations = 3
budget = "32M"
[[workload]]
name = "idle"
[workload.params]
duration = "0.4s"
[monitors.mm-trace]
"""
    + _COMMON,
}


# The machine state each suite changes on purpose.  Diffs in other keys are counted too (as
# "elsewhere"): on a machine of its own nothing else changes them; on a shared one another
# session's in-process test (private journal, not under the machine lock) may, so the pytest
# trials only note them.
SUITE_STATE: dict[str, set[str]] = {
    "sysctl-thp": {"sysctl vm/swappiness", "sysctl vm/dirty_ratio", f"knob {THP}/enabled", f"knob {THP}/defrag"},
    "zram": {"sysctl vm/swappiness", "swaps", "zram"},
    "loop-mount": {"mounts", "loop devices"},
    "hugetlb": {"sysctl vm/nr_hugepages", "hugetlb pools"},
    "tracing": {"trace instances", "tracefs mounted", "tracing"},
}


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "<unreadable>"


def _collect(root: Path) -> dict[str, str]:
    """Every readable regular file under ``root`` (sysctls, sysfs knobs): relative path → value."""
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.startswith(VOLATILE_DIRS) or os.path.basename(dirpath) == "stats":  # counters
            dirnames[:] = []
            continue
        for f in filenames:
            path = os.path.join(dirpath, f)
            try:
                if path in VOLATILE or not os.stat(path).st_mode & 0o444:
                    continue
            except OSError:
                continue
            value = _read(Path(path))
            if value != "<unreadable>":
                out[os.path.relpath(path, root)] = value
    return out


def snapshot(scratch: Path = Path("/var/tmp/mmbench")) -> dict[str, Any]:
    """The machine state mmbench may change, as comparable values."""
    st: dict[str, Any] = {}
    sysctls: dict[str, Any] = {}
    for sub in ("vm", "kernel"):
        for k, v in _collect(Path("/proc/sys") / sub).items():
            sysctls[f"sysctl {sub}/{k}"] = v
    st.update(sysctls)
    for root in (THP, Path("/sys/module/zswap/parameters")):
        for k, v in _collect(root).items():
            st[f"knob {root}/{k}"] = v
    pools = {}
    for p in [
        *Path("/sys/kernel/mm/hugepages").glob("hugepages-*"),
        *Path("/sys/devices/system/node").glob("node*/hugepages/hugepages-*"),
    ]:
        for f in ("nr_hugepages", "nr_overcommit_hugepages"):
            if (p / f).exists():
                pools[f"{p}/{f}"] = _read(p / f)
    st["hugetlb pools"] = pools
    st["swaps"] = sorted(line.split()[0] for line in _read(Path("/proc/swaps")).splitlines()[1:] if line.strip())
    st["zram"] = {
        d.name: (_read(d / "disksize"), _read(d / "comp_algorithm")) for d in sorted(Path("/sys/block").glob("zram*"))
    }
    st["cgroups"] = sorted(
        str(p)
        for root in [Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").glob("*")]
        if root.is_dir()
        for p in root.glob("mmbench-*")
        if not p.name.startswith("mmbench-test-")
    )
    mounts = [line.split() for line in _read(Path("/proc/mounts")).splitlines()]
    st["tracefs mounted"] = any(m[2] == "tracefs" for m in mounts if len(m) > 2)
    # what mmbench mounts: tracefs, and (loop devices' filesystems) under the run's scratch folder;
    # a trial's scratch is its own, so other sessions' mounts elsewhere are not counted
    st["mounts"] = sorted(
        f"{m[0]} {m[1]} {m[2]}" for m in mounts if len(m) > 2 and (m[2] == "tracefs" or m[1].startswith(str(scratch)))
    )
    st["trace instances"], st["tracing"] = [], {}  # (tracefs not mounted: none)
    if TRACEFS.joinpath("instances").is_dir():
        # in-process tests of other sessions trace with a private journal (not under the machine
        # lock): an instance whose creator (mmbench-PID-...) is alive is theirs, not a leak
        insts = [p.name for p in (TRACEFS / "instances").iterdir()]
        foreign = [n for n in insts if n.startswith("mmbench") and _alive(n)]
        st["trace instances"] = sorted(set(insts) - set(foreign))
        st["tracing"] = {
            f: _read(TRACEFS / f)
            for f in ("set_event", "current_tracer", "tracing_on", "buffer_size_kb", "tracing_max_latency")
        }
        st["_foreign trace"] = bool(foreign)
    st["loop devices"] = sorted(
        f"{p.parent.parent.name} {_read(p)}"
        for p in Path("/sys/block").glob("loop*/loop/backing_file")
        if _read(p).startswith(str(scratch))
    )
    st["scratch"] = scratch.exists() and sorted(p.name for p in scratch.iterdir())
    st["journal"] = Path("/var/lib/mmbench/journal.jsonl").exists() and bool(
        _read(Path("/var/lib/mmbench/journal.jsonl"))
    )
    return st


def _alive(instance: str) -> bool:
    try:
        pid = int(instance.split("-")[1])
    except (IndexError, ValueError):
        return False
    return Path(f"/proc/{pid}").exists()


# what counts as an object (leaked) rather than a setting (left changed)
OBJECT_KEYS = {
    "swaps",
    "zram",
    "cgroups",
    "mounts",
    "trace instances",
    "loop devices",
    "scratch",
    "journal",
    "scratch parents",
    "processes",
}


@dataclass
class Trial:
    suite: str
    sig: str  # SIGKILL, SIGINT, SIGTERM, SIGTERM-restore (SIGKILL, then restore SIGTERMed),
    point: str  # SIGKILL-junk, import-force, full-disk; how the moment was chosen
    seed: int
    exit: int | None = None
    exercised: bool = True  # False: the signal reached a run that had already ended
    settings_changed: list[str] = field(default_factory=list)
    objects_leaked: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # changed state outside the suite's own keys
    left_by_kill: list[str] = field(default_factory=list)  # what a SIGKILL left before restore
    iterations_lost: int = 0
    integrity: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    strict: bool = False  # count ``elsewhere`` as problems (a machine of its own)

    @property
    def clean(self) -> bool:
        return not (
            self.settings_changed
            or self.objects_leaked
            or self.iterations_lost
            or self.integrity
            or self.tracebacks
            or (self.strict and self.elsewhere)
        )


class _Children(threading.Thread):
    """Every process descended from ``pid`` while it runs (pid, start time, command), so the
    trial can tell whether any outlived it (a monitor's perf, a workload, a QEMU)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.root = pid
        self.seen: dict[int, tuple[str, str]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            parents: dict[int, int] = {}
            info: dict[int, tuple[str, str]] = {}
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    raw = Path(f"/proc/{d}/stat").read_text()
                except OSError:
                    continue
                comm = raw[raw.index("(") + 1 : raw.rindex(")")]
                fields = raw[raw.rindex(")") + 2 :].split()
                parents[int(d)] = int(fields[1])
                info[int(d)] = (fields[19], comm)
            # a recorded pid counts only while it is still that process (pids are reused)
            family = {self.root} | {
                pid for pid, (start, _) in self.seen.items() if pid in info and info[pid][0] == start
            }
            changed = True
            while changed:
                changed = False
                for pid, ppid in parents.items():
                    if ppid in family and pid not in family:
                        family.add(pid)
                        changed = True
            for pid in family - {self.root}:
                if pid in info and pid not in self.seen:
                    self.seen[pid] = info[pid]
            self.stop.wait(0.01)

    def survivors(self) -> list[str]:
        """Descendants still running (a zombie, or one past exit(), is dead: its parent or init
        has yet to reap it)."""
        out = []
        for pid, (start, comm) in self.seen.items():
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            if fields[19] == start and fields[0] not in ("Z", "X") and not int(fields[6]) & 0x4:
                out.append(f"pid {pid} ({comm})")
        return sorted(out)


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


KILLS = ("SIGKILL", "SIGKILL-junk")  # plain SIGKILL; SIGKILL then a junk line in the journal


def _signum(sig: str) -> int | None:
    if sig in KILLS or sig.endswith("-restore"):
        return signal.SIGKILL
    return getattr(signal, sig) if sig.startswith("SIG") else None  # import-force, full-disk: none


def _state(pid: int) -> str | None:
    """The process's state letter (R, S, D, Z...), "exiting" once it is past exit() (PF_EXITING:
    a signal can no longer change how it ends), None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return "exiting" if int(fields[6]) & 0x4 else fields[0]


def run_trial(
    suite: str,
    sig: str,
    seed: int,
    workdir: Path,
    log: Any = None,
    at: tuple[str, int, float] | None = None,
    strict: bool = False,
) -> Trial:
    """One trial: run ``suite``, send ``sig`` at a seeded point (or inject the fault ``sig``
    names), restore if needed, check all.

    ``at`` = (``"start"``/``"end"``, iteration index (-1: the last), seconds after) fixes the
    moment instead (boundary tests).  ``strict`` counts state changed outside the suite's own
    keys as a problem (a machine of its own); otherwise it is only listed."""
    rng = random.Random(seed)
    n_iter = int(SUITES[suite].split("iterations = ")[1].split()[0])
    point_kind = rng.choice(["time", "boundary", "boundary", "last"]) if at is None else "fixed"
    offsets = (
        [0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1]
        if point_kind == "last"
        else [0.0, 0.001, 0.002, 0.005, 0.0055, 0.01, 0.015, 0.02]
    )
    offset = rng.choice(offsets) if at is None else at[2]
    trial = Trial(suite, sig, "", seed, strict=strict)
    name = f"t{seed}"
    # scratch under folders that do not exist yet: all of them must be gone afterwards
    scratch_top = Path(f"/var/tmp/mmbench-trial-{name}-{os.getpid()}")
    scratch = scratch_top / "parent" / "scratch"
    text = SUITES[suite].replace("[suite]\n", f'[suite]\nscratch = "{scratch}"\n', 1)
    if sig == "import-force":  # the run is still being written when the import comes
        text += '\n[[workload]]\nname = "idle"\nlabel = "hold"\niterations = 1\n[workload.params]\nduration = "3s"\n'
    cfg = workdir / f"{suite}.toml"
    cfg.write_text(text)
    results, full = workdir / "results", None
    if sig == "full-disk":
        results, full = _nearly_full(workdir / f"full-{name}")
    before = _locked_snapshot(scratch)
    before["scratch parents"] = scratch_top.exists()
    env = {**os.environ, "MMBENCH_LOCK_WAIT": os.environ.get("MMBENCH_LOCK_WAIT", "900")}
    proc = subprocess.Popen(
        _cli("run", "--json-log", "--config", str(cfg), "--results", str(results), name),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    children = _Children(proc.pid)
    children.start()
    reader = _Reader(proc.stderr)
    reader.start()
    signum = _signum(sig)
    live_at_signal, state = False, None
    try:
        started = reader.wait_event(lambda ev: ev.get("event") == "iteration-start", 300)
        if started is None:
            trial.notes.append("the run never started an iteration")
        elif sig == "import-force":
            _import_over_live_run(trial, reader, proc, results, name, workdir)
        elif signum is not None:
            if point_kind == "time":
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
            state = _state(proc.pid)
            live_at_signal = state not in (None, "Z", "X", "exiting")
            if proc.returncode is None:
                proc.send_signal(signum)
        else:
            trial.point = "the results filesystem fills up"
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        children.stop.set()
    children.join(timeout=10)
    reader.join(timeout=10)
    trial.exit = proc.returncode
    trial.tracebacks += [line for line in reader.other if "Traceback" in line]
    if signum is not None:
        # a signal that reached a live run shows in its exit status; one that came after it had
        # ended (a zombie, or gone) does not count as a trial of anything
        shown = proc.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signum)
        if not shown:
            trial.exercised = False
            trial.notes.append(f"not exercised: the run had ended before the signal (exit {proc.returncode})")
            if live_at_signal and signum != signal.SIGKILL and proc.returncode in (0, 5):
                trial.integrity.append(
                    f"{signal.Signals(signum).name} reached the live run (state "
                    f"{state}) but it exited {proc.returncode}, not {128 + signum}"
                )
    if proc.returncode == -signal.SIGKILL:
        left = _locked_snapshot(scratch)
        left["scratch parents"] = scratch_top.exists()
        trial.left_by_kill = sorted(_diff(before, left, name))
        junk = _add_journal_junk(seed) if sig == "SIGKILL-junk" else None
        if sig.endswith("-restore"):
            _interrupted_restore(rng, trial, getattr(signal, sig.split("-")[0]))
        out = subprocess.run(_cli("restore"), capture_output=True, text=True, timeout=300)
        if junk is not None:
            _check_junk_named(trial, out, junk)
        elif out.returncode != 0:
            trial.integrity.append(
                f"mmbench restore exited {out.returncode}: {out.stdout.strip()} {out.stderr.strip()}"
            )
        if "Traceback" in out.stderr:
            trial.tracebacks.append(out.stderr)
    if full is not None:
        _check_full_disk(trial, reader, results, name)
    after = _locked_snapshot(scratch)
    after["scratch parents"] = scratch_top.exists()
    after["processes"] = children.survivors()
    before["processes"] = []
    suite_keys = SUITE_STATE[suite] | OBJECT_KEYS
    for k, msg in sorted(_diff(before, after, name).items()):
        if k not in suite_keys and not k.startswith("journal"):
            trial.elsewhere.append(msg)
        elif k in OBJECT_KEYS:
            trial.objects_leaked.append(msg)
        else:
            trial.settings_changed.append(msg)
    if full is not None:
        subprocess.run(["umount", "-l", str(full)], check=False)
    else:
        _check_store(trial, results, name, reader, proc.returncode, sig)
    shutil.rmtree(scratch_top, ignore_errors=True)  # (only if the check above found it left)
    if log:
        log(trial)
    return trial


def _diff(before: dict[str, Any], after: dict[str, Any], name: str) -> dict[str, str]:
    """Keys whose value changed, each with one line saying how (for a dict, the entries that did)."""
    foreign = before.get("_foreign trace", False) or after.get("_foreign trace", False)
    out: dict[str, str] = {}
    for st in (before, after):
        # another session's runs own their cgroups and scratch folders; this run's are compared
        st["cgroups"] = [c for c in st.get("cgroups", []) if f"/mmbench-{name}-" in c]
    keys = (set(before) | set(after)) - {"_foreign trace"}
    if before.get("journal"):  # someone else's leftover journal: the next run restores it, not ours
        keys.discard("journal")
    for k in keys:
        a, b = before.get(k), after.get(k)
        if a == b:
            continue
        if foreign and k in ("tracefs mounted", "tracing", "mounts"):
            continue  # another session's in-process trace test mounted or uses tracefs now
        if isinstance(a, dict) and isinstance(b, dict):
            what = ", ".join(
                f"{x}: {a.get(x)!r} -> {b.get(x)!r}" for x in sorted(set(a) | set(b)) if a.get(x) != b.get(x)
            )
            out[k] = f"{k}: {what}"
        else:
            out[k] = f"{k}: {a!r} -> {b!r}"
    return out


def _nearly_full(mnt: Path) -> tuple[Path, Path]:
    """A 1 MiB tmpfs of the trial's own with ~100 KiB free: the results directory of the run."""
    mnt.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    (mnt / "filler").write_bytes(bytes(924 << 10))
    return mnt / "results", mnt


def _check_full_disk(trial: Trial, reader: _Reader, results: Path, name: str) -> None:
    """The run stopped with one line naming the full filesystem; what it stored says incomplete."""
    err = [line for line in reader.other if line.startswith("mmbench: error:")]
    if trial.exit == 0 or trial.exit == 5:
        trial.exercised = False
        trial.notes.append("not exercised: the run fitted in the space left")
        return
    if trial.exit != 2 or not err or "no space left on" not in err[-1]:
        trial.integrity.append(f"full filesystem: exit {trial.exit}, {err[-1:] or reader.other[-1:]}")
    meta = results / name / "run.json"
    if meta.exists():
        status = json.loads(meta.read_text()).get("status")
        if status != "incomplete":
            trial.integrity.append(f"full filesystem: the run is stored as {status!r}, not 'incomplete'")
    leftovers = [str(p) for p in results.rglob("*") if p.name.endswith(".tmp") or p.name == ".spare"]
    if leftovers:
        trial.integrity.append(f"full filesystem: left {leftovers}")
    trial.point = "the results filesystem filled up"


def _import_over_live_run(
    trial: Trial, reader: _Reader, proc: subprocess.Popen, results: Path, name: str, workdir: Path
) -> None:
    """``mmbench import --force`` of the run's own name while it is written: refused, the run goes on."""
    reader.wait_event(lambda ev: ev.get("event") == "iteration-end", 300)
    csv = workdir / "import.csv"
    csv.write_text("workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\n")
    running = proc.poll() is None
    out = subprocess.run(
        _cli("import", "--results", str(results), "--force", str(csv), name),
        capture_output=True,
        text=True,
        timeout=120,
    )
    trial.point = f"import --force of {name} after its first iteration (exit {out.returncode})"
    if out.returncode == 2 and "still being written" in out.stderr:
        return
    if not running:
        trial.exercised = False
        trial.notes.append("not exercised: the run had ended before the import")
    else:
        trial.integrity.append(f"import --force over a live run exited {out.returncode}: {out.stderr.strip()[:200]}")


def _add_journal_junk(seed: int) -> bytes:
    """A non-UTF-8 line appended to the machine journal after the kill (a damaged file)."""
    from mmbench.run.journal import Journal

    junk = b"\xff\xfe junk from trial " + str(seed).encode()
    with open(Journal().path, "ab") as fh:
        fh.write(junk + b"\n")
    return junk


def _check_junk_named(trial: Trial, out: subprocess.CompletedProcess, junk: bytes) -> None:
    """restore named the junk line, set it aside, restored the rest, and said not everything went."""
    from mmbench.run.journal import Journal

    path = Journal().path
    aside = [p for p in path.parent.glob(f"{path.name}.unreadable-*") if junk in p.read_bytes()]
    for p in aside:  # the campaign's own junk: cleaned up
        rest = b"\n".join(line for line in p.read_bytes().split(b"\n") if line and line != junk)
        p.write_bytes(rest + b"\n") if rest else p.unlink()
    if f"{path}: line" in out.stdout and "not UTF-8" in out.stdout and out.returncode == 4:
        return
    if aside:
        trial.notes.append("another mmbench process set the junk line aside first")
        return
    trial.integrity.append(
        f"junk journal line: restore exited {out.returncode} without naming it: "
        f"{out.stdout.strip()[:200]} {out.stderr.strip()[:200]}"
    )


def _locked_snapshot(scratch: Path = Path("/var/tmp/mmbench")) -> dict[str, Any]:
    """A snapshot taken holding the machine-wide mmbench lock: another engineer's run on a shared
    machine changes knobs only while it holds the lock, and puts them back before it lets go."""
    from mmbench.run.journal import Journal

    os.environ.setdefault("MMBENCH_LOCK_WAIT", "900")
    j = Journal()
    j.lock()
    try:
        return snapshot(scratch)
    finally:
        j.entries = []  # only looked at: whatever is journaled stays for its own restore
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
    trial.point += (
        f"; restore got {signal.Signals(signum).name} {delay * 1000:g} ms after it took the "
        f"journal (exit {p.returncode})"
    )
    if "Traceback" in err:
        trial.tracebacks.append(err)
    if p.returncode not in (0, 128 + signum):
        trial.integrity.append(f"interrupted restore exited {p.returncode}: {err.strip()}")
    if p.returncode == 128 + signum and "again" not in err and "nothing is left" not in err:
        trial.integrity.append(f"interrupted restore did not say to run it again: {err.strip()}")


def _check_store(trial: Trial, results: Path, name: str, reader: _Reader, code: int | None, sig: str = "") -> None:
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
    incomplete_dirs = [str(p.relative_to(rundir)) for p in rundir.glob("*/iter-*") if not (p / "result.json").exists()]
    if incomplete_dirs:
        trial.integrity.append(f"iteration folders without result.json: {incomplete_dirs}")
    if run.status == "running":
        trial.integrity.append("the run is listed as running although its process is gone")
    try:
        db = sqlite3.connect(results / "index.sqlite")
        FileStore(results).list_runs()  # corrects a dead run's row, as list/show/compare do
        row = db.execute("SELECT status FROM runs WHERE name=?", (name,)).fetchone()
        db.close()
        if row and row[0] != run.status:
            trial.integrity.append(f"index says {row[0]!r}, run.json says {run.status!r}")
    except sqlite3.Error as e:
        trial.integrity.append(f"index: {e}")
    ended_ok = code in (0, 5)
    if ended_ok and run.status not in ("complete", "failed"):
        trial.integrity.append(f"exit {code} but status {run.status}")
    if code == 5 and not any(it.status != "ok" for w in run.workloads for it in w.iterations):
        trial.integrity.append("exit 5 but no iteration failed")
    if sig == "import-force" and code not in (0, 5):
        trial.integrity.append(f"the run an import tried to replace exited {code}")
    if code in (130, 143) and run.status not in ("incomplete", "complete"):
        trial.integrity.append(f"exit {code} but status {run.status}")
    if code in (130, 143):
        finished = [
            ev for _, ev in reader.events if ev.get("event") == "info" and "machine state" in ev.get("message", "")
        ]
        if not finished:
            trial.integrity.append("an interrupted run printed no final restore line")
    if code not in (0, 1, 5, 130, 143, 4, -signal.SIGKILL):
        trial.integrity.append(f"unexpected exit status {code}")


def summarise(trials: list[Trial]) -> dict[str, int]:
    """The tallies (target: 0 of each but trials and not exercised)."""
    return {
        "trials": len(trials),
        "not exercised": sum(not t.exercised for t in trials),
        "settings left changed": sum(len(t.settings_changed) for t in trials),
        "objects leaked": sum(len(t.objects_leaked) for t in trials),
        "iterations lost": sum(t.iterations_lost for t in trials),
        "integrity failures": sum(len(t.integrity) + len(t.tracebacks) for t in trials),
        "changed elsewhere": sum(len(t.elsewhere) for t in trials),
    }


def left_by_kill(trials: list[Trial]) -> dict[str, int]:
    """What a plain SIGKILL left on the machine before ``mmbench restore``: state key → trials."""
    out: dict[str, int] = {}
    for t in trials:
        if t.exit == -signal.SIGKILL:
            for k in t.left_by_kill:
                out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


SIGNALS = ["SIGKILL", "SIGINT", "SIGTERM", "SIGTERM-restore"]
FAULTS = ["SIGKILL-junk", "import-force", "full-disk"]


def plan(
    n: int, seed: int, suites: list[str] | None = None, sigs: list[str] | None = None
) -> list[tuple[str, str, int]]:
    """``n`` (suite, signal or fault, trial seed) triples, every suite and signal covered in turn."""
    rng = random.Random(seed)
    suites = suites or list(SUITES)
    sigs = sigs or SIGNALS
    out = []
    for i in range(n):
        out.append((suites[i % len(suites)], sigs[(i // len(suites) + i) % len(sigs)], rng.randrange(1 << 30)))
    return out
