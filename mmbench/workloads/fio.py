"""fio: buffered file IO under page-cache pressure from an anonymous hog (Debian's fio).

An anonymous hog (``bgload hog``, the sandbox's own process) first faults ``hog`` bytes and keeps
rewriting them every ``hog_period`` so they stay hot; the page cache then has roughly
``budget - hog`` left.  A file of ``file`` bytes in the workdir -- by default larger than that
room -- is written once with incompressible data, then each job of ``jobs`` (fio's ``rw`` modes:
read, randread, write, randwrite) runs on it for ``runtime`` with buffered IO
(``--ioengine=psync --direct=0``, block size ``bs``).  fio's default ``invalidate=1`` drops the
file's cache before each job, so every job starts cold and reads keep missing a page cache that
cannot hold the file: reclaim runs in the sandbox for the whole job.

The metrics come from fio's ``--output-format=json`` report (kept as ``fio-<job>.json``), per job
J (Read, RandRead, Write, RandWrite): "J MB/s" (``bw_bytes``, MB = 2^20 bytes), "J IOPS", and the
completion-latency percentiles "p50-J clat", "p95-J clat", "p99-J clat", "p99.9-J clat" in
microseconds (fio reports ``clat_ns``; its default percentile list has all four).
"""

from __future__ import annotations

import json
import shutil
from typing import Any

from mmbench.model.params import Param, check_name_list
from mmbench.errors import EnvironmentUnsupported, UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

PACKAGE = "fio"
LABELS = {"read": "Read", "randread": "RandRead", "write": "Write", "randwrite": "RandWrite"}
PERCENTILES = {"p50": "50.000000", "p95": "95.000000", "p99": "99.000000", "p99.9": "99.900000"}


def parse_fio_json(text: str) -> dict[str, dict[str, float]]:
    """fio's JSON report → {"read"|"write": {"MB/s", "IOPS", "p50", "p95", "p99", "p99.9"}} for
    each direction that did IO, summed over the report's jobs (bandwidth, IOPS) or taken from the
    first job (percentiles; mmbench runs one job per report)."""
    # fio prints notes ("fio: ...") before the JSON when something is off; the report is the object
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as e:
        raise WorkloadError(f"fio's JSON report does not parse: {e}") from None
    if not isinstance(doc, dict) or not doc.get("jobs"):
        raise WorkloadError("fio's JSON report has no jobs")
    out: dict[str, dict[str, float]] = {}
    for job in doc["jobs"]:
        if job.get("error"):
            raise WorkloadError(f"fio job {job.get('jobname')} failed with error {job['error']}")
        for d in ("read", "write"):
            st = job.get(d) or {}
            if not st.get("total_ios"):
                continue
            row = out.setdefault(d, {"MB/s": 0.0, "IOPS": 0.0})
            row["MB/s"] += st["bw_bytes"] / (1 << 20)
            row["IOPS"] += st["iops"]
            pct = (st.get("clat_ns") or {}).get("percentile") or {}
            for name, key in PERCENTILES.items():
                if name not in row and key in pct:
                    row[name] = pct[key] / 1000.0
    return out


class Fio(Workload):
    name = "fio"
    summary = "fio buffered read/write on a file larger than the page cache an anonymous hog leaves"
    requires = ["fio"]
    packages = {"fio": "fio"}
    params = {
        "jobs": Param(
            "str_list", ["read", "randread", "write"], "fio rw modes to run, one after the other", choices=tuple(LABELS)
        ),
        "file": Param("size", "0.75x", "size of the file the jobs work on"),
        "hog": Param("size", "0.5x", "anonymous memory held (and rewritten) during the jobs (0: none)"),
        "hog_period": Param("duration", "1s", "pause between the hog's passes over its memory"),
        "bs": Param("size", "4K", "IO block size"),
        "runtime": Param("duration", "15s", "how long each job runs"),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"{LABELS[j]} IOPS" for j in params["jobs"]]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out: list[MetricDef] = []
        for j in params["jobs"]:
            lab = LABELS[j]
            out += [
                MetricDef(f"{lab} MB/s", "MB/s", "higher", "rate", description=f"fio {j}: bandwidth"),
                MetricDef(f"{lab} IOPS", "IO/s", "higher", "rate", description=f"fio {j}: IOs per second"),
            ]
            out += [
                MetricDef(
                    f"{p}-{lab} clat",
                    "us",
                    "lower",
                    "latency",
                    mean="amean",
                    description=f"fio {j}: {p[1:]}th percentile completion latency",
                )
                for p in PERCENTILES
            ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        where = "workload.fio.params"
        check_name_list(f"{where}.jobs", params["jobs"], "one fio job (read, randread, write, randwrite)", "job")
        if params["hog"] >= budget * 0.9:
            raise UsageError(f"{where}.hog: {params['hog']} bytes leaves the sandbox no room for page cache")
        if params["bs"] < 512 or params["bs"] % 512:
            raise UsageError(f"{where}.bs: must be a multiple of 512 bytes")
        if params["file"] < params["bs"] * 16:
            raise UsageError(f"{where}.file: must hold at least 16 blocks of bs")
        if params["runtime"] < 1:
            raise UsageError(f"{where}.runtime: must be at least 1s")
        if params["hog"] and params["hog_period"] < 0.01:
            raise UsageError(f"{where}.hog_period: must be at least 10ms")

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        if shutil.which("fio") is None:
            raise EnvironmentUnsupported(f"fio not found: install Debian's {PACKAGE} package")
        path = ctx.workdir / "fio.data"
        hog = S.start_hog(ctx, p["hog"], int(p["hog_period"] * 1000)) if p["hog"] else None
        try:
            S.make_file(ctx, path, p["file"], raw="fio-mkfile")
            samples: Samples = {}
            for job in p["jobs"]:
                report = ctx.rawdir / f"fio-{job}.json"
                ctx.log(f"fio {job} for {p['runtime']:g}s on {p['file'] >> 20} MiB")
                ctx.run(
                    [
                        "fio",
                        f"--name={job}",
                        f"--filename={path}",
                        f"--size={p['file']}",
                        f"--rw={job}",
                        f"--bs={p['bs']}",
                        "--ioengine=psync",
                        "--direct=0",
                        "--time_based=1",
                        f"--runtime={max(1, round(p['runtime']))}",
                        "--output-format=json",
                        f"--output={report}",
                    ],
                    raw_name=f"fio-{job}.out",
                    timeout=p["runtime"] + 300,
                    cwd=ctx.workdir,
                )
                if not report.exists():
                    raise WorkloadError(f"fio {job} wrote no JSON report (see raw/fio-{job}.out)")
                direction = "write" if "write" in job else "read"
                fig = parse_fio_json(report.read_text()).get(direction)
                if not fig or not all(k in fig for k in PERCENTILES):
                    raise WorkloadError(f"fio {job} reported no {direction} IO (see raw/fio-{job}.json)")
                lab = LABELS[job]
                samples[f"{lab} MB/s"] = [fig["MB/s"]]
                samples[f"{lab} IOPS"] = [fig["IOPS"]]
                for name in PERCENTILES:
                    samples[f"{name}-{lab} clat"] = [fig[name]]
            return samples
        finally:
            if hog is not None:
                ctx.stop(hog)
