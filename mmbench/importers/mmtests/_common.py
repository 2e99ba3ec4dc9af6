"""What every MMTests raw-format reader shares: opening a log that may be gzipped, line errors
that name the file and line, GNU time's output, and the ``Parsed`` result a reader returns.

MMTests' ``open_log`` (bin/lib/MMTests/Extract.pm:505-520, v0.25) reads ``<file>.gz`` when it
exists, else ``<file>.xz``, else ``<file>``; :func:`open_log` does the same, so a tree whose logs
were compressed by ``MONITORS_GZIP``, by the shellpack itself or afterwards reads like a plain one.
"""

from __future__ import annotations

import errno
import gzip
import lzma
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from mmbench.errors import UsageError
from mmbench.model.files import PACKED_MIN, file_kind
from mmbench.model.results import MetricDef


class MissingLog(Exception):
    """A raw log the format needs is absent: the iteration is skipped with a warning."""


class BadLog(MissingLog, UsageError):
    """A benchmark log that is there but holds nothing to read (empty, binary junk) or is a
    symlink out of the run's tree: named with the reason, never dropped in silence.  Where a
    reader asked for it, its iteration is stored as failed with a warning (a missing log only
    leaves the iteration without samples); anywhere else it is a one-line error."""


@dataclass
class Parsed:
    """What a reader took from one benchmark's ``logs/`` folder of one iter-N: metric → samples
    (the values MMTests' extractor would ``addData`` for that op, in order) and their definitions."""

    metrics: list[MetricDef] = field(default_factory=list)
    samples: dict[str, list[float]] = field(default_factory=dict)
    # what the reader took that is no sample (kept in the iteration's ``imported``, by key)
    imported: dict[str, Any] = field(default_factory=dict)

    def add(self, md: MetricDef, value: float) -> None:
        self.values(md).append(value)

    def add_array(self, md: MetricDef, values: Any) -> None:
        """Samples parsed in bulk (a numpy array): kept as the array when there are many."""
        if md.name in self.samples and len(self.samples[md.name]):
            import numpy as np

            values = np.concatenate([np.asarray(self.samples[md.name], dtype=float), values])
        elif md.name not in self.samples:
            self.metrics.append(md)
        self.samples[md.name] = values.tolist() if len(values) <= PACKED_MIN else values

    def values(self, md: MetricDef) -> list[float]:
        """The sample list of ``md`` (created, and ``md`` registered, on first use): readers of
        logs with millions of lines append to it directly."""
        if md.name not in self.samples:
            self.metrics.append(md)
            self.samples[md.name] = []
        return self.samples[md.name]


def find_log(path: Path) -> Path | None:
    """``path.gz`` if it exists, else ``path.xz``, else ``path``, else None (MMTests' open_log order).
    Anything at that name counts, a FIFO or a symlink loop too: reading it names what it is."""
    base = path.with_name(path.name[:-3]) if path.name.endswith((".gz", ".xz")) else path
    for ext in (".gz", ".xz"):
        packed = base.with_name(base.name + ext)
        if _there(packed):
            return packed
    return base if _there(base) else None


def _there(path: Path) -> bool:
    """Is there a file at ``path`` (not a folder)?  A FIFO, device or broken symlink is one: it is
    refused by name when read, never passed over as if missing."""
    return os.path.lexists(path) and not path.is_dir()


def log_files(logs: Path, pattern: re.Pattern[str], key: Callable[[re.Match[str]], Any]) -> dict[Any, Path]:
    """The files of a logs folder whose names match ``pattern``, by ``key`` of the match, each the
    one :func:`find_log` reads (of a plain, .gz and .xz file of the same name, open_log's choice).
    Anything but a folder counts (a FIFO is named when read).  Two names for one key (``pft-01.log``
    beside ``pft-1.log``) are a :class:`BadLog` naming both: one of them would be dropped unsaid."""
    found: dict[Any, Path] = {}
    bases: dict[Any, str] = {}
    for p in sorted(logs.iterdir()):
        m = pattern.match(p.name)
        if not m or p.is_dir():
            continue
        k = key(m)
        base = p.name[:-3] if p.name.endswith((".gz", ".xz")) else p.name
        if k in bases and bases[k] != base:
            raise BadLog(
                f"{logs}: {bases[k]} and {base} are the same log (numbered alike); one would be "
                f"dropped: remove or rename one"
            )
        bases[k] = base
        found.setdefault(k, find_log(p))  # type: ignore[arg-type]
    return found


_ITER_DIR = re.compile(r"iter-\d+")


