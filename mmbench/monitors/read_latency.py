"""read-latency: how long a small cold read takes while the workload runs.

A C program (``read_latency.c``, built on demand and cached) drops a 100 MiB scratch file from the
page cache with posix_fadvise(DONTNEED) and times a 1 MiB pread, every 1.5 s (MMTests'
watch-read-latency).  The scratch file lives in a temporary folder (``workdir`` param, default
/var/tmp) outside the results and is deleted at stop; the reads are charged to the monitor's own
cgroup, not the sandbox.  Output ``read-latency.tsv`` (time, latency_ms).  Summary: read latency
(ms, kind latency: percentiles in compare).  Cost: one 1 MiB read per 1.5 s.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.monitors._common import clean, load_tsv, stop_process
from mmbench.monitors.base import Monitor, MonitorContext, MonitorSummary
from mmbench.model.results import MetricDef

SOURCE = Path(__file__).with_name("read_latency.c")


class ReadLatency(Monitor):
    name = "read-latency"
    summary = "latency of a 1 MiB cold read of a 100 MiB file every 1.5 s"
    default_interval = 1.5
    params = {
        "file_size": Param("size", "100M", "size of the scratch file read from"),
        "read_size": Param("size", "1M", "bytes read per sample"),
        "workdir": Param("str", "/var/tmp", "folder for the scratch file (deleted afterwards)"),
    }

    def unavailable_reason(self) -> str | None:
        if not shutil.which("gcc") and not shutil.which("cc"):
            return "no C compiler (gcc) to build the read-latency sampler"
        return None

    @staticmethod
    def _binary(ctx: MonitorContext) -> str:
        if ctx.binary is None:
            raise RuntimeError("the runner gave read-latency no way to build read_latency.c")
        return ctx.binary(SOURCE)

    def start(self, ctx: MonitorContext) -> None:
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        p = ctx.params or {}
        fsize = int(p.get("file_size") or 100 << 20)
        rsize = int(p.get("read_size") or 1 << 20)
        self._tmp = Path(tempfile.mkdtemp(prefix="mmbench-read-latency-", dir=p.get("workdir") or "/var/tmp"))
        interval = ctx.interval or self.default_interval
        self._tsv = ctx.outdir / f"{self.name}.tsv"
        self._proc = subprocess.Popen(
            [
                self._binary(ctx),
                str(self._tmp / "scratch"),
                str(self._tsv),
                str(max(1, fsize >> 20)),
                str(max(1, int(interval * 1000))),
                str(max(4, rsize >> 10)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(ctx.outdir / "stderr.txt", "w"),
        )
        ctx.journal.record("process", pid=self._proc.pid)
        ctx.journal.record("remove", path=str(self._tmp))

    def stop(self) -> dict[str, Any]:
        errors = []
        if not stop_process(self._proc, signal.SIGTERM):
            errors.append("sampler did not stop on SIGTERM")
        if self._proc.returncode not in (0, -signal.SIGTERM):
            errors.append(f"sampler exited with {self._proc.returncode}")
        shutil.rmtree(self._tmp, ignore_errors=True)
        samples = 0
        if self._tsv.exists():
            samples = max(0, len(self._tsv.read_text().splitlines()) - 1)
        return {"files": [self._tsv.name], "samples": samples, "errors": errors}

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        path = Path(outdir) / (meta.get("files") or ["read-latency.tsv"])[0]
        out = MonitorSummary()
        if not path.exists():
            return out
        _cols, arr = load_tsv(path)
        if len(arr):
            out.metrics.append(
                (
                    MetricDef(
                        "Read latency (ms)",
                        "ms",
                        "lower",
                        kind="latency",
                        description="1 MiB read after POSIX_FADV_DONTNEED",
                    ),
                    clean(arr[:, 1]),
                )
            )
        return out
