"""Kernels under test in a VM (`mmbench run --kernel`): one Debian cloud kernel booted under
QEMU (TCG here: KVM cannot boot standard kernels on our machines; the probe decides), a guest
whose working set exceeds its memory (whole-machine reclaim for real), a guest kernel panic,
SIGKILL of the host side, and bad arguments.

The kernel package is fetched once into $MMBENCH_CACHE (apt-get download, never installed)."""

from __future__ import annotations

import json
import os
import shutil
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
    out = mmbench(
        "run",
        "--config",
        str(SUITE),
        "--kernel",
        KERNEL,
        "--vm-memory",
        "512M",
        "--results",
        str(results),
        "reclaim",
        timeout=1500,
    )
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
    assert fp["memory"]["MemTotal"] < 512 << 20  # the guest's memory, not the host's
    text = mmbench("compare", "--results", str(results), "reclaim", check=True).stdout
    assert "Kswapd pages scanned" in text or "Direct pages scanned" in text
    assert "Trace events lost, CPU 0" in text


def test_guest_trace_is_decoded_on_the_host(guest_run):
    """mm-trace in the guest only records (raw pages, formats, tasks); the host decodes after the
    guest powers off, with the C decoder, and gets what the Python reference gets."""
    from mmbench.monitors.trace import decode as D

    results, out, _ = guest_run
    it = results / "reclaim" / "usemem" / "iter-0"
    meta = json.loads((it / "result.json").read_text())["monitors"]["mm-trace"]
    assert "deferred" not in meta and meta["decoded_on_host"] and meta["decoder"] == "c", meta
    assert meta["events"] > 1000 and meta["stalls"] > 0
    assert "mm-trace: 2 iteration(s) finished on the host" in out.stderr  # idle, then usemem
    mon = it / "monitors" / "mm-trace"
    counts = json.loads((mon / "counts.json").read_text())
    assert counts["decoded_on"].startswith("host") and set(counts["cpus"]) == {"0"}
    tasks = json.loads((mon / "tasks.json").read_text())
    assert any(c.startswith("kswapd") for c in tasks["comms"].values()) and tasks["workload_pids"]
    ref = D.run_reference(D.Capture(mon), mon / "reference.tsv")
    assert ref["stalls"] == meta["stalls"] and sum(ref["events"].values()) == meta["events"]
    assert (mon / "reference.tsv").read_text() == (mon / "stalls.tsv").read_text()
    assert any(s.who == "kswapd" for s in D.sa.read_stalls(mon / "stalls.tsv"))


def test_guest_runs_on_the_instruction_clock_and_counts_instructions(guest_run):
    """The default clock under TCG counts instructions (one vCPU); the plugin's counts reach the
    host: non-zero, and the reclaiming iteration's kernel count far above the idle one's."""
    results, out, _ = guest_run
    fp = json.loads((results / "reclaim" / "fingerprint.json").read_text())
    if fp["vm"]["accelerator"] != "tcg":
        pytest.skip("KVM here: the instruction clock is TCG's")
    assert fp["vm"]["clock"] == "instructions" and fp["vm"]["cpus"] == 1, fp["vm"]
    assert "guest clock: instructions" in out.stderr

    def rows(workload: str) -> dict[str, float]:
        it = results / "reclaim" / workload / "iter-0"
        meta = json.loads((it / "result.json").read_text())["monitors"]["insn-count"]
        assert meta["source"] == "tcg-plugin" and "deferred" not in meta, meta
        summary = json.loads((results / "reclaim" / meta["dir"] / "summary.json").read_text())
        return {m["name"]: v[0] for m, v in summary["metrics"]}

    idle, reclaim = rows("idle"), rows("usemem")
    assert idle["Kernel instructions"] > 0 and idle["User instructions"] > 0
    assert reclaim["Kernel instructions"] > 20 * idle["Kernel instructions"], (idle, reclaim)
    assert reclaim["Kernel instructions per page allocated"] > 0
    text = mmbench("compare", "--results", str(results), "reclaim", check=True).stdout
    assert "monitor insn-count: usemem" in text and "Kernel instructions" in text


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
    suite = suite_file('[suite]\niterations = 1\n[[workload]]\nname = "idle"\n[workload.params]\nduration = "600s"\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mmbench",
            "run",
            "--config",
            str(suite),
            "--kernel",
            KERNEL,
            "--vm-memory",
            "256M",
            "--results",
            str(tmp_path / "r"),
            "killed",
        ],
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


