"""memcg: the sandbox memory cgroup's usage, limit failures and memory.stat.

cgroup v1 (``sandbox_paths["memory"]`` under a v1 hierarchy): ``memory.usage_in_bytes``,
``memory.failcnt``, ``memory.memsw.usage_in_bytes`` when present, ``oom_kill`` from
``memory.oom_control`` and every ``memory.stat`` field.  cgroup v2: ``memory.current``,
``memory.swap.current``, ``memory.events`` (max, high, oom, oom_kill) and ``memory.stat``.
Cost: 3-4 small reads (memory.stat ~20-40 us).  Summary: usage (MiB), limit hits per second
(v1 failcnt / v2 events.max), memory.stat sizes in MiB and its event counters (pgfault,
pgmajfault, pgscan, pgsteal, workingset_*...) as per-second rates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmbench.model.lazy import numpy as np

from mmbench.model.counters import better as direction
from mmbench.model.quirks import CGROUP_FILES, cgroup_file
from mmbench.monitors._common import clean, gauge_metric, rate_metric, rates, read_text
from mmbench.monitors.base import SeriesSpec, MonitorContext, MonitorSummary, SamplingMonitor

COUNTER_PREFIXES = (
    "pg",
    "workingset_",
    "thp_",
    "zswpin",
    "zswpout",
    "zswpwb",
    "swpin",
    "swpout",
    "failcnt",
    "events.",
    "oom_kill",
)
# memory.stat entries a comparison shows (the .tsv keeps all): v1 names, then v2 names
SIZE_SUMMARY = (
    "cache",
    "rss",
    "rss_huge",
    "dirty",
    "writeback",
    "swap",
    "anon",
    "file",
    "anon_thp",
    "file_dirty",
    "file_writeback",
)
RATE_SUMMARY = ("pgfault", "pgmajfault", "pgscan", "pgsteal", "workingset_refault_anon", "workingset_refault_file")


def is_counter(name: str) -> bool:
    base = name.split(".", 1)[1] if name.startswith("stat.") else name
    if base.startswith("total_"):
        base = base[6:]
    return base.startswith(COUNTER_PREFIXES) or name.startswith("events.")


def _kv(text: str, prefix: str, out: dict[str, float]) -> None:
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v:
            try:
                out[prefix + k] = int(v)
            except ValueError:
                pass


class Memcg(SamplingMonitor):
    name = "memcg"
    series = (
        SeriesSpec("usage", "Sandbox memcg usage", "MiB", ("usage",), scale=1 / 2**20),
        SeriesSpec("failcnt", "Sandbox memcg limit hits (failcnt)", "/s", ("failcnt",), "rate"),
        SeriesSpec("events-max", "Sandbox memcg limit hits (events.max)", "/s", ("events.max",), "rate"),
    )
    summary = "sandbox memory cgroup: usage, failcnt/limit events, memory.stat"
    default_interval = 1.0

    def setup(self, ctx: MonitorContext) -> None:
        path = (ctx.sandbox_paths or {}).get("memory")
        if not path:
            raise RuntimeError("no memory cgroup for the sandbox: nothing to record")
        self._path = Path(path)
        p = self._path
        v = 2 if (p / cgroup_file("usage", 2)).exists() else 1
        self._v2 = v == 2
        f = {what: p / cgroup_file(what, v) for what in CGROUP_FILES}
        # Column names stay as users know them: v1 failcnt and memsw_usage, v2 swap and events.*.
        self._scalars = [("usage", f["usage"])] if self._v2 else [("usage", f["usage"]), ("failcnt", f["limit_hits"])]
        if f["swap_usage"].exists():
            self._scalars.append(("swap" if self._v2 else "memsw_usage", f["swap_usage"]))
        self._kvfiles = [("events." if self._v2 else "oom.", f["events"]), ("stat.", f["stat"])]

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, path in self._scalars:
            out[name] = int(read_text(path).split()[0])
        for prefix, path in self._kvfiles:
            _kv(read_text(path), prefix, out)
        out.pop("oom.under_oom", None)
        out.pop("oom.oom_kill_disable", None)
        return out

    def stop(self) -> dict[str, Any]:
        meta = super().stop()
        meta["cgroup"] = str(getattr(self, "_path", ""))
        meta["version"] = 2 if getattr(self, "_v2", False) else 1
        return meta

    @classmethod
    def summarise_table(cls, cols: list[str], arr: np.ndarray, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        t = arr[:, 0]

        def col(n: str) -> np.ndarray:
            return arr[:, cols.index(n) + 1]

        out.metrics.append((gauge_metric("Usage (MiB)", "MiB"), clean(col("usage") / 2**20)))
        if "failcnt" in cols:
            out.metrics.append((rate_metric("Limit hits (failcnt/s)", "/s"), clean(rates(t, col("failcnt")))))
        if "events.max" in cols:
            out.metrics.append((rate_metric("Limit hits (events.max/s)", "/s"), clean(rates(t, col("events.max")))))
        for k in ("oom.oom_kill", "events.oom_kill"):
            if k in cols:
                out.metrics.append(
                    (gauge_metric("OOM kills", "kills", kind="count"), [float(np.nanmax(col(k)) - np.nanmin(col(k)))])
                )
        for c in cols:
            if not c.startswith("stat."):
                continue
            base = c[5:]
            if is_counter(c):
                if base in RATE_SUMMARY:
                    # the memcg's own copy of a vmstat counter: the same direction (analysis/counters.py)
                    out.metrics.append((rate_metric(f"{base}/s", "/s", direction(base)), clean(rates(t, col(c)))))
            elif base in SIZE_SUMMARY:
                out.metrics.append((gauge_metric(f"{base} (MiB)", "MiB"), clean(col(c) / 2**20)))
        return out
