"""The environment fingerprint of a run: what a comparison must know to be trusted.

Kernel release, version and command line; every readable /proc/sys/vm value; THP and
khugepaged settings; swap devices and zswap; CPU model and count; memory; NUMA nodes; DAMON
(read only: whether kdamond threads run and their state); cgroup version; mmbench version and the
suite's hash.  ``mmbench compare`` prints the lines that differ between runs first.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

from mmbench import __version__
from mmbench.model.results import flatten as flatten_dict
from mmbench.model.kernel import meminfo, read_knob
from mmbench.run.sandbox import cgroup_version

# Write-only or side-effecting files that must not be read as settings.
_VM_SKIP = {"drop_caches", "compact_memory", "stat_refresh"}
THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
# khugepaged statistics, not settings: they change on their own and would show as a difference.
_THP_SKIP = {"full_scans", "pages_collapsed"}


def _read(path: str | Path, default: str = "") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _dir_values(root: Path, skip: set[str] = set(), depth: int = 1) -> dict[str, str]:
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for p in sorted(root.iterdir()):
        if p.name in skip:
            continue
        if p.is_dir() and depth > 0:
            for k, v in _dir_values(p, skip, depth - 1).items():
                out[f"{p.name}.{k}"] = v
        elif p.is_file() and os.access(p, os.R_OK) and (p.stat().st_mode & 0o444):
            try:
                out[p.name] = read_knob(p)
            except OSError:
                pass
    return out


def _cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _kdamonds() -> dict[str, Any]:
    threads = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            comm = _read(p / "comm")
            if comm.startswith("kdamond"):
                threads.append(comm)
    states = {}
    admin = Path("/sys/kernel/mm/damon/admin/kdamonds")
    if admin.is_dir():
        for d in sorted(admin.iterdir()):
            if d.name.isdigit():
                states[d.name] = _read(d / "state")
    return {"threads": sorted(threads), "states": states}


def _meminfo() -> dict[str, int]:
    m = meminfo()
    return {k: m[k] * 1024 for k in ("MemTotal", "SwapTotal", "Hugepagesize") if k in m}


def _swaps() -> list[str]:
    return [" ".join(line.split()[:3]) for line in _read("/proc/swaps").splitlines()[1:]]


def fingerprint(
    suite_hash: str = "", budget: int | None = None, sandbox: str = "memcg", aims: list[str] | None = None
) -> dict[str, Any]:
    uname = os.uname()
    nodes = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    return {
        "host": socket.gethostname(),
        "kernel": {"release": uname.release, "version": _read("/proc/version"), "cmdline": _read("/proc/cmdline")},
        "vm": _dir_values(Path("/proc/sys/vm"), _VM_SKIP, depth=0),
        "thp": _dir_values(THP_DIR, _THP_SKIP, depth=1),
        "swap": {"devices": _swaps(), "zswap": _dir_values(Path("/sys/module/zswap/parameters"), depth=0)},
        "cpu": {"model": _cpu_model(), "count": os.cpu_count()},
        "memory": {**_meminfo(), "budget": budget},
        # memcg: workloads ran in a memory cgroup limited to the budget; none: whole machine.
        "sandbox": {"mode": sandbox, "aims": list(aims or [])},
        "numa": {"nodes": len(nodes)},
        "damon": _kdamonds(),
        "cgroup": {"version": cgroup_version()},
        "mmbench": {"version": __version__, "suite_hash": suite_hash},
    }


def flatten(fp: dict[str, Any]) -> dict[str, str]:
    """'thp.enabled' → 'madvise': the form in which fingerprints are compared line by line."""

    def text(v: Any) -> str:
        if isinstance(v, list):
            return ", ".join(map(str, v))
        return "" if v is None or v == {} else str(v)

    return {k: text(v) for k, v in flatten_dict(fp).items()}
