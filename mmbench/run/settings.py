"""System settings a suite may change: vm sysctls, THP/khugepaged knobs, zswap parameters.

A setting is named the way kernel people say it (``vm.swappiness``, ``thp.enabled``,
``thp.khugepaged.defrag``) and maps to one file.  The map is data: a namespace table plus the
quirks of particular kernels, each with a comment naming the version.  ``validate_settings``
catches unknown knobs and impossible values before anything is written; ``apply_settings`` writes
through the journal so every knob goes back afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.kernel import read_knob
from mmbench.model.params import close_match
from mmbench.run.journal import Journal

from mmbench.model.quirks import SETTING_ACTIONS as ACTIONS
from mmbench.model.quirks import SETTING_NAMESPACES as NAMESPACES
from mmbench.model.quirks import SETTING_RESERVED as RESERVED


def knob_path(name: str) -> Path:
    """File behind a setting name, or UsageError naming what is wrong."""
    if name in ACTIONS:
        raise UsageError(f"settings.{name}: is an action, not a setting; use {ACTIONS[name]} = true")
    ns, _, rest = name.partition(".")
    if ns not in NAMESPACES or not rest:
        raise UsageError(
            f"settings.{name}: unknown setting; settings start with "
            f"{', '.join(n + '.' for n in NAMESPACES)} (e.g. vm.swappiness, thp.enabled)"
        )
    if name in RESERVED:
        raise UsageError(f"settings.{name}: is a read-only statistic, not a setting")
    for base in NAMESPACES[ns]:
        if not Path(base).is_dir():
            continue
        path = Path(base, *rest.split("."))
        # the suite loader refuses keys that could leave the folder; a symlink inside it must not
        # either (the run writes this file as root)
        if not os.path.realpath(path).startswith(os.path.realpath(base) + os.sep):
            raise UsageError(
                f"settings.{name}: {path} is not inside {base}; a setting never names a file outside its folder"
            )
        if path.is_file():
            return path
        parent = path.parent
        options = sorted(p.name for p in parent.iterdir() if p.is_file()) if parent.is_dir() else []
        raise UsageError(f"settings.{name}: this kernel has no {path}{close_match(path.name, options)}")
    # a whole namespace missing is a kernel feature not built in (exit 3), not a typo (exit 2)
    raise EnvironmentUnsupported(f"settings.{name}: this kernel has no {NAMESPACES[ns][0]} (feature not built in)")


def _choices(path: Path) -> list[str] | None:
    text = path.read_text().strip()
    if "[" in text and "]" in text:
        return text.replace("[", "").replace("]", "").split()
    return None


# Ranges the kernel enforces on integer knobs (proc_dointvec_minmax and sysfs stores): a value
# outside is refused with EINVAL, found here before any setting of the suite is written.
RANGES: dict[str, tuple[int, int]] = {
    "vm.dirty_ratio": (0, 100),
    "vm.dirty_background_ratio": (0, 100),
    "vm.overcommit_memory": (0, 2),
    "vm.overcommit_ratio": (0, 2**63 - 1),
    "vm.compaction_proactiveness": (0, 100),
    "vm.extfrag_threshold": (0, 1000),
    "vm.watermark_scale_factor": (1, 3000),  # older kernels stop at 1000 (and say EINVAL)
    "vm.min_free_kbytes": (0, 2**31 - 1),
    "vm.vfs_cache_pressure": (0, 2**31 - 1),
    "vm.watermark_boost_factor": (0, 2**31 - 1),
    "vm.zone_reclaim_mode": (0, 2**31 - 1),
    "vm.page-cluster": (0, 2**31 - 1),
    "vm.nr_hugepages": (0, 2**63 - 1),
    "vm.dirty_expire_centisecs": (0, 2**31 - 1),
    "vm.dirty_writeback_centisecs": (0, 2**31 - 1),
    # khugepaged: 0 pages per scan is -EINVAL; max_ptes_* at most HPAGE_PMD_NR - 1 (x86-64: 511)
    "thp.khugepaged.pages_to_scan": (1, 2**32 - 1),
    "thp.khugepaged.max_ptes_none": (0, 511),
    "thp.khugepaged.max_ptes_swap": (0, 511),
    "thp.khugepaged.max_ptes_shared": (0, 511),
    "thp.khugepaged.scan_sleep_millisecs": (0, 2**32 - 1),
    "thp.khugepaged.alloc_sleep_millisecs": (0, 2**32 - 1),
}


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        release = os.uname().release.split("-")[0].split(".")
        return (int(release[0]), int(release[1])) >= (major, minor)
    except (ValueError, IndexError):
        return True


def _check_range(name: str, text: str, current: str) -> None:
    lo_hi = RANGES.get(name)
    if name == "vm.swappiness":
        # 0..200 since v5.8 (c843966c556d: anon may be preferred over file), 0..100 before
        lo_hi = (0, 200 if _kernel_at_least(5, 8) else 100)
    if lo_hi is None:
        if text.lstrip("-").isdigit() and abs(int(text)) >= 2**63:
            raise UsageError(f"settings.{name}: {text} does not fit the kernel's integer")
        if text.startswith("-") and current.isdigit() and text.lstrip("-").isdigit() and int(text) != -1:
            raise UsageError(f"settings.{name}: {text} is negative; the knob holds {current}")
        return
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"settings.{name}: expected an integer, got {text!r}") from None
    if not lo_hi[0] <= value <= lo_hi[1]:
        raise UsageError(f"settings.{name}: {value} is outside {lo_hi[0]}..{lo_hi[1]}, which this kernel refuses")


def validate_settings(settings: dict[str, Any]) -> dict[str, tuple[Path, str]]:
    """name → (path, value as written).  Checks existence, writability and the value's form."""
    out: dict[str, tuple[Path, str]] = {}
    for name, value in settings.items():
        path = knob_path(name)
        if isinstance(value, bool):
            value = (
                {"vm": "1", "kernel": "1"}.get(name.split(".")[0], "Y")
                if value
                else {"vm": "0", "kernel": "0"}.get(name.split(".")[0], "N")
            )
        text = str(value)
        if not os.access(path, os.W_OK) or not (path.stat().st_mode & 0o222):
            raise UsageError(f"settings.{name}: {path} is not writable (read-only knob, or not root)")
        choices = _choices(path)
        if choices is not None and text not in choices:
            raise UsageError(f"settings.{name}: {text!r} is not one of {choices} (from {path})")
        current = read_knob(path)
        if choices is None and current.lstrip("-").isdigit() and not text.lstrip("-").isdigit():
            raise UsageError(f"settings.{name}: expected an integer, got {text!r}")
        if "\n" in text or len(text) > 4096:
            raise UsageError(f"settings.{name}: a knob takes one short line, got {text[:40]!r}...")
        _check_range(name, text, current)
        out[name] = (path, text)
    return out


def validate_suite_settings(suite: Any) -> dict[str, tuple[Path, str]]:
    """``validate_settings`` of a loaded suite, its errors naming the suite file: run before any
    setting is applied (by the runner, and by ``run --check``)."""
    try:
        return validate_settings(suite.settings)
    except (UsageError, EnvironmentUnsupported) as e:
        raise type(e)(f"{suite.path}: {e}") from None


def apply_settings(validated: dict[str, tuple[Path, str]], journal: Journal) -> None:
    """Write every knob through the journal; a value the kernel rejects is a UsageError."""
    for name, (path, value) in validated.items():
        try:
            journal.set_value(path, value)
        except OSError as e:
            raise UsageError(f"settings.{name}: {e.strerror or e}") from None
