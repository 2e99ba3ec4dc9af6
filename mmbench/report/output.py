"""Writing a report file the user named with ``-o``: only ever a regular file, or stdout.

``-`` (or a path that is this process's stdout, like ``/dev/stdout``) writes to stdout.  A new or
existing regular file is replaced atomically: the text goes to a temporary file beside it, which
is renamed over it (a symlink to a regular file is followed and its target replaced, the link
kept).  A directory, a device, a FIFO, a socket or a dangling symlink is refused in one line —
renaming over one would destroy it, and writing into a FIFO nobody reads would hang.  The
temporary file is removed on every path out, an interrupt included.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from mmbench.errors import UsageError
from mmbench.model.files import file_kind


def _is_stdout(st: os.stat_result) -> bool:
    try:
        return os.path.samestat(st, os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def resolve_target(spec: str, flag: str = "-o") -> Path | None:
    """The regular file ``spec`` names (None: stdout); a UsageError if it cannot be one."""
    if spec == "-":
        return None
    if not spec or "\0" in spec:
        raise UsageError(f"{flag}: give a file name, or - for stdout")
    path = Path(spec)
    try:
        st = os.stat(path)  # follows symlinks: what would really be written
    except FileNotFoundError:
        if path.is_symlink():
            raise UsageError(f"{flag} {spec}: a symlink to a missing file; give a file name") from None
        if spec.endswith("/"):
            raise UsageError(f"{flag} {spec}: names a directory; give a file name") from None
        return path
    except OSError as e:
        raise UsageError(f"{flag} {spec}: {e.strerror}") from None
    if _is_stdout(st):
        return None
    if stat.S_ISREG(st.st_mode):
        return Path(os.path.realpath(path))  # replace the link's target, keep the link
    raise UsageError(
        f"{flag} {spec}: is {file_kind(st.st_mode)}, not a regular file; give a file name, or - for stdout"
    )


def write_output(spec: str, data: str | bytes, flag: str = "-o") -> str:
    """Write ``data`` where ``spec`` says; returns what to call it in a message ("stdout" or the path)."""
    target = resolve_target(spec, flag)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if target is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        return "stdout"
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{flag} {spec}: cannot create its folder {parent}: {e.strerror}") from None
    tmp = parent / f".{target.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as e:
        raise UsageError(f"{flag} {spec}: cannot write: {e.strerror or e}") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return str(spec)
