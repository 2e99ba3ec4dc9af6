"""MMTests' generic GNU time result files (the ``ExtractShellpack`` + ``time-parse-results`` path,
MMTests HEAD since 2025-12): one ``logs/time-<A>-<I>`` file per factor A (thread count, job
count, ...) and iteration I, each the output of ``$TIME_CMD -o time-<A>-<I> <command>`` (GNU
time's default format).  time_unmap, usemem, kernbench, autonumabench, gitcheckout, gitsource,
kvmstart, nas, poundsyscall, trunc and the ``-a exectime`` reports of pgbench, sysbench and
easywave write them.

Read as MMTests' ``shellpack_src/parsers/time-parse-results`` reads them: the factors are those
with an iteration-1 file (``ls time-*-1``), the iterations of a factor are every ``time-<A>-<I>``
with a numeric I, and ``shellpack_src/bin/extract-time`` takes from the line(s) holding
``elapsed`` the words ending in ``user`` and ``system`` and the ``[[h:]m:]s`` before
``elapsed``.  Each file gives one sample of the ops ``Elapsed-<A>``, ``System-<A>`` and
``User-<A>`` (seconds, lower is better; ExtractShellpack's label ``metric-factorA``), in the
order the parser sorts its output (metric, then A numerically, then I).
"""

from __future__ import annotations

import re
from pathlib import Path

from mmbench.importers.mmtests._common import BadLog, Parsed, bad_line, log_files, read_lines
from mmbench.model.results import MetricDef

# the MMTests summary type of its extract module (compare --convention mmtests)
SUMMARY = "Multiops"
_FILE = re.compile(r"^time-([^-/]+)-(\d+)(?:\.gz|\.xz)?$")
METRICS = (("Elapsed", "elapsed"), ("System", "system"), ("User", "user"))  # the parser's sort order


def files(logs: Path) -> dict[str, dict[int, Path]]:
    """factor → iteration → file, of the ``time-<A>-<I>`` files in ``logs`` (factors without an
    iteration 1 left out, as ``ls time-*-1`` leaves them out)."""
    found: dict[str, dict[int, Path]] = {}
    if not logs.is_dir():
        return {}
    for (a, i), p in log_files(logs, _FILE, lambda m: (m[1], int(m[2]))).items():
        found.setdefault(a, {})[i] = p
    return {a: its for a, its in found.items() if 1 in its}


def present(logs: Path) -> bool:
    try:
        return bool(files(logs))
    except BadLog:  # there, but two names for one file: reading it says so
        return True


def _factor_key(a: str) -> tuple[float, str]:
    """``sort -n`` order: the leading number (0 when there is none), then the text."""
    m = re.match(r"^\s*(-?\d+(?:\.\d*)?)", a)
    return (float(m[1]) if m else 0.0, a)


def _seconds(path: Path, lineno: int, text: str) -> float:
    """extract-time's elapsed: ``[[h:]m:]s`` (missing fields are 0)."""
    parts = text.split(":")
    if not 1 <= len(parts) <= 3:
        raise bad_line(path, lineno, f"elapsed time is {text!r}, expected [[H:]M:]S.ss")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise bad_line(path, lineno, f"elapsed time is {text!r}, expected [[H:]M:]S.ss") from None
    while len(vals) < 3:
        vals.insert(0, 0.0)
    return vals[0] * 3600 + vals[1] * 60 + vals[2]


def read_time_file(path: Path) -> dict[str, float]:
    """user, system and elapsed seconds of one GNU time output file (extract-time's rules: the
    words of every line holding ``elapsed``; a later match overrides an earlier one)."""
    out: dict[str, float] = {}
    lines = read_lines(path)
    for lineno, line in enumerate(lines, start=1):
        if "elapsed" not in line:
            continue
        for word in line.split():
            try:
                if word.endswith("user"):
                    out["user"] = float(word[:-4])
                elif word.endswith("system"):
                    out["system"] = float(word[:-6])
                elif "elapsed" in word:
                    out["elapsed"] = _seconds(path, lineno, word[: word.index("elapsed")])
            except ValueError:
                raise bad_line(path, lineno, f"{word!r} is not GNU time's Nuser/Nsystem/[H:]M:S.sselapsed") from None
    missing = [k for k in ("user", "system", "elapsed") if k not in out]
    if missing:
        raise bad_line(
            path,
            len(lines),
            f"no GNU time {'/'.join(missing)} time (expected a line 'Nuser Nsystem [H:]M:S.sselapsed ...')",
        )
    return out


def read(logs: Path) -> Parsed:
    """The ``Elapsed-<A>``, ``System-<A>``, ``User-<A>`` samples of one iter-N's logs folder."""
    found = files(logs)
    times = {a: [read_time_file(p) for _, p in sorted(its.items())] for a, its in found.items()}
    out = Parsed()
    for metric, key in METRICS:
        for a in sorted(times, key=_factor_key):
            md = MetricDef(f"{metric}-{a}", "s", "lower", "time", description=f"{metric.lower()} time (GNU time), {a}")
            vals = out.values(md)
            vals.extend(t[key] for t in times[a])
    return out
