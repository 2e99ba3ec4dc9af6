"""Run a text-printing tool (vmstat, mpstat) for the whole iteration, as MMTests' monitors do, and
read its output back: the ``vmstat`` and ``mpstat`` monitors, whose files are also what
``import-mmtests`` copies from an MMTests tree (MMTests' ``vmstat-<test>`` and ``mpstat-<test>``).

MMTests runs vmstat through ``monitors/latency-output``, which prefixes every line with
``printf "%16.4f %8.4f %10.4f -- "`` (epoch, seconds since start, seconds since the previous
line), and writes ``time: <epoch>`` lines into mpstat's output; :func:`strip_prefix` and the parsers
skip both, so one parser reads live and imported files.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from mmbench.monitors.base import Monitor, MonitorContext

_LATENCY_PREFIX = re.compile(r"^\s*\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s+-- ")


def strip_prefix(line: str) -> str:
    return _LATENCY_PREFIX.sub("", line, count=1)


class ToolTextMonitor(Monitor):
    """Runs ``argv(interval)`` with stdout to ``<name>.log`` from start to stop (the process is
    journaled, so a killed run's restore kills it too)."""

    tool: str = ""
    package: str = ""  # the Debian package that installs ``tool``

    def unavailable_reason(self) -> str | None:
        if not shutil.which(self.tool):
            return f"{self.tool} is not installed (apt-get install {self.package})"
        return None

    def argv(self, interval: int) -> list[str]:
        raise NotImplementedError

    def start(self, ctx: MonitorContext) -> None:
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self._ctx = ctx
        # both tools take whole seconds
        self._interval = max(1, round(ctx.interval or 1))
        self._fh = open(ctx.outdir / f"{self.name}.log", "w")
        # LC_ALL=C: mpstat prints 12-hour times with AM/PM in some locales; the parser wants one form
        env = {"LC_ALL": "C", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "S_TIME_FORMAT": "ISO"}
        self._proc = subprocess.Popen(self.argv(self._interval), stdout=self._fh, stderr=subprocess.PIPE, env=env)
        ctx.journal.record("process", pid=self._proc.pid)

    def stop(self) -> dict[str, Any]:
        errors = []
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            _, err = self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        self._fh.close()
        if self._proc.returncode not in (0, -signal.SIGTERM):
            errors.append(f"{self.tool} exited with {self._proc.returncode}: {err.decode(errors='replace')[-300:]}")
        return {"files": [f"{self.name}.log"], "interval": self._interval, "errors": errors}


def read_log(outdir: Path, meta: dict[str, Any], name: str) -> list[str]:
    files = meta.get("files") or [f"{name}.log"]
    return (Path(outdir) / files[0]).read_text(errors="replace").splitlines()
