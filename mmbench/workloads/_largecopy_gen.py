"""Generate largecopy's source tarball: a kernel-tree-like mix of directories and small text files.

Usage: ``python -m mmbench.workloads._largecopy_gen OUT.tar.gz SIZE_BYTES SEED``

Deterministic for a given (size, seed, GENERATOR_VERSION): a seeded RNG picks directory names,
file names, sizes (log-normal around 8 KiB, like source files) and the text (lines of pseudo-C
drawn from a seeded pool), and every tar header has fixed owner, mode and mtime, so the bytes are
the same on every machine.  Written to OUT.tmp-<pid> and renamed, so a concurrent generator or a
crash never leaves a half-written cache file.  Runs inside the sandbox (it is preparation, not
timed).
"""

from __future__ import annotations

import gzip
import io
import math
import os
import random
import sys
import tarfile

GENERATOR_VERSION = 1
ROOT = "linux-synth"
TOP_DIRS = [
    "arch",
    "block",
    "crypto",
    "drivers",
    "fs",
    "include",
    "init",
    "ipc",
    "kernel",
    "lib",
    "mm",
    "net",
    "samples",
    "scripts",
    "security",
    "sound",
    "tools",
    "virt",
    "Documentation",
]
# relative weight of each top-level directory (drivers dominates, like the kernel)
TOP_WEIGHTS = [8, 1, 1, 30, 8, 6, 1, 1, 3, 2, 2, 8, 1, 2, 2, 5, 4, 1, 6]
SYLLABLES = [
    "ac",
    "al",
    "ata",
    "bus",
    "cpu",
    "dev",
    "dma",
    "eth",
    "fb",
    "gpio",
    "hid",
    "i2c",
    "irq",
    "kvm",
    "mem",
    "mmc",
    "net",
    "nfs",
    "pci",
    "phy",
    "pm",
    "qos",
    "rtc",
    "scsi",
    "spi",
    "tty",
    "usb",
    "vfs",
    "wl",
    "xfs",
    "zs",
    "core",
    "ops",
    "ctl",
    "io",
    "map",
    "sys",
    "page",
    "lru",
]
WORDS = [
    "static",
    "int",
    "void",
    "struct",
    "unsigned",
    "long",
    "return",
    "if",
    "else",
    "for",
    "while",
    "const",
    "page",
    "folio",
    "zone",
    "node",
    "lock",
    "spin_lock",
    "mutex",
    "atomic_t",
    "list_head",
    "kmalloc",
    "kfree",
    "GFP_KERNEL",
    "NULL",
    "err",
    "ret",
    "dev",
    "nr_pages",
    "pfn",
    "order",
    "flags",
    "unlikely",
    "likely",
    "goto",
    "out",
    "break",
    "size_t",
    "u64",
    "u32",
    "bool",
    "true",
    "false",
    "EINVAL",
    "ENOMEM",
    "pr_debug",
    "WARN_ON",
    "BUG_ON",
    "sizeof",
    "memcg",
    "lruvec",
]


def _name(rng: random.Random, parts: int) -> str:
    return "_".join(rng.choice(SYLLABLES) for _ in range(parts))


def _line_pool(rng: random.Random, n: int = 6000) -> list[bytes]:
    pool = []
    for _ in range(n):
        indent = "\t" * rng.choice((0, 1, 1, 1, 2, 2, 3))
        kind = rng.random()
        if kind < 0.08:
            text = ""
        elif kind < 0.2:
            text = "/* " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) + " */"
        elif kind < 0.3:
            text = f"#define {_name(rng, 2).upper()} {rng.randint(0, 1 << 16):#x}"
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) + rng.choice(
                (";", ";", " {", "}", ",")
            )
        pool.append((indent + text + "\n").encode())
    return pool


def _file_size(rng: random.Random) -> int:
    return int(min(max(rng.lognormvariate(math.log(8192), 1.1), 200), 256 * 1024))


def generate(out: str, size: int, seed: int) -> tuple[int, int]:
    """Write the tarball; returns (files, uncompressed content bytes)."""
    rng = random.Random(f"largecopy-{GENERATOR_VERSION}-{seed}")
    pool = _line_pool(rng)
    tmp = f"{out}.tmp-{os.getpid()}"
    nfiles = total = 0
    dirs_made: set[str] = set()
    names: set[str] = set()

    def add_dir(tf: tarfile.TarFile, path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs_made:
                dirs_made.add(d)
                ti = tarfile.TarInfo(d)
                ti.type, ti.mode, ti.mtime, ti.uname, ti.gname = tarfile.DIRTYPE, 0o755, 1300000000, "root", "root"
                tf.addfile(ti)

    try:
        # gzip header with mtime 0 and no file name: the same bytes on every run
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf,
        ):
            while total < size:
                top = rng.choices(TOP_DIRS, TOP_WEIGHTS)[0]
                d = "/".join([ROOT, top] + [_name(rng, rng.randint(1, 2)) for _ in range(rng.randint(0, 3))])
                if d in names:
                    d += f"_{nfiles}"
                add_dir(tf, d)
                for _ in range(rng.randint(3, 40)):
                    if total >= size:
                        break
                    fsize = min(_file_size(rng), max(size - total, 1))
                    ext = rng.choices((".c", ".h", ".txt", ".S", ""), (55, 30, 5, 3, 7))[0]
                    fname = _name(rng, rng.randint(1, 3)) + ext if ext else rng.choice(("Makefile", "Kconfig"))
                    path = f"{d}/{fname}"
                    if path in names or path in dirs_made:
                        path = f"{d}/{nfiles}_{fname}"
                    names.add(path)
                    buf = bytearray()
                    while len(buf) < fsize:
                        buf += b"".join(rng.choices(pool, k=64))
                    data = bytes(buf[:fsize])
                    ti = tarfile.TarInfo(path)
                    ti.size, ti.mode, ti.mtime, ti.uname, ti.gname = len(data), 0o644, 1300000000, "root", "root"
                    tf.addfile(ti, io.BytesIO(data))  # a duplicate name simply overwrites on unpack
                    nfiles += 1
                    total += len(data)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return nfiles, total


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m mmbench.workloads._largecopy_gen OUT.tar.gz SIZE_BYTES SEED", file=sys.stderr)
        return 2
    nfiles, total = generate(argv[0], int(argv[1]), int(argv[2]))
    print(f"files {nfiles} bytes {total} out {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
