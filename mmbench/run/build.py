"""Build the C programs that sit beside workloads and monitors, automatically and cached.

``binary_for(source)`` compiles ``source`` with gcc into ``$MMBENCH_CACHE`` (default
``~/.cache/mmbench/bin``) under a name keyed by the hash of the source, the headers beside it and
the flags, so an edited source is rebuilt and an unchanged one never is.  No manual build step.
``build_all()`` builds every C source of the package as it is installed (scripts/check-wheel).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from mmbench.errors import EnvironmentUnsupported
from mmbench.model.cache import cache_root

CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-pthread"]
LIBS = ["-lm", "-lrt"]


def cache_dir() -> Path:
    return cache_root() / "bin"


def binary_for(source: str | Path) -> str:
    """Path of the compiled program for ``source`` (a .c file), building it if needed."""
    return _build(Path(source), CFLAGS, LIBS, "")


# a library loaded into Python with ctypes: position-independent, and no fused multiply-add, so
# its arithmetic rounds as Python's does (analysis/exactsum.c)
LIB_CFLAGS = ["-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-ffp-contract=off"]


def library_for(source: str | Path) -> str:
    """Path of the shared library built from ``source`` (a .c file), building it if needed."""
    return _build(Path(source), LIB_CFLAGS, ["-lm"], ".so")


PACKAGE_DIR = Path(__file__).resolve().parent.parent
_MAIN = re.compile(rb"^\s*int\s+main\s*\(", re.M)


def package_sources() -> list[Path]:
    """Every C source in the package folder (as installed: a wheel's copy, or the checkout)."""
    return sorted(p for p in PACKAGE_DIR.rglob("*.c") if "__pycache__" not in p.parts)


def build_source(source: str | Path) -> str:
    """The program (a source that defines ``main``) or else the shared library built from ``source``."""
    source = Path(source)
    return binary_for(source) if _MAIN.search(source.read_bytes()) else library_for(source)


def build_all() -> dict[Path, str]:
    """Build every C source of the package (``package_sources``): source → program or library."""
    return {src: build_source(src) for src in package_sources()}


def _build(source: Path, cflags: list[str], libs: list[str], suffix: str) -> str:
    text = source.read_bytes()
    # the headers beside the source (mmbench_util.h) are part of every program built there
    # (and the shared mmbench_util.h, which the monitors' programs include from workloads/)
    shared = Path(__file__).resolve().parent.parent / "workloads" / "mmbench_util.h"
    headers = b"".join(h.read_bytes() for h in sorted({*source.parent.glob("*.h"), shared}))
    digest = hashlib.sha256(text + headers + " ".join(cflags + libs).encode()).hexdigest()[:16]
    out = cache_dir() / f"{source.stem}-{digest}{suffix}"
    if out.exists():
        return str(out)
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if not cc:
        raise EnvironmentUnsupported("no C compiler found (install gcc) to build " + source.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{source.stem}-")
    os.close(fd)
    proc = subprocess.run([cc, *cflags, "-o", tmp, str(source), *libs], capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise EnvironmentUnsupported(f"building {source.name} failed:\n{proc.stderr.strip()}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)  # atomic: a concurrent build of the same source is harmless
    return str(out)
