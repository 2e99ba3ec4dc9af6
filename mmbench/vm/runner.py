"""The VM runner: ``run_in_vm`` boots a ``GuestKernel`` (resolved by the kernel stage, kbuild/) and
runs a suite inside a guest whose RAM is the machine under test, then stores the run on the host.

The guest runs ``mmbench run --json-log`` (its progress is relayed from the serial console); the
host changes nothing of its own, and QEMU and virtiofsd are journaled by PID before anything else.
A guest that panics, hangs or cannot boot fails the run with the console's last lines as the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from mmbench.errors import UsageError
from mmbench.model.guest import GUEST_CLOCK_ENV, GUEST_ENV, INSN_GROUPS_ENV, INSN_LOG_ENV, INSN_MARKS, INSN_MARKS_ENV
from mmbench.model.store import Store, copy_runs, validate_run_name
from mmbench.model.cache import cache_root
from mmbench.model.guest_kernel import GuestKernel
from mmbench.vm.qemu import Guest, GuestSpec, InsnPlugin, probe_accelerator, probe_icount_smp, qemu_version
from mmbench.vm.trees import TreeDisk, suite_trees, tree_disks

BOOT_ALLOWANCE = 120.0  # seconds added to the run's timeout for boot and copying back
DEFAULT_SHIFT = 3  # icount: 2^shift ns of guest time per instruction


@dataclass
class VmOptions:
    """The guest a run boots: its kernel (resolved by the kernel stage, kbuild/) and its shape."""

    kernel: GuestKernel
    memory_mb: int = 1024
    cpus: int | None = None  # None: 1 on the instruction clock, else 2
    numa: int = 1
    disk_gb: int = 16
    timeout: float = 7200.0
    accel: str = "auto"
    append: str = ""
    clock: str = "auto"  # the guest's clock under TCG: "instructions", "host" or "auto"
    clock_shift: int = DEFAULT_SHIFT
    below_4g_mb: int | None = None  # RAM below 4 GiB (the rest above: a Normal zone), None: QEMU's split


def resolve_clock(requested: str, accel: str, warn: Callable[[str], None]) -> str:
    """The guest clock a run gets: under TCG ``auto`` is the instruction clock (docs/kernels.md: the
    figures that chose it); a KVM guest runs on the host's clock whatever was asked (said once when
    the instruction clock was asked for)."""
    if accel != "tcg":
        if requested == "instructions":
            warn(
                "--vm-clock instructions does not apply to a KVM guest: it runs on the host's clock "
                "(the instruction clock is QEMU's TCG icount); its times are real time"
            )
        return "host"
    return "host" if requested == "host" else "instructions"


def resolve_cpus(
    cpus: int | None,
    clock: str,
    requested_clock: str,
    smp_problem: Callable[[int], str | None],
    info: Callable[[str], None],
) -> tuple[int, str]:
    """(vCPUs, clock): 1 vCPU on the instruction clock unless more were asked for and this QEMU can run
    them there; an explicit instruction clock with more vCPUs than QEMU can run is an error, an
    automatic one falls back to the host's clock and says so."""
    if clock != "instructions":
        return (cpus or 2), clock
    if not cpus or cpus == 1:
        return 1, clock
    why = smp_problem(cpus)
    if why is None:
        return cpus, clock
    if requested_clock == "instructions":
        raise UsageError(f"--vm-cpus {cpus} with --vm-clock instructions: {why}; give --vm-cpus 1 or --vm-clock host")
    info(f"guest clock: the host's, not instructions: {why}")
    return cpus, "host"


def _guest_argv(run_argv: list[str], results: Path, suite_copy: Path) -> list[str]:
    """The guest's `mmbench run`: the host's arguments with the suite file, results and progress
    format replaced (and never a --kernel: the guest does not boot a guest)."""
    return [
        sys.executable,
        "-m",
        "mmbench",
        "run",
        "--config",
        str(suite_copy),
        "--results",
        str(results),
        "--json-log",
        "--force",
        *run_argv,
    ]


