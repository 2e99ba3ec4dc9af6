"""Booting the guest (``Guest``, ``GuestSpec``): QEMU with two virtiofsd shares and its disks, the
console read for exit status and panics, and the KVM-or-TCG probe (QEMU directly rather than
virtme-ng: docs/kernels.md says why).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import EnvironmentUnsupported
from mmbench.model.guest_kernel import GuestKernel
from mmbench.vm.initramfs import PROBE_MARKER, READY_MARKER, SCRATCH_SERIAL, build_initramfs
from mmbench.vm.trees import TreeDisk

QEMU = "qemu-system-x86_64"
VIRTIOFSD = ("/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd", "/usr/lib/virtiofsd")
EXIT_MARKER = "MMBENCH-GUEST-EXIT"
PANIC_MARKERS = ("Kernel panic - not syncing", "---[ end Kernel panic")
PROBE_SECONDS = 20.0
ICOUNT_SMP_PROBE_SECONDS = 90.0
PROBE_MEMO = "accel-probe.json"  # in the VM cache: both probes' answers, by kernel and QEMU version
# Console lines that say what went wrong (a panic's register dump does not).
TELLING = (
    "Kernel panic",
    "BUG:",
    "Oops",
    "sysrq:",
    "Out of memory",
    "oom-kill",
    "mmbench-init:",
    "mmbench: error",
    "Traceback",
    "Error",
    "not syncing",
    "hung_task",
    "watchdog:",
)


def virtiofsd_path() -> str:
    for p in VIRTIOFSD:
        if os.access(p, os.X_OK):
            return p
    found = shutil.which("virtiofsd")
    if found:
        return found
    raise EnvironmentUnsupported(
        "the VM needs virtiofsd (Debian's qemu-system-x86 ships /usr/lib/qemu/virtiofsd): scripts/setup.sh installs it"
    )


def qemu_version() -> str:
    if not shutil.which(QEMU):
        raise EnvironmentUnsupported(f"the VM needs {QEMU} (Debian's qemu-system-x86): scripts/setup.sh installs it")
    out = subprocess.run([QEMU, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "unknown"


def _accel_args(accel: str, clock: str = "host", shift: int = 0) -> list[str]:
    # TCG's default CPU (qemu64) lacks AVX2, which numpy's wheels need: the guest would get SIGILL.
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    args = ["-accel", "tcg", "-cpu", "max"]
    if clock == "instructions":
        # the guest's clock advances 2^shift ns per instruction executed, never with the host's time;
        # sleep=off: an idle guest's clock jumps to its next timer instead of waiting in real time
        args += ["-icount", f"shift={shift},sleep=off,align=off"]
    return args


@dataclass
class InsnPlugin:
    """The TCG instruction-counting plugin (vm/insn_plugin.c) and what it is given."""

    library: Path
    log: Path  # where it writes its counts (in the share: the guest names it too)
    marks: int  # the user address it watches for the guest's requests
    symbols: Path | None = None  # the kernel's function groups (kbuild/symbols.py), if known

    def arg(self) -> str:
        arg = f"{self.library},out={self.log},marks={self.marks:#x}"
        return arg + (f",symbols={self.symbols}" if self.symbols else "")


def _probe_answers(memo: Path) -> dict[str, str]:
    """The probe answers cached in ``memo`` (key → answer), empty when there is none yet."""
    return json.loads(memo.read_text()) if memo.exists() else {}


def _probe_boot(kernel: GuestKernel, cache: Path, accel: list[str], cpus: int, timeout: float) -> tuple[bool, float]:
    """Whether ``kernel`` boots to the initramfs's probe marker under QEMU with the accelerator
    arguments ``accel`` and ``cpus`` vCPUs within ``timeout`` seconds, and the seconds it took."""
    initrd = build_initramfs(kernel, cache)
    argv = [
        QEMU,
        *accel,
        "-m",
        "256M",
        "-smp",
        str(cpus),
        "-nographic",
        "-no-reboot",
        "-kernel",
        str(kernel.image),
        "-initrd",
        str(initrd),
        "-append",
        "console=ttyS0 mmbench.probe=1 panic=-1 quiet",
    ]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, errors="replace")
        ok = PROBE_MARKER in proc.stdout
    except subprocess.TimeoutExpired:
        ok = False
    return ok, time.monotonic() - t0


def probe_accelerator(kernel: GuestKernel, cache: Path, log: Callable[[str], None]) -> str:
    """ "kvm" when a short boot of ``kernel`` under KVM reaches the initramfs, else "tcg".

    /dev/kvm may exist and still not boot a standard kernel (on a PVM guest, for one: "failed to
    set MSR 0x10a" at once, or no output with the CPU spinning), so the answer is a real boot,
    cached per kernel image and QEMU version."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    key = f"{kernel.image}|{kernel.image.stat().st_size}-{int(kernel.image.stat().st_mtime)}-{qemu_version()}"
    if kernel.build and kernel.build.get("config_sha256"):
        # kernels mmbench built from one config boot alike under KVM (a patch to mm/ does not
        # change that): one probe per config, not 20 s per patched image
        key = f"kbuild-config:{kernel.build['config_sha256']}|{qemu_version()}"
    memo = cache / PROBE_MEMO
    known = _probe_answers(memo)
    if key in known:
        return known[key]
    ok, seconds = _probe_boot(kernel, cache, _accel_args("kvm"), 1, PROBE_SECONDS)
    accel = "kvm" if ok else "tcg"
    log(
        f"accelerator probe: KVM {'boots' if ok else 'cannot boot'} {kernel.release} "
        f"({seconds:.1f} s); using {accel.upper()}"
    )
    known[key] = accel
    memo.write_text(json.dumps(known))
    return accel


def probe_icount_smp(kernel: GuestKernel, cache: Path, cpus: int, log: Callable[[str], None]) -> str | None:
    """None when this QEMU runs ``cpus`` vCPUs on the instruction clock, else why not.

    Under ``-icount`` QEMU runs every vCPU on one host thread, in turns.  QEMU 7.2 (Debian 12)
    hands each turn the whole budget up to the next timer deadline, starting from vCPU 0, so a
    second vCPU runs only when vCPU 0 halts: Linux's SMP bring-up, where the boot CPU polls
    (schedule()) for the new one while the new one waits in cpu_init(), never finishes (counted
    with vm/insn_plugin.c: vCPU 1 ran 13,870 instructions against vCPU 0's 8.3 billion in 120 s).
    Newer QEMU divides the budget between the vCPUs.  So the answer is a real boot, cached per
    QEMU version and vCPU count."""
    key = f"icount-smp{cpus}|{qemu_version()}"
    memo = cache / PROBE_MEMO
    known = _probe_answers(memo)
    if key in known:
        return known[key] or None
    ok, seconds = _probe_boot(kernel, cache, _accel_args("tcg", "instructions"), cpus, ICOUNT_SMP_PROBE_SECONDS)
    why = (
        ""
        if ok
        else (
            f"{qemu_version()} did not boot {kernel.release} with {cpus} vCPUs on the instruction clock "
            f"within {ICOUNT_SMP_PROBE_SECONDS:.0f} s (its round-robin gives each turn to vCPU 0 "
            f"until vCPU 0 halts, so SMP bring-up never finishes)"
        )
    )
    log(f"instruction clock probe: {cpus} vCPUs {'boot' if ok else 'do not boot'} ({seconds:.1f} s)")
    known[key] = why
    memo.write_text(json.dumps(known))
    return why or None


@dataclass
class GuestSpec:
    kernel: GuestKernel
    memory_mb: int
    cpus: int
    numa: int
    accel: str
    share: Path  # host dir shared read-write at the same path in the guest
    cmdfile: Path  # inside share: what the guest runs
    disk: Path | None  # ext4 image for /var/tmp
    append: str = ""
    trees: list[TreeDisk] = field(default_factory=list)  # host trees as read-only disks
    clock: str = "host"  # "host" or "instructions" (TCG icount)
    clock_shift: int = 0
    plugin: InsnPlugin | None = None
    below_4g_mb: int | None = None


def console_event(line: str, state: dict[str, Any]) -> None:
    """Update a guest's ``state`` (booted, exit, panic, powering_off) from one console line.

    A panic after the run reported its status and the kernel began powering off is not the run's:
    6.12.117 guests were seen printing "reboot: Power down" and then "Attempted to kill init!"
    when the guest script's shell exited before QEMU stopped; the run's files were all stored."""
    if READY_MARKER in line:
        state["booted"] = True
    elif line.startswith(EXIT_MARKER):
        try:
            state["exit"] = int(line.split()[1])
        except (IndexError, ValueError):
            state["exit"] = 125
    elif line.startswith("reboot: Power down"):
        state["powering_off"] = True
    elif any(m in line for m in PANIC_MARKERS):
        if not (state.get("exit") is not None and state.get("powering_off")):
            state["panic"] = True


@dataclass
class GuestResult:
    exit_code: int | None  # the command's status, None if it never reported one
    panicked: bool
    timed_out: bool
    booted: bool
    wall: float
    tail: list[str] = field(default_factory=list)

    def reason(self) -> str:
        what = (
            "the guest kernel panicked"
            if self.panicked
            else "the guest timed out"
            if self.timed_out
            else "the guest did not boot"
            if not self.booted
            else f"the guest run exited {self.exit_code}"
            if self.exit_code is not None
            else "the guest stopped without a result"
        )
        lines = [l.strip() for l in self.tail if l.strip() and not l.lstrip().startswith("{")]
        telling = [l for l in lines if any(w in l for w in TELLING)]
        shown = (telling or lines)[-8:]
        return what + ("; console: " + " | ".join(shown) if shown else "")


def numa_args(memory_mb: int, cpus: int, nodes: int) -> list[str]:
    """Memory backends shared with virtiofsd (vhost-user needs share=on), split into nodes."""
    if nodes <= 1:
        return ["-object", f"memory-backend-memfd,id=mem0,size={memory_mb}M,share=on", "-numa", "node,memdev=mem0"]
    args: list[str] = []
    per = memory_mb // nodes
    for n in range(nodes):
        args += ["-object", f"memory-backend-memfd,id=mem{n},size={per}M,share=on"]
        node_cpus = [c for c in range(cpus) if c % nodes == n]
        cpu_arg = (
            f",cpus={node_cpus[0]}-{node_cpus[-1]}"
            if len(node_cpus) > 1 and node_cpus == list(range(node_cpus[0], node_cpus[-1] + 1))
            else "".join(f",cpus={c}" for c in node_cpus)
        )
        args += ["-numa", f"node,memdev=mem{n},nodeid={n}{cpu_arg}"]
    return args


class Guest:
    """One boot: virtiofsd x2 + QEMU, the console read line by line."""

    def __init__(self, spec: GuestSpec, workdir: Path, on_pid: Callable[[int], None]) -> None:
        self.spec = spec
        self.workdir = workdir
        self.on_pid = on_pid  # journals every process started, before anything else happens
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(proc)
        self.on_pid(proc.pid)
        return proc

    def run(self, timeout: float, on_line: Callable[[str], None]) -> GuestResult:
        spec = self.spec
        initrd = build_initramfs(spec.kernel, self.workdir.parent)
        vfsd = virtiofsd_path()
        socks = {"hostroot": self.workdir / "root.sock", "mmbench": self.workdir / "share.sock"}
        sources = {"hostroot": "/", "mmbench": str(spec.share)}
        # The host's root is a read-only view that nothing changes during the run: let the guest
        # cache it (cache=always); Python's start-up walks sys.path with thousands of lookups.
        caching = {"hostroot": "always", "mmbench": "auto"}
        for tag, sock in socks.items():
            log = open(self.workdir / f"virtiofsd-{tag}.log", "wb")
            self._spawn(
                [
                    vfsd,
                    f"--socket-path={sock}",
                    "-o",
                    f"source={sources[tag]}",
                    "-o",
                    f"cache={caching[tag]}",
                    "-o",
                    "sandbox=chroot",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 10
        while not all(s.exists() for s in socks.values()):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise EnvironmentUnsupported(f"virtiofsd did not start (see {self.workdir}/virtiofsd-*.log)")
            time.sleep(0.05)
        cmdline = (
            f"console=ttyS0 quiet loglevel=1 panic=-1 mmbench.share={spec.share} "
            f"mmbench.cmd={spec.cmdfile} {spec.append}"
        ).strip()
        argv = [
            QEMU,
            *_accel_args(spec.accel, spec.clock, spec.clock_shift),
            "-m",
            f"{spec.memory_mb}M",
            "-smp",
            str(spec.cpus),
            *numa_args(spec.memory_mb, spec.cpus, spec.numa),
            "-nographic",
            "-no-reboot",
            "-chardev",
            f"socket,id=c0,path={socks['hostroot']}",
            "-device",
            "vhost-user-fs-pci,chardev=c0,tag=hostroot",
            "-chardev",
            f"socket,id=c1,path={socks['mmbench']}",
            "-device",
            "vhost-user-fs-pci,chardev=c1,tag=mmbench",
            "-kernel",
            str(spec.kernel.image),
            "-initrd",
            str(initrd),
            "-append",
            cmdline,
        ]
        if spec.below_4g_mb:
            argv += ["-machine", f"pc,max-ram-below-4g={spec.below_4g_mb}M"]
        if spec.plugin is not None:
            argv += ["-plugin", spec.plugin.arg()]
        if spec.disk is not None:
            argv += [
                "-drive",
                f"file={spec.disk},if=none,id=scratch,format=raw",
                "-device",
                f"virtio-blk-pci,drive=scratch,serial={SCRATCH_SERIAL}",
            ]
        for i, t in enumerate(spec.trees):
            # readonly=on: the guest cannot write the image even if it tried (the image is shared
            # by every run of the same tree)
            argv += [
                "-drive",
                f"file={t.image},if=none,id=tree{i},format=raw,readonly=on",
                "-device",
                f"virtio-blk-pci,drive=tree{i},serial={t.serial}",
            ]
        t0 = time.monotonic()
        qemu = self._spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        tail: collections.deque[str] = collections.deque(maxlen=200)
        state: dict[str, Any] = {"exit": None, "panic": False, "booted": False, "powering_off": False}
        console = open(self.workdir / "console.log", "w", errors="replace")

        def reader() -> None:
            assert qemu.stdout is not None
            for raw in qemu.stdout:
                line = raw.decode(errors="replace").rstrip("\r\n")
                console.write(line + "\n")
                tail.append(line)
                console_event(line, state)
                on_line(line)

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        timed_out = False
        try:
            qemu.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            self.stop()
            t.join(timeout=5)
            console.close()
        return GuestResult(state["exit"], state["panic"], timed_out, state["booted"], time.monotonic() - t0, list(tail))

    def stop(self) -> None:
        """QEMU first (it holds the shares), then the virtiofsd processes; by PID, ours only."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
