"""tracefs, mounted and unmounted in one place: where it is, whether it is mounted, and a mount
made through the journal (so a killed run's restore unmounts it) that its owner undoes itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

TRACEFS = Path("/sys/kernel/tracing")


def is_mounted(target: Path = TRACEFS) -> bool:
    t = os.path.realpath(target)
    with open("/proc/mounts") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 2 and parts[1] == t and parts[2] == "tracefs":
                return True
    return False


# Monitors of one run share the mount (mm-trace, irqsoff and perf-stat may all use tracefs): it
# is unmounted when the last of them is done, never under another that still reads it (seed003
# ran mm-trace and irqsoff together: mm-trace's stop unmounted tracefs, irqsoff's last sample and
# its current_tracer restore then failed).
_users: dict[str, int] = {}
_ours: dict[str, bool] = {}


def ensure_mounted(journal: Any, target: Path = TRACEFS) -> bool:
    """Mount tracefs at ``target`` if needed (journaled first) and count the caller as a user until
    it calls :func:`unmount`.  True if this call mounted it."""
    key = os.path.realpath(target)
    if is_mounted(target):
        _users[key] = _users.get(key, 0) + 1
        return False
    journal.record("mount", target=str(target))
    proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"could not mount tracefs at {target}: {proc.stderr.strip()}")
    _users[key] = _users.get(key, 0) + 1
    _ours[key] = True
    return True


def unmount(mounted: bool, target: Path = TRACEFS) -> None:
    """A user of :func:`ensure_mounted` is done: the mount this process made is undone when its last
    user is (its journal entry stays as a fallback).  ``mounted`` is kept for callers' clarity."""
    key = os.path.realpath(target)
    _users[key] = max(0, _users.get(key, 0) - 1)
    if _users[key] == 0 and _ours.pop(key, False):
        subprocess.run(["umount", str(target)], capture_output=True)
