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

from mmbench.model.params import close_match
from mmbench.errors import UsageError
from mmbench.model.kernel import read_knob
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
        raise UsageError(f"settings.{name}: unknown setting; settings start with "
                         f"{', '.join(n + '.' for n in NAMESPACES)} (e.g. vm.swappiness, thp.enabled)")
    if name in RESERVED:
        raise UsageError(f"settings.{name}: is a read-only statistic, not a setting")
    for base in NAMESPACES[ns]:
        if not Path(base).is_dir():
            continue
        path = Path(base, *rest.split("."))
        if path.is_file():
            return path
        parent = path.parent
        options = sorted(p.name for p in parent.iterdir() if p.is_file()) if parent.is_dir() else []
        raise UsageError(f"settings.{name}: this kernel has no {path}{close_match(path.name, options)}")
    raise UsageError(f"settings.{name}: this kernel has no {NAMESPACES[ns][0]} (feature not built in)")


def _choices(path: Path) -> list[str] | None:
    text = path.read_text().strip()
    if "[" in text and "]" in text:
        return text.replace("[", "").replace("]", "").split()
    return None


def validate_settings(settings: dict[str, Any]) -> dict[str, tuple[Path, str]]:
    """name → (path, value as written).  Checks existence, writability and the value's form."""
    out: dict[str, tuple[Path, str]] = {}
    for name, value in settings.items():
        path = knob_path(name)
        if isinstance(value, bool):
            value = {"vm": "1", "kernel": "1"}.get(name.split(".")[0], "Y") if value else \
                {"vm": "0", "kernel": "0"}.get(name.split(".")[0], "N")
        text = str(value)
        if not os.access(path, os.W_OK) or not (path.stat().st_mode & 0o222):
            raise UsageError(f"settings.{name}: {path} is not writable (read-only knob, or not root)")
        choices = _choices(path)
        if choices is not None and text not in choices:
            raise UsageError(f"settings.{name}: {text!r} is not one of {choices} (from {path})")
        current = read_knob(path)
        if choices is None and current.lstrip("-").isdigit() and not text.lstrip("-").isdigit():
            raise UsageError(f"settings.{name}: expected an integer, got {text!r}")
        out[name] = (path, text)
    return out


def apply_settings(validated: dict[str, tuple[Path, str]], journal: Journal) -> None:
    """Write every knob through the journal; a value the kernel rejects is a UsageError."""
    for name, (path, value) in validated.items():
        try:
            journal.set_value(path, value)
        except OSError as e:
            raise UsageError(f"settings.{name}: {e.strerror or e}") from None
