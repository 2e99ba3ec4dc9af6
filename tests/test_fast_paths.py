"""The fast paths of issue 25 item 6 give exactly what the plain paths give:

- exactsum.c's sums are math.fsum's, bit for bit (and it declines where math.fsum raises or
  returns a signed zero);
- the statistics of a large float64 array (stored samples of a long run) equal those of the same
  values as a list, and a comparison of array-backed runs equals that of list-backed ones;
- MMTests' running sums (one cumsum per op) equal Perl's sum of each best-k slice;
- samplecsv.c's decimal fast path reads every number as strtod (and Python's float) does;
- the JSON importer's orjson path gives the samples json gives, and refuses what it refused."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from mmbench.analysis import exactsum
from mmbench.analysis import mmtests as mt
from mmbench.analysis import stats as st
from mmbench.errors import UsageError
from mmbench.importers import samples


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _adversarial(rng: random.Random, n: int) -> list[float]:
    kind = rng.randrange(6)
    if kind == 0:
        return [rng.uniform(-1e6, 1e6) for _ in range(n)]
    if kind == 1:  # exponents across the whole range
        return [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300) for _ in range(n)]
    if kind == 2:  # subnormals
        return [5e-324 * rng.randint(-9, 9) for _ in range(n)]
    if kind == 3:  # cancellation and halfway cases
        b = [rng.choice([1.0, 1e100, 1e-100, 2.0**-53, 2.0**53, 3 * 2.0**-54, -1e100]) for _ in range(n)]
        return b + [-x for x in b[: n // 2]]
    if kind == 4:
        return [rng.gauss(0, 1) * 2.0 ** rng.randint(-60, 60) for _ in range(n)]
    return [round(rng.uniform(1, 1000), 6) for _ in range(n)]


def test_exactsum_is_math_fsum():
    assert exactsum._load(), "exactsum.c did not build"
    rng = random.Random(7)
    declined = 0
    for _ in range(3000):
        x = _adversarial(rng, rng.randint(1, 400))
        a = np.array(x)
        got = exactsum.fsum(a)
        try:
            want = math.fsum(x)
        except OverflowError:
            want = None
        if got is None:
            declined += 1
            assert want is None or want == 0.0
            continue
        assert want is not None and _bits(got) == _bits(want), x[:4]
        m = want / len(x)
        sq = exactsum.fsum_sqdev(a, m)
        if sq is not None:
            assert _bits(sq) == _bits(math.fsum((v - m) * (v - m) for v in x))
    assert declined < 300  # it declines only for zero sums and overflow, not as a rule
    # where math.fsum raises, or the values are not finite, it declines
    assert exactsum.fsum(np.array([1e308, 1e308, -1e308])) is None
    assert exactsum.fsum(np.array([1.0, math.inf])) is None
    assert exactsum.fsum(np.array([1.0, math.nan])) is None
    assert exactsum.fsum(np.array([-0.0, -0.0])) is None


def _arrays(rng: np.random.Generator):
    yield rng.uniform(1, 1000, 5000).round(6)
    yield rng.lognormal(3, 2, 3000)
    yield np.concatenate([rng.uniform(1, 10, 2000), [np.nan]])
    yield np.concatenate([rng.uniform(1, 10, 2000), [np.inf]])
    yield rng.uniform(-1e200, 1e200, 1000)  # squares would overflow: the scaled path
    yield np.full(800, 3.5)


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_statistics_of_a_big_array_are_those_of_its_list(better):
    for a in _arrays(np.random.default_rng(3)):
        lst = a.tolist()
        assert st._big(a)
        for f in (st.amean, st.stddev, st.hmean, st.gmean):
            assert _bits(f(a)) == _bits(f(lst)), f.__name__
        s_arr, s_list = np.sort(a), st.sorted_values(lst)
        per = [a[: len(a) // 2], a[len(a) // 2 :]]
        rows_arr = st.summarise(per, better=better, latency=True, pooled_sorted=s_arr)
        rows_list = st.summarise([p.tolist() for p in per], better=better, latency=True, pooled_sorted=s_list)
        assert [(n, _bits(v)) for n, v in rows_arr] == [(n, _bits(v)) for n, v in rows_list]
        assert all(type(v) is float for _, v in rows_arr)


def test_a_comparison_of_array_backed_runs_is_that_of_list_backed_runs():
    from mmbench.analysis.compare import build_comparison
    from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun

    rng = np.random.default_rng(11)

    def run(name, shift, as_array):
        w = WorkloadRun(
            label="faults",
            plugin="imported",
            params={},
            metrics=[MetricDef("lat", "us", "lower", "latency"), MetricDef("ops", "ops/s", "higher", "throughput")],
        )
        for i in range(4):
            it = IterationResult(workload="faults", index=i, warmup=False, status="ok")
            lat = rng.lognormal(5 + shift, 0.5, 3000)
            if i == 2:
                lat[7] = np.nan  # a NaN sample: the non-finite path
            it.samples = {"lat": lat if as_array else lat.tolist(), "ops": [float(100 + i + shift)]}
            w.iterations.append(it)
        return RunRecord(
            name=name,
            status="complete",
            created="2026-11-27T00:00:00",
            finished="",
            suite_text="",
            suite_hash="",
            fingerprint={},
            settings={},
            workloads=[w],
        )

    state = rng.bit_generator.state
    lists = build_comparison([run("a", 0, False), run("b", 0.01, False)])
    rng.bit_generator.state = state
    arrays = build_comparison([run("a", 0, True), run("b", 0.01, True)])
    flat = [(r.metric, r.stat, r.values, r.pct, r.p) for s in lists.sections for r in s.rows]
    assert flat == [(r.metric, r.stat, r.values, r.pct, r.p) for s in arrays.sections for r in s.rows]
    assert any(r.stat == "P99" for s in arrays.sections for r in s.rows)


@pytest.mark.parametrize("preferred", ["Lower", "Higher"])
@pytest.mark.parametrize("rules", mt.RULES)
def test_mmtests_running_sums_are_perls_slice_sums(preferred, rules):
    """Each best-k mean from one running sum equals the mean of the slice summed on its own; an
    Hmean of the best values stays defined when a worse value is 0."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.uniform(1, 1000, 997).round(3), [0.0, -1.0, 5.5]])
    got = mt.summarise(values, "Variabletime", preferred, rules)
    data = np.sort(values)[::-1] if preferred == "Higher" else np.sort(values)
    names = {name: v for name, v, _ in got.rows}
    for pct in (25, 50, 75, 90, 95, 99):
        sub = data[: mt._k(len(data), pct)]
        want = mt._hmean(sub) if preferred == "Higher" else mt._amean(sub)
        label = next((n for n in names if n.endswith(f"-{pct}") and "mean" in n.lower()), None)
        if label is not None:
            assert _bits(names[label]) == _bits(want), label
    full = mt._hmean(data) if preferred == "Higher" else mt._amean(data)
    mean_label = next(n for n in names if n in ("Amean", "Hmean"))
    assert _bits(names[mean_label]) == _bits(full) or (math.isnan(full) and math.isnan(names[mean_label]))


