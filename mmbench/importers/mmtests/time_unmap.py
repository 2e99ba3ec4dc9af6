"""MMTests ``time_unmap`` (v0.25 shellpack_src/src/time_unmap, config-workload-time-unmap): the
time to munmap a large mapping that NCPU threads faulted, one run per iteration.

Read: every ``logs/unmap-<I>.log[.gz|.xz]`` (I = the shellpack's iteration, in I order).  Each
non-blank line is one sample: ``time-unmap.c`` prints ``printf("%lld\\n", time_diff(...))``, the
munmap time in microseconds.  Metric ``Time`` (µs, lower is better), as ExtractTime_unmap.pm
(``addData("Time", ++$iteration, $line)``).  The ``unmap-<I>.time`` GNU time files are not read.
"""

from __future__ import annotations

from pathlib import Path

from mmbench.importers.mmtests._common import Parsed, number, numbered, read_lines, scaling_files
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Variabletime"
NAME = "time_unmap"
TIME = MetricDef("Time", "us", "lower", "latency", description="munmap time of the faulted mapping")


def read(logs: Path) -> Parsed:
    files = scaling_files(logs, "unmap-", ".log", "I")
    out = Parsed()
    for _, path in files:
        for lineno, line in numbered(read_lines(path)):
            if line.strip():
                out.add(TIME, number(path, lineno, line.strip(), "munmap time"))
    return out
