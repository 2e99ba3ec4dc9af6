"""Sizes and durations as users write them.

A size is absolute ("512M", "2G", "4096", "64k") or relative to the memory budget ("0.8x", "15x").
A duration is "90s", "5m", "250ms" or a plain number of seconds.  Binary units: K=1024.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgtb]?)(i?b)?\s*$", re.IGNORECASE)
_REL_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*x\s*$", re.IGNORECASE)
_DUR_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_DUR_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_size(text: str | int | float, budget: int | None = None) -> int:
    """Bytes for ``text``; relative sizes need ``budget``.  Raises ValueError with a reason."""
    if isinstance(text, bool):
        raise ValueError("expected a size like '512M', '2G' or '0.5x', got a boolean")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"size must not be negative, got {text}")
        return int(text)
    m = _REL_RE.match(text)
    if m:
        if budget is None:
            raise ValueError(f"relative size {text!r} needs a memory budget")
        return int(float(m.group(1)) * budget)
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"expected a size like '512M', '2G' or '0.5x' (times the budget), got {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_duration(text: str | int | float) -> float:
    """Seconds for ``text`` ("90s", "5m", "250ms", 2.5)."""
    if isinstance(text, bool):
        raise ValueError("expected a duration like '30s', '5m' or '250ms', got a boolean")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"duration must not be negative, got {text}")
        return float(text)
    m = _DUR_RE.match(text)
    if not m:
        raise ValueError(f"expected a duration like '30s', '5m' or '250ms', got {text!r}")
    unit = m.group(2).lower() if m.group(2) else None
    return float(m.group(1)) * _DUR_UNITS[unit]


def format_size(n: int | float) -> str:
    """Short human form: 536870912 → '512M'."""
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(n) >= div:
            v = n / div
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}"
