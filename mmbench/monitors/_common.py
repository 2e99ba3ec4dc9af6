"""Helpers shared by the monitors: cheap file reads, the tsv loader, rate series, stopping a helper process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.model.results import MetricDef


def read_text(path: str | os.PathLike, bufsize: int = 1 << 16) -> str:
    """Read a /proc or sysfs file with as few syscalls as possible (one for small files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, bufsize)
            if not b:
                break
            chunks.append(b)
            if len(b) < bufsize // 2:  # seq_file hands out whole pages; a short read is the end
                b2 = os.read(fd, bufsize)
                if not b2:
                    break
                chunks.append(b2)
        return b"".join(chunks).decode("ascii", "replace")
    finally:
        os.close(fd)


# Since 5.5 ("mm, vmstat: reduce zone->lock holding time by /proc/pagetypeinfo", commit
# 93b3a674485f) the kernel stops counting a free list at 100,000 entries and prints ">100000".
COUNT_CAP_PREFIX = ">"


def zone_counts(line: str) -> tuple[str, str, str | None, list[int], bool] | None:
    """One line of counts per zone: /proc/buddyinfo's ("Node 0, zone   Normal   3   1 ...") and
    /proc/pagetypeinfo's ("Node 0, zone Normal, type Movable   3   1 ..." and its pageblock
    counts, shaped like buddyinfo's) as (node, zone, migrate type or None, counts, whether a count
    was capped at ">100000"); None for any other line."""
    head, sep, rest = line.partition(", zone")
    if not sep or not head.startswith("Node"):
        return None
    zone_part, typed, type_part = rest.partition(", type")
    fields = (type_part if typed else zone_part).split()
    if not fields:
        return None
    zone = zone_part.split()[0] if typed else fields[0]
    values = fields[1:]
    capped = any(v.startswith(COUNT_CAP_PREFIX) for v in values)
    counts = [int(v.removeprefix(COUNT_CAP_PREFIX)) for v in values]
    return head.split()[-1], zone, fields[0] if typed else None, counts, capped


def stop_process(proc: subprocess.Popen, sig: int, timeout: float = 10.0) -> bool:
    """Send ``sig`` to a monitor's helper process (nothing if it has exited), wait up to
    ``timeout`` seconds for it to end, else kill it; whether it ended within the time."""
    proc.send_signal(sig)  # Popen polls first: an exited process is not signalled
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
    return True


def load_tsv(path: Path) -> tuple[list[str], np.ndarray]:
    """Columns (without ``time``) and a 2-D array whose column 0 is time."""
    with open(path) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        rows = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
    if not rows:
        return header[1:], np.zeros((0, len(header)))
    arr = np.array([[float(v) for v in r] for r in rows if len(r) == len(header)], dtype=float)
    return header[1:], arr


def tsv_of(outdir: Path, meta: dict[str, Any], name: str) -> Path:
    files = meta.get("files") or [f"{name}.tsv"]
    return Path(outdir) / files[0]


def rates(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-second rate of a counter over each sampling interval (counter resets give 0)."""
    if len(t) < 2:
        return np.zeros(0)
    dt = np.diff(t)
    dv = np.diff(v)
    dt[dt <= 0] = np.nan
    r = dv / dt
    r[dv < 0] = 0.0
    return r[np.isfinite(r)]


def interval_share(t: np.ndarray, total: np.ndarray, unit: float = 1.0) -> list[float]:
    """Percent of each sampling interval spent running or stalled, from a cumulative time column
    (``total``, counted in ``unit`` seconds: 1e-6 for PSI's microseconds).  A failed sample (NaN)
    is bridged by the interval after it; every value is clipped to 0..100."""
    ok = np.isfinite(total)
    if ok.sum() < 2:
        return []
    pct = np.diff(total[ok]) * unit / np.maximum(np.diff(t[ok]), 1e-9) * 100
    return clean(np.clip(pct, 0, 100))


def clean(values: Any) -> list[float]:
    a = np.asarray(values, dtype=float)
    return [float(x) for x in a[np.isfinite(a)]]


def rate_metric(name: str, unit: str = "/s", better: str = "lower", description: str = "") -> MetricDef:
    return MetricDef(name=name, unit=unit, better=better, kind="rate", mean="amean", description=description)


def gauge_metric(name: str, unit: str, better: str = "lower", kind: str = "size", description: str = "") -> MetricDef:
    return MetricDef(name=name, unit=unit, better=better, kind=kind, mean="amean", description=description)
