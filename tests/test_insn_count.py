"""Instruction counts without a kernel build: the TCG plugin built and run on a boot sector, its
log read, the per-work and per-subsystem rows, the symbol groups of a linked ELF, the guest clock
option and the line a machine that cannot count prints."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, mmbench, needs_root
from mmbench.monitors import insn_count as ic

DATA = REPO / "tests" / "data" / "insn"


def _boot_sector(path: Path) -> None:
    """A 512-byte disk whose boot sector jumps through three 16-byte slots at 0x7c00, then halts."""
    img = bytearray(b"\x90" * 512)
    img[0x00:0x02] = b"\xeb\x0e"  # 0x7c00: jmp 0x7c10
    img[0x10:0x12] = b"\xeb\x0e"  # 0x7c10: jmp 0x7c20
    img[0x20:0x24] = b"\xfa\xf4\xeb\xfd"  # 0x7c20: cli; hlt; jmp back to hlt
    img[510:512] = b"\x55\xaa"
    path.write_bytes(bytes(img))


@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="needs QEMU (scripts/setup.sh installs it)")
def test_plugin_builds_counts_and_answers_each_request(tmp_path):
    """The plugin, built as mmbench builds it, loaded by the real QEMU under the instruction clock:
    every slot the guest jumps to is one request answered with its ID, the counts only grow, and
    at exit it writes its totals."""
    from mmbench.cbuild import library_for

    lib = library_for(REPO / "mmbench" / "vm" / "insn_plugin.c")
    disk = tmp_path / "boot.img"
    _boot_sector(disk)
    log = tmp_path / "insn.log"
    proc = subprocess.Popen(
        [
            "qemu-system-x86_64",
            "-accel",
            "tcg",
            "-icount",
            "shift=0,sleep=off",
            "-m",
            "32M",
            "-display",
            "none",
            "-no-reboot",
            "-drive",
            f"file={disk},format=raw,if=ide",
            "-plugin",
            f"{lib},out={log},marks=0x7c00",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "mark 2 " not in (log.read_text() if log.exists() else ""):
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0].decode(errors="replace")
    lines = log.read_text().splitlines()
    assert lines[0] == "mmbench-insn 1 groups=0", (lines, out)
    marks = [l.split() for l in lines if l.startswith("mark ")]
    assert [m[1] for m in marks] == ["0", "1", "2"], lines
    users = [int(m[4]) for m in marks]
    assert users[0] > 100_000 and users == sorted(users) and users[2] - users[0] <= 4, users  # BIOS, then 1 per jump
    assert lines[-1].startswith("end 1 ") and int(lines[-1].split()[2]) >= users[2], lines
    start, end = ic.read_plugin_marks(log, [0, 2])
    counts = ic.counts_between(start, end, [])
    assert counts["cpus"][0]["user"] == users[2] - users[0] and counts["cpus"][0]["kernel"] == 0


def test_plugin_refuses_a_bad_argument_in_one_line(tmp_path):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs QEMU")
    from mmbench.cbuild import library_for

    lib = library_for(REPO / "mmbench" / "vm" / "insn_plugin.c")
    p = subprocess.run(
        ["qemu-system-x86_64", "-accel", "tcg", "-display", "none", "-plugin", f"{lib},bogus=1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode != 0 and "mmbench insn plugin: unknown argument bogus=1" in p.stdout + p.stderr


def test_a_request_missing_from_the_log_is_said(tmp_path):
    log = tmp_path / "insn.log"
    log.write_text("mmbench-insn 1 groups=0\nmark 0 0 1  10 20\n")
    with pytest.raises(ValueError, match=r"no counts for request\(s\) \[1\]"):
        ic.read_plugin_marks(log, [0, 1])
    log.write_text("something else\n")
    with pytest.raises(ValueError, match="not an instruction plugin log"):
        ic.read_plugin_marks(log, [0, 1])


def test_slots_wrap_around_by_order():
    """Request 4096 reuses slot 0: the log's second line for slot 0 is request 4096."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write("mmbench-insn 1 groups=0\n")
        fh.write("mark 0 0 1  1 1\n")
        for slot in range(1, 4096):
            fh.write(f"mark {slot} 0 1  {slot + 1} 1\n")
        fh.write("mark 0 0 1  9999 5\n")
    start, end = ic.read_plugin_marks(Path(fh.name), [4095, 4096])
    os.unlink(fh.name)
    assert start == [1, 4096, 1] and end == [1, 9999, 5]


