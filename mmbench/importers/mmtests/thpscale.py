"""MMTests ``thpscale`` (v0.25 shellpack_src/src/thpscale/thpscale.c): THP fault latency after
the address space was fragmented by punching holes and filling them with page cache.

Read: ``logs/threads-<N>.log[.gz|.xz]`` for every thread count N (the shellpack gzips them).  Lines
starting with ``fault`` are ``fault <tid> <huge|base> <latency_us> <sec.usec> <local>``
(thpscale.c: ``printf("fault %d %s %12lu %lu.%lu %d\\n", ...)``); every other line (anoninit,
fileinit, banners) is skipped.  Samples: ``fault-<huge|base>-<N>`` and ``fault-both-<N>`` = field
4, in µs (lower is better), as ExtractThpscale.pm.  Unlike it, a kind of fault that never
happened gets no samples (MMTests adds a fake sample of 0).
"""

from __future__ import annotations

import math
from pathlib import Path

from mmbench.importers.mmtests._common import (MissingLog, Parsed, bad_line, number, numbered, read_lines,
                                               scaling_files)
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
NAME = "thpscale"


def read(logs: Path) -> Parsed:
    files = scaling_files(logs, "threads-", ".log")
    if not files:
        raise MissingLog(f"{logs}/threads-<N>.log[.gz|.xz] is missing")
    out = Parsed()
    for n, path in files:
        defs = {k: MetricDef(f"fault-{k}-{n}", "us", "lower", "latency",
                             description=f"{k} fault + 2 MiB memset latency, {n} threads")
                for k in ("base", "huge", "both")}
        # a thpscale log has a line per 2 MiB fault (millions): lists are filled directly, and the
        # kinds get their MetricDef (and a place in the metric order) only once seen
        seen: dict[str, list[float]] = {}
        both: list[float] = []
        for lineno, line in numbered(read_lines(path)):
            if not line.startswith("fault"):
                continue
            f = line.split()
            if len(f) < 4 or f[0] != "fault" or f[2] not in ("huge", "base"):
                raise bad_line(path, lineno, "expected 'fault <tid> <huge|base> <latency_us> ...'")
            try:
                lat = float(f[3])
                if not math.isfinite(lat):
                    raise ValueError
            except ValueError:
                lat = number(path, lineno, f[3], "latency")   # raises the one-line error
            if f[2] not in seen:
                seen[f[2]] = out.values(defs[f[2]])
                if not both:
                    both = out.values(defs["both"])
            seen[f[2]].append(lat)
            both.append(lat)
    return out
