"""The vmstat and mpstat monitors on this machine's real tools: start, ~2.5 s at 1 s, stop; the
tool process is journaled and gone afterwards, and the summary's CPU columns add up to 100 %."""

from __future__ import annotations

import os
import time

import pytest

from mmbench.plugins import monitors as registry
from mmbench.monitors.base import MonitorContext


class RecordingJournal:
    """Stands in for the run journal: only records what the monitor says it created."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def record(self, kind: str, **data) -> None:
        self.entries.append({"kind": kind, **data})


@pytest.mark.parametrize("name", ["vmstat", "mpstat"])
def test_tool_monitor_live(tmp_path, name):
    cls = registry()[name]
    mon = cls()
    if mon.unavailable_reason():
        pytest.skip(mon.unavailable_reason())
    journal = RecordingJournal()
    ctx = MonitorContext(
        outdir=tmp_path / name,
        interval=1.0,
        params={},
        sandbox_paths={},
        sandbox_pids=lambda: [],
        journal=journal,
        log=lambda m: None,
    )
    mon.start(ctx)
    time.sleep(2.5)
    meta = mon.stop()
    assert meta["errors"] == []
    pid = journal.entries[0]["pid"]
    assert journal.entries[0]["kind"] == "process"
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    summary = cls.summarise(ctx.outdir, meta)
    m = {md.name: vals for md, vals in summary.metrics}
    if name == "vmstat":
        parts = [m[c] for c in ("us", "sy", "id", "wa", "st", "gu") if c in m]
    else:
        parts = [m[c] for c in m if c.startswith("all %") and c not in ("all %guest", "all %gnice")]
    assert len(parts[0]) >= 1, summary
    for row in zip(*parts):  # each interval's CPU time split adds up to 100 % (rounded columns)
        assert sum(row) == pytest.approx(100, abs=3)