@pytest.mark.parametrize(
    "kernel, words",
    [
        ("/nonexistent/bzImage", "no such file"),
        ("/etc/hostname", "not an x86 kernel image"),
        ("debian:linux-image-0.0.0-none-amd64", "no such package"),
        ("debian:../../etc", "not a Debian kernel image package name"),
        ("", "--kernel"),
    ],
)
def test_bad_kernel_is_one_line_exit_2(kernel, words, results):
    out = mmbench("run", "--config", "smoke", "--kernel", kernel, "--results", str(results), "x", timeout=120)
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not results.exists() or not list(results.iterdir())


FAKE_TREE_MAKEFILE = """\
# a stand-in for a kernel tree: kernbench's two make steps, the second reading every file of
# the tree (as a build's lookups do) and failing if the guest could write to the tree
tinyconfig:
\t@mkdir -p $(O) && echo CONFIG_TEST=y > $(O)/.config
mm/:
\t@mkdir -p $(O)/mm && find $(CURDIR)/src -type f -exec cat {} + > /dev/null && echo walked > $(O)/mm/walk.o
\t@touch $(CURDIR)/written 2>/dev/null && echo "the source tree is writable in the guest" >&2 && exit 1 || true
"""


def test_guest_builds_from_a_read_only_disk_of_the_host_tree(tmp_path):
    """kernbench's source reaches the guest as a read-only ext4 disk mounted at the tree's own
    path: a tree of 30,000 files (more than virtiofsd's 20,000 file descriptors here) is read in
    full, the guest cannot write to it, and the stored run says which filesystem it came from.
    A fake tree in a private cache keeps this to one cheap iteration."""
    from mmbench.workloads.kernbench import STAMP, source_tarball
    from mmbench.model.cache import cache_root

    if source_tarball() is None:
        pytest.skip("kernbench needs Debian's linux-source package")
    real = cache_root()
    cache = tmp_path / "cache"
    tree = cache / "kernbench" / source_tarball().name[: -len(".tar.xz")]
    for d in range(100):
        (tree / "src" / f"d{d}").mkdir(parents=True)
        for f in range(300):
            (tree / "src" / f"d{d}" / f"f{f}.c").write_text(f"int f{f};\n")
    (tree / "Makefile").write_text(FAKE_TREE_MAKEFILE)
    (tree / STAMP).write_text("test\n")
    (cache / "kernels").parent.mkdir(parents=True, exist_ok=True)
    (cache / "kernels").symlink_to(real / "kernels")  # the kernel package, fetched once
    accel = []
    memo = real / "vm" / "accel-probe.json"
    if memo.exists():  # the real cache's probe answer for this kernel, instead of probing again
        accel = [f"vm.accel={v}" for k, v in json.loads(memo.read_text()).items() if "6.1.0-47-cloud" in k][:1]
    suite = tmp_path / "kbtree.toml"
    suite.write_text(
        '[suite]\niterations = 1\nwarmup = 0\n[[workload]]\nname = "kernbench"\n'
        '[workload.params]\nconfig = "tinyconfig"\ntargets = ["mm/"]\njobs = 1\n'
    )
    results = tmp_path / "results"
    try:
        out = mmbench(
            "run",
            "--config",
            str(suite),
            "--kernel",
            KERNEL,
            "--vm-memory",
            "512M",
            "--results",
            str(results),
            *[a for s in accel for a in ("--set", s)],
            "kbtree",
            timeout=900,
            env={"MMBENCH_CACHE": str(cache)},
        )
        _check_kbtree(out, results, cache, tree)
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # 30,000 files and their image


def _check_kbtree(out, results: Path, cache: Path, tree: Path) -> None:
    assert out.returncode == 0, out.stderr[-3000:]
    assert "making a read-only disk of" in out.stderr
    it = results / "kbtree" / "kernbench" / "iter-0"
    res = json.loads((it / "result.json").read_text())
    assert res["status"] == "ok", res.get("reason")
    assert res["samples"]["Elapsed"][0] > 0
    path, mount, build = (it / "raw" / "kernbench-source.txt").read_text().splitlines()
    assert path == str(tree)
    point, fstype, source, options = mount.split()
    assert (point, fstype) == (str(tree), "ext4") and options.split(",")[0] == "ro"
    # the objects went to the scratch disk (found by its serial), another disk than the source's
    b_point, b_fstype, b_source, b_options = build.split()
    assert (b_point, b_fstype) == ("/var/tmp", "ext4") and b_options.startswith("rw") and b_source != source
    assert not (tree / "written").exists() and len(list(tree.iterdir())) == 3
    assert len(list((cache / "vm" / "trees").glob("*.ext4"))) == 1
    assert _ours(f"{cache}/vm/run-kbtree-") == [] and not list((cache / "vm").glob("run-kbtree-*"))
