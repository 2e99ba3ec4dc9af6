"""mmbench as a user installs it (``pip install .``): scripts/check-wheel builds the wheel, installs
it with its dependencies into a fresh virtual environment outside the checkout, and from there
builds every C program and library, decodes a real mm-trace capture with the C decoder and runs
the installed command; and a decode that falls back to the Python reader is a warning naming the
missing file, in the run's progress and in compare's notes."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from mmbench.analysis.compare import build_comparison
from mmbench.model.results import IterationResult, RunRecord, WorkloadRun
from mmbench.monitors.mm_trace import MmTrace
from mmbench.monitors.trace import decode as D
from mmbench.cbuild import binary_for, package_sources

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check-wheel"
CAPTURE = Path(__file__).parent / "data" / "trace" / "guest-6.1-seed001"


def _script():
    loader = importlib.machinery.SourceFileLoader("check_wheel", str(SCRIPT))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("check_wheel", loader))
    loader.exec_module(mod)
    return mod


def test_installed_wheel():
    """The whole check, as .ci/run runs it (about 80 s here: most of it pip and gcc)."""
    p = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd="/")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    n = len(package_sources())
    assert n >= 20 and f"built {n} of {n} C sources" in out, out
    assert "trace_decode.c" in out and re.search(r"decoder c, \d+ events, [1-9]\d* stalls", out), out
    assert "ok: the installed wheel has every file and uses no fall-back" in out


def test_a_file_missing_from_the_wheel_is_named(tmp_path):
    """The content check of check-wheel on a wheel that lacks one file of the package."""
    cw = _script()
    pkg = ROOT / "mmbench"
    wheel = tmp_path / "mmbench-0-py3-none-any.whl"
    files = cw.package_files(pkg)
    assert "mmbench/monitors/trace/trace_decode.c" in files and "mmbench/report/templates/report.js" in files
    with zipfile.ZipFile(wheel, "w") as z:
        for f in files:
            if f != "mmbench/monitors/trace/trace_decode.c":
                z.writestr(f, "")
    assert cw.missing_from_wheel(pkg, wheel) == ["mmbench/monitors/trace/trace_decode.c"]


def _guest_iteration(run: Path, it: str) -> dict:
    mon = run / "seed" / it / "monitors" / "mm-trace"
    shutil.copytree(CAPTURE, mon)
    meta = {
        "dir": f"seed/{it}/monitors/mm-trace",
        "deferred": "decode",
        "notes": [],
        "keep_raw": False,
        "files": ["capture.json", "cpu0.raw", "cpu1.raw"],
    }
    (run / "seed" / it / "result.json").write_text(json.dumps({"monitors": {"mm-trace": meta}}))
    return meta


def test_a_missing_c_decoder_is_a_warning_naming_it(tmp_path, monkeypatch):
    """An installed mmbench without trace_decode.c (the wheel of issue 37) decodes with the Python
    reader and says so: once in the run's progress, in the monitor's metadata and in compare."""
    from mmbench.vm.runner import finish_deferred_monitors

    gone = tmp_path / "site-packages" / "mmbench" / "monitors" / "trace" / "trace_decode.c"
    monkeypatch.setattr(D, "SOURCE", gone)
    run = tmp_path / "run"
    for it in ("iter-0", "iter-1"):
        _guest_iteration(run, it)
    said: list[str] = []
    finish_deferred_monitors(run, said.append)
    warned = [s for s in said if s.startswith("warning: monitor mm-trace: ")]
    assert len(warned) == 1 and f"trace_decode.c is missing from the installed mmbench ({gone})" in warned[0]
    assert "Python reference reader" in warned[0]
    its = []
    for i, it in enumerate(("iter-0", "iter-1")):
        meta = json.loads((run / "seed" / it / "result.json").read_text())["monitors"]["mm-trace"]
        assert meta["decoder"] == "python" and meta["stalls"] > 0 and str(gone) in meta["warnings"][0]
        its.append(IterationResult("seed", i, False, "ok", samples={}, monitors={"mm-trace": meta}))
    summary = MmTrace.summarise(
        run / "seed" / "iter-0" / "monitors" / "mm-trace",
        json.loads((run / "seed" / "iter-0" / "result.json").read_text())["monitors"]["mm-trace"],
    )
    assert summary.metrics and summary.notes[0].startswith("warning: trace_decode.c is missing")
    rec = RunRecord("guest", "complete", 0.0, 1.0, "", "", {}, {}, [WorkloadRun("seed", "x", {}, [], its)], path=run)
    cmp = build_comparison([rec])
    notes = [n for n in cmp.notes if "trace_decode.c is missing" in n]
    assert notes and all("warning:" in n and str(gone) in n for n in notes), cmp.notes
    # the C decoder itself (the file present) gives no warning
    monkeypatch.undo()
    run2 = tmp_path / "run2"
    _guest_iteration(run2, "iter-0")
    said.clear()
    finish_deferred_monitors(run2, said.append)
    meta = json.loads((run2 / "seed" / "iter-0" / "result.json").read_text())["monitors"]["mm-trace"]
    assert meta["decoder"] == "c" and meta["warnings"] == [] and not any("warning" in s for s in said)


def test_a_failed_build_is_a_warning_naming_the_source(tmp_path, monkeypatch):
    """No compiler (or a build that fails): the same fall-back, the source and the reason named."""
    d = tmp_path / "mon"
    shutil.copytree(CAPTURE, d)
    monkeypatch.setenv("CC", "/nonexistent-cc")
    monkeypatch.setenv("PATH", str(tmp_path))  # no gcc, no cc
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    meta = D.decode_capture(d, binary_for, keep_raw=True)
    assert meta["decoder"] == "python"
    assert meta["warnings"] == [
        f"{D.SLOWER} ({D.SOURCE}: EnvironmentUnsupported: no C compiler found (install gcc) to build trace_decode.c)"
    ]
