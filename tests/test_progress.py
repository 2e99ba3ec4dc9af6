"""Progress of ``mmbench run``: plain lines, JSON lines, the live status block, the estimate."""

from __future__ import annotations

import io
import json
import re

import pytest

from mmbench.run import progress as pg


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    c = FakeClock()
    monkeypatch.setattr(pg.time, "monotonic", c)
    return c


def drive(p: pg.Progress, clock: FakeClock) -> None:
    """Two workloads: a (1 warm-up + 2), b (2); each iteration of a takes 2 s, of b 4 s."""
    p.total = 5
    p.monitors = ["proc-vmstat", "meminfo"]
    p.info("run x: 2 workload(s)")
    for label, count, secs in (("a", 3, 2.0), ("b", 2, 4.0)):
        for i in range(count):
            p.start_iteration("smoke", label, i, count, warmup=(label == "a" and i == 0))
            clock.t += secs
            p.end_iteration(
                label,
                i,
                "ok" if (label, i) != ("b", 1) else "oom",
                None if (label, i) != ("b", 1) else "killed by the OOM killer",
                secs - 0.5,
            )
    p.warn("something odd")
    p.close()


def test_plain_lines(clock: FakeClock) -> None:
    out = io.StringIO()
    drive(pg.PlainProgress(out), clock)
    lines = out.getvalue().splitlines()
    assert all(re.match(r"\[ *\d+\.\ds\] ", ln) for ln in lines)
    text = [ln.split("] ", 1)[1] for ln in lines]
    assert text[0] == "run x: 2 workload(s)"
    assert text[1] == "monitors active: proc-vmstat, meminfo"
    assert text[2] == "smoke: a iteration 0 (1 of 3) (warm-up)"
    assert text[3] == "  a iteration 0: ok in 1.50 s; 1/5 done, about 8s left"
    assert "smoke: b iteration 0 (1 of 2)" in text
    assert "  b iteration 1: oom in 3.50 s (killed by the OOM killer)" in text  # the last: no estimate
    assert text[-1] == "warning: something odd"
    assert lines[-1].startswith("[   14.0s]")


def test_quiet_keeps_only_warnings(clock: FakeClock) -> None:
    out = io.StringIO()
    drive(pg.PlainProgress(out, quiet=True), clock)
    assert out.getvalue().splitlines() == ["[   14.0s] warning: something odd"]


def test_json_lines(clock: FakeClock) -> None:
    out = io.StringIO()
    drive(pg.JsonProgress(out), clock)
    objs = [json.loads(ln) for ln in out.getvalue().splitlines()]
    assert [o["event"] for o in objs] == (["info", "monitors"] + ["iteration-start", "iteration-end"] * 5 + ["warning"])
    assert all({"time", "event", "message", "elapsed"} <= set(o) for o in objs)
    assert objs[1]["monitors"] == ["proc-vmstat", "meminfo"]
    start = objs[2]
    assert start == {
        **start,
        "suite": "smoke",
        "workload": "a",
        "iteration": 0,
        "of": 3,
        "warmup": True,
        "done": 0,
        "total": 5,
        "monitors": ["proc-vmstat", "meminfo"],
        "eta": None,
    }
    end = objs[3]
    assert end["status"] == "ok" and end["done"] == 1 and end["elapsed_s"] == 1.5 and end["eta"] == 8.0
    last = objs[-2]
    assert last["status"] == "oom" and last["reason"] == "killed by the OOM killer" and last["eta"] is None
    # after a's iterations (2 s each) the estimate for b uses the run's mean; after b's first, b's own
    b_first_end = [o for o in objs if o["event"] == "iteration-end" and o["workload"] == "b"][0]
    assert b_first_end["eta"] == 4.0
    assert objs[-1]["event"] == "warning" and objs[-1]["elapsed"] == 14.0


def test_estimate_uses_current_workload(clock: FakeClock) -> None:
    p = pg.PlainProgress(io.StringIO())
    p.total = 6
    assert p.eta() is None
    p.start_iteration("s", "slow", 0, 3, False)
    clock.t += 10
    p.end_iteration("slow", 0, "ok", None, 10)
    assert p.eta() == pytest.approx(50.0)  # 5 left × 10 s
    p.start_iteration("s", "slow", 1, 3, False)
    clock.t += 4  # 4 s into the running one
    assert p.eta() == pytest.approx(46.0)


def test_fmt_duration() -> None:
    assert pg.fmt_duration(None) == "?"
    assert pg.fmt_duration(42.4) == "42s"
    assert pg.fmt_duration(185) == "3m05s"
    assert pg.fmt_duration(3720) == "1h02m"


def test_live_status_block(clock: FakeClock, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    p = pg.LiveProgress(out)
    assert p.console.no_color
    p.total = 4
    p.monitors = ["psi", "memcg"]
    p.start_iteration("smoke", "faultin", 0, 4, False)
    clock.t += 3
    p.end_iteration("faultin", 0, "ok", None, 2.9)
    p.start_iteration("smoke", "faultin", 1, 4, False)
    clock.t += 1
    status = p.status_text().plain
    assert "smoke" in status and "faultin" in status and "iteration 1 (2 of 4)" in status
    assert "1/4 iterations" in status and "elapsed 4s" in status and "left ~8s" in status
    assert "monitors: psi, memcg" in status
    p.close()
    assert "\x1b[3" not in out.getvalue()  # no colour codes with NO_COLOR
    assert "faultin iteration 0: ok" in out.getvalue()


def test_make_progress_picks_mode(monkeypatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert isinstance(pg.make_progress(json_log=True, stream=io.StringIO()), pg.JsonProgress)
    assert type(pg.make_progress(stream=io.StringIO())) is pg.PlainProgress
    assert type(pg.make_progress(quiet=True, stream=Tty())) is pg.PlainProgress
    assert isinstance(pg.make_progress(stream=Tty()), pg.LiveProgress)
    monkeypatch.setenv("TERM", "dumb")
    assert type(pg.make_progress(stream=Tty())) is pg.PlainProgress


def test_elapsed_counts_from_when_the_run_starts(clock: FakeClock) -> None:
    out = io.StringIO()
    p = pg.PlainProgress(out)
    clock.t += 30  # waiting for another mmbench's lock
    p.total = 1
    p.info("run x")
    clock.t += 2
    p.start_iteration("s", "w", 0, 1, False)
    assert out.getvalue().splitlines()[0] == "[    0.0s] run x"
    assert p.elapsed() == pytest.approx(2.0)
