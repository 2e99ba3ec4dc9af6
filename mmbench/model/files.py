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
import re
from collections import OrderedDict
from hashlib import blake2b
from pathlib import Path
from typing import Any, Callable, Protocol

from mmbench.errors import UsageError

# bump when a stored file changes meaning; readers refuse newer formats.  2 (2026-11-27): packed
# samples live in a sidecar file beside result.json (SAMPLES_FILE), no longer base64 inside it.
STORE_FORMAT = 2
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


# Samples of a metric above this many are packed: their little-endian float64 bytes go into the
# iteration's sidecar file (SAMPLES_FILE), and result.json holds where, ``{"file", "offset",
# "count"}`` (issue 25: 1 M samples read back in milliseconds, no number parsed or base64 decoded
# per sample); fewer stay a JSON list a person can read.  Format 1's ``{"f8": base64}`` is read too.
PACKED_MIN = 256
# the sidecar's name: its content's digest, so a rewritten iteration never leaves a result.json
# pointing into another write's samples; a name, never a path
SAMPLES_FILE = re.compile(r"samples-[0-9a-f]{16}\.f8")


def pack_samples(values: Any) -> list[float | None]:
    """A few samples as stored in result.json: a list (non-finite values as null)."""
    vals = values.tolist() if hasattr(values, "tolist") else values
    return [None if (isinstance(v, float) and not math.isfinite(v)) else v for v in vals]


def pack_iteration_samples(samples: dict[str, Any]) -> tuple[dict[str, Any], bytes, str]:
    """An iteration's samples as result.json holds them, the sidecar's bytes and its file name
    (``b""`` and ``""`` when every metric has at most PACKED_MIN samples)."""
    out: dict[str, Any] = {}
    arrays, refs, at = [], [], 0
    for name, values in samples.items():
        if len(values) <= PACKED_MIN:
            out[name] = pack_samples(values)
            continue
        import numpy as np
        arr = np.ascontiguousarray(values, dtype="<f8")
        out[name] = ref = {"file": "", "offset": at, "count": int(arr.size)}
        refs.append(ref)
        arrays.append(arr)
        at += arr.size
    if not arrays:
        return out, b"", ""
    blob = b"".join(a.tobytes() for a in arrays)
    file = f"samples-{blake2b(blob, digest_size=8).hexdigest()}.f8"
    for ref in refs:
        ref["file"] = file
    return out, blob, file


def read_samples_file(path: Path) -> Any:
    """A sidecar's samples as one read-only float64 array, or a StoreError naming the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as e:
        raise StoreError(f"{path}: cannot read: {e.strerror or e}") from None
    return samples_from_bytes(raw, str(path))


def samples_from_bytes(raw: bytes | None, where: str) -> Any:
    """A sidecar's bytes (None: not there) as one read-only float64 array, or a StoreError."""
    import numpy as np
    if raw is None:
        raise StoreError(f"{where}: missing (its result.json keeps samples there)")
    if len(raw) % 8:
        raise StoreError(f"{where}: {len(raw)} bytes, not whole float64 samples (truncated?)")
    return np.frombuffer(raw, dtype="<f8")


SampleFiles = Callable[[str], Any]   # a sidecar's name → its samples (read_samples_file)


def unpack_samples(stored: Any, sidecar: SampleFiles | None = None, where: str = "result.json",
                   metric: str = "") -> Any:
    """A metric's stored samples back to floats: a list (``null`` is NaN) or a float64 array,
    from the sidecar ``sidecar`` reads by name, or from format 1's base64."""
    if isinstance(stored, dict):
        if "f8" in stored:
            import binascii
            import numpy as np
            try:
                return np.frombuffer(base64.b64decode(stored["f8"], validate=True), dtype="<f8")
            except (binascii.Error, ValueError, TypeError):
                raise StoreError(f"{where}: samples.{metric}: \"f8\" is not base64 of whole float64 "
                                 f"samples (damaged?)") from None
        file, offset, count = stored.get("file"), stored.get("offset"), stored.get("count")
        if (not isinstance(file, str) or not SAMPLES_FILE.fullmatch(file) or type(offset) is not int
                or type(count) is not int or offset < 0 or count < 0):
            raise StoreError(f"{where}: samples.{metric}: {json.dumps(stored)[:120]} is not a place "
                             f"in this iteration's samples-<digest>.f8")
        if sidecar is None:
            raise StoreError(f"{where}: samples.{metric}: kept in {file}, which was not given")
        data = sidecar(file)
        if offset + count > data.size:
            raise StoreError(f"{where}: samples.{metric}: samples {offset}..{offset + count} of {file}, "
                             f"which holds {data.size} (truncated?)")
        return data[offset:offset + count]
    return [math.nan if v is None else float(v) for v in stored]


def samples_from_json(samples: dict[str, Any], sidecar: SampleFiles | None = None,
                      where: str = "result.json") -> dict[str, Any]:
    """Stored samples back to floats (see :func:`unpack_samples`)."""
    return {k: unpack_samples(vals, sidecar, where, k) for k, vals in samples.items()}


def sidecar_reader(folder: Path) -> SampleFiles:
    """Reads (once each) the sidecar files of the iteration folder ``folder``."""
    cache: dict[str, Any] = {}

    def read(name: str) -> Any:
        if name not in cache:
            cache[name] = read_samples_file(folder / name)
        return cache[name]
    return read


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