def test_rows_per_work_and_per_subsystem():
    groups = ["page allocator", "reclaim", "compaction"]
    counts = {
        "source": "tcg-plugin",
        "groups": groups,
        "cpus": [
            {"user": 1000, "kernel": 9000, "groups": {"page allocator": 600, "reclaim": 300, "compaction": 0}},
            {"user": 500, "kernel": 1000, "groups": {"page allocator": 400, "reclaim": 100, "compaction": 0}},
        ],
    }
    work = {
        "pgalloc_dma32": 40,
        "pgalloc_normal": 60,
        "pgfault": 50,
        "pgscan_kswapd": 8,
        "pgscan_direct": 2,
        "compact_migrate_scanned": 0,
        "compact_free_scanned": 0,
    }
    rows, notes = ic.insn_metrics(counts, work)
    got = {m.name: v[0] for m, v in rows}
    assert got["Kernel instructions"] == 10000 and got["User instructions"] == 1500
    assert got["Kernel instructions, vCPU 1"] == 1000
    assert got["Kernel instructions: page allocator"] == 1000
    assert got["Page allocator instructions per page allocated"] == 10.0  # 1000 / 100 pages
    assert got["Kernel instructions per page allocated"] == 100.0
    assert got["Kernel instructions per fault"] == 200.0
    assert got["Reclaim instructions per page scanned"] == 40.0  # 400 / 10
    assert "Compaction instructions per page scanned" not in got
    assert any("no pages scanned by compaction" in n for n in notes)
    assert all(m.better == "lower" for m, _ in rows)


def test_counts_without_groups_say_why():
    counts = {"source": "tcg-plugin", "groups": [], "cpus": [{"user": 1, "kernel": 2, "groups": {}}]}
    rows, notes = ic.insn_metrics(counts, {})
    assert [m.name for m, _ in rows] == ["Kernel instructions", "User instructions"]
    assert any("not built by mmbench" in n for n in notes)


def test_symbol_groups_of_a_linked_elf(tmp_path, monkeypatch):
    """Functions of each group's objects found in the linked binary; a static name that two
    objects define is placed by its offset in its own object."""
    from mmbench.kbuild import symbols

    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "a.c").write_text(
        "static int __attribute__((noinline)) helper(int x) { return x * 3 + 1; }\n"
        "int alloc_one(int x) { return helper(x) + 2; }\n"
        "int alloc_two(int x) { return helper(x) * 5; }\n"
    )
    (tmp_path / "mm" / "b.c").write_text(
        "static int __attribute__((noinline)) helper(int x) { return x - 7; }\n"
        "int scan_one(int x) { return helper(x) ^ 9; }\n"
    )
    (tmp_path / "main.c").write_text(
        "int alloc_one(int); int alloc_two(int); int scan_one(int);\n"
        "int main(int c, char **v) { (void)v; return alloc_one(c) + alloc_two(c) + scan_one(c); }\n"
    )
    for src in ("mm/a.c", "mm/b.c", "main.c"):
        subprocess.run(["gcc", "-O2", "-c", src, "-o", src[:-2] + ".o"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "main.o", "mm/a.o", "mm/b.o", "-o", "vmlinux"], cwd=tmp_path, check=True)
    monkeypatch.setattr(symbols, "GROUPS", (("page allocator", ("mm/a.o",)), ("reclaim", ("mm/b.o", "mm/none.o"))))
    out = tmp_path / "mm-symbols.tsv"
    record = symbols.write_symbol_groups(tmp_path, out, "test")
    assert symbols.read_group_names(out) == ["page allocator", "reclaim"]
    assert record["functions"] == {"page allocator": 3, "reclaim": 2}
    assert any("mm/none.o is not in this kernel's build" in n for n in record["notes"])
    nm = {
        l.split()[2]: int(l.split()[0], 16)
        for l in subprocess.run(["nm", str(tmp_path / "vmlinux")], capture_output=True, text=True).stdout.splitlines()
        if len(l.split()) == 3
    }
    lines = [l.split() for l in out.read_text().splitlines() if not l.startswith("#")]
    helpers = sorted((int(g), int(s, 16)) for g, s, e, name in lines if name == "helper")
    assert len(helpers) == 2 and helpers[0][0] == 1 and helpers[1][0] == 2
    # each helper sits right where its own object's other functions put it
    a_helper = helpers[0][1]
    assert abs(a_helper - nm["alloc_one"]) < 64 and abs(helpers[1][1] - nm["scan_one"]) < 64


@needs_root
def test_a_machine_that_cannot_count_says_so_in_one_line(tmp_path):
    if ic.pmu_counts_supported():
        pytest.skip("this machine has a PMU: insn-count counts with perf here")
    out = mmbench("monitor", "--duration", "1s", "--monitor", "insn-count", "--results", str(tmp_path / "r"), "idle")
    text = out.stdout + out.stderr
    assert "no instruction counts here" in text, text
    shown = mmbench("compare", "--results", str(tmp_path / "r"), "idle", "idle").stdout
    assert "Kernel instructions" not in shown


def test_vm_clock_without_a_guest_is_one_line(tmp_path):
    out = mmbench("run", "--config", "smoke", "--vm-clock", "instructions", "--results", str(tmp_path), "x")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--vm-clock: does not apply to a run on this machine" in out.stderr


def test_vm_clock_in_a_suite_is_checked(tmp_path, suite_file):
    bad = suite_file(
        '[[workload]]\nname = "faultin"\n[vm]\nkernel = "debian:linux-image-6.1.0-47-cloud-amd64"\n'
        'clock = "wallclock"\n'
    )
    out = mmbench("run", "--check", "--config", str(bad), "x")
    assert out.returncode == 2 and "clock" in out.stderr and "wallclock" in out.stderr, out.stderr


