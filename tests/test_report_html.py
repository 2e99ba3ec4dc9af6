"""The HTML report and ``mmbench plot``: two small real runs, the report opened in headless
Chromium (DOM, screenshot, no console errors), hostile strings escaped, PNG/SVG plots."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, mmbench, needs_root, stored_doc

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"

SUITE = """
[suite]
description = "report test: faultin 16M in a 64M sandbox"
iterations = 2
warmup = 0
budget = "64M"

[[workload]]
name = "faultin"
[workload.params]
size = "16M"

[monitors.proc-vmstat]
interval = 0.2
[monitors.meminfo]
interval = 0.2
[monitors.memcg]
interval = 0.2
"""

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    if not __import__("os").geteuid() == 0:
        pytest.skip("needs root: changes sysctls and creates cgroups")
    d = tmp_path_factory.mktemp("report")
    suite = d / "suite.toml"
    suite.write_text(SUITE)
    results = d / "results"
    for name, thp in (("base", "always"), ("nothp", "never")):
        mmbench(
            "run",
            "--config",
            str(suite),
            "--results",
            str(results),
            "--set",
            f"thp.enabled={thp}",
            "--quiet",
            name,
            check=True,
            timeout=300,
        )
    return results


def chromium(url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def console_messages(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


@needs_root
def test_report_renders_in_chromium(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    mmbench("report", "--results", str(store), "-o", str(out), "base", "nothp", check=True)
    html = out.read_text()
    # self-contained: nothing to fetch
    assert not re.search(r"<(link|img|iframe)\b", html)
    assert not re.search(r"\bsrc\s*=", html)
    assert "Content-Security-Policy" in html
    assert html.count('<table class="cmp"') >= 2
    assert "faultin" in html and "Fault latency" in html
    data = json.loads(re.search(r'<script type="application/json" id="mmb-data">(.*?)</script>', html, re.S).group(1))
    kinds = {f["kind"] for f in data["figures"]}
    assert {"box", "line"} <= kinds
    titles = {f["title"] for f in data["figures"]}
    assert "Sandbox memcg usage" in titles and "Free memory (MemFree)" in titles
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (scripts/setup.sh --test installs it): DOM not checked")
    dom = chromium(out.as_uri(), tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_messages(dom.stderr) == []
    nfig = len(data["figures"])
    assert f'data-charts="{nfig}"' in dom.stdout
    assert dom.stdout.count('data-drawn="1"') == nfig
    assert len(re.findall(r'<svg [^>]*class="chart"', dom.stdout)) == nfig
    assert len(re.findall(r'<path [^>]*class="line', dom.stdout)) >= 4  # one line per run and iteration
    assert len(re.findall(r'<rect [^>]*class="iqr"', dom.stdout)) >= 2
    assert dom.stdout.count('<table class="cmp"') >= 2
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-html.png"
    shot.unlink(missing_ok=True)
    res = chromium(out.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1400,3000")
    assert res.returncode == 0 and shot.stat().st_size > 10_000
    assert console_messages(res.stderr) == []
    shutil.copy(out, ARTIFACTS / "report.html")


@needs_root
def test_hostile_strings_are_escaped(store: Path, tmp_path: Path) -> None:
    evil = store / "evil"
    if evil.exists():
        shutil.rmtree(evil)
    shutil.copytree(store / "nothp", evil)
    fp = stored_doc(evil / "fingerprint.json")
    fp["kernel"]["release"] = HOSTILE
    fp["host"] = '"><img src=x onerror=alert(2)>'
    (evil / "fingerprint.json").write_text(json.dumps(fp))
    (evil / "suite.toml").write_text("# </pre></details><script>alert(3)</script>\n")
    meta = stored_doc(evil / "run.json")
    meta.pop("files")  # suite.toml changed above: its recorded digest goes too
    meta["settings"] = {"thp.enabled": "</td><script>alert(4)</script>"}
    meta["description"] = "<b onmouseover=alert(5)>x</b>"
    (evil / "run.json").write_text(json.dumps(meta))
    wj = evil / "faultin" / "workload.json"
    w = stored_doc(wj)
    old_name, new_name = w["metrics"][0]["name"], "</script><script>alert(6)</script>"
    w["metrics"][0]["name"] = new_name
    wj.write_text(json.dumps(w))
    for rj in (evil / "faultin").glob("iter-*/result.json"):  # the samples too: it is charted
        r = stored_doc(rj)
        r["samples"][new_name] = r["samples"].pop(old_name)
        rj.write_text(json.dumps(r))
    out = tmp_path / "evil.html"
    mmbench("report", "--results", str(store), "-o", str(out), "base", "evil", check=True)
    html = out.read_text()
    assert html.count("<script") == 2  # the data block and the renderer, nothing else
    assert "alert(" in html  # the strings are there ...
    for bad in (
        HOSTILE,
        "<img src=x",
        "<script>alert(3)",
        "<script>alert(4)",
        "<b onmouseover",
        "</script><script>alert(6)",
    ):
        assert bad not in html  # ... but never as markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(6)" in html  # inside the JSON
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing: DOM not checked")
    dom = chromium(out.as_uri(), tmp_path, "--dump-dom")
    assert console_messages(dom.stderr) == []
    assert dom.stdout.count("<script") == 2
    assert "<img" not in dom.stdout
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout


@needs_root
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_plot_files(store: Path, tmp_path: Path, fmt: str) -> None:
    outdir = tmp_path / fmt
    res = mmbench("plot", "--results", str(store), "--format", fmt, "-o", str(outdir), "base", "nothp", check=True)
    files = [Path(line) for line in res.stdout.split()]
    assert len(files) >= 5
    assert all(f.suffix == f".{fmt}" and f.stat().st_size > 1000 for f in files)
    assert sorted(files) == sorted(outdir.glob(f"*.{fmt}"))
    names = {f.stem for f in files}
    assert any(n.startswith("dist-faultin-") for n in names)
    assert "mon-faultin-memcg-usage" in names
    head = files[0].read_bytes()[:200]
    assert (b"<svg" in head or b"<?xml" in head) if fmt == "svg" else head.startswith(b"\x89PNG")


def test_cell_colour_and_hover() -> None:
    from mmbench.analysis.compare import Row
    from mmbench.report.html import _cell, json_for_script

    r = Row(
        "m",
        "Amean",
        "s",
        "lower",
        {"a": 1.0, "b": 0.8, "c": 1.2},
        pct={"a": 0.0, "b": 20.0, "c": -20.0},
        significant={"a": False, "b": True, "c": True},
        p={"a": None, "b": 0.001, "c": 0.02},
        ci={"a": None, "b": (0.7, 0.9), "c": None},
    )
    assert _cell(r, "b", True, "a")["cls"] == "good"
    assert _cell(r, "c", True, "a")["cls"] == "bad"
    assert _cell(r, "a", True, "a")["cls"] == ""
    t = _cell(r, "b", True, "a")["title"]
    assert "q=0.001" in t and "[0.7, 0.9]" in t
    s = json_for_script({"x": "</script><!-- & \u2028"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == {"x": "</script><!-- & \u2028"}
