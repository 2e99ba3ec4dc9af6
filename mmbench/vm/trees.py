"""Host trees a guest reads, given to it as read-only ext4 disks instead of through virtiofs.

A workload that reads a large host directory in a guest (kernbench: the unpacked linux-source
tree, about 84,000 files) names it in ``Workload.guest_trees``.  Through virtiofs every inode the
guest has looked up costs QEMU's C virtiofsd one open O_PATH file descriptor until the guest
forgets it, so walking such a tree exhausts virtiofsd's RLIMIT_NOFILE: on our machines the hard
limit is 20,000 and cannot be raised, not even by root (no CAP_SYS_RESOURCE), and make stopped
with "INTERNAL: readdir: Too many open files".  So each tree becomes an ext4 image (``mke2fs -d``
copies a directory into a new filesystem without mounting anything on the host), built once and
cached by the tree's identity, attached read-only (``readonly=on``) and mounted read-only at the
tree's own path in the guest, where the guest's block layer and page cache do the work and
nothing can write back into the host's cache.

A tree must not change once made (kernbench replaces its tree as a whole, by rename): the cache
key is the directory's path, inode and change time, not its content.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import EnvironmentUnsupported, UsageError

BLOCK = 4096
INODE_SIZE = 256
SERIAL_PREFIX = "mmbench-tree"  # virtio-blk serials (at most 20 bytes): mmbench-tree0, ...


@dataclass(frozen=True)
class TreeDisk:
    tree: Path  # the host directory, mounted at the same path in the guest
    image: Path  # its read-only ext4 image
    serial: str  # the virtio-blk serial the guest finds it by (/sys/block/vdX/serial)


def suite_trees(suite: Any, log: Callable[[str], None]) -> list[Path]:
    """The host trees the suite's workloads and their companions read in a guest (prepared on
    the host by the workloads), each once, in order."""
    out: list[Path] = []
    for w in suite.workloads:
        for wl, params in [(w.workload, w.params), *w.companions]:
            for tree in wl.guest_trees(params, log):
                tree = Path(tree).resolve()
                if tree not in out:
                    out.append(tree)
    return out


def _footprint(tree: Path) -> tuple[int, int]:
    """(4 KiB blocks, inodes) the tree needs in a new ext4 filesystem."""
    blocks = inodes = 0
    for root, dirs, files in os.walk(tree):
        inodes += 1 + len(dirs) + len(files)
        blocks += 1 + len(dirs)
        for name in files:
            st = os.lstat(os.path.join(root, name))
            blocks += -(-st.st_size // BLOCK)
    return blocks, inodes


def image_key(tree: Path) -> str:
    st = tree.stat()
    return hashlib.sha256(f"{tree}|{st.st_dev}|{st.st_ino}|{st.st_ctime_ns}".encode()).hexdigest()[:12]


def tree_image(tree: Path, cache: Path, log: Callable[[str], None]) -> Path:
    """The read-only ext4 image of ``tree`` (built once, under a lock, renamed into place when
    complete; older images of the same tree are removed)."""
    if not tree.is_dir():
        raise UsageError(f"{tree}: a workload asked for this host tree in the guest, but it is not a directory")
    # one image per tree path; the key changes when the tree is replaced
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", tree.name) + "-" + hashlib.sha256(str(tree).encode()).hexdigest()[:8]
    image = cache / f"{stem}-{image_key(tree)}.ext4"
    if image.exists():
        return image
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image.exists():
            return image
        for stale in cache.glob(f".{stem}-*.ext4.*"):  # a build that was killed (we hold the lock)
            stale.unlink(missing_ok=True)
        blocks, inodes = _footprint(tree)
        # room for the inode tables, directories' extra blocks and ext4's own metadata: +10 %,
        # +64 MiB; a sparse file, so the slack costs no disk
        inodes = inodes + inodes // 10 + 1024
        size = (blocks + inodes * INODE_SIZE // BLOCK) * BLOCK * 11 // 10 + (64 << 20)
        tmp = image.with_name(f".{image.name}.{os.getpid()}")
        log(f"making a read-only disk of {tree} for the guest ({blocks * BLOCK >> 20} MiB, {inodes} inodes; once)")
        # no journal (never written), no reserved blocks; -d copies the tree, owners and modes kept
        argv = [
            "mke2fs",
            "-q",
            "-F",
            "-t",
            "ext4",
            "-O",
            "^has_journal",
            "-m",
            "0",
            "-b",
            str(BLOCK),
            "-I",
            str(INODE_SIZE),
            "-N",
            str(inodes),
            "-L",
            "mmbench-tree",
            "-d",
            str(tree),
            str(tmp),
            f"{size // 1024}k",
        ]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True)
        except FileNotFoundError:
            raise EnvironmentUnsupported(
                "the VM needs mke2fs (Debian's e2fsprogs) to give the guest a host tree: scripts/setup.sh installs it"
            ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise EnvironmentUnsupported(f"mke2fs -d {tree} failed: {msg[-1] if msg else proc.returncode}")
        os.replace(tmp, image)
        for old in cache.glob(f"{stem}-*.ext4"):  # the same tree before it was replaced
            if old != image:
                old.unlink(missing_ok=True)
    return image


def tree_disks(trees: list[Path], cache: Path, log: Callable[[str], None]) -> list[TreeDisk]:
    return [TreeDisk(t, tree_image(t, cache, log), f"{SERIAL_PREFIX}{i}") for i, t in enumerate(trees)]
