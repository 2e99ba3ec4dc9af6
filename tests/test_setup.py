"""scripts/setup.sh's downgrade check (scripts/no-downgrade.py): the test and fleet extras may not
move a package a user install gets to an older version (signal-processing-algorithms once pinned
numpy < 2, so the tests ran on numpy 1.26 while users had 2.x)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from conftest import REPO


def _check(tmp_path, installs: list[tuple[str, str]]) -> subprocess.CompletedProcess:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": [{"metadata": {"name": n, "version": v}} for n, v in installs]}))
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "no-downgrade.py"), str(report)], capture_output=True, text=True
    )


def test_a_downgrade_is_refused_by_name(tmp_path):
    numpy = metadata.version("numpy")
    out = _check(tmp_path, [("numpy", "1.0.0"), ("Not-Installed-Pkg", "0.1")])
    assert out.returncode == 1 and out.stderr.strip() == f"setup: downgrade refused: numpy {numpy} -> 1.0.0"


def test_same_or_newer_versions_pass(tmp_path):
    numpy = metadata.version("numpy")
    assert _check(tmp_path, [("numpy", numpy), ("NumPy", "999.0")]).returncode == 0
