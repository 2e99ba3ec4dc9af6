"""Packed samples (more than 256 of a metric in an iteration) live in the iteration's sidecar,
``samples-<digest>.f8``, raw little-endian float64, and result.json says where (store format 2).
They read back bit for bit; a damaged, missing or foreign reference is one line naming the file;
format 1's base64 form is still read; a rewritten iteration leaves no stale sidecar; the index
notices a changed sidecar; the PostgreSQL store reads a pushed run's sidecars from its files."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from mmbench.model.files import SAMPLES_FILE, StoreError
from mmbench.model.results import IterationResult, MetricDef, WorkloadRun
from mmbench.store.fs import FileStore
from mmbench.store.index import indexed_files
from tests.test_hardening import cli, one_line_error
from tests.conftest import stored_doc


def write_run(root: Path, lat: np.ndarray, name: str = "r") -> FileStore:
    store = FileStore(root)
    w = store.create_run(
        name,
        force=False,
        suite_text="",
        suite_hash="h",
        suite_effective={},
        fingerprint={"kernel": {"release": "6.1"}},
        settings={},
    )
    w.add_workload(
        WorkloadRun(
            "wl",
            "bench",
            {},
            [
                MetricDef("lat", "us", "lower", "latency"),
                MetricDef("lat2", "us", "lower", "latency"),
                MetricDef("ops", "ops/s", "higher", "rate"),
            ],
        )
    )
    for i in range(2):
        w.add_iteration(
            IterationResult("wl", i, False, "ok", samples={"lat": lat + i, "lat2": lat[:300] * 2, "ops": [100.0 + i]})
        )
    w.finish("complete")
    return store


@pytest.fixture
def lat() -> np.ndarray:
    a = np.random.default_rng(4).lognormal(5, 1, 5000)
    a[17] = np.nan  # kept as it was
    return a


def test_packed_samples_round_trip_through_the_sidecar(tmp_path, lat):
    root = tmp_path / "res"
    write_run(root, lat)
    it0 = root / "r" / "wl" / "iter-0"
    (side,) = [p for p in it0.iterdir() if p.name.startswith("samples-")]
    assert SAMPLES_FILE.fullmatch(side.name) and side.stat().st_size == (5000 + 300) * 8
    doc = json.loads((it0 / "result.json").read_text())
    assert doc["samples"]["lat"] == {"file": side.name, "offset": 0, "count": 5000}
    assert doc["samples"]["lat2"] == {"file": side.name, "offset": 5000, "count": 300}
    assert doc["samples"]["ops"] == [100.0]
    assert json.loads((root / "r" / "run.json").read_text())["format"] == 2
    rec = FileStore(root).load_run("r")
    got = rec.workload("wl").iterations[1].samples
    assert np.asarray(got["lat"]).tobytes() == (lat + 1).astype("<f8").tobytes()  # NaN and all bits
    assert np.asarray(got["lat2"]).tobytes() == (lat[:300] * 2).astype("<f8").tobytes()
    assert got["ops"] == [101.0]
    assert "wl/iter-0/" + side.name in indexed_files(root / "r")


def test_a_damaged_sidecar_is_one_line_naming_it(tmp_path, lat):
    root = tmp_path / "res"
    write_run(root, lat)
    it0 = root / "r" / "wl" / "iter-0"
    (side,) = it0.glob("samples-*.f8")
    whole = side.read_bytes()
    side.write_bytes(whole[: 8 * 4000])  # truncated on a sample
    one_line_error(
        cli("compare", "--results", str(root), "r", "r"),
        2,
        f"{side.name}: 32000 bytes where result.json's references cover 42400 (truncated?)",
    )
    side.write_bytes(whole[:-3])  # not whole samples
    one_line_error(cli("show", "--results", str(root), "r"), 2, "references cover 42400 (truncated?)")
    side.write_bytes(whole + bytes(8))  # stray bytes after the samples
    one_line_error(cli("show", "--results", str(root), "r"), 2, "8 stray byte(s) after the samples")
    flipped = bytearray(whole)
    flipped[8 * 17 + 7] ^= 0x40  # one bit of an exponent
    side.write_bytes(bytes(flipped))
    one_line_error(
        cli("compare", "--results", str(root), "r", "r"),
        2,
        f"{side.name}: its bytes do not match the BLAKE2b digest in its name",
    )
    side.unlink()
    one_line_error(cli("show", "--results", str(root), "r"), 2, f"{side.name}: missing")


@pytest.mark.parametrize(
    "ref",
    [
        {"file": "../../../../etc/passwd", "offset": 0, "count": 1},
        {"file": "samples-0123456789abcdef.f8", "offset": -8, "count": 1},
        {"file": "/tmp/samples-0123456789abcdef.f8", "offset": 0, "count": 1},
    ],
)
def test_a_reference_is_a_name_in_the_iteration_never_a_path(tmp_path, lat, ref):
    root = tmp_path / "res"
    write_run(root, lat)
    res = root / "r" / "wl" / "iter-0" / "result.json"
    doc = stored_doc(res)
    doc["samples"]["lat"] = ref
    res.write_text(json.dumps(doc))
    err = one_line_error(cli("show", "--results", str(root), "r"), 2, "is not a place")
    assert str(res) in err


def test_format_1_base64_is_still_read(tmp_path, lat):
    root = tmp_path / "res"
    write_run(root, lat)
    it0 = root / "r" / "wl" / "iter-0"
    doc = stored_doc(it0 / "result.json")
    doc["samples"]["lat"] = {"f8": base64.b64encode(lat.astype("<f8").tobytes()).decode()}
    doc["samples"]["lat2"] = {"f8": base64.b64encode((lat[:300] * 2).astype("<f8").tobytes()).decode()}
    for p in it0.glob("samples-*.f8"):
        p.unlink()
    (it0 / "result.json").write_text(json.dumps(doc))
    meta = stored_doc(root / "r" / "run.json")
    meta["format"] = 1
    (root / "r" / "run.json").write_text(json.dumps(meta))
    got = FileStore(root).load_run("r").workload("wl").iterations[0].samples
    assert np.asarray(got["lat"]).tobytes() == lat.astype("<f8").tobytes()


def test_a_rewritten_iteration_leaves_no_stale_sidecar(tmp_path, lat):
    root = tmp_path / "res"
    store = FileStore(root)
    w = store.create_run(
        "r", force=False, suite_text="", suite_hash="h", suite_effective={}, fingerprint={}, settings={}
    )
    w.add_workload(WorkloadRun("wl", "bench", {}, [MetricDef("lat", "us", "lower", "latency")]))
    for shift in (0.0, 1.0):  # the same iteration written twice, in place
        w.add_iteration(IterationResult("wl", 0, False, "ok", samples={"lat": lat + shift}))
    w.finish("complete")
    sides = list((root / "r" / "wl" / "iter-0").glob("samples-*.f8"))
    assert len(sides) == 1
    got = FileStore(root).load_run("r").workload("wl").iterations[0].samples["lat"]
    assert np.asarray(got).tobytes() == (lat + 1).astype("<f8").tobytes()


def test_a_changed_sidecar_is_indexed_again(tmp_path, lat, capsys):
    from mmbench.model.files import sidecar_digest

    root = tmp_path / "res"
    write_run(root, lat)
    it0 = root / "r" / "wl" / "iter-0"
    (side,) = it0.glob("samples-*.f8")
    before = dict(FileStore(root).db().execute("SELECT run, signature FROM indexed").fetchall())
    data = bytearray(side.read_bytes())
    data[:8] = np.float64(1.5).tobytes()
    side.write_bytes(bytes(data))  # changed in place: no longer the bytes its name is the digest of
    assert FileStore(root).list_runs() == []
    assert f"skipping run r: {side}: its bytes do not match" in capsys.readouterr().err
    # the same change made whole: a sidecar named by its new digest, result.json pointing at it
    new = it0 / f"samples-{sidecar_digest(bytes(data))}.f8"
    side.rename(new)
    doc = stored_doc(it0 / "result.json")
    for ref in doc["samples"].values():
        if isinstance(ref, dict):
            ref["file"] = new.name
    (it0 / "result.json").write_text(json.dumps(doc))
    assert [r["name"] for r in FileStore(root).list_runs()] == ["r"]
    after = dict(FileStore(root).db().execute("SELECT run, signature FROM indexed").fetchall())
    assert before["r"] != after["r"]


def test_postgres_store_reads_sidecars_from_a_runs_files(tmp_path, lat):
    from mmbench.store.pg import _sidecar_in

    root = tmp_path / "res"
    store = write_run(root, lat)
    files = dict(store.run_files("r"))
    doc = json.loads(files["wl/iter-1/result.json"])
    read = _sidecar_in(files, "wl/iter-1")
    from mmbench.model.files import samples_from_json

    got = samples_from_json(doc["samples"], read)
    assert np.asarray(got["lat"]).tobytes() == (lat + 1).astype("<f8").tobytes()
    with pytest.raises(StoreError, match="missing"):
        samples_from_json(doc["samples"], _sidecar_in({}, "wl/iter-1"))


@pytest.mark.parametrize("f8", ["not base64!", base64.b64encode(b"1234567").decode()])
def test_damaged_format_1_base64_is_one_line(tmp_path, lat, f8):
    root = tmp_path / "res"
    write_run(root, lat)
    res = root / "r" / "wl" / "iter-0" / "result.json"
    doc = stored_doc(res)
    doc["samples"]["lat"] = {"f8": f8}
    res.write_text(json.dumps(doc))
    one_line_error(cli("show", "--results", str(root), "r"), 2, "is not base64 of whole float64 samples")
