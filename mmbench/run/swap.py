"""Swap as a run setting: zram, a swap file, zswap -- set up through the journal, always removed.

A suite's ``[swap]`` table is validated against ``config.schema.SWAP_PARAMS`` and handed to ``setup_swap`` after
the journal is acquired and before the first workload::

    [swap]
    type = "zram"          # none | zram | file
    size = "1x"            # absolute or relative to the budget
    compressor = "lz4"     # zram comp_algorithm (default: the kernel's)
    priority = 100         # swapon -p
    zswap = false          # set /sys/module/zswap/parameters/enabled (unset: leave as is)

Every step is journaled before it is made (zram before it is configured, the swap before swapon,
a swap file before it is created), so ``journal.restore()`` -- or the next run after a crash --
swaps off, resets zram0 and removes the file.  The returned dict describes the swap for the run's
fingerprint.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from mmbench.config.schema import SWAP_PARAMS
from mmbench.model.params import resolve_params
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.guest import in_guest
from mmbench.model.kernel import read_knob
from mmbench.run.journal import Journal

ZRAM = "zram0"
ZSWAP = Path("/sys/module/zswap/parameters")


def active_swaps() -> list[str]:
    lines = Path("/proc/swaps").read_text().splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvironmentUnsupported(f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()}")


def _swapon(journal: Journal, device: str, priority: int | None) -> None:
    journal.record("swap", device=device)
    _run(["swapon", *(["-p", str(priority)] if priority is not None else []), device])


def _choices(path: Path) -> list[str]:
    return read_text(path).replace("[", " ").replace("]", " ").split()


def read_text(path: Path) -> str:
    return path.read_text().strip()


def _setup_zram(p: dict[str, Any], journal: Journal) -> dict[str, Any]:
    sysdir = Path("/sys/block") / ZRAM
    dev = f"/dev/{ZRAM}"
    if not sysdir.exists() and in_guest():
        # Debian's kernels build zram as a module (CONFIG_ZRAM=m): load it inside an mmbench VM
        # guest, where it dies with the guest.  On a host mmbench loads no modules.
        subprocess.run(
            ["modprobe", "-q", "zram", "num_devices=1"],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    if not sysdir.exists():
        raise EnvironmentUnsupported(f"{dev} does not exist (kernel without zram, or the device was removed)")
    if dev in active_swaps():
        raise UsageError(f"swap: {dev} is already in use as swap; swapoff it (and reset it) first")
    if int(read_text(sysdir / "disksize")) != 0:
        raise UsageError(
            f"swap: {dev} is already in use (disksize is set); "
            f"reset it with 'echo 1 > {sysdir}/reset' if nothing needs it"
        )
    if any(line.split()[0] == dev for line in Path("/proc/mounts").read_text().splitlines()):
        raise UsageError(f"swap: {dev} is mounted")
    if p["compressor"] and p["compressor"] not in _choices(sysdir / "comp_algorithm"):
        raise UsageError(
            f"swap.compressor: {p['compressor']!r} is not one of this kernel's zram "
            f"algorithms {_choices(sysdir / 'comp_algorithm')}"
        )
    journal.record("zram", device=ZRAM)
    if p["compressor"]:
        (sysdir / "comp_algorithm").write_text(p["compressor"])
    (sysdir / "disksize").write_text(str(p["size"]))
    _run(["mkswap", dev])
    _swapon(journal, dev, p["priority"])
    return {"device": dev, "size": p["size"], "compressor": read_knob(sysdir / "comp_algorithm")}


def _setup_file(p: dict[str, Any], journal: Journal) -> dict[str, Any]:
    path = Path(p["path"])
    if path.exists() or path.is_symlink():
        raise UsageError(f"swap.path: {path} already exists; refusing to overwrite it")
    if not path.parent.is_dir():
        raise UsageError(f"swap.path: directory {path.parent} does not exist")
    journal.record("remove", path=str(path))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        chunk = b"\0" * (1 << 20)
        left = p["size"]
        while left > 0:  # real blocks: swapon refuses files with holes
            n = os.write(fd, chunk[: min(left, len(chunk))])
            left -= n
        os.fsync(fd)
    finally:
        os.close(fd)
    _run(["mkswap", str(path)])
    _swapon(journal, str(path), p["priority"])
    return {"device": str(path), "size": p["size"]}


def setup_swap(spec: dict[str, Any], budget: int, journal: Journal) -> dict[str, Any]:
    """Set up the swap ``spec`` describes (a suite's ``[swap]`` table); returns its description."""
    # The suite loader passes every key (None where unset) plus the size it resolved: None means
    # "the default", and size_bytes is the same size already in bytes.
    given = {k: v for k, v in spec.items() if v is not None and k != "size_bytes"}
    if "size" not in given and spec.get("size_bytes") is not None:
        given["size"] = int(spec["size_bytes"])
    p = resolve_params(SWAP_PARAMS, given, budget, "swap")
    desc: dict[str, Any] = {"type": p["type"]}
    if p["type"] != "none" and p["size"] < (1 << 20):
        raise UsageError(f"swap.size: {p['size']} bytes is too small (at least 1M)")
    if p["zswap"] is not None or p["zswap_compressor"]:
        if not (ZSWAP / "enabled").exists():
            raise EnvironmentUnsupported("zswap is not available in this kernel")
        if p["zswap_compressor"]:
            journal.set_value(ZSWAP / "compressor", p["zswap_compressor"])
        if p["zswap"] is not None:
            journal.set_value(ZSWAP / "enabled", "Y" if p["zswap"] else "N")
        desc["zswap"] = read_knob(ZSWAP / "enabled") == "Y"
        desc["zswap_compressor"] = read_knob(ZSWAP / "compressor")
    if p["type"] == "zram":
        desc.update(_setup_zram(p, journal))
    elif p["type"] == "file":
        desc.update(_setup_file(p, journal))
    if p["priority"] is not None and p["type"] != "none":
        desc["priority"] = p["priority"]
    desc["active"] = active_swaps()
    return desc
