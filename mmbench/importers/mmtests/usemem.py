"""MMTests ``usemem`` (v0.25 shellpack_src/src/usemem, config-workload-usemem): N threads
allocate and touch anonymous (and file) memory in loops; each run timed by GNU time.

Read: ``logs/usemem-<N>-<I>[.gz|.xz]`` for every thread count N and iteration I: the output of
``$TIME_CMD -o usemem-N-I`` (GNU time's default format).  The first line containing ``elapsed``
gives the samples ``syst-<N>`` (system seconds) and ``elsp-<N>`` (elapsed seconds), lower is
better, as ExtractUsemem.pm (parse_time_syst_elsp, Extract.pm:551-566).
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.importers.mmtests._common import MissingLog, Parsed, bad_line, gnu_time, log_files, numbered, read_lines
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
NAME = "usemem"
_FILE = re.compile(r"^usemem-(\d+)-(\d+)(\.gz|\.xz)?$")


def read(logs: Path) -> Parsed:
    found: dict[tuple[int, int], Path] = log_files(logs, _FILE, lambda m: (int(m[1]), int(m[2])))
    if not found:
        raise MissingLog(f"{logs}/usemem-<N>-<I>[.gz|.xz] is missing")
    out = Parsed()
    for (n, _), path in sorted(found.items()):
        syst = MetricDef(f"syst-{n}", "s", "lower", "time", description=f"system time, {n} threads")
        elsp = MetricDef(f"elsp-{n}", "s", "lower", "time", description=f"elapsed time, {n} threads")
        lines = read_lines(path)
        for lineno, line in numbered(lines):
            if "elapsed" in line:
                _, system, elapsed = gnu_time(path, lineno, line)
                out.add(syst, system)
                out.add(elsp, elapsed)
                break
        else:
            raise bad_line(path, len(lines), "no GNU time line with 'elapsed'")
    return out
