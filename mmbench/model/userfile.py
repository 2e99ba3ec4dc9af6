"""Reading a file the user named on the command line, with what is wrong with it as one line.

A suite, a patch, a config fragment or a saved trace is read whole; a directory, a file that
cannot be read or a binary one is a ``UsageError`` naming the argument and the path.
"""

from __future__ import annotations

from pathlib import Path

from mmbench.errors import UsageError


def read_user_file(path: Path, flag: str, what: str, *, binary_ok: bool = False, regular_only: bool = False) -> bytes:
    """The bytes of ``path``, given as ``flag`` (``--config``, ``analyze irqsoff:``) for ``what``
    (``a TOML suite``, ``a patch``).  A NUL byte makes it a binary file unless ``binary_ok``;
    ``regular_only`` refuses a FIFO or a device, which could block or never end."""
    where = f"{flag} {path}"
    if regular_only and path.exists() and not path.is_file() and not path.is_dir():
        raise UsageError(f"{where}: not a regular file")
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{where}: is a directory, not {what}") from None
    except FileNotFoundError:
        raise UsageError(f"{where}: cannot read: no such file") from None
    except OSError as e:
        raise UsageError(f"{where}: cannot read: {e.strerror or e}") from None
    if not binary_ok and b"\0" in raw:
        raise UsageError(f"{where}: a binary file, not {what}")
    return raw
