"""MMTests ``pft`` (v0.25 shellpack_src/src/pft; github.com/gormanm/pft): page faults per second
with N processes or threads, PFT_ITERATIONS runs per client count.

Read: ``logs/pft-<N>.log[.gz|.xz]`` for every client count N.  The shellpack appends the output of
each run (``pft -m SIZE -n|-t N``).  As ExtractPft.pm does, a line is data when, after deleting
every ``s`` (the seconds suffix of ``0.12s``), it has no letter left; the header and any other
text is skipped.  A data line has 8 whitespace-separated fields: MappingSize, Threads, CacheLine,
UserTime, SysTime, WallTime, flt/cpu/s, fault/wsec.  Samples: ``faults/cpu-<N>`` = field 7 and
``faults/sec-<N>`` = field 8 (faults per second, higher is better, harmonic mean like MMTests'
DATA_OPS_PER_SECOND).
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.importers.mmtests._common import Parsed, bad_line, number, numbered, read_lines, scaling_files
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
NAME = "pft"
_LETTER = re.compile(r"[a-zA-Z]")


def read(logs: Path) -> Parsed:
    files = scaling_files(logs, "pft-", ".log")
    out = Parsed()
    for n, path in files:
        cpu = MetricDef(
            f"faults/cpu-{n}", "faults/s", "higher", "rate", description=f"faults per CPU second, {n} clients"
        )
        sec = MetricDef(
            f"faults/sec-{n}", "faults/s", "higher", "rate", description=f"faults per wall second, {n} clients"
        )
        for lineno, line in numbered(read_lines(path)):
            text = line.replace("s", "")
            if _LETTER.search(text) or not text.strip():
                continue
            fields = text.split()
            if len(fields) != 8:
                raise bad_line(
                    path,
                    lineno,
                    f"{len(fields)} fields, expected 8 (MappingSize Threads CacheLine "
                    f"UserTime SysTime WallTime flt/cpu/s fault/wsec)",
                )
            out.add(cpu, number(path, lineno, fields[6], "flt/cpu/s"))
            out.add(sec, number(path, lineno, fields[7], "fault/wsec"))
    return out
