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

What is read is what was written: every store file is opened as a regular file inside its results
directory (a symlink out of it, a FIFO, a device or a directory is refused in one line, and no
more bytes are read than the file is meant to hold).  A JSON document the store writes carries a
BLAKE2b digest of its content (``"blake2b"``, see :func:`seal`), a sample sidecar is named by the
digest of its bytes, and both are checked on every read that is not of bytes already checked: a
flipped bit is a one-line error naming the file, never a wrong number.
"""

from __future__ import annotations

import errno
import json
import base64
import math
import os
import re
import stat
from collections import OrderedDict
from hashlib import blake2b
from pathlib import Path
from typing import Any, Callable, NoReturn, Protocol

from mmbench.errors import UsageError
from mmbench.model.store_format import MAX_ITERATION_INDEX, STORE_FORMAT

MAX_FILE_BYTES = 256 << 20  # no stored JSON file is this large; a bigger one is not ours


def iteration_index_problem(index: Any) -> str | None:
    """Why ``index`` cannot be an iteration's number in a store, or None."""
    if type(index) is not int or not 0 <= index <= MAX_ITERATION_INDEX:
        return f"iteration number {index!r} is not a whole number 0..{MAX_ITERATION_INDEX} (the index's column range)"
    return None


class StoreError(UsageError):
    """A damaged, truncated or foreign file in the results directory (one line, exit 2)."""


class StoreFull(StoreError):
    """The results directory's filesystem is full (ENOSPC, EDQUOT): one line naming it, exit 2;
    a run stops there and is stored as incomplete (what it finished is kept)."""


class CheckedFiles(Protocol):
    """Where a store remembers files that passed validation (store/checked.py keeps it in the index)."""

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


def _nearest(path: str | Path, roots: Any) -> Any:
    """The entry of ``roots`` (root → value) whose root is the nearest folder above ``path``
    (by its text: pathlib's parents cost more than the read itself on a store of 1,000 runs)."""
    text, best, value = str(path), -1, None
    for root, v in roots.items():
        r = str(root)
        if len(r) > best and text.startswith(r) and text[len(r) : len(r) + 1] == os.sep:
            best, value = len(r), (root, v)
    return value


def _checked_for(path: Path) -> CheckedFiles | None:
    found = _nearest(path, _checked) if _checked else None
    return found[1] if found else None


def _validator_digest_key() -> bytes:
    """A digest of the validator's source (the models, the name check and this module's digest
    checks): a changed validator must not trust an old verdict."""
    global _validator_key
    if _validator_key is None:
        here = Path(__file__).parent
        h = blake2b(digest_size=16)
        for name in ("stored.py", "names.py", "files.py", "store_format.py"):
            h.update((here / name).read_bytes())
        h.update(str(STORE_FORMAT).encode())
        _validator_key = h.digest()
    return _validator_key


# results directories a store opened: a stored file is read only from inside one of them (a
# symlink that leads out is refused).  Each with its real path, resolved once.
_roots: OrderedDict[Path, str] = OrderedDict()


def register_store_root(root: Path) -> None:
    """Read files under ``root`` as store files: never through a symlink that leads out of it."""
    root = Path(root)
    _roots[root] = os.path.realpath(root)
    _roots.move_to_end(root)
    while len(_roots) > _CHECKED_ROOTS:
        _roots.popitem(last=False)


def _root_of(path: str | Path) -> tuple[Path, str] | None:
    return _nearest(path, _roots) if _roots else None


def _inside(real: str, root_real: str) -> bool:
    return (real + os.sep).startswith(root_real.rstrip(os.sep) + os.sep)


# folders below a results directory found to be no symlink out of it (each checked once a process)
_dirs_inside: set[str] = set()


def _way_out(folder: str | Path, root: tuple[Path, str]) -> tuple[Path, str] | None:
    """The first folder between the results directory and ``folder`` (inclusive) that is a symlink
    leading out of it, with where it leads; None when there is none.  One lstat a folder, once."""
    key = str(root[0])
    for part in str(folder)[len(key) + 1 :].split(os.sep):
        if not part:
            continue
        key = f"{key}{os.sep}{part}"
        if key in _dirs_inside:
            continue
        try:
            st = os.lstat(key)
        except OSError:
            return None  # (opening the file says what is wrong)
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(key)
            if not _inside(real, root[1]):
                return Path(key), real
        if len(_dirs_inside) > 200_000:
            _dirs_inside.clear()
        _dirs_inside.add(key)
    return None


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISREG, "a regular file"),
)