def _outside_tree(path: Path) -> Path | None:
    """Where ``path`` really is, when a symlink takes it out of its MMTests run folder (the folder
    holding its ``iter-N``); None when it stays inside (or is no symlink at all)."""
    absolute = path.absolute()
    run = next((p.parent for p in absolute.parents if _ITER_DIR.fullmatch(p.name)), absolute.parent)
    real = Path(os.path.realpath(absolute))
    return None if real.is_relative_to(os.path.realpath(run)) else real


def read_lines(path: Path) -> list[str]:
    """The lines of a plain, gzipped or xz text file (recognised by a ``.gz`` or ``.xz`` name).  A
    file that cannot be read or decompressed is a one-line UsageError naming it; a symlink out
    of the run's tree is never followed, and a benchmark log (in a ``logs`` folder) that is empty
    or binary is a :class:`BadLog` naming it and why."""
    return read_bytes(path).decode("utf-8", errors="replace").splitlines()


def read_bytes(path: Path) -> bytes:
    """The content of a plain, gzipped or xz file, decompressed (errors and refusals as
    :func:`read_lines`)."""
    is_log = path.parent.name == "logs"
    refuse = BadLog if is_log else UsageError
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as e:
            raise refuse(
                f"{path}: a symlink loop; not read"
                if e.errno == errno.ELOOP
                else f"{path}: a dangling symlink to {os.readlink(path)!r}; not read"
            ) from None
    where = _outside_tree(path)
    if where is not None:
        raise BadLog(f"{path}: a symlink to {where}, outside the MMTests run folder; not read")
    try:
        # non-blocking, and its kind checked before a byte is read: a FIFO is named, never waited on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as raw:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse(f"{path}: {file_kind(mode)}, not a regular file; not read")
        try:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                    data = fh.read()
            elif path.name.endswith(".xz"):
                with lzma.open(raw, "rb") as fh:
                    data = fh.read()
            else:
                data = raw.read()
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as e:
            raise UsageError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if is_log and not data.strip():
        raise BadLog(f"{path}: empty ({len(data)} bytes): the benchmark wrote nothing")
    if is_log and b"\0" in data[:65536]:
        raise BadLog(f"{path}: binary data (NUL bytes), not a text log")
    return data


def open_log(path: Path) -> tuple[Path, list[str]]:
    """Find ``path`` (or ``path.gz``) and read it; :class:`MissingLog` when neither exists."""
    found = find_log(path)
    if found is None:
        raise MissingLog(f"{path}[.gz|.xz] is missing")
    return found, read_lines(found)


def numbered(lines: list[str]) -> Iterator[tuple[int, str]]:
    return enumerate(lines, start=1)


def bad_line(path: Path, lineno: int, what: str) -> UsageError:
    return UsageError(f"{path}: line {lineno}: {what}")


def number(path: Path, lineno: int, text: str, what: str) -> float:
    """A finite float from ``text``, else a UsageError naming file, line and field."""
    try:
        v = float(text.replace(",", ""))
    except ValueError:
        raise bad_line(path, lineno, f"{what} is {text!r}, expected a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise bad_line(path, lineno, f"{what} is {text!r}, expected a finite number")
    return v


_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def gnu_time(path: Path, lineno: int, line: str) -> tuple[float, float, float]:
    """user, system and elapsed seconds from GNU time's default first line,
    ``0.01user 0.02system 0:00.03elapsed 66%CPU (...)`` (elapsed is [h:]m:s), as MMTests'
    _time_to_user/_sys/_elapsed split it (Extract.pm:278-327, v0.25)."""
    fields = line.split()
    if len(fields) < 3 or not (
        fields[0].endswith("user") and fields[1].endswith("system") and fields[2].endswith("elapsed")
    ):
        raise bad_line(path, lineno, "expected GNU time's 'Nuser Nsystem [H:]M:S.sselapsed ...'")
    user = number(path, lineno, fields[0][:-4], "user time")
    system = number(path, lineno, fields[1][:-6], "system time")
    m = _CLOCK.match(fields[2][:-7])
    if not m:
        raise bad_line(path, lineno, f"elapsed time is {fields[2]!r}, expected [H:]M:S.ss")
    h, mi, s = m.groups()
    return user, system, int(h or 0) * 3600 + int(mi) * 60 + float(s)


def scaling_files(logs: Path, prefix: str, suffix: str, number_name: str = "N") -> list[tuple[int, Path]]:
    """``<prefix>N<suffix>`` files (plain or .gz) of a logs folder, by N ascending: MMTests'
    discover_scaling_parameters (Extract.pm:486-503) with a numeric N; :class:`MissingLog`, which
    writes N as ``<number_name>``, when there is none."""
    pat = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix) + r"(?:\.gz|\.xz)?$")
    files = sorted(log_files(logs, pat, lambda m: int(m.group(1))).items())
    if not files:
        raise MissingLog(f"{logs}/{prefix}<{number_name}>{suffix}[.gz|.xz] is missing")
    return files
