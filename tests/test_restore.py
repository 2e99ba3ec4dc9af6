"""The machine is left as found: after success, SIGINT, SIGTERM and SIGKILL (+ mmbench restore)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from conftest import THP, mmbench, mmbench_cgroups, needs_root, start_mmbench, wait_for
from mmbench.model.kernel import read_knob

pytestmark = needs_root

DEFRAG = THP / "defrag"


def long_suite(suite_file, defrag: str) -> Path:
    return suite_file(f"""
[suite]
iterations = 1
budget = "64M"
[settings]
thp.defrag = "{defrag}"
vm.swappiness = 33
[actions]
sync = false
[[workload]]
name = "idle"
[workload.params]
duration = "60s"
""")


def other_value(current: str) -> str:
    return "always" if current != "always" else "never"


@pytest.fixture
def original_state():
    before = {"defrag": read_knob(DEFRAG), "swappiness": read_knob(Path("/proc/sys/vm/swappiness"))}
    yield before
    # whatever happened in the test, never leave the machine changed
    mmbench("restore")
    assert read_knob(DEFRAG) == before["defrag"]


def changed(value: str):
    return lambda: read_knob(DEFRAG) == value and len(mmbench_cgroups()) > 0


def sigkill_mid_run(suite_file, results, target: str, name: str) -> None:
    """Start a long run that sets thp.defrag=target, SIGKILL it once the change is made."""
    proc = start_mmbench("run", "--config", str(long_suite(suite_file, target)), "--results", str(results), name)
    try:
        assert wait_for(changed(target), 30)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_restore_on_signal(suite_file, results, original_state, sig):
    target = other_value(original_state["defrag"])
    proc = start_mmbench("run", "--config", str(long_suite(suite_file, target)), "--results", str(results), "sig")
    try:
        assert wait_for(changed(target), 30), "the run never applied its setting"
        assert read_knob(Path("/proc/sys/vm/swappiness")) == "33"
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert read_knob(DEFRAG) == original_state["defrag"]
    assert read_knob(Path("/proc/sys/vm/swappiness")) == original_state["swappiness"]
    assert mmbench_cgroups() == []
    meta = json.loads((results / "sig" / "run.json").read_text())
    assert meta["status"] == "incomplete"


def test_restore_after_sigkill(suite_file, results, original_state):
    target = other_value(original_state["defrag"])
    sigkill_mid_run(suite_file, results, target, "k")
    # SIGKILL: nothing could run, the machine is still changed ...
    assert read_knob(DEFRAG) == target
    assert mmbench_cgroups() != []
    # ... until mmbench restore replays the journal.
    out = mmbench("restore", check=True)
    assert "restor" in out.stdout
    assert read_knob(DEFRAG) == original_state["defrag"]
    assert read_knob(Path("/proc/sys/vm/swappiness")) == original_state["swappiness"]
    assert mmbench_cgroups() == []
    assert "nothing to restore" in mmbench("restore", check=True).stdout
    assert mmbench("show", "--results", str(results), "k", check=True).stdout.count("status:   incomplete") == 1


def test_next_run_restores_and_says_so(suite_file, results, original_state):
    target = other_value(original_state["defrag"])
    sigkill_mid_run(suite_file, results, target, "k1")
    quick = suite_file(
        """
[suite]
iterations = 1
budget = "64M"
[actions]
sync = false
[[workload]]
name = "idle"
[workload.params]
duration = "0.2s"
""",
        "quick.toml",
    )
    out = mmbench("run", "--config", str(quick), "--results", str(results), "k2")
    assert out.returncode == 0, out.stderr
    assert "did not finish" in out.stderr and "restoring" in out.stderr
    assert read_knob(DEFRAG) == original_state["defrag"]
    assert mmbench_cgroups() == []


def test_success_restores_everything(suite_file, results, original_state):
    scratch_existed = Path("/var/tmp/mmbench").exists()
    target = other_value(original_state["defrag"])
    text = long_suite(suite_file, target).read_text().replace('"60s"', '"0.3s"')
    out = mmbench("run", "--config", str(suite_file(text, "short.toml")), "--results", str(results), "ok")
    assert out.returncode == 0, out.stderr
    assert read_knob(DEFRAG) == original_state["defrag"]
    assert mmbench_cgroups() == []
    assert not Path("/var/lib/mmbench/journal.jsonl").exists()
    assert Path("/var/tmp/mmbench").exists() == scratch_existed  # scratch space created is removed
    fp = json.loads((results / "ok" / "fingerprint.json").read_text())
    assert fp["thp"]["defrag"] == target  # the fingerprint records the settings as run


def test_tracing_restored_after_sigkill(suite_file, results, original_state):
    """mm-trace mounts tracefs (if needed), creates a trace instance and enables events: after a
    SIGKILL mid-run, `mmbench restore` puts all of it back."""
    from mmbench.monitors.trace.tracefs import TRACEFS, is_mounted

    before = _tracing_state()
    text = long_suite(suite_file, original_state["defrag"]).read_text() + "\n[monitors.mm-trace]\n"
    proc = start_mmbench("run", "--config", str(suite_file(text, "trace.toml")), "--results", str(results), "t")
    try:

        def tracing_on() -> bool:
            return is_mounted() and any(p.name.startswith("mmbench") for p in (TRACEFS / "instances").iterdir())

        assert wait_for(tracing_on, 30), "mm-trace never started"
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _tracing_state() != before  # SIGKILL: the instance is still there
    mmbench("restore", check=True)
    assert _tracing_state() == before
    assert mmbench_cgroups() == []


def _tracing_state() -> dict:
    from mmbench.monitors.trace.tracefs import TRACEFS, is_mounted

    st = {"mounted": is_mounted()}
    if st["mounted"]:
        t = TRACEFS
        st["instances"] = sorted(p.name for p in (t / "instances").iterdir())
        st["set_event"] = (t / "set_event").read_text()
        st["buffer_size_kb"] = (t / "buffer_size_kb").read_text()
    return st


def test_second_ctrl_c_does_not_cut_the_restore_short(suite_file, results, original_state):
    import time

    target = other_value(original_state["defrag"])
    proc = start_mmbench("run", "--config", str(long_suite(suite_file, target)), "--results", str(results), "cc")
    try:
        assert wait_for(changed(target), 30)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert read_knob(DEFRAG) == original_state["defrag"]
    assert mmbench_cgroups() == []
    assert "nothing to restore" in mmbench("restore", check=True).stdout
