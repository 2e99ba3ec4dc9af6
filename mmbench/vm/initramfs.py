"""The guest's initramfs (``build_initramfs``): busybox, the modules that reach the host's
filesystem, and an init that mounts the host's root read-only under a tmpfs overlay, the scratch
disk and mmbench's share, then runs the command file (``mmbench.probe=1``: only the accelerator
probe).  Written as a "newc" cpio archive here and cached by content.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import stat
from pathlib import Path

from mmbench.errors import EnvironmentUnsupported
from mmbench.model.guest_kernel import GuestKernel

BUSYBOX = Path("/usr/bin/busybox")  # Debian's busybox-static: no shared libraries needed

# Loaded in this order (each after its dependencies); a module built into the kernel is simply
# absent.  Debian's 6.1 cloud kernels build all of these as modules (CONFIG_VIRTIO_FS=m,
# FUSE_FS=m, OVERLAY_FS=m, VIRTIO_PCI=m, VIRTIO_BLK=m; NET_9P is not set, so 9p is no option).
EARLY_MODULES = [
    "virtio",
    "virtio_ring",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "fuse",
    "virtiofs",
    "virtio_blk",
    "overlay",
    "crc16",
    "mbcache",
    "jbd2",
    "ext4",
]

PROBE_MARKER = "MMBENCH-PROBE-OK"
SCRATCH_SERIAL = "mmbench-scratch"  # the scratch disk's virtio-blk serial (other disks: vm/trees.py)
READY_MARKER = "MMBENCH-GUEST-READY"

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in @MODULES@; do [ -f /mods/$m.ko ] && insmod /mods/$m.ko 2>/dev/null; done
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p"; }
if [ "$(arg mmbench.probe)" = 1 ]; then echo @PROBE@; poweroff -f; fi
die() { echo "mmbench-init: $*"; echo "MMBENCH-GUEST-EXIT 125"; poweroff -f; }
mkdir -p /lower /upper /newroot
mount -t virtiofs -o ro hostroot /lower || die "cannot mount the host's root over virtiofs"
mount -t tmpfs -o mode=0755 tmpfs /upper && mkdir -p /upper/up /upper/work
if ! mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/up,workdir=/upper/work /newroot; then
  echo "mmbench-init: no overlayfs: read-only root with tmpfs on /tmp /run /root"
  mount --move /lower /newroot
  for d in tmp run root var/lib/mmbench; do mount -t tmpfs tmpfs /newroot/$d; done
fi
mount -t tmpfs tmpfs /newroot/run
mkdir -p /newroot/var/lib/mmbench && mount -t tmpfs tmpfs /newroot/var/lib/mmbench
# disks are found by serial (/sys/block/vdX/serial), not by their order of discovery
for b in /sys/block/vd*; do [ "$(cat $b/serial 2>/dev/null)" = @SCRATCH@ ] && scratch=/dev/${b##*/}; done
[ -n "$scratch" ] && { mount -t ext4 $scratch /newroot/var/tmp || die "cannot mount the scratch disk"; }
share=$(arg mmbench.share); cmd=$(arg mmbench.cmd)
mkdir -p /newroot$share 2>/dev/null; mount -t virtiofs mmbench /newroot$share || die "cannot mount $share"
mount --move /proc /newroot/proc; mount --move /sys /newroot/sys; mount --move /dev /newroot/dev
# loopback up: largecopy serves its tarball over http://127.0.0.1 (a kernel brings lo up only when told)
ip link set lo up 2>/dev/null
echo @READY@
exec switch_root /newroot /bin/sh "$cmd"
"""


def _cpio_entry(out: io.BytesIO, name: str, mode: int, data: bytes = b"", ino: int = 0) -> None:
    nb = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0]
    out.write(b"070701" + b"".join(f"{f:08X}".encode() for f in fields) + nb)
    out.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
    out.write(data)
    out.write(b"\0" * ((4 - len(data) % 4) % 4))


def _module_paths(kernel: GuestKernel) -> dict[str, Path]:
    """Module name → .ko file, from modules.dep (installed layout) or the build tree."""
    found: dict[str, Path] = {}
    if kernel.modules is None:
        return found
    dep = kernel.modules / "modules.dep"
    rels = (
        [line.split(":", 1)[0] for line in dep.read_text().splitlines()]
        if dep.exists()
        else [str(p.relative_to(kernel.modules)) for p in kernel.modules.rglob("*.ko")]
    )
    for rel in rels:
        base = os.path.basename(rel)
        name = base.split(".ko")[0].replace("-", "_")
        found.setdefault(name, kernel.modules / rel)
    return found


def _read_module(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    if path.name.endswith(".zst"):
        raise EnvironmentUnsupported(f"{path}: zstd-compressed modules are not supported yet")
    return data


def build_initramfs(kernel: GuestKernel, cache: Path) -> Path:
    """The initramfs for ``kernel`` (built once per content); returns its path."""
    if not BUSYBOX.is_file():
        raise EnvironmentUnsupported(
            "the VM needs Debian's busybox-static (/usr/bin/busybox): scripts/setup.sh installs it"
        )
    mods = _module_paths(kernel)
    chosen = [(m, mods[m]) for m in EARLY_MODULES if m in mods]
    init = (
        INIT.replace("@MODULES@", " ".join(m for m, _ in chosen))
        .replace("@PROBE@", PROBE_MARKER)
        .replace("@SCRATCH@", SCRATCH_SERIAL)
        .replace("@READY@", READY_MARKER)
    )
    files: list[tuple[str, int, bytes]] = [
        ("bin/busybox", 0o100755, BUSYBOX.read_bytes()),
        ("init", 0o100755, init.encode()),
    ]
    files += [(f"mods/{m}.ko", 0o100644, _read_module(p)) for m, p in chosen]
    digest = hashlib.sha256()
    for name, mode, data in files:
        digest.update(name.encode() + mode.to_bytes(4, "little") + hashlib.sha256(data).digest())
    out_path = cache / f"initramfs-{kernel.release}-{digest.hexdigest()[:12]}.cpio.gz"
    if out_path.exists():
        return out_path
    buf = io.BytesIO()
    ino = 1
    for d in ("bin", "mods", "proc", "sys", "dev", "lower", "upper", "newroot"):
        _cpio_entry(buf, d, stat.S_IFDIR | 0o755, ino=ino)
        ino += 1
    for name, mode, data in files:
        _cpio_entry(buf, name, mode, data, ino=ino)
        ino += 1
    _cpio_entry(buf, "TRAILER!!!", 0)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + f".{os.getpid()}")
    tmp.write_bytes(gzip.compress(buf.getvalue(), compresslevel=1))
    os.replace(tmp, out_path)
    return out_path
