"""The guest console's reading (vm/qemu.py ``console_event``): booted, the run's status, a panic,
and a panic during power-off after the run reported its status, on a real 6.12.117 console."""

from __future__ import annotations

from pathlib import Path

from mmbench.vm.qemu import console_event

DATA = Path(__file__).parent / "data" / "vm"


def _read(lines: list[str]) -> dict:
    state: dict = {"exit": None, "panic": False, "booted": False, "powering_off": False}
    for line in lines:
        console_event(line, state)
    return state


def test_panic_while_powering_off_after_the_status_is_not_the_runs():
    # a 6.12.117 guest (seed001, A/A round 3 of 2026-11-28): the run finished and reported 0, the
    # kernel printed "reboot: Power down", then the guest script's shell exited: init killed
    lines = (DATA / "console-6.12.117-poweroff-race.log").read_text().splitlines()
    assert any("Attempted to kill init" in l for l in lines)
    state = _read(lines)
    assert state["booted"] and state["exit"] == 0 and state["powering_off"] and not state["panic"]


def test_a_panic_before_the_status_or_before_power_off_is_the_runs():
    panic = "Kernel panic - not syncing: Fatal exception in interrupt"
    assert _read(["MMBENCH-GUEST-READY", panic])["panic"]
    # reported its status, but the power-off had not begun: a panic of its own
    assert _read(["MMBENCH-GUEST-READY", "MMBENCH-GUEST-EXIT 0", panic])["panic"]
    assert _read(["MMBENCH-GUEST-READY", "MMBENCH-GUEST-EXIT 0", "reboot: Power down"])["exit"] == 0
    assert _read(["MMBENCH-GUEST-EXIT x"])["exit"] == 125
