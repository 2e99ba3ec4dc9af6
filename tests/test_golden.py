"""Golden output of the text and markdown exporters: a fixed comparison (seeded data, vmstat rows,
duration rows, a latency metric, an environment difference) must render byte for byte as the files
in tests/data/golden/.  A deliberate change of the output regenerates them with
``MMBENCH_UPDATE_GOLDEN=1 pytest tests/test_golden.py``; review the diff like code."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from mmbench.analysis.compare import build_comparison
from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
from mmbench.plugins import exporters

GOLDEN = Path(__file__).parent / "data" / "golden"
TPUT = MetricDef("Fault throughput", "MB/s", "higher", "rate")
LAT = MetricDef("Fault latency", "us", "lower", "latency")


def run(name: str, scale: float, seed: int, thp: str) -> RunRecord:
    rng = np.random.default_rng(seed)
    its = []
    for i in range(5):
        its.append(
            IterationResult(
                "faultin",
                i,
                False,
                "ok",
                samples={
                    TPUT.name: [round(1000 * scale + rng.normal(0, 8), 3)],
                    LAT.name: [round(x, 3) for x in rng.exponential(10 / scale, 40)],
                },
                duration={
                    "user": round(1.0 + rng.normal(0, 0.01), 3),
                    "system": round(2.0 / scale, 3),
                    "elapsed": round(3.0 / scale + rng.normal(0, 0.02), 3),
                },
                vmstat_delta={
                    "pgfault": int(100000 / scale),
                    "pgmajfault": 0,
                    "thp_fault_alloc": int(500 * scale),
                    "thp_fault_fallback": int(20 / scale),
                    "compact_stall": 3,
                    "compact_success": 2,
                    "pgscan_kswapd": 4000,
                    "pgsteal_kswapd": 3900,
                },
            )
        )
    return RunRecord(
        name,
        "complete",
        1.7e9,
        1.7e9 + 60,
        "",
        "h",
        {"kernel": {"release": "6.1.0"}, "thp": {"enabled": thp}},
        {"thp.enabled": thp},
        [WorkloadRun("faultin", "faultin", {}, [TPUT, LAT], its)],
    )


@pytest.fixture(scope="module")
def comparison():
    return build_comparison(
        [run("madvise", 1.0, 11, "madvise"), run("always", 1.25, 12, "always")], pvalues=True, ratio=True
    )


@pytest.mark.parametrize(
    "fmt,opts,name",
    [
        ("text", {"pvalues": False, "ratio": False, "color": False}, "compare.txt"),
        ("text", {"pvalues": True, "ratio": True, "color": False}, "compare-pvalues-ratio.txt"),
        ("markdown", {"pvalues": True, "ratio": False, "color": False}, "compare.md"),
    ],
)
def test_exporter_output_is_golden(comparison, fmt, opts, name):
    out = exporters()[fmt].render(comparison, opts)
    path = GOLDEN / name
    if os.environ.get("MMBENCH_UPDATE_GOLDEN"):
        path.write_text(out)
    assert path.exists(), f"{path} missing: run with MMBENCH_UPDATE_GOLDEN=1 once and review it"
    assert out == path.read_text()
