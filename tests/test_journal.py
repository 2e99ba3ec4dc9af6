"""Journal edge cases: a torn last line, the machine-wide lock (refuse, queue, one-line error), and
the undo of each kind of entry on real kernel objects (process, loop device, zram device, swap).
Every test uses a private journal directory; objects are made here and checked gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from mmbench.errors import UsageError
from mmbench.run.journal import Journal

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop, zram, swap)")


def fresh(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "state")
    j.acquire()
    return j


def test_torn_last_line_is_ignored_and_the_rest_restored(tmp_path):
    knob = tmp_path / "knob"
    knob.write_text("60\n")
    j = fresh(tmp_path)
    j.set_value(knob, "10")
    j.release()  # the owner died: the journal stays (it is not empty)
    with open(j.path, "a") as fh:
        fh.write('{"kind": "value", "path": "/proc/sys/vm/swa')  # SIGKILL mid-write
    j2 = Journal(tmp_path / "state")
    messages = j2.acquire()
    assert any("did not finish" in m for m in messages), messages
    assert knob.read_text().strip() == "60"
    assert j2.entries == []
    j2.release()
    assert not j2.path.exists()


def test_lock_refuses_a_second_owner_in_one_line_then_queues(tmp_path, monkeypatch):
    first = fresh(tmp_path)
    monkeypatch.setenv("MMBENCH_LOCK_WAIT", "0")
    second = Journal(tmp_path / "state")
    with pytest.raises(UsageError) as e:
        second.lock()
    assert f"pid {os.getpid()}" in str(e.value) and "\n" not in str(e.value)
    # queueing: a waiter gets the lock once the owner releases it
    monkeypatch.setenv("MMBENCH_LOCK_WAIT", "20")
    code = (
        "import os; from pathlib import Path; from mmbench.run.journal import Journal; "
        f"j = Journal(Path({str(tmp_path / 'state')!r})); j.lock(); print('got', flush=True); j.release()"
    )
    waiter = subprocess.Popen(
        ["python3", "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "MMBENCH_LOCK_WAIT": "20"}
    )
    time.sleep(0.6)
    assert waiter.poll() is None  # still queued behind us
    first.release()
    out, _ = waiter.communicate(timeout=20)
    assert waiter.returncode == 0 and out.strip() == "got"


def test_process_entry_kills_only_the_process_it_names(tmp_path):
    j = fresh(tmp_path)
    mine = subprocess.Popen(["sleep", "60"], start_new_session=True)
    j.record("process", pid=mine.pid, group=True)
    stale = {"kind": "process", "pid": mine.pid, "start": "1"}  # same pid, another start time
    assert j.restore() == []
    assert mine.wait(timeout=10) == -9
    # a pid reused by someone else (start time differs) is left alone
    other = subprocess.Popen(["sleep", "60"])
    try:
        j.entries.append({**stale, "pid": other.pid})
        assert j.restore() == [] and other.poll() is None
    finally:
        other.kill()
        other.wait()
        j.release()


@root_only
def test_loop_zram_and_swap_entries_are_undone(tmp_path):
    if not shutil.which("losetup") or not Path("/sys/class/zram-control").exists():
        subprocess.run(["modprobe", "zram", "num_devices=1"], capture_output=True)
    j = fresh(tmp_path)
    img = tmp_path / "loop.img"
    with open(img, "wb") as fh:
        fh.truncate(8 << 20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(img)], capture_output=True, text=True, check=True
    ).stdout.strip()
    j.record("loop", device=dev)
    # a swap file: mkswap + swapon, journaled like the runner does
    swapfile = tmp_path / "swapfile"
    subprocess.run(["dd", "if=/dev/zero", f"of={swapfile}", "bs=1M", "count=16", "status=none"], check=True)
    os.chmod(swapfile, 0o600)
    subprocess.run(["mkswap", str(swapfile)], check=True, capture_output=True)
    j.record("swap", device=str(swapfile))
    subprocess.run(["swapon", str(swapfile)], check=True, capture_output=True)
    zram = None
    hot_add = Path("/sys/class/zram-control/hot_add")
    if hot_add.exists():
        zram = f"zram{int(hot_add.read_text())}"
        j.record("zram", device=zram)
        Path(f"/sys/block/{zram}/disksize").write_text(str(16 << 20))
    assert str(swapfile) in Path("/proc/swaps").read_text()
    try:
        assert j.restore() == [], j.summary()
        assert str(swapfile) not in Path("/proc/swaps").read_text()
        assert not Path(f"/sys/block/{Path(dev).name}/loop/backing_file").exists()
        if zram:
            assert Path(f"/sys/block/{zram}/disksize").read_text().strip() == "0"
        # undoing again is a no-op: each undo checks the object first
        assert all(
            not __import__("mmbench.run.journal", fromlist=["_undo"])._undo(e)
            for e in [{"kind": "loop", "device": dev}, {"kind": "swap", "device": str(swapfile)}]
        )
    finally:
        if zram:
            Path("/sys/class/zram-control/hot_remove").write_text(zram.removeprefix("zram"))
        j.release()


def test_unknown_entry_stays_journaled_with_a_message(tmp_path):
    j = fresh(tmp_path)
    j.entries.append({"kind": "teleport", "path": "/x"})
    j._rewrite()
    problems = j.restore()
    assert len(problems) == 1 and "teleport" in problems[0] and "mmbench restore" in problems[0]
    assert json.loads(j.path.read_text().splitlines()[0])["kind"] == "teleport"
    j.entries = []
    j.release()


def test_queued_runs_take_turns_in_arrival_order(tmp_path):
    """An owner that releases and takes the lock again at once (an interleaved A/B run between
    rounds) goes behind a run that was already queued, instead of starving it."""
    state = str(tmp_path / "state")
    env = {**os.environ, "MMBENCH_LOCK_WAIT": "30"}
    hog = (
        "import sys, time; from pathlib import Path; from mmbench.run.journal import Journal\n"
        f"j = Journal(Path({state!r}))\n"
        "for i in range(6):\n"
        "    j.lock(); print('hog', i, flush=True); time.sleep(0.5); j.release()\n"
    )
    waiter = (
        "from pathlib import Path; from mmbench.run.journal import Journal\n"
        f"j = Journal(Path({state!r})); j.lock(); print('waiter', flush=True); j.release()\n"
    )
    log = tmp_path / "order"
    with open(log, "w") as out:
        h = subprocess.Popen(["python3", "-c", hog], stdout=out, env=env)
        for _ in range(100):  # the hog holds the lock before the waiter queues
            if "hog 0" in log.read_text():
                break
            time.sleep(0.05)
        w = subprocess.Popen(["python3", "-c", waiter], stdout=out, env=env)
        assert w.wait(timeout=30) == 0 and h.wait(timeout=30) == 0
    order = log.read_text().split("\n")
    assert order.index("waiter") <= 2, order  # after the hog's round 0 (or 1), not its 6th
    assert not [p for p in (tmp_path / "state" / "lock-queue").iterdir()]  # no ticket left


def test_a_dead_waiter_holds_no_place_and_a_non_queued_run_does_not_jump_the_line(tmp_path, monkeypatch):
    from mmbench.run.journal import _Ticket, _first_in_queue

    queue = tmp_path / "state" / "lock-queue"
    code = (
        "import time; from pathlib import Path; from mmbench.run.journal import _Ticket\n"
        f"t = _Ticket(Path({str(queue)!r})); print(t.name, flush=True); time.sleep(60)\n"
    )
    other = subprocess.Popen(["python3", "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        name = other.stdout.readline().strip()
        assert (queue / name).exists()
        mine = _Ticket(queue)
        assert not _first_in_queue(queue, mine)  # a live waiter came first
        assert not _first_in_queue(queue, None)  # and a run that does not queue waits for it too
        monkeypatch.setenv("MMBENCH_LOCK_WAIT", "0")
        with pytest.raises(UsageError, match="others are queued"):
            Journal(tmp_path / "state").lock()
        other.kill()
        other.wait()
        assert _first_in_queue(queue, mine) and not (queue / name).exists()  # SIGKILLed: its place is gone
        mine.drop()
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
