"""Suite validation: every mistake is one line naming file, key and expectation; exit status 2."""

from __future__ import annotations

import pytest

from conftest import mmbench
from mmbench.config.load import load_suite
from mmbench.model.sizes import parse_duration, parse_size
from mmbench.errors import UsageError

GOOD = """
[suite]
iterations = 2
budget = "256M"
[settings]
thp.enabled = "madvise"
[[workload]]
name = "faultin"
[workload.params]
size = "0.25x"
"""


def one_line_error(proc, *needles: str) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "text,needles",
    [
        (GOOD.replace("iterations", "iteratons"), ["suite.iteratons", "unknown key", "iterations"]),
        (GOOD.replace("[settings]", "[setings]"), ["setings", "unknown key"]),
        (GOOD.replace("iterations = 2", 'iterations = "many"'), ["suite.iterations"]),
        (GOOD.replace('name = "faultin"', 'name = "faultn"'), ["workload[faultn].name", "faultin"]),
        (GOOD.replace('size = "0.25x"', 'sise = "0.25x"'), ["workload[faultin].params.sise", "size"]),
        (GOOD.replace('size = "0.25x"', 'size = "12Q"'), ["workload[faultin].params.size", "12Q"]),
        (
            GOOD.replace('thp.enabled = "madvise"', 'thp.enabled = "sometimes"'),
            ["settings.thp.enabled", "sometimes", "always"],
        ),
        (GOOD.replace('thp.enabled = "madvise"', "vm.swapiness = 10"), ["settings.vm.swapiness", "swappiness"]),
        (GOOD.replace('thp.enabled = "madvise"', 'vm.swappiness = "lots"'), ["settings.vm.swappiness", "integer"]),
        (
            GOOD.replace('thp.enabled = "madvise"', "vm.drop_caches = 3"),
            ["settings.vm.drop_caches", "actions.drop_caches"],
        ),
        (GOOD.replace('budget = "256M"', 'budget = "100T"'), ["suite.budget", "MemTotal"]),
        (GOOD + "\n[monitors.nosuch]\n", ["monitors.nosuch", "unknown monitor"]),
        (GOOD + '\n[swap]\ntype = "floppy"\n', ["swap.type"]),
        ("[suite\n", ["not valid TOML"]),
    ],
)
def test_config_errors_are_one_line(suite_file, results, text, needles):
    path = suite_file(text)
    proc = mmbench("run", "--config", str(path), "--results", str(results), "x")
    line = one_line_error(proc, *needles)
    assert str(path) in line or "TOML" in line


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--set", "nosuch.size=1G"], ["--set nosuch.size", "no workload"]),
        (["--set", "faultin.size"], ["--set faultin.size", "KEY=VALUE"]),
        (["--set", "thp.enabled=bogus"], ["thp.enabled", "bogus"]),
        (["--set", "faultin.bogus=1"], ["params.bogus", "unknown parameter"]),
        (["--iterations", "x"], ["--iterations"]),
    ],
)
def test_bad_arguments_are_one_line(suite_file, results, args, needles):
    proc = mmbench("run", "--config", str(suite_file(GOOD)), "--results", str(results), *args, "x")
    one_line_error(proc, *needles)


def test_bad_run_name_and_missing_config(suite_file, results):
    one_line_error(mmbench("run", "--config", str(suite_file(GOOD)), "--results", str(results), "a b"), "run name")
    one_line_error(mmbench("run", "--config", "/nonexistent.toml", "x"), "--config", "no such file")
    one_line_error(mmbench("compare", "--results", str(results), "nosuch"), "no run named 'nosuch'")
    one_line_error(mmbench("frobnicate"), "invalid choice")


def test_set_overrides(suite_file):
    path = suite_file(GOOD)
    s = load_suite(
        str(path),
        [
            "thp.enabled=never",
            "iterations=7",
            "faultin.size=64M",
            "budget=128M",
            "actions.drop_caches=true",
            "faultin.madvise=false",
            "warmup=2",
        ],
    )
    assert s.settings["thp.enabled"] == "never"
    assert s.workloads[0].iterations == 7 and s.workloads[0].warmup == 2
    assert s.workloads[0].params == {"size": 64 << 20, "madvise": False, "passes": 1}
    assert s.budget == 128 << 20 and s.actions["drop_caches"] is True
    # a relative size follows the budget it is relative to
    s = load_suite(str(path), ["budget=128M"])
    assert s.workloads[0].params["size"] == 32 << 20
    assert s.effective["settings"]["thp.enabled"] == "madvise"
    s = load_suite(str(path), ["monitors.meminfo", "monitors.psi.interval=2s"])
    assert {m.name: m.interval for m in s.monitors} == {"meminfo": 1.0, "psi": 2.0}
    s = load_suite("smoke", ["monitors.meminfo=false"])
    assert "meminfo" not in [m.name for m in s.monitors] and "proc-vmstat" in [m.name for m in s.monitors]


