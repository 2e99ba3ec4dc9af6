"""applaunch: time how long applications take from launch to having done their task.

MMTests' ``watch-app-launch`` (the "application launch" table of seed 000), which timed desktop
apps with ``date +%s`` (1-second resolution) and needed an X session.  Here each launch is timed
with a monotonic clock from just before ``exec`` to the process's exit (a waiter thread records
the exit the moment ``waitpid`` returns), in milliseconds, and the apps need no display:

- ``terminal-find``: ``find /usr/share -type f`` to /dev/null (the gnome-terminal-find test);
- ``python-import``: an interpreter start importing json, decimal, email.parser and http.client;
- ``browser-table``: headless Chromium rendering a generated file:// page that builds a 100x100
  table and sets the title "Table Populate" (the firefox/iceweasel-table test); the dumped DOM is
  checked for the title and all 10000 cells.  Skipped, said once in the raw log, when Chromium is
  not installed.

A companion workload (``[workload.with.applaunch]``): it cycles through the apps until the workload
it accompanies finishes (``ctx.stop_event``); a launch still running then is stopped and not
counted.  Standalone, ``duration`` or ``launches`` bounds it.  Every launch, counted or not, is in
``applaunch.log`` (rawdir).  The first launch of each app is cold (caches were dropped); with
``discard_first`` it is logged but not counted, which MMTests meant to do but rarely did.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

APPS = ("terminal-find", "python-import", "browser-table")
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "chromium", "chromium-browser")
PY_IMPORT = "import json, decimal, email.parser, http.client"
TITLE = "Table Populate"
TABLE_PAGE = (
    """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Table</title></head>
<body>
<script>
document.addEventListener("DOMContentLoaded", function () {
  var t = document.createElement("table");
  for (var r = 0; r < 100; r++) {
    var tr = t.insertRow();
    for (var c = 0; c < 100; c++) tr.insertCell().textContent = "r" + r + "c" + c;
  }
  document.body.appendChild(t);
  document.title = "%s";
});
</script>
</body></html>
"""
    % TITLE
)

DESCRIPTIONS = {
    "terminal-find": "launch-to-exit time of find /usr/share -type f",
    "python-import": "launch-to-exit time of a Python start importing json, decimal, email.parser, http.client",
    "browser-table": "launch-to-exit time of headless Chromium rendering a 100x100 table page (--dump-dom)",
}


def find_chromium() -> str | None:
    for c in CHROMIUM_CANDIDATES:
        p = shutil.which(c)
        if p:
            return p
    return None


class Applaunch(Workload):
    name = "applaunch"
    summary = "Launch applications repeatedly (in the background of another workload); launch-to-done time in ms"
    companion = True
    params = {
        "apps": Param("str_list", list(APPS), "applications to launch in turn", choices=APPS),
        "duration": Param("duration", "0", "stop after this long (0: when the accompanied workload ends)"),
        "launches": Param("int", 0, "stop after this many launches of each app (0: no limit)", minimum=0),
        "pause": Param("duration", "0.5s", "pause between two launches"),
        "launch_timeout": Param("duration", "120s", "a launch taking longer is stopped and counted as failed"),
        "discard_first": Param("bool", True, "log but do not count the first (cold) launch of each app"),
        "find_root": Param("str", "/usr/share", "directory terminal-find walks"),
    }
    metrics = [MetricDef(a, "ms", "lower", "latency", description=DESCRIPTIONS[a]) for a in APPS]

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [m.name for m in self.metric_defs(params)]  # every app launched at least once

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        return [
            MetricDef(a, "ms", "lower", "latency", description=DESCRIPTIONS[a])
            for a in params["apps"]
            if a != "browser-table" or find_chromium()
        ]

    def check(self, params: dict[str, Any], budget: int) -> None:
        if not params["apps"]:
            raise UsageError("workload.applaunch.params.apps: name at least one application")

    def _argv(self, ctx: WorkloadContext, app: str, n: int, chromium: str | None) -> tuple[list[str], Path | None]:
        if app == "terminal-find":
            return ["find", ctx.params["find_root"], "-type", "f"], None
        if app == "python-import":
            return [sys.executable, "-c", PY_IMPORT], None
        assert chromium
        udd = ctx.workdir / "applaunch" / f"chromium-profile-{n}"
        return [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={udd}",
            "--dump-dom",
            (ctx.workdir / "applaunch" / "table.html").as_uri(),
        ], udd

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        base = ctx.workdir / "applaunch"
        base.mkdir(parents=True, exist_ok=True)
        log = open(ctx.rawdir / "applaunch.log", "a")
        apps = list(p["apps"])
        chromium = find_chromium() if "browser-table" in apps else None
        if "browser-table" in apps:
            if chromium:
                (base / "table.html").write_text(TABLE_PAGE)
                log.write(f"# browser-table uses {chromium}\n")
            else:
                apps.remove("browser-table")
                log.write("# browser-table skipped: Chromium is not installed (apt-get install chromium)\n")
        log.write("# app launch_ms status\n")
        log.flush()
        samples: Samples = {a: [] for a in apps}
        seen: dict[str, int] = {a: 0 for a in apps}
        t_start = time.monotonic()
        n = 0

        def expired() -> bool:
            return ctx.stop_event.is_set() or (p["duration"] > 0 and time.monotonic() - t_start >= p["duration"])

        tried: dict[str, int] = {a: 0 for a in apps}

        def all_done() -> bool:
            return p["launches"] > 0 and all(tried[a] >= p["launches"] for a in apps)

        while apps and not expired() and not all_done():
            for app in apps:
                if expired():
                    break
                if p["launches"] and tried[app] >= p["launches"]:
                    continue
                tried[app] += 1
                n += 1
                ms, status = self._launch(ctx, app, n, chromium, expired)
                if status == "ok":
                    seen[app] += 1
                    if seen[app] == 1 and p["discard_first"]:
                        status = "ok-discarded-first"
                    else:
                        samples[app].append(ms)
                log.write(f"{app} {ms:.3f} {status}\n")
                log.flush()
                if p["pause"] > 0 and ctx.stop_event.wait(p["pause"]):
                    break
        log.close()
        shutil.rmtree(base, ignore_errors=True)
        return {a: v for a, v in samples.items() if v}

    def _launch(self, ctx: WorkloadContext, app: str, n: int, chromium: str | None, expired) -> tuple[float, str]:
        argv, udd = self._argv(ctx, app, n, chromium)
        out_name = "applaunch-browser.out" if app == "browser-table" else None
        done = threading.Event()
        end: list[float] = []
        t0 = time.monotonic()
        proc = ctx.spawn(argv, stdout=out_name, stderr=f"applaunch-{app}.err" if app != "terminal-find" else None)

        def waiter() -> None:
            proc.wait()
            end.append(time.monotonic())
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        status = "ok"
        while not done.wait(0.1):
            if time.monotonic() - t0 > ctx.params["launch_timeout"]:
                status = "timeout"
                break
            if expired():
                status = "interrupted"
                break
        if status != "ok":
            ctx.stop(proc)
            done.wait(5)
        ms = ((end[0] if end else time.monotonic()) - t0) * 1000.0
        if status == "ok" and proc.returncode != 0:
            status = f"exit-{proc.returncode}"
        if status == "ok" and app == "browser-table":
            try:
                dom = (ctx.rawdir / "applaunch-browser.out").read_text(errors="replace")
            except OSError:
                dom = ""
            if TITLE not in dom or dom.count("<td>") < 10000:
                status = "incomplete-dom"
        if udd is not None:
            shutil.rmtree(udd, ignore_errors=True)
        return ms, status
