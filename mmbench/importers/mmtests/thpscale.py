"""MMTests ``thpscale`` (v0.25 shellpack_src/src/thpscale/thpscale.c): THP fault latency after
the address space was fragmented by punching holes and filling them with page cache.

Read: ``logs/threads-<N>.log[.gz|.xz]`` for every thread count N (the shellpack gzips them).  Lines
starting with ``fault`` are ``fault <tid> <huge|base> <latency_us> <sec.usec> <local>``
(thpscale.c: ``printf("fault %d %s %12lu %lu.%lu %d\\n", ...)``); every other line (anoninit,
fileinit, banners) is skipped.  Samples: ``fault-<huge|base>-<N>`` and ``fault-both-<N>`` = field
4, in µs (lower is better), as ExtractThpscale.pm.  Unlike it, a kind of fault that never
happened gets no samples (MMTests adds a fake sample of 0 per iteration; ``compare --convention
mmtests`` adds it back when it summarises, analysis/compare/sections/mmtests.py).

Also kept, for compare-kernels.sh's "Percentage Locality" table (ExtractThpscalelocality.pm), in
the iteration's ``imported["mmtests_thpscale_locality"]``: per thread count N and kind, the faults
and how many had field 6 (``<local>``) equal to 1 (local) or 0 (remote), as Perl compares it
(a field that is no number counts as 0); the rest (thpscale.c's -1) as ``uncertain``.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

from mmbench.importers.mmtests._common import (
    Parsed,
    bad_line,
    number,
    numbered,
    read_bytes,
    read_lines,
    scaling_files,
)
from mmbench.model.perl import perl_num
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
NAME = "thpscale"


def _locality_table(huge: Any, loc: Any, n: int, out: Parsed) -> None:
    """The locality counts of one log from its fault lines' kinds and field 6 (read_fast)."""
    table = {}
    for kind, sel in (("base", ~huge), ("huge", huge)):
        x = loc[sel]
        table[kind] = [int(x.size), int((x == 1).sum()), int((x == 0).sum())]
    table["uncertain"] = int(loc.size - sum(table[k][1] + table[k][2] for k in ("base", "huge")))
    out.imported.setdefault(LOCALITY, {})[str(n)] = table


def _locality_slow(path: Path, n: int, out: Parsed) -> None:
    table: dict = {"base": [0, 0, 0], "huge": [0, 0, 0], "uncertain": 0}
    for _, line in numbered(read_lines(path)):
        if not line.startswith("fault"):
            continue
        f = line.split()
        kind = "base" if len(f) > 2 and f[2] == "base" else "huge"  # as ExtractThpscalelocality.pm
        v = perl_num(f[5] if len(f) > 5 else None)
        table[kind][0] += 1
        if v == 1:
            table[kind][1] += 1
        elif v == 0:
            table[kind][2] += 1
        else:
            table["uncertain"] += 1
    out.imported.setdefault(LOCALITY, {})[str(n)] = table


LOCALITY = "mmtests_thpscale_locality"


def read_fast(path: Path, n: int, out: Parsed) -> bool:
    """The fault lines of one log split in C (fieldlines.c; a thpscale log has a line per 2 MiB
    fault: millions) instead of a Python loop per line, field 6 (locality) in the same pass.
    False when any fault line is not one it reads exactly (the line-by-line readers then name the
    bad line, or take a locality field that is no number as Perl does)."""
    import numpy as np
    from mmbench.cbuild import binary_for  # built on first use, cached by the source's hash

    exe = binary_for(Path(__file__).with_name("fieldlines.c"))
    proc = subprocess.run([exe, "fault", "2", "3,5", "huge", "base"], input=read_bytes(path), capture_output=True)
    if proc.returncode != 0:
        return False
    count = int(np.frombuffer(proc.stdout, dtype=np.uint64, count=1)[0])
    huge = np.frombuffer(proc.stdout, dtype=np.uint8, count=count, offset=8) == 0
    lat = np.frombuffer(proc.stdout, dtype=np.float64, count=count, offset=8 + count)
    _locality_table(huge, np.frombuffer(proc.stdout, dtype=np.float64, count=count, offset=8 + 9 * count), n, out)
    if count == 0:
        return True
    defs = {
        k: MetricDef(
            f"fault-{k}-{n}", "us", "lower", "latency", description=f"{k} fault + 2 MiB memset latency, {n} threads"
        )
        for k in ("base", "huge", "both")
    }
    first = "huge" if huge[0] else "base"
    for kind in (first, "both", "base" if first == "huge" else "huge"):  # the order the loop sees them
        sel = lat if kind == "both" else lat[huge if kind == "huge" else ~huge]
        if sel.size:
            out.add_array(defs[kind], sel)
    return True


def read(logs: Path) -> Parsed:
    files = scaling_files(logs, "threads-", ".log")
    out = Parsed()
    for n, path in files:
        if read_fast(path, n, out):
            continue
        _locality_slow(path, n, out)
        defs = {
            k: MetricDef(
                f"fault-{k}-{n}", "us", "lower", "latency", description=f"{k} fault + 2 MiB memset latency, {n} threads"
            )
            for k in ("base", "huge", "both")
        }
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
                lat = number(path, lineno, f[3], "latency")  # raises the one-line error
            if f[2] not in seen:
                seen[f[2]] = out.values(defs[f[2]])
                if not both:
                    both = out.values(defs["both"])
            seen[f[2]].append(lat)
            both.append(lat)
    return out
