"""The results directory's JSON files, read safely and validated once.

Every stored file goes through ``read_checked`` (or ``read_object`` for free-shape files): a file
that cannot be read, is not JSON, is JSON of the wrong shape (a foreign file, a truncated write, a
hand edit) or was written by a newer mmbench becomes a ``StoreError`` — a ``UsageError`` whose one
line names the file and what is wrong — instead of a traceback or, worse, a silent misreading.
``run.json`` carries the store format (``format``); a store written before the field existed is
format 1 and is read as such.

Validation is pydantic's (``model/stored.py``), and its import costs more than the rest of a
two-run ``compare``, so it is done once per content: the store keeps, per file, a digest of the
validator's source and the file's bytes, and the validated document when it differs from the file
(defaults filled in, numbers coerced).  A read whose digest matches returns that document without
importing pydantic; any other read validates again.
"""

from __future__ import annotations

import json
import base64
import math
from collections import OrderedDict
from hashlib import blake2b
from pathlib import Path
from typing import Any, Protocol

from mmbench.errors import UsageError

STORE_FORMAT = 1          # bump when a stored file changes meaning; readers refuse newer formats
MAX_FILE_BYTES = 256 << 20   # no stored JSON file is this large; a bigger one is not ours


class StoreError(UsageError):
    """A damaged, truncated or foreign file in the results directory (one line, exit 2)."""


class StoreFull(StoreError):
    """The results directory's filesystem is full (ENOSPC, EDQUOT): one line naming it, exit 2;
    a run stops there and is stored as incomplete (what it finished is kept)."""


class CheckedFiles(Protocol):
    """Where a store remembers files that passed validation (store/fs.py keeps it in its index)."""

    def lookup(self, path: Path) -> tuple[str, str | None] | None:
        """(digest, validated document as JSON or None when it is the file itself), if known."""

    def remember(self, path: Path, digest: str, document: str | None) -> None:
        """Record that ``path`` with ``digest`` validated (to ``document`` when not None)."""


# results directory → its record of checked files (verdicts of files read after the store object
# itself went out of use still count).  The most recent few: an older store is let go, and with it
# the index connection it holds open (a process that opens many results directories).
_checked: OrderedDict[Path, CheckedFiles] = OrderedDict()
_CHECKED_ROOTS = 16
_validator_key: bytes | None = None


def remember_checked_files(root: Path, checked: CheckedFiles) -> None:
    """Use ``checked`` for the files under ``root`` (a store calls this when it is opened)."""
    _checked[Path(root)] = checked
    _checked.move_to_end(Path(root))
    while len(_checked) > _CHECKED_ROOTS:
        _checked.popitem(last=False)


def _checked_for(path: Path) -> CheckedFiles | None:
    if _checked:
        for parent in path.parents:
            found = _checked.get(parent)
            if found is not None:
                return found
    return None


def _validator_digest_key() -> bytes:
    """A digest of the validator's source: a changed model must not trust an old verdict."""
    global _validator_key
    if _validator_key is None:
        here = Path(__file__).parent
        h = blake2b(digest_size=16)
        for name in ("stored.py", "names.py"):
            h.update((here / name).read_bytes())
        h.update(str(STORE_FORMAT).encode())
        _validator_key = h.digest()
    return _validator_key


