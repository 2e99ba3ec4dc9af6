"""Helpers shared by the THP, allocator and reclaim workloads (thpavail, thpfault, highalloc, pft,
usemem, stutter).

Background load comes from ``bgload.c`` run inside the sandbox, so its page cache and anon memory
are charged to the sandbox like the measured program's.  Nothing here touches the machine outside
the journal: mounts and loop devices are recorded before they exist.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from mmbench.model.kernel import page_size, thp_size, vmstat
from mmbench.model.quirks import MEMCG_DIRTY_KEYS, MEMCG_WRITEBACK_KEYS, cgroup_file
from mmbench.errors import EnvironmentUnsupported, WorkloadError
from mmbench.model.guest import in_guest
from mmbench.workloads.base import WorkloadContext

UNIT = thp_size()  # a PMD-sized THP on this kernel


def start_bg(ctx: WorkloadContext, args: list[str], raw: str) -> subprocess.Popen:
    """Start ``bgload ARGS`` in the sandbox, stderr kept in rawdir/<raw>.err."""
    return ctx.spawn([ctx.binary("bgload"), *map(str, args)], stdout=None, stderr=f"{raw}.err")


def start_hog(ctx: WorkloadContext, size: int, pause_ms: int = 0, timeout: float = 120.0) -> subprocess.Popen:
    """Start an anon hog of ``size`` bytes and wait until it has faulted everything in."""
    proc = ctx.spawn([ctx.binary("bgload"), "hog", str(size), str(pause_ms)], stdout="-", stderr="hog.err")
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or line[0].strip() != "ready":
        ctx.stop(proc)
        if ctx.sandbox.oom_kills():
            raise WorkloadError(f"the {size >> 20} MiB memory hog was OOM-killed in the sandbox")
        raise WorkloadError("the memory hog did not start (see raw/hog.err)")
    return proc


def make_file(ctx: WorkloadContext, path: Path, size: int, raw: str = "mkfile") -> None:
    """Create ``path`` with ``size`` bytes of real (incompressible, not sparse) data, in the sandbox."""
    ctx.run([ctx.binary("bgload"), "mkfile", str(path), str(size)], raw_name=f"{raw}.out")


def wait_free_below(ctx: WorkloadContext, threshold: int, timeout: float) -> float:
    """Wait until the sandbox has less than ``threshold`` bytes free; returns the seconds waited
    (``timeout`` if it never got there)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ctx.sandbox.free() < threshold:
            break
        time.sleep(0.05)
    return time.monotonic() - t0


def drop_file_cache(path: Path) -> bool:
    """Write ``path`` back and drop its page cache (POSIX_FADV_DONTNEED): one file, not the
    machine's caches.  False if the kernel kept some (pages still dirty or mapped)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def dirty_bytes(ctx: WorkloadContext) -> int:
    """Dirty + writeback page cache the workload can see: the machine's (/proc/vmstat) in
    whole-machine mode, the memcg's (memory.stat: v1 dirty/writeback, v2 file_dirty/
    file_writeback) in a memcg sandbox."""
    if getattr(ctx.sandbox, "whole_machine", False):
        v = vmstat()
        return (v.get("nr_dirty", 0) + v.get("nr_writeback", 0)) * page_size()
    st = ctx.sandbox.stat()
    return sum(st.get(k, 0) for k in MEMCG_DIRTY_KEYS + MEMCG_WRITEBACK_KEYS)


def wait_dirty_above(ctx: WorkloadContext, threshold: int, timeout: float) -> float:
    """Wait until dirty + writeback pages reach ``threshold`` bytes; returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if dirty_bytes(ctx) >= threshold:
            break
        time.sleep(0.05)
    return time.monotonic() - t0


def device_numbers(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def throttle_writes(ctx: WorkloadContext, dev: str, bps: int) -> bool:
    """Limit the sandbox's write bandwidth to ``dev``.  The file belongs to the sandbox's own
    blkio/io cgroup, which is removed with the sandbox, so there is nothing to restore."""
    path = ctx.sandbox.blkio_path
    if path is None or bps <= 0:
        return False
    majmin = device_numbers(dev)
    limit = f"{majmin} {bps}" if ctx.sandbox.version == 1 else f"{majmin} wbps={bps}"
    (path / cgroup_file("write_bps", ctx.sandbox.version)).write_text(limit)
    return True


def kernel_filesystems() -> set[str]:
    out = set()
    for line in Path("/proc/filesystems").read_text().splitlines():
        parts = line.split()
        if parts:
            out.add(parts[-1])
    return out


MKFS = {
    "vfat": ["mkfs.vfat"],
    "ext2": ["mkfs.ext2", "-F", "-q"],
    "ext4": ["mkfs.ext4", "-F", "-q"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
}


def _load_fs_module(fs: str) -> None:
    """Inside an mmbench VM guest, load a filesystem built as a module (Debian's kernels have
    CONFIG_VFAT_FS=m): the module dies with the guest.  On a host mmbench loads no modules."""
    if fs not in kernel_filesystems() and in_guest() and shutil.which("modprobe"):
        subprocess.run(["modprobe", "-q", fs], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pick_loop_fs(wanted: str) -> str:
    """``auto``: vfat (the USB-stick case) when the kernel has it, else ext2."""
    for fs in ("vfat",) if wanted == "auto" else (wanted,):
        _load_fs_module(fs)
    have = kernel_filesystems()
    if wanted == "auto":
        return "vfat" if "vfat" in have and shutil.which("mkfs.vfat") else "ext2"
    if wanted not in have:
        raise EnvironmentUnsupported(f"this kernel has no {wanted} filesystem (see /proc/filesystems)")
    return wanted


def mount_loop_fs(ctx: WorkloadContext, size: int, fs: str, name: str = "loopfs") -> tuple[Path, str]:
    """Create a ``size`` image of filesystem ``fs`` in the workdir and loop-mount it; returns
    (mountpoint, loop device).  The mount is journaled before it is made; ``mount -o loop`` sets
    autoclear, so unmounting (the journal's undo) also detaches the loop device, which is
    journaled as well."""
    mkfs = MKFS[fs]
    if shutil.which(mkfs[0]) is None:
        pkg = {"vfat": "dosfstools", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}.get(fs, "e2fsprogs")
        raise EnvironmentUnsupported(f"{mkfs[0]} not found: install {pkg}")
    img = ctx.workdir / f"{name}.img"
    mnt = ctx.workdir / f"{name}.mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    with open(img, "wb") as fh:
        fh.truncate(size)
    ctx.run([*mkfs, str(img)], raw_name=f"{name}-mkfs.out")
    ctx.record_mount(mnt)
    ctx.run(["mount", "-t", fs, "-o", "loop", str(img), str(mnt)], raw_name=f"{name}-mount.out")
    out = ctx.run(["losetup", "-j", str(img)], raw_name=f"{name}-losetup.out").stdout
    m = re.match(r"(/dev/loop\d+):", out.strip())
    if not m:
        raise WorkloadError(f"cannot find the loop device of {img}: {out.strip()!r}")
    dev = m.group(1)
    ctx.record_loop_device(dev)
    # Direct IO on the backing file: no second copy of the data in the page cache.
    ctx.run(["losetup", "--direct-io=on", dev], raw_name=f"{name}-dio.out", check=False)
    return mnt, dev


def stop_all(ctx: WorkloadContext, procs: list[Any]) -> None:
    for p in procs:
        try:
            ctx.stop(p)
        except Exception:
            pass


def parse_kv_line(line: str) -> dict[str, int]:
    parts = line.split()
    it = iter(parts)
    return {k: int(v) for k, v in zip(it, it)}
