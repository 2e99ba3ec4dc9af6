"""Where mmbench keeps what it can rebuild: compiled C programs, downloaded kernels, unpacked
sources, materialised PostgreSQL runs.  ``$MMBENCH_CACHE``, else ``$XDG_CACHE_HOME/mmbench``,
else ``~/.cache/mmbench``.  Made absolute here: compiled programs are run from other working
directories."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("MMBENCH_CACHE")
    if base:
        return Path(base).absolute()
    return (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmbench").absolute()
