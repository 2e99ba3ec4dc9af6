"""read_samples_file: CSV and JSON samples, and one-line errors naming file, line and field."""

import json

import pytest

from mmbench.analysis.compare import build_comparison
from mmbench.importers.samples import read_samples_file
from mmbench.errors import UsageError
from mmbench.model.results import RunRecord

CSV = """workload,metric,unit,better,iteration,value,kind
faultin,tput,faults/s,higher,0,100,rate
faultin,tput,faults/s,higher,1,110,rate
faultin,lat,us,lower,0,5,latency
faultin,lat,us,lower,0,7,latency
faultin,lat,us,lower,1,6,latency
other,time,s,lower,0,1.5,
"""


def test_csv(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text(CSV)
    wls = read_samples_file(f)
    assert [w.label for w in wls] == ["faultin", "other"]
    fi = wls[0]
    assert [(m.name, m.unit, m.better, m.kind) for m in fi.metrics] == [
        ("tput", "faults/s", "higher", "rate"),
        ("lat", "us", "lower", "latency"),
    ]
    assert [it.index for it in fi.iterations] == [0, 1]
    assert fi.iterations[0].samples == {"tput": [100.0], "lat": [5.0, 7.0]}
    assert all(it.status == "ok" and not it.warmup for it in fi.iterations)
    assert wls[1].metrics[0].kind == "time"  # empty kind → default
    run = RunRecord("imp", "imported", 0, None, "", "", {}, {}, wls)
    c = build_comparison([run])
    assert c.sections[0].rows[1].stat == "Hmean"


def test_csv_without_kind_column_and_column_order(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("value,iteration,better,unit,metric,workload\n3,0,lower,s,t,w\n")
    (w,) = read_samples_file(f)
    assert w.iterations[0].samples == {"t": [3.0]}


@pytest.mark.parametrize("shape", ["list", "object"])
def test_json(tmp_path, shape):
    samples = [
        {"workload": "w", "metric": "t", "unit": "s", "better": "lower", "iteration": i, "value": v}
        for i, v in enumerate([1.0, 2.0])
    ]
    f = tmp_path / "s.json"
    f.write_text(json.dumps(samples if shape == "list" else {"samples": samples}))
    (w,) = read_samples_file(f)
    assert [it.samples["t"] for it in w.iterations] == [[1.0], [2.0]]


@pytest.mark.parametrize(
    "text,needle",
    [
        ("workload,metric,unit,better,iteration\n", "line 1: header lacks column(s) value"),
        ("workload,metric,unit,better,iteration,value\nw,t,s,sideways,0,1\n", "line 2: field 'better'"),
        ("workload,metric,unit,better,iteration,value\nw,t,s,lower,0,abc\n", "line 2: field 'value'"),
        (
            "workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\nw,t,s,lower,-1,1\n",
            "line 3: field 'iteration'",
        ),
        ("workload,metric,unit,better,iteration,value\nw,t,s,lower,0\n", "line 2: 5 fields"),
        ("workload,metric,unit,better,iteration,value\n,t,s,lower,0,1\n", "line 2: field 'workload'"),
        ("workload,metric,unit,better,iteration,value\nw,t,s,lower,0,nan\n", "line 2: field 'value'"),
        ("workload,metric,unit,better,iteration,value,kind\nw,t,s,lower,0,1,weird\n", "line 2: field 'kind'"),
        ("workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\nw,t,ms,lower,1,1\n", "line 3: metric 't'"),
        ("", "empty file"),
        ("workload,metric,unit,better,iteration,value\n", "no samples"),
    ],
)
def test_csv_errors(tmp_path, text, needle):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(UsageError) as e:
        read_samples_file(f)
    msg = str(e.value)
    assert str(f) in msg and needle in msg and "\n" not in msg


@pytest.mark.parametrize(
    "text,needle",
    [
        ("[1, 2", "invalid JSON"),
        ('{"rows": []}', '"samples"'),
        ("[3]", "sample 0: expected an object"),
        (
            '[{"workload": "w", "metric": "t", "unit": "s", "better": "lower", "iteration": 1.5, "value": 1}]',
            "sample 0: field 'iteration'",
        ),
        (
            '[{"workload": "w", "metric": "t", "unit": "s", "better": "lower", "iteration": 0}]',
            "sample 0: field 'value'",
        ),
    ],
)
def test_json_errors(tmp_path, text, needle):
    f = tmp_path / "bad.json"
    f.write_text(text)
    with pytest.raises(UsageError) as e:
        read_samples_file(f)
    assert needle in str(e.value) and str(f) in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        read_samples_file(tmp_path / "nope.csv")


def test_json_values_arrays(tmp_path):
    """One object per workload, metric and iteration with all its samples in "values"."""
    f = tmp_path / "s.json"
    f.write_text(
        json.dumps(
            [
                {
                    "workload": "w",
                    "metric": "lat",
                    "unit": "us",
                    "better": "lower",
                    "iteration": 0,
                    "kind": "latency",
                    "values": [float(i) for i in range(1000)],
                },
                {
                    "workload": "w",
                    "metric": "lat",
                    "unit": "us",
                    "better": "lower",
                    "iteration": 1,
                    "kind": "latency",
                    "values": [1, 2, 3],
                },
            ]
        )
    )
    wls = read_samples_file(f)
    its = wls[0].iterations
    assert list(its[0].samples["lat"]) == [float(i) for i in range(1000)] and its[1].samples["lat"] == [1, 2, 3]
    for bad, msg in (([], "non-empty"), ([1, "x"], "holds 'x'"), ([1, float("nan")], "finite")):
        f.write_text(
            json.dumps(
                [{"workload": "w", "metric": "m", "unit": "", "better": "lower", "iteration": 0, "values": bad}]
            ).replace("NaN", "NaN")
        )
        with pytest.raises(UsageError, match=msg):
            read_samples_file(f)