def _read_bytes(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise StoreError(f"{path}: not a regular file" if path.exists() else f"{path}: missing")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise StoreError(f"{path}: {path.stat().st_size} bytes: too large to be a stored mmbench file")
        raw = path.read_bytes()
    except OSError as e:
        raise StoreError(f"{path}: cannot read: {e.strerror or e}") from None
    if not raw.strip():
        raise StoreError(f"{path}: empty (a truncated write?)")
    return raw


def _parse(path: Path, raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(f"{path}: not UTF-8 text (a binary or foreign file)") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise StoreError(f"{path}: line {e.lineno}: not valid JSON ({e.msg}; truncated?)") from None
    except (ValueError, RecursionError) as e:
        raise StoreError(f"{path}: not valid JSON ({_short(e)})") from None


def read_json(path: Path) -> Any:
    """A stored JSON document, or a StoreError naming the file and what is wrong with it."""
    return _parse(path, _read_bytes(path))


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def read_checked(path: Path, kind: str) -> dict[str, Any]:
    """``path`` validated as a stored ``kind`` ("run", "workload", "result" or "summary", see
    ``model/stored.py``), as the validated document in JSON form; any problem is one StoreError."""
    raw = _read_bytes(path)
    checked = _checked_for(path)
    digest = ""
    if checked is not None:
        digest = blake2b(raw, digest_size=16, key=_validator_digest_key(), person=kind.encode()[:16]).hexdigest()
        known = checked.lookup(path)
        if known is not None and known[0] == digest:
            return json.loads(raw if known[1] is None else known[1])
    data = _parse(path, raw)
    document = validate(path, data, kind)
    if checked is not None:
        checked.remember(path, digest, None if _same_json(document, data) else json.dumps(document))
    return document


def _same_json(a: Any, b: Any) -> bool:
    """Do two JSON values read back the same (1 and 1.0 do not)?  A walk, not two json.dumps of
    documents holding megabytes of packed samples (0.23 s of the first compare after an import)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def validate(path: Path, data: Any, kind: str) -> dict[str, Any]:
    """``data`` (read from ``path``) validated as ``kind``: the document in JSON form."""
    from pydantic import ValidationError
    from mmbench.model.stored import MODELS
    if not isinstance(data, dict):
        raise StoreError(f"{path}: expected a JSON object, found {type(data).__name__} (a foreign file?)")
    try:
        return MODELS[kind].model_validate(data).model_dump(mode="json")
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(_key(p) for p in err["loc"]) or "document"
        msg = err["msg"].removeprefix("Value error, ")
        raise StoreError(f"{path}: {where}: {_short(msg)}") from None
    except RecursionError:
        raise StoreError(f"{path}: nested too deeply to be an mmbench file") from None


def read_object(path: Path) -> dict[str, Any]:
    """A stored JSON object of free shape (fingerprint.json, suite-effective.json)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: expected a JSON object, found {type(data).__name__} (a foreign file?)")
    return data


# Samples of a metric above this many are stored as one base64 string of little-endian float64
# (issue 25: 1 M samples read back in milliseconds, no float parsed per sample); fewer stay a JSON
# list a person can read.  Both forms are read.
PACKED_MIN = 256


def pack_samples(values: Any) -> list[float | None] | dict[str, str]:
    """One metric's samples as stored in result.json: a list (non-finite values as null) or, for
    more than PACKED_MIN values, ``{"f8": base64 of little-endian float64}`` (NaN kept)."""
    n = len(values)
    if n <= PACKED_MIN:
        vals = values.tolist() if hasattr(values, "tolist") else values
        return [None if (isinstance(v, float) and not math.isfinite(v)) else v for v in vals]
    import numpy as np
    arr = np.asarray(values, dtype="<f8")
    return {"f8": base64.b64encode(arr.tobytes()).decode("ascii")}


def unpack_samples(stored: Any) -> Any:
    """A metric's stored samples back to floats: a list (``null`` is NaN) or a float64 array."""
    if isinstance(stored, dict):
        import numpy as np
        return np.frombuffer(base64.b64decode(stored["f8"]), dtype="<f8")
    return [math.nan if v is None else float(v) for v in stored]


def samples_from_json(samples: dict[str, Any]) -> dict[str, Any]:
    """Stored samples back to floats (see :func:`unpack_samples`)."""
    return {k: unpack_samples(vals) for k, vals in samples.items()}


def kernel_release(fingerprint: dict[str, Any]) -> str:
    """The fingerprint's kernel release, or "" when it has none (an imported run, a foreign file)."""
    kernel = fingerprint.get("kernel")
    return str(kernel.get("release", "")) if isinstance(kernel, dict) else ""


def _key(part: object) -> str:
    """A key of the document as it can be shown on one line (odd keys quoted)."""
    text = str(part)
    if text and text.isprintable() and not any(c.isspace() for c in text) and len(text) <= 40:
        return text
    return repr(text)[:40]


def _short(e: object) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 160 else text[:157] + "..."