def file_kind(mode: int) -> str:
    """What kind of file ``mode`` (from lstat) is, as a message says it ("a FIFO", "a symlink", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, *, limit: int = MAX_FILE_BYTES, size: int | None = None) -> bytes:
    """The bytes of the store file ``path``, or a StoreError naming it: only a regular file, only
    from inside the results directory it belongs to (a symlink that stays inside is followed), never
    more than ``limit`` bytes, and exactly ``size`` bytes when given (checked before anything is read).
    Opened non-blocking, so a FIFO is refused instead of waited on."""
    where = str(path)
    try:
        st = os.lstat(where)
    except FileNotFoundError:
        raise StoreError(f"{where}: missing") from None
    except OSError as e:
        raise StoreError(f"{where}: cannot read: {e.strerror or e}") from None
    target = where
    root = _root_of(where)
    if stat.S_ISLNK(st.st_mode):
        try:
            os.stat(path)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StoreError(f"{where}: a symlink loop; not read") from None
            raise StoreError(f"{where}: a dangling symlink to {os.readlink(path)!r}; not read") from None
        real = os.path.realpath(path)
        if root is not None and not _inside(real, root[1]):
            raise StoreError(f"{where}: a symlink to {real}, outside the results directory; not read")
        target = real
    elif root is not None:
        out = _way_out(os.path.dirname(where), root)
        if out is not None:
            raise StoreError(
                f"{where}: reached through {out[0]}, a symlink to {out[1]}, outside the results directory; not read"
            )
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StoreError(f"{where}: a symlink (changed while read); not read") from None
        raise StoreError(f"{where}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{where}: {file_kind(st.st_mode)}, not a regular file; not read")
        if size is not None and st.st_size != size:
            _wrong_size(where, st.st_size, size)
        if st.st_size > limit:
            raise StoreError(f"{where}: {st.st_size} bytes: too large to be a stored mmbench file")
        want = st.st_size
        chunks, got = [], 0
        while got < want:
            chunk = os.read(fd, min(want - got, 16 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got != want:
            raise StoreError(f"{where}: {got} bytes read of {want} (truncated while read)")
        return b"".join(chunks)
    except OSError as e:
        raise StoreError(f"{where}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _wrong_size(where: str, have: int, want: int) -> NoReturn:
    if have > want:
        raise StoreError(
            f"{where}: {have} bytes where result.json's references cover {want}: "
            f"{have - want} stray byte(s) after the samples (damaged or appended to)"
        )
    raise StoreError(f"{where}: {have} bytes where result.json's references cover {want} (truncated?)")


def _read_bytes(path: Path) -> bytes:
    raw = read_regular(path)
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
    """A stored JSON document, or a StoreError naming the file and what is wrong with it (its
    digest is not checked: see :func:`read_sealed`)."""
    return _parse(path, _read_bytes(path))


def read_sealed(path: Path) -> Any:
    """:func:`read_json`, and a document that carries a digest (:func:`seal`) must match it; the
    digest is not part of what is returned."""
    return unseal(path, read_json(path))


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


# what every message about a damaged file ends with (``mmbench verify`` leaves it out)
VERIFY_HINT = "'mmbench verify' lists every damaged file"
# The key of a stored JSON document's digest: BLAKE2b (16 bytes, hex) of the document's canonical
# form without it (sorted keys, no blanks), so reformatting a file keeps it valid and a changed
# value does not.
SEAL = "blake2b"
# Keys a seal does not cover, by file name: result.json's "monitors" is metadata that a host-side
# finisher rewrites after the iteration is stored (a VM guest's trace decoded on the host); the
# numbers it leads to are in the monitor's own files, which carry no digest (results-format.md).
UNSEALED = {"result.json": ("monitors",)}


def json_default(o: Any) -> Any:
    """A value json cannot write as it is (a Path) in the form a store writes it."""
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def seal_of(doc: dict[str, Any], name: str) -> str:
    """The digest a stored document ``doc`` (the file ``name``) carries under :data:`SEAL`."""
    skip = UNSEALED.get(name, ())
    body = {k: v for k, v in doc.items() if k != SEAL and k not in skip}
    try:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False, default=json_default)
    except TypeError:  # keys of several types (sort_keys cannot order them): as JSON would read them back
        body = json.loads(json.dumps(body, default=json_default))
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return blake2b(text.encode(), digest_size=16).hexdigest()


def seal(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """``doc`` as the store writes it to the file ``name``: with its digest (a new dict)."""
    out = {k: v for k, v in doc.items() if k != SEAL}
    out[SEAL] = seal_of(out, name)
    return out


def seal_problem(data: Any, name: str) -> str | None:
    """Why a parsed document's digest does not hold, or None (it holds, or it carries none)."""
    if not isinstance(data, dict) or SEAL not in data:
        return None
    want = data[SEAL]
    if not isinstance(want, str) or want != seal_of(data, name):
        return (
            "its content does not match the BLAKE2b digest it was stored with (damaged on disk, or "
            f"edited by hand; {VERIFY_HINT})"
        )
    return None


