"""Reading the running kernel's text interfaces, once for every stage: /proc/meminfo and
/proc/vmstat parsed into dicts, sysfs/procfs knobs read and written the way ``cat``/``echo`` do,
and the page size, THP size and pageblock order of this kernel (never assumed 4 KiB / order 9)."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo text → field → value as written (kB for sizes, a count for HugePages_*)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        k, _, rest = line.partition(":")
        fields = rest.split()
        if fields:
            try:
                out[k] = int(fields[0])
            except ValueError:
                continue
    return out


def meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    with open(path) as fh:
        return parse_meminfo(fh.read())


def meminfo_bytes(key: str, default: int | None = None) -> int:
    """One /proc/meminfo size field in bytes (``default`` when this kernel lacks it)."""
    v = meminfo().get(key)
    if v is None:
        if default is None:
            raise RuntimeError(f"no {key} in /proc/meminfo")
        return default
    return v * 1024


def read_vmstat(path: str = "/proc/vmstat") -> str:
    # One read of the whole file: no fixed-size buffer (MMTests' thpavail overflowed 4 KiB).
    with open(path) as fh:
        return fh.read()


def parse_vmstat(text: str) -> dict[str, int]:
    """/proc/vmstat text → counter name → value; malformed lines are skipped."""
    parts = text.split()
    if len(parts) % 2 == 0:  # the fast path a sampling monitor takes every interval
        try:
            return dict(zip(parts[0::2], map(int, parts[1::2])))
        except ValueError:
            pass
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def vmstat() -> dict[str, int]:
    return parse_vmstat(read_vmstat())


def vmstat_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """after − before for every counter present in both (gauges included: their change)."""
    return {k: after[k] - before[k] for k in after if k in before}


# "a [b] c" choice files (THP enabled/defrag, zram comp_algorithm, ...).  tracefs buffer_size_kb
# reads "7 (expanded: 1408)" until the ring buffer is first used (kernel/trace/trace.c,
# tracing_entries_read, since 2.6.3x): the size to write back is 1408.
_BRACKET = re.compile(r"\[([^\]]+)\]")
_EXPANDED = re.compile(r"^\d+ \(expanded: (\d+)\)$")


def read_knob(path: Path | str) -> str:
    """Current value of a sysfs/procfs file as it would be written back: for ``a [b] c`` choice
    files the selected one, otherwise the text without surrounding whitespace."""
    text = Path(path).read_text().strip()
    e = _EXPANDED.match(text)
    if e:
        return e.group(1)
    m = _BRACKET.search(text)
    return m.group(1) if m and " " in text else text


def write_knob(path: Path | str, value: str) -> None:
    """Write a value the way ``echo value > path`` does; the kernel's errno becomes the message."""
    try:
        with open(path, "w") as fh:
            fh.write(str(value))
    except OSError as e:
        raise OSError(e.errno, f"{path}: the kernel rejected {value!r} ({os.strerror(e.errno or 0)})") from None


@cache
def page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE")


@cache
def thp_size() -> int:
    """Bytes of a PMD-sized THP: hpage_pmd_size (4.17+), else Hugepagesize, else 512 pages."""
    try:
        return int(Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size").read_text())
    except (OSError, ValueError):
        return meminfo_bytes("Hugepagesize", 512 * page_size())


@cache
def pageblock_order() -> int:
    """The kernel's pageblock order: /proc/pagetypeinfo's first line ("Page block order: 9"),
    else the THP order (pageblock_order is HUGETLB_PAGE_ORDER on x86 and arm64 with 4K pages)."""
    try:
        with open("/proc/pagetypeinfo") as fh:
            return int(fh.readline().split(":")[1])
    except (OSError, ValueError, IndexError):
        return max(0, (thp_size() // page_size()).bit_length() - 1)


def proc_start_time(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (/proc/PID/stat field 22), None if gone:
    with the pid it names one process, never a later one that reused the pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def running_config() -> set[str] | None:
    """The running kernel's config lines (``/proc/config.gz``, CONFIG_IKCONFIG_PROC), or None when
    the kernel does not expose it."""
    import gzip

    try:
        with gzip.open("/proc/config.gz", "rt") as fh:
            return {line.strip() for line in fh}
    except OSError:
        return None


def append_line(path: str | Path, line: str) -> None:
    """Write one command line to a kernel control file without truncating or seeking it: tracefs
    trigger and ``synthetic_events`` files drop everything they hold on O_TRUNC, and refuse the
    SEEK_END that Python's ``open(path, "a")`` does (EINVAL)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
