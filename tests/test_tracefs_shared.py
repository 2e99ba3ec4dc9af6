"""tracefs is shared by the monitors of one run (mm-trace, irqsoff, perf-stat): it is unmounted
when the last user is done, never under one that still reads it (seed003 ran mm-trace and
irqsoff together, and mm-trace's stop unmounted tracefs under irqsoff)."""

from __future__ import annotations

from pathlib import Path

from mmbench.monitors.trace import tracefs


class _Journal:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict]] = []

    def record(self, kind: str, **kw: object) -> None:
        self.records.append((kind, kw))


def test_the_mount_goes_with_its_last_user(monkeypatch, tmp_path: Path):
    mounted = {"now": False}
    calls: list[list[str]] = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        mounted["now"] = cmd[0] == "mount"

        class R:
            returncode = 0
            stderr = ""

        return R()

    monkeypatch.setattr(tracefs, "is_mounted", lambda target=tracefs.TRACEFS: mounted["now"])
    monkeypatch.setattr(tracefs.subprocess, "run", fake_run)
    j = _Journal()
    target = tmp_path / "tracing"
    first = tracefs.ensure_mounted(j, target)  # mm-trace: mounts
    second = tracefs.ensure_mounted(j, target)  # irqsoff: already mounted
    assert (first, second) == (True, False) and [c[0] for c in calls] == ["mount"]
    tracefs.unmount(first, target)  # mm-trace stops first
    assert mounted["now"], "unmounted under irqsoff, which still reads it"
    tracefs.unmount(second, target)  # irqsoff stops: the last user
    assert not mounted["now"] and [c[0] for c in calls] == ["mount", "umount"]


def test_a_mount_made_by_someone_else_is_never_unmounted(monkeypatch, tmp_path: Path):
    calls: list[list[str]] = []
    monkeypatch.setattr(tracefs, "is_mounted", lambda target=tracefs.TRACEFS: True)
    monkeypatch.setattr(tracefs.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    target = tmp_path / "t2"
    m = tracefs.ensure_mounted(_Journal(), target)
    tracefs.unmount(m, target)
    assert calls == []
