"""Debian's kernel source packages on this machine: the ``/usr/src/linux-source-X.Y.tar.xz``
tarballs installed, and which one is the distribution's default (the package Debian's
``linux-source`` metapackage depends on: linux-source-6.1 on bookworm), so that installing a
second version (``scripts/setup.sh`` installs linux-source-6.12 too) does not change what
``--kernel source`` builds or what kernbench compiles."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SRC_DIR = Path("/usr/src")
TARBALL = re.compile(r"^(linux-source-([0-9]+)\.([0-9]+))\.tar\.xz$")


def installed(src_dir: Path = SRC_DIR) -> list[Path]:
    """Every linux-source tarball in ``src_dir``, oldest version first."""
    found = []
    for p in src_dir.glob("linux-source-*.tar.xz"):
        m = TARBALL.match(p.name)
        if m:
            found.append(((int(m.group(2)), int(m.group(3))), p))
    return [p for _, p in sorted(found)]


def default_package() -> str | None:
    """The linux-source-X.Y package Debian's ``linux-source`` metapackage depends on, if it is
    installed (``dpkg-query``); None elsewhere."""
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Depends}", "linux-source"], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    m = re.search(r"\b(linux-source-[0-9]+\.[0-9]+)\b", proc.stdout) if proc.returncode == 0 else None
    return m.group(1) if m else None


def default_tarball(src_dir: Path = SRC_DIR) -> Path | None:
    """The default package's tarball; without the metapackage, the newest one installed."""
    pkg = default_package()
    if pkg and (src_dir / f"{pkg}.tar.xz").is_file():
        return src_dir / f"{pkg}.tar.xz"
    found = installed(src_dir)
    return found[-1] if found else None
