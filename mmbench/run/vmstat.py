"""Raw /proc/vmstat snapshots and their deltas (derivations live in analysis/vmstat.py)."""

from __future__ import annotations


def read_vmstat(path: str = "/proc/vmstat") -> str:
    # One read of the whole file: no fixed-size buffer (MMTests' thpavail overflowed 4 KiB).
    with open(path) as fh:
        return fh.read()


def parse_vmstat(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v:
            out[k] = int(v)
    return out


def vmstat_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """after − before for every counter present in both (gauges included: their change)."""
    return {k: after[k] - before[k] for k in after if k in before}
