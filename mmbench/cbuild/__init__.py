"""The C builder: every C program and library of the package, compiled on first use and cached.

``binary_for(source)`` compiles ``source`` with gcc into ``$MMBENCH_CACHE`` (default
``~/.cache/mmbench/bin``) under a name keyed by the hash of the source, the headers beside it, the
shared header ``mmbench_util.h`` (this folder, on the include path of every build) and the flags,
so an edited source is rebuilt and an unchanged one never is.  No manual build step.  It sits at
the bottom so that every stage (runner, importers, analysis) can build its C.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from mmbench.errors import EnvironmentUnsupported
from mmbench.model.cache import cache_root

CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-pthread"]
LIBS = ["-lm", "-lrt"]
# the folder of the header every C source of the package may include (mmbench_util.h)
INCLUDE_DIR = Path(__file__).resolve().parent
SHARED_HEADER = INCLUDE_DIR / "mmbench_util.h"


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
    # the headers beside the source and the shared one are part of every program built there
    headers = b"".join(h.read_bytes() for h in sorted({*source.parent.glob("*.h"), SHARED_HEADER}))
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
    proc = subprocess.run(
        [cc, *cflags, f"-I{INCLUDE_DIR}", "-o", tmp, str(source), *libs], capture_output=True, text=True
    )
    if proc.returncode != 0:
        os.unlink(tmp)
        raise EnvironmentUnsupported(f"building {source.name} failed: {_compiler_said(cc, proc)}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)  # atomic: a concurrent build of the same source is harmless
    return str(out)


def _compiler_said(cc: str, proc: subprocess.CompletedProcess) -> str:
    """The compiler's own error text, or, when it printed none (killed by a signal, e.g. by the OOM
    killer), how it ended: an empty reason would say nothing."""
    text = proc.stderr.strip()
    if text:
        return "\n" + text
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return f"{cc} was killed by {name} and printed nothing"
    return f"{cc} exited {proc.returncode} and printed nothing"