def _mount_trees(trees: Sequence[TreeDisk]) -> list[str]:
    """Shell lines mounting each host tree's read-only disk at the tree's own path (over the
    virtiofs view of it); a disk that does not mount ends the guest run, never a silent fallback
    to virtiofs."""
    if not trees:
        return []
    lines = [
        'disk() { for b in /sys/block/vd*; do [ "$(cat $b/serial 2>/dev/null)" = "$1" ] && echo /dev/${b##*/}; done; }'
    ]
    for t in trees:
        where = shlex.quote(str(t.tree))
        said = shlex.quote(f"mmbench-init: cannot mount the read-only disk {t.serial} of {t.tree}")
        lines.append(
            f'd=$(disk {t.serial}); [ -n "$d" ] && mount -t ext4 -o ro "$d" {where} || '
            f'{{ echo {said}; echo "MMBENCH-GUEST-EXIT 125"; sync; echo o > /proc/sysrq-trigger; '
            "sleep 10; }"
        )
    return lines


def _command_file(
    share_run: Path,
    argv: list[str],
    kernel_modules: Path | None,
    trees: Sequence[TreeDisk] = (),
    extra_env: dict[str, str] | None = None,
) -> Path:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        GUEST_ENV: "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MMBENCH_CACHE": str(share_run.parent / "guest-cache"),
        "MMBENCH_LOCK_WAIT": "0",
        "LC_ALL": "C.UTF-8",
        # an internal error's traceback lands in the share, so it comes back with the run
        "MMBENCH_CRASH_DIR": str(share_run / "crash"),
        # the host's cache, read-only in the guest; the trees of it a workload reads are
        # mounted from read-only disks at their paths (vm/trees.py)
        "MMBENCH_HOST_CACHE": str(cache_root()),
    }
    for k in ("PYTHONPATH",):
        if os.environ.get(k):
            env[k] = os.environ[k]
    env.update(extra_env or {})
    lines = ["#!/bin/sh", "# written by mmbench run --kernel: what the guest runs after boot"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines += [
        "mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null",
        "echo '+memory +io +cpu +pids' > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null",
    ]
    if kernel_modules is not None:
        # The kernel's modules where modprobe and the kernel's own request_module look for them
        # (zram's compressor, vfat, loop are modules in Debian's kernels); the overlay makes /lib
        # writable, so the host's /lib/modules is not touched.
        lines += [
            f"mkdir -p /lib/modules/$(uname -r) && mount --bind {shlex.quote(str(kernel_modules))} "
            f"/lib/modules/$(uname -r)",
            "modprobe -a zram loop vfat nls_cp437 nls_iso8859-1 nls_utf8 2>/dev/null",
        ]
    lines += _mount_trees(trees)
    lines += [
        f"cd {shlex.quote(os.getcwd())}",
        shlex.join(argv),
        "rc=$?",
        'echo "MMBENCH-GUEST-EXIT $rc"',
        "sync",
        "echo o > /proc/sysrq-trigger",
        "sleep 10",
    ]
    path = share_run / "guest.sh"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


def _relay(progress: Any, suite_name: str, current: dict[str, Any], walls: list[dict[str, Any]] | None = None) -> Any:
    """Guest console line → host progress (the guest's JSON events; anything else only on error).
    ``current`` keeps the iteration in progress, the one a guest that dies takes with it; ``walls``
    gets each finished iteration's host wall time (the guest's own clock may count instructions)."""

    def on_line(line: str) -> None:
        text = line.strip()
        if not text.startswith("{"):
            return
        try:
            ev = json.loads(text)
        except json.JSONDecodeError:
            return
        kind = ev.get("event")
        if kind == "iteration-start":
            current.update(
                workload=ev["workload"], index=ev["iteration"], warmup=ev.get("warmup", False), host_t0=time.monotonic()
            )
            progress.start_iteration(suite_name, ev["workload"], ev["iteration"], ev["of"], ev.get("warmup", False))
        elif kind == "iteration-end":
            if walls is not None and "host_t0" in current:
                walls.append(
                    {
                        "workload": ev["workload"],
                        "iteration": ev["iteration"],
                        "host_wall_s": round(time.monotonic() - current["host_t0"], 2),
                    }
                )
            current.clear()
            progress.end_iteration(
                ev["workload"], ev["iteration"], ev["status"], ev.get("reason"), float(ev.get("elapsed_s") or 0.0)
            )
        elif kind in ("warning", "error"):
            progress.warn(f"[guest] {ev.get('message', '')}")
        elif kind == "info":
            progress.info(f"[guest] {ev.get('message', '')}")

    return on_line


def host_thp() -> dict[str, str]:
    out = {}
    for knob in ("enabled", "defrag"):
        try:
            text = Path(f"/sys/kernel/mm/transparent_hugepage/{knob}").read_text()
            out[knob] = text[text.index("[") + 1 : text.index("]")]
        except (OSError, ValueError):
            pass
    return out


def run_in_vm(
    opts: VmOptions,
    suite: Any,
    run_argv: list[str],
    name: str,
    store: Store,
    *,
    force: bool,
    progress: Any,
    open_store: Callable[[Path], Store],
    extra_runs: list[str] = (),
    baseline: str | None = None,
) -> str:
    """Boot ``opts.kernel``, run ``suite`` inside as run ``name``, store it on the host.

    ``open_store`` opens the guest's results folder as a store (the caller's, so the runner stage
    does not import the store stage)."""
    from mmbench.model.kernel import proc_start_time
    from mmbench.run.journal import Journal

    validate_run_name(name)
    if store.exists(name) and not force:
        raise UsageError(f"run {name!r} already exists; use --force to replace it or pick another name")
    kernel = opts.kernel
    from mmbench.vm.requirements import missing

    core, lacking = missing(kernel, suite)
    if core:
        from mmbench.errors import EnvironmentUnsupported

        raise EnvironmentUnsupported(
            f"kernel {kernel.release} ({kernel.spec}) cannot run mmbench in a guest: it lacks {'; '.join(core)}"
        )
    for line in lacking:
        progress.warn(line)
    qver = qemu_version()
    cache = cache_root() / "vm"
    cache.mkdir(parents=True, exist_ok=True)
    journal = Journal()
    for msg in journal.acquire():
        progress.warn(msg)
    stopping: list[str] = []

    def on_signal(signum: int, frame: Any) -> None:
        if not stopping:
            stopping.append(signal.Signals(signum).name)
            raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    workdir = cache / f"run-{name}-{os.getpid()}"
    try:
        journal.record("remove", path=str(workdir))
        workdir.mkdir(parents=True)
        accel = opts.accel if opts.accel != "auto" else probe_accelerator(kernel, cache, progress.info)
        disk = workdir / "scratch.img"
        with open(disk, "wb") as fh:
            fh.truncate(opts.disk_gb << 30)
        subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1", str(disk)], check=True, capture_output=True
        )
        results = workdir / "results"
        if baseline:  # --until against a stored run: the guest needs it in its own store
            copy_runs(store, open_store(results), [baseline])
        suite_copy = workdir / f"{suite.path.stem}.toml"
        suite_copy.write_text(suite.text)
        # host trees the workloads read (kernbench's source): read-only disks, not virtiofs
        trees = tree_disks(suite_trees(suite, progress.info), cache / "trees", progress.info)
        clock = resolve_clock(opts.clock, accel, progress.warn)
        cpus, clock = resolve_cpus(
            opts.cpus, clock, opts.clock, lambda n: probe_icount_smp(kernel, cache, n, progress.info), progress.info
        )
        plugin, guest_env = _insn_plugin(suite, accel, kernel, workdir, progress.info)
        if clock == "instructions":
            guest_env[GUEST_CLOCK_ENV] = f"instructions:{1 << opts.clock_shift}"
        cmd = _command_file(workdir, _guest_argv(run_argv, results, suite_copy), kernel.modules, trees, guest_env)
        spec = GuestSpec(
            kernel,
            opts.memory_mb,
            cpus,
            opts.numa,
            accel,
            cache,
            cmd,
            disk,
            opts.append,
            trees,
            clock=clock,
            clock_shift=opts.clock_shift,
            plugin=plugin,
            below_4g_mb=opts.below_4g_mb,
        )
        progress.info(
            f"booting {kernel.release} ({accel.upper()}, {opts.memory_mb} MiB, {cpus} CPUs, "
            f"{opts.numa} NUMA node(s)); the suite runs inside the guest"
        )
        if clock == "instructions":
            progress.info(
                f"guest clock: instructions (QEMU icount, {1 << opts.clock_shift} ns per instruction): "
                f"times count the work the guest did and do not drift with the host's load"
            )
        elif accel == "tcg":
            progress.warn(
                "TCG emulation on the host's clock: times are emulated (8-10x slower than hardware) "
                "and drift with the host's load; counts and ratios between runs stay comparable "
                "(--vm-clock instructions makes times deterministic)"
            )

        def journal_pid(pid: int) -> None:
            journal.record("process", pid=pid, start=proc_start_time(pid), group=True)

        guest = Guest(spec, workdir, journal_pid)
        t0 = time.monotonic()
        current: dict[str, Any] = {}
        walls: list[dict[str, Any]] = []
        result = guest.run(opts.timeout + BOOT_ALLOWANCE, _relay(progress, suite.path.stem, current, walls))
        progress.info(
            f"guest finished in {result.wall:.1f} s "
            f"({'exit ' + str(result.exit_code) if result.exit_code is not None else result.reason().split(';')[0]})"
        )
        vm_facts = {
            "kernel_spec": kernel.spec,
            "kernel_release": kernel.release,
            "accelerator": accel,
            "clock": clock,
            **({"clock_ns_per_instruction": 1 << opts.clock_shift} if clock == "instructions" else {}),
            "qemu": qver,
            "memory_mb": opts.memory_mb,
            "cpus": cpus,
            "numa_nodes": opts.numa,
            **({"below_4g_mb": opts.below_4g_mb} if opts.below_4g_mb else {}),
            "kernel_config": kernel.config_values(),
            "host": socket.gethostname(),
            "host_kernel": os.uname().release,
            "host_thp": host_thp(),
            "wall_s": round(result.wall, 1),
            "boot_to_exit_s": round(time.monotonic() - t0, 1),
            "iterations_wall": walls,
        }
        vm_facts["console_log"] = str(workdir / "console.log")
        if kernel.build:
            vm_facts["kernel_build"] = kernel.build
        _report_guest_crash(workdir, progress)
        for run in [*extra_runs, name]:  # what the guest left for the host (mm-trace's decoding)
            finish_deferred_monitors(results / run, progress.info)
        for extra in extra_runs:  # --baseline-set: the baseline configuration ran in the guest too
            _store_guest_run(open_store(results), store, extra, result, dict(vm_facts), suite, force, {})
        return _store_guest_run(open_store(results), store, name, result, vm_facts, suite, force, current)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        problems = journal.restore()
        journal.release()
        for p in problems:
            progress.warn(p)
        progress.close()


