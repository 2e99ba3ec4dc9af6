"""Joining interleaved rounds (A/B kernels, --until --baseline-set) into one run renumbers each
round's iteration and moves the paths inside its result.json with it: a monitor's "dir" left as
round 1's made every joined iteration read round 1's monitor files (all five iterations of a
seed run showed the same mm-trace and irqsoff figures, "no variance: not tested")."""

from __future__ import annotations

import json

from mmbench.store import open_store
from mmbench.store.transfer import join_interleaved


def _part(store, name: str, marker: str) -> None:
    res = {
        "index": 0,
        "path": "w/iter-0",
        "status": "ok",
        "monitors": {"mm-trace": {"dir": "w/iter-0/monitors/mm-trace", "files": ["counts.json"]}},
    }
    files = {
        "run.json": json.dumps({"name": name, "status": "complete", "created": 1.0}).encode(),
        "fingerprint.json": b"{}",
        "w/iter-0/result.json": json.dumps(res).encode(),
        "w/iter-0/monitors/mm-trace/counts.json": marker.encode(),
    }
    store.put_run_files(name, sorted(files.items()), force=True)


def test_each_joined_iteration_points_at_its_own_monitor_files(tmp_path):
    parts = open_store(tmp_path / "parts")
    out = open_store(tmp_path / "out")
    for i in range(3):
        _part(parts, f"r.round{i}", f"round {i}")
    join_interleaved(parts, [f"r.round{i}" for i in range(3)], out, "r")
    files = dict(out.run_files("r"))
    for i in range(3):
        res = json.loads(files[f"w/iter-{i}/result.json"])
        assert res["index"] == i and res["path"] == f"w/iter-{i}"
        d = res["monitors"]["mm-trace"]["dir"]
        assert d == f"w/iter-{i}/monitors/mm-trace"
        assert files[f"{d}/counts.json"] == f"round {i}".encode()