def _decimal(rng: random.Random) -> str:
    k = rng.randrange(7)
    if k == 0:
        return repr(rng.uniform(-1e6, 1e6))
    if k == 1:
        return f"{rng.uniform(0, 1000):.{rng.randint(0, 17)}f}"
    if k == 2:
        return str(rng.randint(-(10**17), 10**17))
    if k == 3:
        return f"{rng.randint(0, 10**16)}e{rng.randint(-30, 30)}"
    if k == 4:
        return (
            f"{rng.choice(['', '+', '-'])}{rng.randint(0, 999)}.{rng.randint(0, 10 ** rng.randint(1, 18))}"
            f"E{rng.choice(['', '+', '-'])}{rng.randint(0, 25)}"
        )
    if k == 5:
        return rng.choice(
            [
                "0",
                "-0",
                "-0.0",
                ".5",
                "5.",
                "+1",
                "9007199254740993",
                "9007199254740992",
                "4503599627370497.5",
                "1e22",
                "1e23",
                "123456789012345678",
                "0.1e-22",
                "00000000000000000000001",
                "0x1p3",
                "1e-400",
            ]
        )
    return repr(rng.random() * 10.0 ** rng.randint(-30, 30))


def test_samplecsv_reads_every_decimal_as_python_does(tmp_path):
    rng = random.Random(3)
    texts = [_decimal(rng) for _ in range(40_000)]
    p = tmp_path / "many.csv"
    p.write_text(
        "workload,metric,unit,better,iteration,value\n"
        + "".join(f"w,m,us,lower,0,{t}\n" for t in texts)
        + "w,m,us,lower,0,1\n" * 40_000
    )
    assert p.stat().st_size >= samples.FAST_CSV_MIN_BYTES  # the C path
    (w,) = samples.read_samples_file(p)
    got = np.asarray(w.iterations[0].samples["m"])[: len(texts)]
    bad = [(t, g) for t, g in zip(texts, got.tolist()) if _bits(g) != _bits(float.fromhex(t) if "x" in t else float(t))]
    assert not bad, bad[:5]