def unseal(path: Path, data: Any) -> Any:
    """A parsed document with its digest checked and removed (a mismatch is a StoreError)."""
    problem = seal_problem(data, path.name)
    if problem:
        raise StoreError(f"{path}: {problem}")
    if isinstance(data, dict):
        data.pop(SEAL, None)
    return data


def _doc_digest(document: str) -> str:
    return blake2b(document.encode(), digest_size=8).hexdigest()


def read_checked(path: Path, kind: str) -> dict[str, Any]:
    """``path`` validated as a stored ``kind`` ("run", "workload", "result" or "summary", see
    ``model/stored.py``), as the validated document in JSON form; any problem is one StoreError.
    Its digest (:func:`seal`) is checked when it carries one."""
    raw = _read_bytes(path)
    checked = _checked_for(path)
    digest = ""
    if checked is not None:
        digest = blake2b(raw, digest_size=16, key=_validator_digest_key(), person=kind.encode()[:16]).hexdigest()
        known = checked.lookup(path)
        # a recorded document carries its own digest: a damaged index row is never served
        if known is not None and known[0] == (digest if known[1] is None else f"{digest}:{_doc_digest(known[1])}"):
            doc = json.loads(raw if known[1] is None else known[1])
            doc.pop(SEAL, None)
            return doc
    data = unseal(path, _parse(path, raw))
    document = validate(path, data, kind)
    if checked is not None:
        if _same_json(document, data):
            checked.remember(path, digest, None)
        else:
            text = json.dumps(document)
            checked.remember(path, f"{digest}:{_doc_digest(text)}", text)
    return document


def check_document(where: Path, raw: bytes, kind: str | None) -> dict[str, Any]:
    """A store document's bytes that are not (yet) a file — a run's files on their way into a store
    — checked as a read of the file ``where`` would check them: JSON, its digest, and the model of
    ``kind`` (None: any JSON object)."""
    data = unseal(where, _parse(where, raw))
    if kind is None:
        if not isinstance(data, dict):
            raise StoreError(f"{where}: expected a JSON object, found {type(data).__name__} (a foreign file?)")
        return data
    return validate(where, data, kind)


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
        # as JSON: strictly typed the way JSON is (an array is a tuple where one is meant, "2" no number)
        return MODELS[kind].model_validate_json(json.dumps(data)).model_dump(mode="json")
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(_key(p) for p in err["loc"]) or "document"
        msg = err["msg"].removeprefix("Value error, ")
        raise StoreError(f"{path}: {where}: {_short(msg)}") from None
    except RecursionError:
        raise StoreError(f"{path}: nested too deeply to be an mmbench file") from None


def read_object(path: Path) -> dict[str, Any]:
    """A stored JSON object of free shape (fingerprint.json, suite-effective.json), its digest
    checked.  Every read: these are small, and checking the seal costs less than looking up a
    recorded verdict (history reads four of them a run)."""
    data = read_sealed(path)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: expected a JSON object, found {type(data).__name__} (a foreign file?)")
    return data


# Samples of a metric above this many are packed: their little-endian float64 bytes go into the
# iteration's sidecar file (SAMPLES_FILE), and result.json holds where, ``{"file", "offset",
# "count"}`` (1 M samples read back in milliseconds, no number parsed or base64 decoded per
# sample); fewer stay a JSON list a person can read.  Format 1's ``{"f8": base64}`` is read too.
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
    file = f"samples-{sidecar_digest(blob)}.f8"
    for ref in refs:
        ref["file"] = file
    return out, blob, file


def sidecar_digest(raw: bytes) -> str:
    """The 16 hex digits a sidecar of these bytes is named by (``samples-<digest>.f8``)."""
    return blake2b(raw, digest_size=8).hexdigest()


def read_samples_file(path: Path, count: int | None = None) -> Any:
    """A sidecar's samples as one read-only float64 array, or a StoreError naming the file: a
    regular file inside the store of exactly ``count`` samples (when given), checked against the
    digest in its name."""
    try:
        raw = read_regular(path, size=None if count is None else count * 8, limit=1 << 62)
    except StoreError as e:
        if str(e) == f"{path}: missing":
            raw = None
        else:
            raise
    return samples_from_bytes(raw, str(path), path.name, count)


