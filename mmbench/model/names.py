"""Names that become folder names: runs and workload labels.

A name is never a path.  ``check_name`` is the one check every entry point uses (the CLI, the
suite loader, ``mmbench import``, push/pull, the fleet): it accepts what kernel people write —
``6.12.0-rc3+``, ``v6.1_patched``, ``base~1``, ``host:6.1`` — and refuses only what cannot be a
safe single folder name in a results directory: empty, ``.``/``..`` or a leading dot (the store
keeps its staging folders under dot names), a slash, a NUL, a control character or a
blank, a leading ``-`` (it would read as an option), a name the store itself uses
(``index.sqlite``), text that is not valid UTF-8, and more than 200 bytes.
"""

from __future__ import annotations

import unicodedata

from mmbench.errors import UsageError

MAX_BYTES = 200  # well under NAME_MAX (255), leaving room for ".NAME.incoming-PID" and suffixes
RESERVED = {"index.sqlite", "index.sqlite-journal", "index.sqlite-wal", "index.sqlite-shm"}


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a folder name of the store, or None if it can."""
    if not isinstance(name, str):
        return f"expected text, got {type(name).__name__}"
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is a path, not a name"
    if "/" in name:
        return "contains '/': a name is not a path"
    if name.startswith("."):
        return "starts with '.' (hidden; the store uses such names for its own files)"
    if name.startswith("-"):
        return "starts with '-' (it would read as an option)"
    if any(c.isspace() for c in name):
        return "contains a blank (listings and scripts split on blanks)"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        return "contains a control character"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if size > MAX_BYTES:
        return f"is {size} bytes long (at most {MAX_BYTES})"
    if name in RESERVED:
        return "is the name of the store's own index file"
    return None


def check_name(name: object, what: str = "run name") -> str:
    """``name`` if it can be a folder name; otherwise a ``UsageError`` naming ``what`` and why."""
    problem = name_problem(name)
    if problem:
        raise UsageError(f"{what} {_show(name)}: {problem}")
    return name  # type: ignore[return-value]


def _show(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "...'"