def test_clock_arguments_and_a_kvm_guest():
    from mmbench.vm.qemu import _accel_args
    from mmbench.vm.runner import resolve_clock

    assert _accel_args("tcg", "instructions", 3)[-2:] == ["-icount", "shift=3,sleep=off,align=off"]
    assert "-icount" not in _accel_args("tcg", "host") and "-icount" not in _accel_args("kvm", "instructions")
    said: list[str] = []
    assert resolve_clock("instructions", "kvm", said.append) == "host"
    assert said and "does not apply to a KVM guest" in said[0]
    assert resolve_clock("auto", "kvm", said.append) == "host" and len(said) == 1
    assert resolve_clock("auto", "tcg", said.append) == "instructions"
    assert resolve_clock("host", "tcg", said.append) == "host"


def test_compare_says_when_runs_used_different_clocks():
    from mmbench.analysis.compare.environment import vm_notes
    from mmbench.model.results import RunRecord

    def run(name: str, clock: str) -> RunRecord:
        vm = {"accelerator": "tcg", "clock": clock, "host": "h", "memory_mb": 512, "numa_nodes": 1, "qemu": "q"}
        if clock == "instructions":
            vm["clock_ns_per_instruction"] = 1
        return RunRecord(
            name=name,
            status="complete",
            created=0.0,
            finished=0.0,
            suite_text="",
            suite_hash="",
            fingerprint={"vm": vm},
            settings={},
        )

    notes = vm_notes([run("a", "instructions"), run("b", "host")], ["a", "b"])
    assert any(n.startswith("a: ran in a QEMU guest under TCG on the instruction clock") for n in notes), notes
    assert any(n.startswith("b: ran in a QEMU guest under TCG emulation on the host's clock") for n in notes)
    assert any("differ in guest clock" in n and "a=instructions" in n and "b=host" in n for n in notes), notes


def test_vcpus_on_the_instruction_clock():
    from mmbench.errors import UsageError
    from mmbench.vm.runner import resolve_cpus

    said: list[str] = []
    never = lambda n: pytest.fail("no probe for one vCPU")  # noqa: E731
    assert resolve_cpus(None, "instructions", "auto", never, said.append) == (1, "instructions")
    assert resolve_cpus(None, "host", "host", never, said.append) == (2, "host")
    assert resolve_cpus(4, "host", "auto", never, said.append) == (4, "host")
    cannot = lambda n: f"QEMU x cannot run {n}"  # noqa: E731
    assert resolve_cpus(2, "instructions", "auto", cannot, said.append) == (2, "host")
    assert said == ["guest clock: the host's, not instructions: QEMU x cannot run 2"]
    with pytest.raises(
        UsageError,
        match="--vm-cpus 2 with --vm-clock instructions: QEMU x cannot run 2; give --vm-cpus 1 or --vm-clock host",
    ):
        resolve_cpus(2, "instructions", "instructions", cannot, said.append)
    assert resolve_cpus(2, "instructions", "instructions", lambda n: None, said.append) == (2, "instructions")


REAL = REPO / "tests" / "data" / "insn"


def test_a_real_guest_log_gives_the_counts_the_run_stored():
    """The plugin's log from a real guest boot (tests/data/insn: five allocfree iterations on a
    6.1 kernel mmbench built) read again: every iteration's counts equal what the run stored, the
    kernel did most of the work, the page allocator's share is non-zero and below the kernel's."""
    meta = json.loads((REAL / "meta.json").read_text())
    for it in meta["iterations"]:
        start, end = ic.read_plugin_marks(REAL / "insn.log", it["marks"])
        counts = ic.counts_between(start, end, it["groups"])
        assert counts == it["counts"]
        cpu = counts["cpus"][0]
        assert cpu["kernel"] > cpu["user"] > 1_000_000
        assert 0 < cpu["groups"]["page allocator"] < sum(cpu["groups"].values()) < cpu["kernel"]
        rows = {m.name: v for m, v in ic.insn_metrics(counts, it["work"])[0]}
        per_page = rows["Page allocator instructions per page allocated"][0]
        pages = sum(v for k, v in it["work"].items() if k.startswith("pgalloc_"))
        assert per_page == pytest.approx(cpu["groups"]["page allocator"] / pages, rel=1e-9)
        assert 200 < per_page < 2000  # a 6.1 order-0 allocation and free take hundreds of instructions


def test_a_real_guest_log_cut_short_names_the_missing_request(tmp_path):
    """The same log without its last iteration's closing line: that iteration's counts are an
    error naming the request, not a number."""
    lines = (REAL / "insn.log").read_text().splitlines()
    cut = tmp_path / "insn.log"
    cut.write_text("\n".join(lines[:-2]) + "\n")
    last = json.loads((REAL / "meta.json").read_text())["iterations"][-1]
    with pytest.raises(ValueError, match=r"no counts for request\(s\) \[9\]"):
        ic.read_plugin_marks(cut, last["marks"])
