"""MMTests ``postmark`` (v0.25 shellpack_src/src/postmark; Debian's postmark): small-file
mail-server transactions, optionally with an anonymous memory hog in the background.

Read: ``logs/postmark.log[.gz|.xz]``, postmark's report.  As ExtractPostmark.pm, the number in the
first parenthesis of these lines is one sample (per second, higher is better):
``... seconds of transactions (N per second)`` → ``Transactions``;
``... megabytes read (N ...`` → ``DataRead/MB``; ``... megabytes written (N ...`` →
``DataWrite/MB``; ``Creation alone: ... (N ...`` → ``FilesCreate``; ``Deletion alone: ... (N ...``
→ ``FilesDeleted``; ``Mixed with transactions ... (N ...`` → ``CreateTransact`` after a Creation
line, ``DeleteTransact`` after a Deletion line.  A report without the transactions line is an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.importers.mmtests._common import Parsed, number, numbered, open_log
from mmbench.errors import UsageError
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Singleops"
NAME = "postmark"
_NUM = r"\(([0-9.]+)"
_RULES = [
    (re.compile(r"seconds of transactions " + _NUM), "Transactions", "transactions/s"),
    (re.compile(r"megabytes read " + _NUM), "DataRead/MB", "MB/s"),
    (re.compile(r"megabytes written " + _NUM), "DataWrite/MB", "MB/s"),
    (re.compile(r"Creation alone:.*" + _NUM), "FilesCreate", "files/s"),
    (re.compile(r"Deletion alone:.*" + _NUM), "FilesDeleted", "files/s"),
]
_MIXED = re.compile(r"Mixed with transactions.*" + _NUM)


def _md(name: str, unit: str) -> MetricDef:
    return MetricDef(name, unit, "higher", "rate", description=f"postmark {name} per second")


def read(logs: Path) -> Parsed:
    path, lines = open_log(logs / "postmark.log")
    out = Parsed()
    recent = ""
    for lineno, line in numbered(lines):
        for rx, name, unit in _RULES:
            m = rx.search(line)
            if m:
                out.add(_md(name, unit), number(path, lineno, m.group(1), name))
                if name in ("FilesCreate", "FilesDeleted"):
                    recent = name
                break
        else:
            m = _MIXED.search(line)
            if m and recent:
                name = "CreateTransact" if recent == "FilesCreate" else "DeleteTransact"
                out.add(_md(name, "files/s"), number(path, lineno, m.group(1), name))
    if "Transactions" not in out.samples:
        raise UsageError(
            f"{path}: line {len(lines)}: no 'seconds of transactions (N per second)' line "
            f"(not a postmark report, or truncated)"
        )
    return out
