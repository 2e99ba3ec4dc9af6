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


def ensure_mounted(journal: Any, target: Path = TRACEFS) -> bool:
    """Mount tracefs at ``target`` if needed (journaled first).  True if we mounted it."""
    if is_mounted(target):
        return False
    journal.record("mount", target=str(target))
    proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"could not mount tracefs at {target}: {proc.stderr.strip()}")
    return True



def unmount(mounted: bool, target: Path = TRACEFS) -> None:
    """Undo ``ensure_mounted`` when it mounted (its journal entry stays as a fallback)."""
    if mounted:
        subprocess.run(["umount", str(target)], capture_output=True)
