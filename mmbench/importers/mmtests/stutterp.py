"""MMTests ``stutterp`` (shellpack_src/src/stutterp, configs pagereclaim-stutterp{,-noreaders}):
mmap+fault+munmap latency while anon hogs, fio writers and readers push the machine into reclaim.

Read: ``logs/mmap-latency-<W>.log[.gz|.xz]`` for every worker count W.  mmap-latency.c prints
``printf("%d %llu\\n", count, avg_ns)``: ``count`` consecutive measurements whose mean latency is
``avg_ns`` nanoseconds.  Each line gives ``count`` samples of ``mmap-<W>`` = avg_ns/1000 µs
(lower is better), as ExtractStutterp.pm (v0.25, which divides by 10^6: ms) and HEAD's
parse-results (integer ``LATENCY/1000``: µs truncated; here not truncated).  The latency includes
mmap-latency's 5 ms sleep (MMTests notes §4g); it is imported as measured.
"""

from __future__ import annotations

from pathlib import Path

from mmbench.importers.mmtests._common import Parsed, bad_line, number, numbered, read_lines, scaling_files
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Variabletime"
NAME = "stutterp"
# a line claims this many measurements at most: PRINT_THRESHOLD-sized batches are small, and a
# corrupt count must not make the importer build a list of billions of floats
MAX_COUNT = 1_000_000


def read(logs: Path) -> Parsed:
    files = scaling_files(logs, "mmap-latency-", ".log", "W")
    out = Parsed()
    for w, path in files:
        md = MetricDef(f"mmap-{w}", "us", "lower", "latency", description=f"mmap+fault+munmap latency, {w} workers")
        for lineno, line in numbered(read_lines(path)):
            if not line.strip():
                continue
            f = line.split()
            if len(f) != 2 or not f[0].isdigit():
                raise bad_line(path, lineno, "expected '<count> <avg_ns>'")
            count = int(f[0])
            if count < 1 or count > MAX_COUNT:
                raise bad_line(path, lineno, f"count {count} out of range 1..{MAX_COUNT}")
            lat = number(path, lineno, f[1], "avg_ns") / 1000.0
            for _ in range(count):
                out.add(md, lat)
    return out