def _insn_plugin(
    suite: Any, accel: str, kernel: GuestKernel, workdir: Path, log: Callable[[str], None]
) -> tuple[InsnPlugin | None, dict[str, str]]:
    """The instruction-counting plugin when the suite records insn-count in a TCG guest, and the
    environment that tells the guest's monitor where it is (none otherwise: under KVM the monitor
    counts with the guest's PMU)."""
    if accel != "tcg" or not any(m.name == "insn-count" for m in suite.monitors):
        return None, {}
    from mmbench.cbuild import library_for
    from mmbench.kbuild.symbols import read_group_names

    library = Path(library_for(Path(__file__).with_name("insn_plugin.c")))
    groups = read_group_names(kernel.symbols) if kernel.symbols else []
    if not groups:
        log(
            "insn-count: no per-subsystem split of kernel instructions: the kernel was not built by "
            "mmbench here (its function groups come from the build's objects)"
        )
    plugin = InsnPlugin(library, workdir / "insn.log", INSN_MARKS, kernel.symbols)
    return plugin, {INSN_LOG_ENV: str(plugin.log), INSN_MARKS_ENV: f"{INSN_MARKS:x}", INSN_GROUPS_ENV: ";".join(groups)}


def finish_deferred_monitors(rundir: Path, log: Callable[[str], None]) -> None:
    """Finish, on the host, the work a guest's monitors left (mm-trace decodes its raw pages here,
    not under emulation): every stored iteration of the guest's run folder, result.json updated."""
    from mmbench.plugins import monitors as registry
    from mmbench.cbuild import binary_for

    done: dict[str, list[float]] = {}
    warned: set[str] = set()
    for res in sorted(rundir.glob("*/iter-*/result.json")):
        data = json.loads(res.read_text())
        changed = False
        for mon, meta in (data.get("monitors") or {}).items():
            if not isinstance(meta, dict) or not meta.get("deferred") or "dir" not in meta:
                continue
            cls = registry().get(mon)
            if cls is None:
                continue
            t0 = time.monotonic()
            try:
                new = cls.finish_deferred(rundir / meta["dir"], meta, binary_for)
            except Exception as e:  # the iteration keeps its raw data and says why it has no summary
                new = {**meta, "errors": [*meta.get("errors", []), f"host decode: {type(e).__name__}: {e}"]}
            data["monitors"][mon] = new
            for w in new.get("warnings") or []:
                if w not in warned:  # said once per run, not once per iteration
                    warned.add(w)
                    log(f"warning: monitor {mon}: {w}")
            changed = True
            d = done.setdefault(mon, [0, 0.0, 0.0])
            d[0] += 1
            d[1] += float(new.get("events") or 0)
            d[2] += time.monotonic() - t0
        if changed:
            tmp = res.with_name(".result.json.tmp")
            tmp.write_text(json.dumps(data, indent=1))
            os.replace(tmp, res)
    for mon, (n, events, secs) in done.items():
        log(f"{mon}: {int(n)} iteration(s) finished on the host ({int(events)} events decoded in {secs:.2f} s)")


