"""The tree passes ``ruff check`` and ``ruff format --check`` as configured in pyproject.toml.

The Python files are mmbench/, tests/, bench/lib/ and the extension-less scripts of bench/ and
scripts/ whose first line names python (ruff reads only ``*.py`` unless named).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> str:
    here = Path(sys.executable).parent / "ruff"
    found = str(here) if here.exists() else shutil.which("ruff")
    if not found:
        pytest.fail("ruff is not installed: scripts/setup.sh --test installs the lint extra (pip install '.[lint]')")
    return found


def python_files() -> list[str]:
    """What ruff is run on: the packages' folders and the Python scripts without a suffix."""
    out = ["mmbench", "tests", "bench/lib"]
    for folder in ("bench", "scripts"):
        for f in sorted((ROOT / folder).iterdir()):
            if f.is_file() and not f.suffix:
                first = f.read_bytes().split(b"\n", 1)[0]
                if first.startswith(b"#!") and b"python" in first:
                    out.append(str(f.relative_to(ROOT)))
    return out


def test_scripts_are_found():
    files = python_files()
    assert "bench/bisect-sim" in files and "scripts/check-wheel" in files
    assert "scripts/setup.sh" not in files


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    proc = subprocess.run([_ruff(), *command, *python_files()], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"ruff {' '.join(command)}:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