def test_shipped_suite_by_name():
    s = load_suite("smoke")
    assert s.budget <= 512 << 20
    assert s.workloads[0].plugin == "faultin"
    with pytest.raises(UsageError, match="shipped"):
        load_suite("smoek")


def test_sizes_and_durations():
    assert parse_size("512M") == 512 << 20
    assert parse_size("2G") == 2 << 30
    assert parse_size("0.5x", 1 << 30) == 512 << 20
    assert parse_size("15x", 1 << 20) == 15 << 20
    assert parse_size(4096) == 4096
    assert parse_duration("250ms") == 0.25 and parse_duration("5m") == 300 and parse_duration(3) == 3.0
    for bad in ("12Q", "x", "-1M", "1.2.3G"):
        with pytest.raises(ValueError):
            parse_size(bad, 1 << 30)
    with pytest.raises(ValueError, match="budget"):
        parse_size("0.5x")


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="needs root")
def test_kernel_rejected_value_is_one_line_and_nothing_stays_changed(suite_file, results):
    from pathlib import Path
    from mmbench.model.kernel import read_knob

    before = read_knob(Path("/proc/sys/vm/swappiness"))
    text = GOOD.replace('thp.enabled = "madvise"', "vm.swappiness = 7\nvm.min_free_kbytes = -5")
    proc = mmbench("run", "--config", str(suite_file(text)), "--results", str(results), "x")
    one_line_error(proc, "settings.vm.min_free_kbytes", "rejected", "-5")
    assert read_knob(Path("/proc/sys/vm/swappiness")) == before
    assert not results.exists() or not (results / "x").exists()


def test_set_grammar_routes_each_key_to_one_place():
    from mmbench.config.load import apply_override

    doc = {"workload": [{"name": "simoop", "params": {}}, {"name": "usemem", "label": "hog"}]}
    for item in (
        "simoop.warmup=3",
        "simoop.warmup_time=2s",
        "hog.iterations=4",
        "simoop.params.runtime=9s",
        "thp.enabled=never",
        "vm.swappiness=10",
        "vm.memory=512M",
        "warmup=2",
        "suite.budget=1G",
        "swap.type=zram",
        "monitors.psi",
        "monitors.meminfo.interval=0.5",
        "simoop.with.anonhog.size=1M",
    ):
        apply_override(doc, item)
    sim, hog = doc["workload"]
    assert sim["warmup"] == 3 and sim["params"] == {"warmup_time": "2s", "runtime": "9s"}
    assert sim["with"] == {"anonhog": {"size": "1M"}}
    assert hog["iterations"] == 4 and "params" not in hog
    assert doc["settings"] == {"thp.enabled": "never", "vm.swappiness": 10}
    assert doc["vm"] == {"memory": "512M"}
    assert doc["suite"] == {"warmup": 2, "budget": "1G"}
    assert doc["swap"] == {"type": "zram"}
    assert doc["monitors"] == {"psi": {}, "meminfo": {"interval": 0.5}}
    apply_override(doc, "monitors.psi=false")
    assert "psi" not in doc["monitors"]
    for bad, needle in (("nosuch.size=1", "no workload"), ("simoop", "KEY=VALUE"), ("x=1", "LABEL.PARAM")):
        with pytest.raises(UsageError, match=needle):
            apply_override(doc, bad)


def test_key_lists_come_from_one_schema():
    from mmbench.config.load import SUITE_KEYS, VM_KEYS
    from mmbench.config.schema import SWAP_PARAMS, SwapSpec, WorkloadSpec
    from mmbench.plugins import RESERVED_PARAMS

    assert set(SWAP_PARAMS) == set(SwapSpec.model_fields)
    assert RESERVED_PARAMS == {f.alias or n for n, f in WorkloadSpec.model_fields.items()}
    assert {"iterations", "warmup", "budget", "timeout", "headline"} <= SUITE_KEYS
    assert {"kernel", "memory", "cpus", "numa"} <= VM_KEYS