def _store_guest_run(
    guest_store: Any,
    store: Any,
    name: str,
    result: Any,
    vm: dict[str, Any],
    suite: Any,
    force: bool,
    current: dict[str, Any],
) -> str:
    """Copy the guest's run into the host's store; a run the guest could not finish is failed with the
    console tail as its reason (the iteration in progress gets it too)."""
    files: dict[str, bytes] = {}
    if guest_store.exists(name):
        guest_store.load_run(name)
        files = dict(guest_store.run_files(name))
    ok = result.exit_code == 0 and not result.panicked and not result.timed_out and files
    if not files:  # nothing was stored inside: make an empty failed run that says why
        files = {
            "suite.toml": suite.text.encode(),
            "suite-effective.json": json.dumps(suite.effective, default=str).encode(),
            "run.json": json.dumps(
                {
                    "name": name,
                    "status": "failed",
                    "created": time.time(),
                    "finished": time.time(),
                    "suite_hash": suite.hash,
                    "settings": {},
                    "description": suite.description,
                    "suite": suite.path.stem,
                }
            ).encode(),
            "fingerprint.json": json.dumps({"kernel": {"release": vm["kernel_release"]}}).encode(),
        }
    vm = dict(vm)
    console = Path(vm.pop("console_log", "") or "/nonexistent")
    timing = {k: vm.pop(k) for k in ("wall_s", "boot_to_exit_s", "iterations_wall") if k in vm}  # per run
    meta = json.loads(files["run.json"])
    meta["vm_timing"] = timing
    meta.setdefault("workload_order", [w.label for w in suite.workloads])  # written at the end inside
    meta.setdefault("suite", suite.path.stem)
    fp = json.loads(files.get("fingerprint.json", b"{}"))
    build = vm.pop("kernel_build", None)
    fp["vm"] = vm
    kern = fp.get("kernel") or {}
    if build:  # a kernel mmbench built: its source, patches and config, in the environment diff
        kern.update(build_facts(build))
        fp["kernel"] = kern
        files["kernel-build.json"] = json.dumps(build, indent=1).encode()
    if "cmdline" in kern:  # mmbench's own boot arguments name per-run paths: not part of the environment
        kern["cmdline"] = " ".join(t for t in kern["cmdline"].split() if not t.startswith("mmbench."))
    fp["guest_host"], fp["host"] = fp.get("host", ""), vm["host"]
    files["fingerprint.json"] = json.dumps(fp, indent=1).encode()
    if not ok:
        reason = result.reason()
        meta["status"] = "failed" if not any(k.endswith("/result.json") for k in files) else "incomplete"
        meta["note"] = reason
        meta.setdefault("finished", time.time())
        if current:
            _fail_iteration(files, current, reason)
        if (
            result.exit_code not in (None, 0)
            and not result.panicked
            and not result.timed_out
            and any(k.endswith("/result.json") for k in files)
        ):
            meta["status"] = "failed"
    elif meta.get("status") == "running":
        meta["status"] = "incomplete"
    files["run.json"] = json.dumps(meta, indent=1).encode()
    if console.is_file():  # the guest's serial console, kept with the run
        files["vm-console.log"] = console.read_bytes()
    for crash in sorted((console.parent / "crash").glob("crash-*.txt")):  # mmbench's own traceback
        files[f"guest-{crash.name}"] = crash.read_bytes()
    store.put_run_files(name, sorted(files.items()), force=True)
    return meta["status"]


