"""thpfault: THP fault latency and success rate with N faulting threads, optionally after
fragmenting memory (thpscale / thpchallenge style).

For every thread count of the ladder, ``thpfault.c`` splits ``size`` between the threads, which
fault their share one 2 MiB unit at a time after a common barrier; each unit's first-touch time is
recorded and classified huge or base.  Fragmentation before the faults:

* ``none``
* ``pagecache``: many small files (``cache_size`` in all, ``cache_file_size`` each) are created
  and read in random order inside the sandbox before every thread count, so page cache pages of
  many files are interleaved in memory and must be reclaimed for the anon faults;
* ``anon-holes``: each thread first faults its share of ``holes_size`` with base pages and unmaps
  the first 1 MiB of every 2 MiB (thpscale's hole punching).

Metrics per thread count T: ``fault-huge-T``, ``fault-base-T``, ``fault-both-T`` (µs per 2 MiB
unit) and ``Percentage huge-T``.
"""

from __future__ import annotations

import os
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads import _support as S
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext


def thread_ladder(params: dict[str, Any], ncpus: int | None = None) -> list[int]:
    ncpus = ncpus or os.cpu_count() or 1
    ladder = params.get("threads") or [1, ncpus]
    return sorted(set(ladder))


def parse_thpfault(text: str) -> tuple[list[float], list[int], dict[str, int]]:
    lat: list[float] = []
    huge: list[int] = []
    summary: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "fault":
            huge.append(int(parts[2]))
            lat.append(int(parts[3]) / 1000.0)
        elif parts and parts[0] == "summary":
            summary = S.parse_kv_line(" ".join(parts[1:]))
    if not summary or not lat:
        raise WorkloadError("thpfault printed no result")
    return lat, huge, summary


class ThpFault(Workload):
    name = "thpfault"
    summary = "THP fault latency and huge-page success with N threads, optionally after fragmenting memory"
    params = {
        "size": Param("size", "0.5x", "anonymous memory faulted per thread count, split between the threads"),
        "threads": Param("int_list", None, "thread-count ladder (default [1, number of CPUs])", minimum=1),
        "madvise": Param("bool", True, "madvise(MADV_HUGEPAGE) the faulted regions"),
        "fragment": Param("str", "none", "fragment memory first", choices=("none", "pagecache", "anon-holes")),
        "cache_size": Param("size", "1x", "pagecache: total size of the small files read randomly"),
        "cache_file_size": Param("size", "64K", "pagecache: size of each small file", minimum=4096),
        "holes_size": Param(
            "size", "0.4x", "anon-holes: anon memory faulted then half unmapped (1 MiB of every 2 MiB)"
        ),
    }

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        return [f"fault-both-{t}" for t in thread_ladder(params)]

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        out: list[MetricDef] = []
        for t in thread_ladder(params):
            out += [
                MetricDef(
                    f"fault-huge-{t}",
                    "us",
                    "lower",
                    "latency",
                    description=f"per-2MiB fault time of THP-backed units, {t} thread(s)",
                ),
                MetricDef(
                    f"fault-base-{t}",
                    "us",
                    "lower",
                    "latency",
                    description=f"per-2MiB fault time of base-page units, {t} thread(s)",
                ),
                MetricDef(
                    f"fault-both-{t}",
                    "us",
                    "lower",
                    "latency",
                    description=f"per-2MiB fault time of all units, {t} thread(s)",
                ),
                MetricDef(
                    f"Percentage huge-{t}",
                    "%",
                    "higher",
                    "percent",
                    description=f"units backed by a THP, {t} thread(s)",
                ),
            ]
        return out

    def check(self, params: dict[str, Any], budget: int) -> None:
        for t in thread_ladder(params):
            if params["size"] // t < S.UNIT:
                raise UsageError(
                    f"workload.thpfault.params.size: {params['size']} bytes is less than one "
                    f"2 MiB unit per thread for {t} threads"
                )
        held = params["size"] + (params["holes_size"] // 2 if params["fragment"] == "anon-holes" else 0)
        if held >= budget:
            raise UsageError(
                f"workload.thpfault.params: size + holes_size/2 = {held} bytes does not fit in the {budget} byte budget"
            )

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        samples: Samples = {}
        nfiles = 0
        cache_dir = ctx.workdir / "thpfault-cache"
        if p["fragment"] == "pagecache":
            cache_dir.mkdir(exist_ok=True)
            nfiles = max(1, p["cache_size"] // p["cache_file_size"])
            ctx.run(
                [ctx.binary("bgload"), "mkfiles", str(cache_dir), str(nfiles), str(p["cache_file_size"])],
                raw_name="mkfiles.out",
            )
        holes = p["holes_size"] if p["fragment"] == "anon-holes" else 0
        for t in thread_ladder(p, ctx.ncpus):
            if nfiles:
                ctx.run(
                    [ctx.binary("bgload"), "randread", str(cache_dir), str(nfiles), "1"], raw_name=f"randread-{t}.out"
                )
            out = ctx.run(
                [ctx.binary("thpfault"), str(p["size"]), str(t), "1" if p["madvise"] else "0", str(holes)],
                raw_name=f"thpfault-{t}.out",
            )
            lat, huge, _ = parse_thpfault(out.stdout)
            samples[f"fault-both-{t}"] = lat
            if all(h >= 0 for h in huge):
                samples[f"fault-huge-{t}"] = [x for x, h in zip(lat, huge) if h == 1]
                samples[f"fault-base-{t}"] = [x for x, h in zip(lat, huge) if h == 0]
                samples[f"Percentage huge-{t}"] = [100.0 * sum(huge) / len(huge)]
        return {k: v for k, v in samples.items() if v}


# The metrics of the default configuration (thread counts 1 and the number of CPUs).
ThpFault.metrics = ThpFault().metric_defs({})
