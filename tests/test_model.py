"""The shared model: kernel text readers on real formats, knob values as they are written back,
page geometry read from the running kernel, quirk tables, and the plugin registry's rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mmbench import plugins
from mmbench.model import kernel, quirks
from mmbench.workloads.base import Workload

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    "text,value",
    [
        ("always [madvise] never\n", "madvise"),  # THP enabled
        ("always defer defer+madvise [madvise] never\n", "madvise"),  # THP defrag
        ("lzo [lzo-rle] lz4 zstd\n", "lzo-rle"),  # zram comp_algorithm
        ("7 (expanded: 1408)\n", "1408"),  # tracefs buffer_size_kb
        ("60\n", "60"),
        ("[0]\n", "[0]"),  # one token: not a choice list
    ],
)
def test_read_knob_gives_what_is_written_back(tmp_path, text, value):
    f = tmp_path / "knob"
    f.write_text(text)
    assert kernel.read_knob(f) == value


def test_meminfo_and_vmstat_parsers_on_real_text():
    mi = kernel.parse_meminfo("MemTotal:       24576000 kB\nHugePages_Total:       0\nBogus line\n")
    assert mi == {"MemTotal": 24576000, "HugePages_Total": 0}
    before = kernel.parse_vmstat((DATA / "vmstat-before.txt").read_text())
    after = kernel.parse_vmstat((DATA / "vmstat-after.txt").read_text())
    assert len(before) > 100 and "pgscan_kswapd" in before
    d = kernel.vmstat_delta(before, after)
    assert d["pgfault"] == after["pgfault"] - before["pgfault"] and d["pgfault"] > 0


def test_live_kernel_geometry():
    assert kernel.page_size() == os.sysconf("SC_PAGE_SIZE")
    assert kernel.thp_size() % kernel.page_size() == 0
    first = Path("/proc/pagetypeinfo").read_text().splitlines()[0] if os.geteuid() == 0 else ""
    if first.startswith("Page block order:"):
        assert kernel.pageblock_order() == int(first.split(":")[1])
    assert kernel.meminfo_bytes("MemTotal") > 0
    assert kernel.meminfo_bytes("NoSuchField", 7) == 7
    with pytest.raises(RuntimeError):
        kernel.meminfo_bytes("NoSuchField")


def test_quirk_tables_are_consistent():
    for what, files in quirks.CGROUP_FILES.items():
        assert set(files) == {1, 2}, what
    assert quirks.cgroup_file("limit", 2) == "memory.max"
    assert quirks.cgroup_file("limit", 1) == "memory.limit_in_bytes"
    # every row's counter list names each raw counter once
    for row, names in quirks.COUNTERS.items():
        assert len(names) == len(set(names)), row


def test_exporter_names_are_their_module_names():
    assert set(plugins.exporters()) == set(plugins.module_names("exporter"))
    assert {"text", "markdown", "csv", "json"} <= set(plugins.exporters())


def test_every_monitor_series_names_its_columns():
    for name, cls in plugins.monitors().items():
        for spec in cls.series:
            assert spec.columns and spec.title and spec.unit, (name, spec)
    graphed = {n for n, c in plugins.monitors().items() if c.series}
    assert {"meminfo", "proc-vmstat", "psi", "memcg"} <= graphed


def test_reserved_parameter_name_is_refused_at_load(monkeypatch):
    from mmbench.model.params import Param

    class Bad(Workload):
        name = "bad-warmup"
        params = {"warmup": Param("int", 1, "clashes with the suite's warm-up key")}

    problem = plugins._check("workload", Bad)
    assert problem and "'warmup'" in problem and "reserves" in problem
    for name, cls in plugins.workloads().items():
        assert plugins._check("workload", cls) is None, name
    assert not plugins.LOAD_ERRORS["workload"], plugins.LOAD_ERRORS


def test_a_broken_plugin_module_is_recorded_not_fatal(tmp_path, monkeypatch):
    pkg = tmp_path / "fakeplugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text(
        "from mmbench.workloads.base import Workload\nclass Good(Workload):\n    name = 'good'\n"
    )
    (pkg / "broken.py").write_text("import no_such_module_anywhere\n")
    (pkg / "clash.py").write_text(
        "from mmbench.workloads.base import Workload\n"
        "from mmbench.model.params import Param\n"
        "class Clash(Workload):\n    name = 'clash'\n"
        "    params = {'label': Param('str', 'x', 'clashes')}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(plugins.KINDS, "fake", plugins.Kind("fakeplugins", "mmbench.workloads.base", ("Workload",)))
    monkeypatch.setitem(plugins.LOAD_ERRORS, "fake", {})
    found = plugins.plugins.__wrapped__("fake")
    assert list(found) == ["good"]
    errs = plugins.LOAD_ERRORS["fake"]
    assert "ModuleNotFoundError" in errs["broken"]
    assert "'label'" in errs["clash"] and "reserves" in errs["clash"]


def test_a_metric_kind_the_store_cannot_read_back_is_refused_at_load():
    from mmbench.model.results import MetricDef

    class Odd(Workload):
        name = "odd-kind"
        metrics = [MetricDef("Elapsed", "s", "lower", "duration")]  # type: ignore[arg-type]

    problem = plugins._check("workload", Odd)
    assert problem and "'duration'" in problem and "kinds:" in problem
