"""Fuzzing the three inputs mmbench reads from files: any input is a result or one UsageError line.

Hypothesis generates import files (CSV and JSON, near-valid and arbitrary bytes), suite files
(TOML built from the schema's own vocabulary with wrong types and values, and arbitrary bytes),
and stored JSON (run.json, workload.json, result.json, fingerprint.json of an imported run,
replaced by generated documents).  Anything but a result or a ``UsageError`` whose message is one
line — a traceback — fails the test.  Examples are bounded so the file runs in well under a minute.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mmbench.errors import UsageError

FUZZ = settings(
    max_examples=int(os.environ.get("MMBENCH_FUZZ_EXAMPLES", "120")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HEADER = ["workload", "metric", "unit", "better", "iteration", "value", "kind"]
names = st.sampled_from(["w", "faultin", "../../x", "a/b", ".", "", " ", "6.12-rc3+", "\x00", "é", "-x", "a" * 300])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    names,
    st.sampled_from(["higher", "lower", "nan", "inf", "1e400", "-1", "0", "3", "rate", "latency"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def one_line(e: UsageError) -> None:
    text = str(e)
    assert text and "\n" not in text and "Traceback" not in text, text


def csv_cell(v: object) -> str:
    text = "" if v is None else str(v)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n\r') else text


VALID = {
    "workload": st.sampled_from(["w", "faultin", "6.12-rc3+"]),
    "metric": st.sampled_from(["t", "Fault latency"]),
    "unit": st.sampled_from(["s", "us", ""]),
    "better": st.sampled_from(["higher", "lower"]),
    "iteration": st.integers(0, 3),
    "value": st.floats(-1e9, 1e9),
    "kind": st.sampled_from(["time", "rate", ""]),
}


@st.composite
def near_valid_row(draw) -> dict[str, object]:
    """A valid sample, a quarter of the time with one field replaced by an arbitrary value."""
    row = {k: draw(v) for k, v in VALID.items()}
    if draw(st.integers(0, 3)) == 0:
        row[draw(st.sampled_from(HEADER))] = draw(scalars)
    return row


csv_rows = st.lists(
    st.one_of(near_valid_row(), near_valid_row(), st.fixed_dictionaries({k: scalars for k in HEADER})), max_size=5
)


@st.composite
def import_files(draw) -> tuple[str, bytes]:
    shape = draw(st.sampled_from(["csv", "json", "bytes"]))
    if shape == "bytes":
        return draw(st.sampled_from([".csv", ".json", ".txt"])), draw(st.binary(max_size=300))
    rows = draw(csv_rows)
    if shape == "json":
        objs = [dict(r) for r in rows] + draw(st.lists(json_values, max_size=2))
        doc = draw(st.sampled_from(["list", "object", "other"]))
        data = objs if doc == "list" else {"samples": objs} if doc == "object" else draw(json_values)
        return ".json", json.dumps(data, allow_nan=True).encode()
    header = draw(st.permutations(HEADER))
    if draw(st.integers(0, 3)) == 0:
        header = header[: draw(st.integers(4, len(header)))]
    lines = [",".join(header)] + [",".join(csv_cell(r[k]) for k in header) for r in rows]
    return ".csv", ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@FUZZ
@given(import_files())
def test_fuzz_import(tmp_path, case):
    from mmbench.importers.samples import read_samples_file
    from mmbench.store.fs import FileStore
    from mmbench.importers.store import import_run

    suffix, data = case
    f = tmp_path / f"in{suffix}"
    f.write_bytes(data)
    try:
        workloads = read_samples_file(f)
    except UsageError as e:
        event("refused")
        one_line(e)
        assert str(f) in str(e)
        return
    event("imported")
    store = FileStore(tmp_path / "results")
    import_run(store, "fuzz", workloads, source=str(f), force=True)
    rec = store.load_run("fuzz")
    assert [w.label for w in rec.workloads] == [w.label for w in workloads]
    assert all(
        (tmp_path / "results" / "fuzz").resolve() in (tmp_path / "results" / "fuzz" / w.label).resolve().parents
        for w in workloads
    )


SUITE_KEYS = {
    "suite": ["description", "iterations", "warmup", "budget", "sandbox", "timeout", "headline", "aims", "bogus"],
    "settings": [
        "vm.swappiness",
        "vm.dirty_ratio",
        "thp.enabled",
        "thp.khugepaged.max_ptes_none",
        "vm.nope",
        "kernel.x",
        "vm.drop_caches",
    ],
    "actions": ["sync", "drop_caches", "compact_memory", "writeback_timeout"],
    "swap": ["type", "size", "compressor"],
}
toml_scalars = st.one_of(
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6),
    st.sampled_from(
        [
            "",
            "3x",
            "0.5x",
            "64M",
            "1G",
            "-1",
            "1e400",
            "never",
            "always",
            "memcg",
            "none",
            "zram",
            "90s",
            "soon",
            "../x",
            "1",
            "500",
            "101",
            "-5",
            "a/b",
        ]
    ),
    st.text(string.printable, max_size=8),
)


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not isinstance(v, float) or v == v else "nan"
    return json.dumps(v)  # a TOML basic string is a JSON string for printable text


@st.composite
def suite_files(draw) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    if draw(st.integers(0, 2)) == 0:  # a good suite with one value replaced
        key = draw(st.sampled_from(["budget", "iterations", "size", "passes", "madvise", "sandbox", "timeout"]))
        good = {
            "budget": '"64M"',
            "iterations": "1",
            "size": '"4M"',
            "passes": "1",
            "madvise": "true",
            "sandbox": '"memcg"',
            "timeout": '"60s"',
        }
        good[key] = toml_value(draw(toml_scalars))
        return (
            f"[suite]\nbudget = {good['budget']}\niterations = {good['iterations']}\nsandbox = {good['sandbox']}\n"
            f'timeout = {good["timeout"]}\n[[workload]]\nname = "faultin"\n[workload.params]\n'
            f"size = {good['size']}\npasses = {good['passes']}\nmadvise = {good['madvise']}\n"
        ).encode()
    lines = []
    for table, keys in SUITE_KEYS.items():
        if draw(st.booleans()):
            lines.append(f"[{table}]")
            for k in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
                key = f'"{k}"' if "." in k else k
                lines.append(f"{key} = {toml_value(draw(toml_scalars))}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[workload]]")
        lines.append(f"name = {toml_value(draw(st.sampled_from(['faultin', 'pft', 'idle', 'nosuch', '', 'stutter'])))}")
        if draw(st.booleans()):
            lines.append(f"label = {toml_value(draw(names))}")
        if draw(st.booleans()):
            lines.append("[workload.params]")
            for k in draw(
                st.lists(st.sampled_from(["size", "passes", "madvise", "threads", "nope"]), max_size=3, unique=True)
            ):
                lines.append(f"{k} = {toml_value(draw(toml_scalars))}")
    if draw(st.booleans()):
        lines.append(f"[monitors.{draw(st.sampled_from(['proc-vmstat', 'meminfo', 'nosuch']))}]")
        if draw(st.booleans()):
            lines.append(f"interval = {toml_value(draw(toml_scalars))}")
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@FUZZ
@given(suite_files())
def test_fuzz_suite(tmp_path, data):
    from mmbench.config.load import load_suite

    f = tmp_path / "suite.toml"
    f.write_bytes(data)
    try:
        suite = load_suite(str(f))
    except UsageError as e:
        event("refused")
        one_line(e)
        return
    event("loaded")
    assert suite.workloads and all(w.label and "/" not in w.label for w in suite.workloads)
    assert 16 << 20 <= suite.budget


CSV = "workload,metric,unit,better,iteration,value\nw,t,s,lower,0,1\nw,t,s,lower,1,2\nw,u,ms,higher,1,5\n"
STORED = ["run.json", "fingerprint.json", "w/workload.json", "w/iter-0/result.json", "w/iter-1/result.json"]


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    from mmbench.importers.samples import read_samples_file
    from mmbench.store.fs import FileStore
    from mmbench.importers.store import import_run

    root = tmp_path_factory.mktemp("fuzzstore")
    src = root / "s.csv"
    src.write_text(CSV)
    import_run(FileStore(root / "results"), "r", read_samples_file(src), source=str(src))
    run = root / "results" / "r"
    return root / "results", {rel: (run / rel).read_bytes() for rel in STORED}


def mutated(original: bytes) -> st.SearchStrategy[bytes]:
    doc = json.loads(original)
    edits = st.dictionaries(st.sampled_from(sorted(doc) + ["extra"]), json_values, min_size=1, max_size=3)
    return st.one_of(
        edits.map(lambda e: json.dumps({**doc, **e}).encode()),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.integers(0, len(original)).map(lambda n: original[:n]),  # truncated
        st.binary(max_size=64),
    )


@FUZZ
@given(st.data())
def test_fuzz_stored_json(stored_run, data):
    from mmbench.analysis.compare import build_comparison
    from mmbench.store.fs import FileStore

    results, originals = stored_run
    rel = data.draw(st.sampled_from(STORED))
    target = results / "r" / rel
    target.write_bytes(data.draw(mutated(originals[rel])))
    try:
        store = FileStore(results)
        try:
            rec = store.load_run("r")
        except UsageError as e:
            event("refused")
            one_line(e)
            assert str(target) in str(e) or rel == "run.json", str(e)
        else:
            event("loaded")
            build_comparison([rec, rec])
        store.list_runs()  # goes on: a damaged run is skipped with a warning
    finally:
        target.write_bytes(originals[rel])
