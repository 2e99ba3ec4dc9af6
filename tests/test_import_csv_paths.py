"""A samples CSV is read by Python's csv module when small (no numpy import, no C process: an
import of one run cost 0.11 s of its own work) and by samplecsv.c when large; both paths give the
same runs, and both name a bad field the same way."""

from __future__ import annotations

import pytest

from mmbench.errors import UsageError
from mmbench.importers import samples

CSV = (
    "workload,iteration,metric,unit,better,value\n"
    + "".join(f"w,{i},lat,us,lower,{v}\n" for i in range(3) for v in (1.5, 2.25, 3.0 + i))
    + "".join(f"w,{i},ops,ops/s,higher,{100 + i}\n" for i in range(3))
)


def _flat(runs):
    out = []
    for w in runs:
        for it in w.iterations:
            out.append((w.label, it.index, {k: [float(x) for x in v] for k, v in sorted(it.samples.items())}))
    return out


def test_small_and_fast_paths_agree(tmp_path, monkeypatch):
    p = tmp_path / "s.csv"
    p.write_text(CSV)
    small = _flat(samples.read_samples_file(p))
    monkeypatch.setattr(samples, "FAST_CSV_MIN_BYTES", 0)
    fast = _flat(samples.read_samples_file(p))
    assert small == fast and len(small) == 3


@pytest.mark.parametrize("threshold", [1 << 40, 0])
def test_a_bad_value_is_named_on_both_paths(tmp_path, monkeypatch, threshold):
    monkeypatch.setattr(samples, "FAST_CSV_MIN_BYTES", threshold)
    p = tmp_path / "bad.csv"
    p.write_text(CSV.replace("2.25", "x2", 1))
    with pytest.raises(UsageError, match=r"bad\.csv: line \d+: .*value"):
        samples.read_samples_file(p)