def samples_from_bytes(raw: bytes | None, where: str, name: str | None = None, count: int | None = None) -> Any:
    """A sidecar's bytes (None: not there) as one read-only float64 array, or a StoreError: exactly
    ``count`` samples when given, and when ``name`` is given, bytes whose BLAKE2b is the digest
    the name holds (one pass over the bytes: 8 MB, a million samples, in about 10 ms)."""
    import numpy as np

    if raw is None:
        raise StoreError(f"{where}: missing (its result.json keeps samples there)")
    if count is not None and len(raw) != count * 8:
        _wrong_size(where, len(raw), count * 8)
    if len(raw) % 8:
        raise StoreError(f"{where}: {len(raw)} bytes, not whole float64 samples (truncated?)")
    if name is not None:
        m = SAMPLES_FILE.fullmatch(name)
        if m is None:
            raise StoreError(f"{where}: not a sidecar name (samples-<16 hex digits>.f8)")
        got = sidecar_digest(raw)
        if got != name[8:24]:
            raise StoreError(
                f"{where}: its bytes do not match the BLAKE2b digest in its name (they hash "
                f"to {got}): damaged; {VERIFY_HINT}"
            )
    return np.frombuffer(raw, dtype="<f8")


SampleFiles = Callable[[str, int], Any]  # a sidecar's name, its samples → the samples (read_samples_file)


def _reference(stored: dict[str, Any], where: str, metric: str) -> tuple[str, int, int]:
    file, offset, count = stored.get("file"), stored.get("offset"), stored.get("count")
    if (
        not isinstance(file, str)
        or not SAMPLES_FILE.fullmatch(file)
        or type(offset) is not int
        or type(count) is not int
        or offset < 0
        or count < 0
        or set(stored) - {"file", "offset", "count"}
    ):
        raise StoreError(
            f"{where}: samples.{metric}: {json.dumps(stored)[:120]} is not a place "
            f"in this iteration's samples-<digest>.f8"
        )
    return file, offset, count


def _tiled(spans: list[tuple[int, int, str]], file: str, where: str) -> int:
    """The number of samples ``spans`` (offset, count, metric) of one sidecar cover, when they
    cover samples 0..N one after another, each sample one metric's (the writer's layout); else a
    StoreError naming the metrics that overlap or the samples no metric holds."""
    at, last = 0, None
    for offset, count, metric in sorted(spans):
        if offset < at:
            raise StoreError(
                f"{where}: samples.{metric}: samples {offset}..{offset + count} of {file} overlap "
                f"samples.{last[2]}'s {last[0]}..{last[0] + last[1]} (two metrics cannot share "
                f"samples: damaged or edited)"
            )
        if offset > at:
            raise StoreError(
                f"{where}: samples.{metric} starts at sample {offset} of {file}, but no metric holds "
                f"samples {at}..{offset} (damaged or edited)"
            )
        at, last = offset + count, (offset, count, metric)
    return at


def unpack_samples(
    stored: Any, sidecar: SampleFiles | None = None, where: str = "result.json", metric: str = ""
) -> Any:
    """A metric's stored samples back to floats: a list (``null`` is NaN) or a float64 array,
    from the sidecar ``sidecar`` reads by name, or from format 1's base64."""
    return samples_from_json({metric: stored}, sidecar, where)[metric]


def _list_or_base64(stored: Any, where: str, metric: str) -> Any:
    if isinstance(stored, dict):
        import binascii
        import numpy as np

        try:
            return np.frombuffer(base64.b64decode(stored["f8"], validate=True), dtype="<f8")
        except (binascii.Error, ValueError, TypeError):
            raise StoreError(
                f'{where}: samples.{metric}: "f8" is not base64 of whole float64 samples (damaged?)'
            ) from None
    return [math.nan if v is None else float(v) for v in stored]


def samples_from_json(
    samples: dict[str, Any], sidecar: SampleFiles | None = None, where: str = "result.json"
) -> dict[str, Any]:
    """Stored samples back to floats: a list (``null`` is NaN) or a float64 array, from a sidecar
    that ``sidecar`` reads by name (and number of samples), or from format 1's base64.  The
    references into each sidecar must cover it exactly, one metric per sample (checked before it
    is read: a file of any other size is not read at all)."""
    out: dict[str, Any] = {}
    refs: dict[str, list[tuple[int, int, str]]] = {}
    for metric, stored in samples.items():
        if isinstance(stored, dict) and "f8" not in stored:
            file, offset, count = _reference(stored, where, metric)
            refs.setdefault(file, []).append((offset, count, metric))
        else:
            out[metric] = _list_or_base64(stored, where, metric)
    for file, spans in refs.items():
        total = _tiled(spans, file, where)
        if sidecar is None:
            raise StoreError(f"{where}: samples.{spans[0][2]}: kept in {file}, which was not given")
        data = sidecar(file, total)
        for offset, count, metric in spans:
            out[metric] = data[offset : offset + count]
    return {metric: out[metric] for metric in samples}


def sidecar_reader(folder: Path) -> SampleFiles:
    """Reads (once each) the sidecar files of the iteration folder ``folder``."""
    cache: dict[str, Any] = {}

    def read(name: str, count: int) -> Any:
        if name not in cache:
            cache[name] = read_samples_file(folder / name, count)
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
