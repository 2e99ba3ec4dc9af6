"""Store damage, seeded: whatever happens to one file of a results directory, mmbench never prints a
wrong number with exit 0, never hangs, never shows a traceback, and changes nothing else.

A pristine store holds two imported runs (samples packed in sidecars and samples kept as JSON
lists).  Each case damages one file of run ``b`` or the index — a bit flipped at a random offset,
a truncation, the file replaced by a symlink out of the store or by a FIFO, bytes appended, or a
result.json whose references overlap (sealed afresh, so only the reference check can tell) — and
runs ``compare --format json`` and ``list`` as a user would, each in its own process
with a time limit.  Exit 0 must print what the pristine store prints (``list`` may leave out a run
it names in a warning); anything else must be exit 2 with one line.  The store's other files must
be byte for byte what they were (the index excepted: reads bring it up to date).

Every file kind meets every kind of damage once; then ``MMBENCH_DAMAGE_CASES`` (default 16) more
bit flips and truncations at random, seeded (``MMBENCH_DAMAGE_SEED``, default 36), so a failure
names the seed and case that reproduce it: 62 cases, about 80 s on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

CASES = int(os.environ.get("MMBENCH_DAMAGE_CASES", "16"))
SEED = int(os.environ.get("MMBENCH_DAMAGE_SEED", "36"))
TIMEOUT = 30


def _csv(path: Path, rng: random.Random, shift: float) -> None:
    rows = ["workload,metric,unit,better,iteration,value"]
    for it in range(3):
        rows += [f"w,lat,us,lower,{it},{rng.gauss(100 + shift, 5):.6f}" for _ in range(300)]  # packed
        rows += [f"w,tput,MB/s,higher,{it},{rng.gauss(500 - shift, 5):.6f}" for _ in range(300)]
        rows += [f"w,ops,ops/s,higher,{it},{rng.gauss(50 + shift, 1):.6f}" for _ in range(4)]  # a JSON list
        rows += [f"v,faults,1,lower,{it},{rng.randint(900, 1100) + shift}"]
    path.write_text("\n".join(rows) + "\n")


def cli(results: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MMBENCH_CRASH_DIR": str(results.parent / "crash")}
    return subprocess.run(
        [sys.executable, "-m", "mmbench", args[0], "--results", str(results), *args[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=env,
    )


COMMANDS = (("compare", "--format", "json", "a", "b"), ("list",))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, dict[tuple[str, ...], str]]:
    root = tmp_path_factory.mktemp("damage")
    rng = random.Random(SEED)
    results = root / "pristine"
    for name, shift in (("a", 0.0), ("b", 3.0)):
        _csv(root / f"{name}.csv", rng, shift)
        subprocess.run(
            [sys.executable, "-m", "mmbench", "import", "--results", str(results), str(root / f"{name}.csv"), name],
            check=True,
            capture_output=True,
            cwd=REPO,
        )
    out = {}
    for args in COMMANDS:
        proc = cli(results, *args)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        out[args] = proc.stdout
    return results, out


def _files(results: Path) -> dict[str, bytes]:
    """Every file of the store by relative path (symlinks and FIFOs as what they are), index aside."""
    out = {}
    for p in sorted(results.rglob("*")):
        rel = p.relative_to(results).as_posix()
        if rel.startswith("index.sqlite") or p.is_dir() and not p.is_symlink():
            continue
        out[rel] = b"link:" + os.readlink(p).encode() if p.is_symlink() else b"fifo" if p.is_fifo() else p.read_bytes()
    return out


KINDS = [
    "run.json",
    "fingerprint.json",
    "suite-effective.json",
    "suite.toml",
    "w/workload.json",
    "w/iter-1/result.json",
    "v/iter-0/result.json",
    "sidecar",
    "index.sqlite",
]
DAMAGE = ["flip", "truncate", "symlink", "fifo", "append"]


def target(results: Path, kind: str) -> Path:
    if kind == "sidecar":
        return next((results / "b" / "w" / "iter-1").glob("samples-*.f8"))
    if kind == "index.sqlite":
        return results / "index.sqlite"
    return results / "b" / kind


def damage(path: Path, how: str, rng: random.Random, outside: Path) -> str:
    """Damage ``path``; returns what was done (for the failure message)."""
    if how == "flip":
        data = bytearray(path.read_bytes())
        at, bit = rng.randrange(len(data)), rng.randrange(8)
        data[at] ^= 1 << bit
        path.write_bytes(bytes(data))
        return f"bit {bit} of byte {at} of {len(data)} flipped"
    if how == "truncate":
        data = path.read_bytes()
        keep = rng.randrange(len(data))
        path.write_bytes(data[:keep])
        return f"truncated to {keep} of {len(data)} bytes"
    if how == "append":
        path.write_bytes(path.read_bytes() + bytes(rng.randrange(1, 17)))
        return "zero bytes appended"
    if how == "symlink":
        copy = outside / f"copy-{path.name}"
        choice = rng.choice(["/dev/zero", "copy"])
        if choice == "copy":
            shutil.copyfile(path, copy)
        path.unlink()
        path.symlink_to("/dev/zero" if choice == "/dev/zero" else copy)
        return f"replaced by a symlink to {choice}"
    if how == "fifo":
        path.unlink()
        os.mkfifo(path)
        return "replaced by a FIFO"
    if how == "overlap":
        from mmbench.model.files import seal

        doc = json.loads(path.read_text())
        doc["samples"]["tput"]["offset"] = doc["samples"]["lat"]["offset"]  # tput reads lat's samples
        path.write_text(json.dumps(seal(doc, path.name), indent=1))
        return "tput's reference moved onto lat's samples (sealed afresh)"
    raise AssertionError(how)


def _plan() -> list[tuple[str, str, int]]:
    plan = [(kind, how, SEED) for kind in KINDS for how in DAMAGE]
    plan.append(("w/iter-1/result.json", "overlap", SEED))
    rng = random.Random(SEED)
    plan += [(rng.choice(KINDS), rng.choice(["flip", "flip", "truncate"]), SEED * 1000 + i) for i in range(CASES)]
    return plan


@pytest.mark.parametrize("kind,how,seed", _plan(), ids=lambda v: str(v).replace("/", "_"))
def test_damage_never_gives_a_wrong_number(pristine, tmp_path, kind, how, seed):
    source, expected = pristine
    results = tmp_path / "results"
    shutil.copytree(source, results, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    path = target(results, kind)
    done = damage(path, how, random.Random(f"{seed}-{kind}-{how}"), outside)
    before = _files(results)
    case = f"{kind} {how} (seed {seed}): {done}"
    for args in COMMANDS:
        try:
            proc = cli(results, *args)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{case}: mmbench {args[0]} hung (no answer in {TIMEOUT} s)")
        said = proc.stdout + proc.stderr
        assert "Traceback" not in said and proc.returncode != 70, f"{case}: mmbench {args[0]}: {said[-800:]}"
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        if proc.returncode == 0:
            if args[0] == "list":
                _same_runs_listed(case, proc, expected[args])
            else:
                assert proc.stdout == expected[args], f"{case}: mmbench {args[0]} printed other numbers, exit 0"
        else:
            assert proc.returncode == 2 and len(lines) == 1, (
                f"{case}: mmbench {args[0]}: exit {proc.returncode}: {lines}"
            )
    after = _files(results)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{case}: a read changed the store: {changed}"


def _same_runs_listed(case: str, proc: subprocess.CompletedProcess, expected: str) -> None:
    """Every run line ``list`` prints is the pristine one; a run it leaves out is named in a warning."""
    want = {line.split()[0]: line for line in expected.splitlines()[1:]}
    got = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    for name, line in got.items():
        assert want.get(name) == line, f"{case}: list shows {line!r}, not {want.get(name)!r}"
    for name in set(want) - set(got):
        assert f"skipping run {name}" in proc.stderr, f"{case}: list left out run {name} without a word"
