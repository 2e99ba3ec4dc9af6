"""Kernels under test in a VM (`mmbench run --kernel`): one Debian cloud kernel booted under
QEMU (TCG here: KVM cannot boot standard kernels on our machines; the probe decides), a guest
whose working set exceeds its memory (whole-machine reclaim for real), a guest kernel panic,
SIGKILL of the host side, and bad arguments.

The kernel package is fetched once into $MMBENCH_CACHE (apt-get download, never installed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, mmbench, needs_root, wait_for

pytestmark = needs_root
KERNEL = "debian:linux-image-6.1.0-47-cloud-amd64"
SUITE = REPO / "tests" / "data" / "vm" / "reclaim-then-panic.toml"


def _ours(marker: str) -> list[str]:
    """Processes (qemu, virtiofsd) whose command line names this test's VM folder."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and ("qemu" in cmd or "virtiofsd" in cmd):
                out.append(f"{p.name}: {cmd[:120]}")
    return out


@pytest.fixture(scope="module")
def guest_run(tmp_path_factory):
    """One boot shared by the tests below: usemem at 1.3x the guest's memory (zram swap), then
    a workload that panics the guest."""
    results = tmp_path_factory.mktemp("vm") / "results"
    t0 = time.monotonic()
    out = mmbench("run", "--config", str(SUITE), "--kernel", KERNEL, "--vm-memory", "512M",
                  "--results", str(results), "reclaim", timeout=1500)
    return results, out, time.monotonic() - t0


def test_guest_reclaims_the_whole_machine(guest_run):
    results, out, wall = guest_run
    assert "booting 6.1.0-47-cloud-amd64" in out.stderr, out.stderr[-3000:]
    res = json.loads((results / "reclaim" / "usemem" / "iter-0" / "result.json").read_text())
    assert res["status"] == "ok", res.get("reason")
    delta = res["vmstat_delta"]
    # global reclaim, not memcg-limit reclaim: kswapd or direct reclaim scanned pages
    assert delta.get("pgscan_kswapd", 0) + delta.get("pgscan_direct", 0) > 0, delta
    assert delta.get("pswpout", 0) > 0
    fp = json.loads((results / "reclaim" / "fingerprint.json").read_text())
    assert fp["kernel"]["release"] == "6.1.0-47-cloud-amd64"
    assert fp["vm"]["accelerator"] in ("tcg", "kvm") and fp["vm"]["memory_mb"] == 512
    assert fp["vm"]["kernel_config"].get("CONFIG_TRANSPARENT_HUGEPAGE") == "y"
    assert fp["memory"]["MemTotal"] < 512 << 20          # the guest's memory, not the host's
    text = mmbench("compare", "--results", str(results), "reclaim", check=True).stdout
    assert "Kswapd pages scanned" in text or "Direct pages scanned" in text


def test_guest_panic_fails_the_iteration_with_the_console(guest_run):
    results, out, _ = guest_run
    meta = json.loads((results / "reclaim" / "run.json").read_text())
    assert meta["status"] in ("incomplete", "failed")
    assert "panicked" in meta["note"] and "console:" in meta["note"]
    res = json.loads((results / "reclaim" / "guestpanic" / "iter-0" / "result.json").read_text())
    assert res["status"] == "failed" and "Kernel panic" in res["reason"] or "sysrq" in res["reason"]
    assert (results / "reclaim" / "vm-console.log").exists()
    assert _ours("/vm/run-reclaim-") == []


def test_sigkill_of_the_host_side_then_restore(tmp_path, suite_file):
    suite = suite_file('[suite]\niterations = 1\n[[workload]]\nname = "idle"\n[workload.params]\n'
                       'duration = "600s"\n')
    proc = subprocess.Popen([sys.executable, "-m", "mmbench", "run", "--config", str(suite), "--kernel", KERNEL,
                             "--vm-memory", "256M", "--results", str(tmp_path / "r"), "killed"],
                            cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: len(_ours("/vm/run-killed-")) >= 3, timeout=120, interval=0.5)
        time.sleep(2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert _ours("/vm/run-killed-"), "QEMU and virtiofsd outlive a SIGKILLed mmbench until restore"
    # (on a shared machine another mmbench may take the lock first and restore it: same end state)
    mmbench("restore", check=True)
    assert wait_for(lambda: _ours("/vm/run-killed-") == [], timeout=20)
    cache = Path(os.environ.get("MMBENCH_CACHE") or Path.home() / ".cache" / "mmbench")
    assert not list((cache / "vm").glob("run-killed-*"))


@pytest.mark.parametrize("kernel, words", [
    ("/nonexistent/bzImage", "no such file"),
    ("/etc/hostname", "not an x86 kernel image"),
    ("debian:linux-image-0.0.0-none-amd64", "no such package"),
    ("debian:../../etc", "not a Debian kernel image package name"),
    ("", "--kernel"),
])
def test_bad_kernel_is_one_line_exit_2(kernel, words, results):
    out = mmbench("run", "--config", "smoke", "--kernel", kernel, "--results", str(results), "x", timeout=120)
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not results.exists() or not list(results.iterdir())