def _fail_iteration(files: dict[str, bytes], current: dict[str, Any], reason: str) -> None:
    """The iteration that was running when the guest died is stored, failed, with the reason."""
    label, index = current["workload"], int(current["index"])
    files[f"{label}/iter-{index}/result.json"] = json.dumps(
        {
            "workload": label,
            "index": index,
            "warmup": bool(current.get("warmup")),
            "status": "failed",
            "reason": reason,
            "samples": {},
            "duration": {},
            "vmstat_delta": {},
            "memcg": {},
            "monitors": {},
            "started": 0.0,
            "finished": 0.0,
            "path": f"{label}/iter-{index}",
        }
    ).encode()


def build_facts(build: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint's view of a kernel mmbench built (``kernel.*``): one readable line per fact in
    a comparison's environment diff; the whole record is the run's ``kernel-build.json``."""
    patches = [p.get("name", "?") for p in build.get("patches") or []]
    series = hashlib.sha256("".join(p.get("sha256", "") for p in build.get("patches") or []).encode()).hexdigest()
    user = {}
    for f in build.get("fragments") or []:
        user.update(f.get("options") or {})
    facts = {
        "source": build.get("source_label", ""),
        "patches": patches,
        "series_sha256": series[:12] if patches else "",
        "fragments": [f.get("name", "?") for f in build.get("fragments") or []],
        "config_sha256": str(build.get("config_sha256", ""))[:12],
        "user_options": user,
    }
    src = build.get("source") or {}
    if src.get("kind") == "git":  # where a bisection between two such runs would look
        facts["git_repo"], facts["git_commit"] = str(src.get("repo", "")), str(src.get("commit", ""))
    if "commits" in build:  # an A/B of two commits of one git repository: what this side has
        facts["commits"] = [f"{c.get('commit', '')[:12]} {c.get('subject', '')}" for c in build["commits"]]
    return facts


def _report_guest_crash(workdir: Path, progress: Any) -> None:
    """mmbench's own traceback from inside the guest, printed on the host (it is kept with the run)."""
    for crash in sorted((workdir / "crash").glob("crash-*.txt")):
        lines = [l for l in crash.read_text(errors="replace").splitlines() if l.strip()]
        progress.warn(f"mmbench crashed inside the guest ({crash.name}, kept with the run as guest-{crash.name}):")
        for line in lines[-12:]:
            progress.warn(f"  [guest] {line}")
