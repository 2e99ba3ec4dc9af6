"""MMTests ``simoop`` (git.kernel.org/pub/scm/linux/kernel/git/mason/simoop.git; MMTests
config-workload-simoop-short): per-interval read, write and allocation latency percentiles of a
simulated data-store under memory pressure.

Read: ``logs/simoop.log[.gz|.xz]``, from the line starting ``Warmup complete`` up to a line starting
``Final stats`` (or the end).  Every line there matching
``<Op> latency [usec: ](p50: A) (p95: B) (p99: C)[ (max: D)]`` with Op one of Read, Write,
Allocation gives one sample each of ``p50-<Op>``, ``p95-<Op>``, ``p99-<Op>`` (and ``max-<Op>``
when present), in µs with thousands commas removed, lower is better.  The form without ``usec:``
and max is v0.25's ExtractSimoop.pm; the form with them is HEAD's extract-report.pl.  Unlike
HEAD's parser every interval is kept (it never prints the last one); unlike v0.25 no
``final-*`` ops are made (they repeat the last interval).  A line naming ``latency (`` or
``latency usec:`` that does not match is an error (a truncated log).
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.importers.mmtests._common import MissingLog, Parsed, bad_line, number, numbered, open_log
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
NAME = "simoop"
_LINE = re.compile(
    r"([A-Za-z]+) latency (?:usec: )?\(p50: ([0-9,]+)\) \(p95: ([0-9,]+)\) \(p99: ([0-9,]+)\)"
    r"(?: \(max: ([0-9,]+)\))?"
)
_LOOSE = re.compile(r"latency (?:usec: )?\(")
OPS = ("Read", "Write", "Allocation")


def read(logs: Path) -> Parsed:
    path, lines = open_log(logs / "simoop.log")
    out = Parsed()
    reading = False
    for lineno, line in numbered(lines):
        if line.startswith("Warmup complete"):
            reading = True
        if line.startswith("Final stats"):
            break
        if not reading or not _LOOSE.search(line):
            continue
        m = _LINE.search(line)
        if not m:
            raise bad_line(path, lineno, "expected '<Op> latency [usec: ](p50: N) (p95: N) (p99: N)[ (max: N)]'")
        op = m.group(1)
        if op not in OPS:
            continue
        for name, text in zip(("p50", "p95", "p99", "max"), m.groups()[1:]):
            if text is not None:
                out.add(
                    MetricDef(
                        f"{name}-{op}", "us", "lower", "time", description=f"{op} latency {name} per report interval"
                    ),
                    number(path, lineno, text, f"{name}"),
                )
    if not reading:
        raise MissingLog(f"{path}: no 'Warmup complete' line (the run ended before measuring)")
    return out