def test_json_import_orjson_and_json_agree(tmp_path):
    recs = [
        {
            "workload": "w",
            "metric": "lat",
            "unit": "us",
            "better": "lower",
            "iteration": i,
            "kind": "latency",
            "values": [round(random.Random(i).uniform(1, 1000), 6) for _ in range(1000)] + [7, 2**70],
        }
        for i in range(3)
    ]
    import json

    p = tmp_path / "s.json"
    p.write_text(json.dumps(recs))  # 2**70: beyond orjson's integers, so json reads it
    (w,) = samples.read_samples_file(p)
    for i, it in enumerate(w.iterations):
        assert np.asarray(it.samples["lat"]).tolist() == [float(v) for v in recs[i]["values"]]
    recs[1]["values"][3] = True
    p.write_text(json.dumps(recs))
    with pytest.raises(UsageError, match=r"sample 1: field 'values' holds True, expected numbers"):
        samples.read_samples_file(p)
    recs[1]["values"][3] = "1.5"
    p.write_text(json.dumps(recs))
    with pytest.raises(UsageError, match=r"holds '1.5', expected numbers"):
        samples.read_samples_file(p)
    p.write_text(json.dumps(recs).replace('"1.5"', "NaN"))
    with pytest.raises(UsageError, match=r"finite numbers only"):
        samples.read_samples_file(p)
    p.write_text(json.dumps(recs)[:-5])
    with pytest.raises(UsageError, match=r"s\.json: line 1: invalid JSON"):
        samples.read_samples_file(p)


def test_threaded_sorts_give_mmtests_own_cells(tmp_path, capsys, monkeypatch):
    """The pooled arrays sorted on two threads (forced here for a small tree) still give every
    cell of MMTests' own compare-kernels.sh report of the real v0.25 thpscale tree."""
    import json
    from pathlib import Path
    import mmtests_report as report
    from mmbench.analysis.compare.sections import mmtests as mm_section
    from mmbench.cli import main

    data = Path(__file__).parent / "data" / "mmtests" / "v0.25-thpscale"
    results = tmp_path / "results"
    assert main(["import-mmtests", "--results", str(results), str(data / "log")]) == 0
    monkeypatch.setattr(mm_section, "THREADED_SORT_MIN", 0)
    calls = []
    real_pool = __import__("concurrent.futures").futures.ThreadPoolExecutor
    monkeypatch.setattr("concurrent.futures.ThreadPoolExecutor", lambda n: calls.append(n) or real_pool(n))
    capsys.readouterr()
    from test_import_mmtests_real import RUNS

    assert main(["compare", "--results", str(results), "--convention", "mmtests", "--format", "json", *RUNS]) == 0
    out = json.loads(capsys.readouterr().out)
    blocks = report.parse((data / "compare-kernels.txt").read_text(), RUNS)
    assert report.check(blocks, out, ["thpscale"]) >= 328
    assert calls, "the threaded sort was not used"
