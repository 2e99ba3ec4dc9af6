"""MMTests ``highalloc`` (v0.25 shellpack_src/src/highalloc + stap-scripts/highalloc.stp,
removed 2023-04): huge-page-order allocation success under a background workload.

Read: ``logs/mmtests.log[.gz|.xz]`` for the lines ``Background workload: <W> pid <P>, highalloc pass
<N>`` (the workloads W, in order), then every ``logs/highalloc-<W>-<N>.log[.gz|.xz]``, whose lines
``<i> success|failure <latency>`` (highalloc.stp: ``"%d %s %lu\\n"``) are the attempts (a line
starting ``<i> success|failure`` that does not end in one integer is an error).  Per W,
as ExtractHighalloc.pm: ``<W>-pass`` = number of pass files, ``<W>-success`` = successes·100 /
attempts over all passes (%), ``<W>-mean-lat`` = arithmetic mean of all attempts' latencies in ns
(the script prints ``ktime_to_ns`` of ktime_get_real() around each allocation).  One sample
each.  Success and passes are higher-is-better; unlike MMTests, mean-lat is lower-is-better.
Other lines (stap banners, "% Success" summaries) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.errors import UsageError
from mmbench.importers.mmtests._common import (
    MissingLog,
    Parsed,
    bad_line,
    number,
    numbered,
    open_log,
    read_lines,
    scaling_files,
)
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Singleops"
NAME = "highalloc"
_BG = re.compile(r"Background workload: ([a-z-]+) pid [0-9]+, highalloc pass ([0-9]+)")
_ATTEMPT = re.compile(r"([0-9]+) (success|failure) ([0-9]+)")
_ATTEMPT_START = re.compile(r"^[0-9]+ (success|failure)\b")


def read(logs: Path) -> Parsed:
    path, lines = open_log(logs / "mmtests.log")
    workloads: list[str] = []
    for _, line in numbered(lines):
        m = _BG.search(line)
        if m and m.group(1) not in workloads:
            workloads.append(m.group(1))
    if not workloads:
        raise MissingLog(f"{path}: no 'Background workload: W pid P, highalloc pass N' line")
    out = Parsed()
    for w in workloads:
        files = scaling_files(logs, f"highalloc-{w}-", ".log")
        success = attempts = 0
        lat_sum = 0.0
        for _, f in files:
            for lineno, line in numbered(read_lines(f)):
                m = _ATTEMPT.fullmatch(line.strip())
                if m is None and _ATTEMPT_START.match(line.strip()):
                    raise bad_line(f, lineno, "expected '<i> success|failure <latency_ns>'")
                if m:
                    attempts += 1
                    success += m.group(2) == "success"
                    lat_sum += number(f, lineno, m.group(3), "latency")
        if not attempts:
            last = files[-1][1]
            raise UsageError(f"{last}: line 1: no '<i> success|failure <latency>' line in any pass of {w}")
        out.add(
            MetricDef(f"{w}-pass", "passes", "higher", "count", description=f"highalloc passes under {w}"),
            float(len(files)),
        )
        out.add(
            MetricDef(
                f"{w}-success", "%", "higher", "percent", description=f"huge-order allocations that succeeded under {w}"
            ),
            success * 100.0 / attempts,
        )
        out.add(
            MetricDef(f"{w}-mean-lat", "ns", "lower", "time", description=f"mean allocation latency under {w}"),
            lat_sum / attempts,
        )
    return out
