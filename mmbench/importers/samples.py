"""Import samples measured elsewhere, so they can be compared like runs.

CSV: a header ``workload,metric,unit,better,iteration,value`` (any order; an optional ``kind``
column), one sample per line.  JSON: a list of objects with the same fields, or ``{"samples":
[...]}``; an object may carry ``"values": [...]`` (all the samples of that workload, metric and
iteration) instead of ``"value"``, which reads a million samples as fast as the CSV.  Several lines
with the same workload, metric and iteration are samples of that iteration.  Bad input raises
:class:`mmbench.errors.UsageError` with one line naming the file, the line (CSV) or sample (JSON)
and the field.
"""

from __future__ import annotations

import csv
import json
import math
import re
import struct
import subprocess
from collections.abc import Container
from pathlib import Path
from typing import Any, get_args

from mmbench.errors import UsageError
from mmbench.model.files import PACKED_MIN
from mmbench.model.names import name_problem
from mmbench.model.results import IterationResult, MetricDef, MetricKind, WorkloadRun

REQUIRED = ("workload", "metric", "unit", "better", "iteration", "value")
KINDS = set(get_args(MetricKind))
MAX_ITERATION = 1_000_000  # iteration numbers name folders (iter-N); no benchmark runs more


def read_samples_file(path: str | Path) -> list[WorkloadRun]:
    p = Path(path)
    if p.exists() and not p.is_file():  # a directory, FIFO or device: reading could hang or mislead
        raise UsageError(f"{p}: not a regular file")
    try:
        with open(p, "rb") as fh:
            head = fh.read(65536)
    except OSError as e:
        raise UsageError(f"{p}: cannot read: {e.strerror or e}") from None
    is_json = p.suffix.lower() == ".json" or head.lstrip()[:1] in (b"[", b"{")
    if not is_json:
        # a CSV is split in C without Python ever holding its text (memory per sample)
        first = head.split(b"\n", 1)[0]
        try:
            # small files stay in Python: numpy's import and a C process cost ~50 ms, more than
            # reading a few thousand samples (an import of one run was 0.11 s of its own work)
            big = p.stat().st_size >= FAST_CSV_MIN_BYTES
            fast = (
                _csv_columns(p, first.decode("utf-8"))
                if big and (len(first) < len(head) or len(head) < 65536)
                else None
            )
        except UnicodeDecodeError:
            raise UsageError(f"{p}: not UTF-8 text") from None
        if fast is not None:
            return fast
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: not UTF-8 text") from None
    records = _json_records(p, text) if is_json else _csv_records(p, text)
    return _build(p, records)


FAST_CSV_MIN_BYTES = 1 << 20  # below this, Python's csv module reads the file


def _csv_columns(p: Path, first: str) -> list[WorkloadRun] | None:
    """The fast path for CSV: samplecsv.c splits the file in C and returns the values as
    one float64 array and every other column as runs of equal text, so each name, unit, direction,
    iteration and kind is checked once per run of rows, not once per sample, and the samples of an
    iteration stay a numpy array (a view of that array when the file is grouped).  None when the
    file quotes a field: then Python's csv module reads it.  ``first``: the header line."""
    if '"' in first or not first.strip():
        return None
    header = [h.strip().lower() for h in first.split(",")]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise UsageError(
            f"{p}: line 1: header lacks column(s) {', '.join(missing)} (expected {','.join(REQUIRED)}[,kind])"
        )
    if len(set(header)) != len(header) or len(header) > 64:
        return None
    import numpy as np
    from mmbench.cbuild import binary_for  # built on first use, cached by the source's hash

    exe = binary_for(Path(__file__).with_name("samplecsv.c"))
    vcol = header.index("value")
    proc = subprocess.run([exe, str(p), str(len(header)), str(vcol)], capture_output=True)
    if proc.returncode == 4:
        return None
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        text = msg[-1] if msg else f"samplecsv failed ({proc.returncode})"
        m = re.match(r"^(line \d+): column (\d+): (.*)$", text)
        if m and int(m[2]) < len(header):  # the C side knows column numbers, the header names them
            text = f"{m[1]}: field '{header[int(m[2])]}' {m[3]}"
        raise UsageError(f"{p}: {text}")
    data = proc.stdout
    rows = struct.unpack_from("=Q", data, 0)[0]
    if rows == 0:
        raise UsageError(f"{p}: no samples")
    off = 8
    cols: dict[str, tuple[list[int], list[int], list[str]]] = {}
    for c, name in enumerate(header):
        if c == vcol:
            continue
        n = struct.unpack_from("=Q", data, off)[0]
        off += 8
        starts, lines, labels = [], [], []
        for _ in range(n):
            row, line, ln = struct.unpack_from("=QQI", data, off)
            off += 20
            starts.append(row)
            lines.append(line)
            try:
                labels.append(data[off : off + ln].decode("utf-8"))
            except UnicodeDecodeError:
                raise UsageError(f"{p}: line {line}: not UTF-8 text") from None
            off += ln
        cols[name] = (starts, lines, labels)
    values = np.frombuffer(data, dtype=np.float64, count=rows, offset=off)
    # segments: rows over which no column changes; each is checked once
    bounds = sorted({r for starts, _, _ in cols.values() for r in starts} | {rows})
    at = {name: 0 for name in cols}
    workloads: dict[str, WorkloadRun] = {}
    pieces: dict[tuple[str, int, str], list[Any]] = {}
    checked: dict[tuple[str, ...], tuple[str, str, str, str, int, str]] = {}
    for a, b in zip(bounds, bounds[1:]):
        rec: dict[str, Any] = {}
        line = 0
        for name, (starts, lines, labels) in cols.items():
            i = at[name]
            while i + 1 < len(starts) and starts[i + 1] <= a:
                i += 1
            at[name] = i
            rec[name] = labels[i]
            if starts[i] == a:
                line = max(line, lines[i])
        key = tuple(rec.values())
        where = f"line {line}"
        if key not in checked:
            checked[key] = _check_record(p, where, rec, workloads)
        wl, metric, _, _, it_no, _ = checked[key]
        _declare_metric(p, where, workloads, checked[key])
        pieces.setdefault((wl, it_no, metric), []).append(values[a:b])
    iters: dict[tuple[str, int], IterationResult] = {}
    for (wl, it_no, metric), parts in pieces.items():
        itr = iters.get((wl, it_no))
        if itr is None:
            itr = iters[(wl, it_no)] = IterationResult(workload=wl, index=it_no, warmup=False, status="ok")
            workloads[wl].iterations.append(itr)
        arr = parts[0] if len(parts) == 1 else np.concatenate(parts)
        # a few samples as a list (as every other reader gives them); many as the array itself
        itr.samples[metric] = arr.tolist() if arr.size <= PACKED_MIN else arr
    for w in workloads.values():
        w.iterations.sort(key=lambda it: it.index)
    return list(workloads.values())


def _csv_records(p: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.reader(text.splitlines())
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise UsageError(f"{p}: empty file (expected a header {','.join(REQUIRED)})") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise UsageError(
            f"{p}: line 1: header lacks column(s) {', '.join(missing)} (expected {','.join(REQUIRED)}[,kind])"
        )
    out = []
    for lineno, fields in enumerate(reader, start=2):
        if not fields or all(not f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            raise UsageError(f"{p}: line {lineno}: {len(fields)} fields, the header has {len(header)}")
        out.append((f"line {lineno}", dict(zip(header, (f.strip() for f in fields)))))
    return out


def _json_records(p: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    try:
        data = _loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{p}: line {e.lineno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise UsageError(f"{p}: JSON nested too deeply to be samples") from None
    if isinstance(data, dict):
        if "samples" not in data:
            raise UsageError(f'{p}: a JSON object needs a "samples" list')
        data = data["samples"]
    if not isinstance(data, list):
        raise UsageError(f"{p}: expected a list of samples")
    out = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise UsageError(f"{p}: sample {i}: expected an object")
        out.append((f"sample {i}", obj))
    return out


def _loads(text: str) -> Any:
    """The JSON document: parsed by orjson (a million numbers in 50 ms, json's take 230 ms), or
    by json where orjson refuses it (NaN, integers beyond 64 bits, a syntax error), so the
    document means and the errors say what they always have."""
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _field(p: Path, where: str, rec: dict[str, Any], name: str) -> Any:
    v = rec.get(name)
    if v is None or (isinstance(v, str) and not v.strip()):
        raise UsageError(f"{p}: {where}: field '{name}' is missing or empty")
    return v


def _check_record(
    p: Path, where: str, rec: dict[str, Any], known: Container[str] = ()
) -> tuple[str, str, str, str, int, str]:
    """(workload, metric, unit, better, iteration, kind) of one record, each checked: a one-line
    UsageError naming the file, the line or sample, and the field.  A workload name in ``known``
    was checked already."""
    wl = _field(p, where, rec, "workload")
    # the label becomes the workload's folder: a name, not a path (checked once per name)
    problem = name_problem(wl) if not (isinstance(wl, str) and wl in known) else None
    if problem:
        raise UsageError(f"{p}: {where}: field 'workload' {str(wl)[:60]!r}: {problem}")
    metric = _field(p, where, rec, "metric")
    if not isinstance(metric, str) or any(ord(c) < 32 for c in metric):
        raise UsageError(f"{p}: {where}: field 'metric' {str(metric)[:60]!r}: expected text without control characters")
    unit = rec.get("unit") if rec.get("unit") is not None else ""
    if not isinstance(unit, str) or any(ord(c) < 32 for c in unit):
        raise UsageError(f"{p}: {where}: field 'unit' {str(unit)[:60]!r}: expected text")
    better = str(_field(p, where, rec, "better")).strip().lower()
    if better not in ("higher", "lower"):
        raise UsageError(f"{p}: {where}: field 'better' is {better!r}, expected higher or lower")
    raw_it = _field(p, where, rec, "iteration")
    try:
        if isinstance(raw_it, bool) or (isinstance(raw_it, float) and not raw_it.is_integer()):
            raise ValueError
        it_no = int(raw_it)
        if not 0 <= it_no <= MAX_ITERATION:
            raise ValueError
    except (TypeError, ValueError):
        raise UsageError(
            f"{p}: {where}: field 'iteration' is {raw_it!r}, expected an integer 0..{MAX_ITERATION}"
        ) from None
    kind = str(rec.get("kind") or "time").strip().lower()
    if kind not in KINDS:
        raise UsageError(f"{p}: {where}: field 'kind' is {kind!r}, expected one of {', '.join(sorted(KINDS))}")
    return wl, metric, unit, better, it_no, kind


def _declare_metric(
    p: Path, where: str, workloads: dict[str, WorkloadRun], checked: tuple[str, str, str, str, int, str]
) -> WorkloadRun:
    """The workload of a checked record (made on its first record) with the record's metric
    declared; a metric whose unit, direction or kind differs from its first record is an error."""
    wl, metric, unit, better, _, kind = checked
    w = workloads.get(wl)
    if w is None:
        w = workloads[wl] = WorkloadRun(label=wl, plugin="imported", params={}, metrics=[])
    md = w.metric(metric)
    if md is None:
        w.metrics.append(MetricDef(metric, unit, better, kind))  # type: ignore[arg-type]
    elif (md.unit, md.better, md.kind) != (unit, better, kind):
        raise UsageError(
            f"{p}: {where}: metric {metric!r} of {wl!r} has unit/better/kind "
            f"{unit}/{better}/{kind}, earlier {md.unit}/{md.better}/{md.kind}"
        )
    return w


def _value(p: Path, where: str, rec: dict[str, Any]) -> float:
    raw_v = _field(p, where, rec, "value")
    try:
        if isinstance(raw_v, bool):
            raise ValueError
        value = float(raw_v)
    except (TypeError, ValueError):
        raise UsageError(f"{p}: {where}: field 'value' is {raw_v!r}, expected a number") from None
    if not math.isfinite(value):
        raise UsageError(f"{p}: {where}: field 'value' is {raw_v!r}, expected a finite number")
    return value


def _build(p: Path, records: list[tuple[str, dict[str, Any]]]) -> list[WorkloadRun]:
    if not records:
        raise UsageError(f"{p}: no samples")
    workloads: dict[str, WorkloadRun] = {}
    iters: dict[tuple[str, int], IterationResult] = {}
    # an iteration's samples of a metric as they come: single values, and float64 arrays from
    # "values" (never a Python float per value: 1 M samples in one JSON file)
    pieces: dict[tuple[str, int, str], list[Any]] = {}
    for where, rec in records:
        wl, metric, unit, better, it_no, kind = _check_record(p, where, rec, workloads)
        many = rec.get("values")
        if many is not None:
            if "value" in rec:
                raise UsageError(f"{p}: {where}: give 'value' or 'values', not both")
            value = None
            arr = _values(p, where, many)
        else:
            value = _value(p, where, rec)
        w = _declare_metric(p, where, workloads, (wl, metric, unit, better, it_no, kind))
        key = (wl, it_no)
        itr = iters.get(key)
        if itr is None:
            itr = iters[key] = IterationResult(workload=wl, index=it_no, warmup=False, status="ok")
            w.iterations.append(itr)
        if metric not in itr.samples:
            itr.samples[metric] = []  # its place in the iteration's metric order
        pieces.setdefault((wl, it_no, metric), []).append(arr if value is None else value)
    for (wl, it_no, metric), parts in pieces.items():
        iters[(wl, it_no)].samples[metric] = _joined(parts)
    for w in workloads.values():
        w.iterations.sort(key=lambda it: it.index)
    return list(workloads.values())


def _joined(parts: list[Any]) -> Any:
    """One metric's samples of one iteration, in the order given: a list of floats, or for more
    than PACKED_MIN samples one float64 array (the store packs it)."""
    if all(type(x) is float for x in parts):
        if len(parts) <= PACKED_MIN:
            return parts
        import numpy as np

        return np.asarray(parts, dtype=np.float64)
    import numpy as np

    arr = np.concatenate([x if hasattr(x, "ravel") else np.asarray([x], dtype=np.float64) for x in parts])
    return arr.tolist() if arr.size <= PACKED_MIN else arr


def _values(p: Path, where: str, many: Any) -> Any:
    """A record's ``values``: a non-empty list of finite numbers, as one float64 array.  The
    types are checked once per distinct type (a bool or a numeric string is no sample, though
    numpy would take both)."""
    import numpy as np

    if not isinstance(many, list) or not many:
        raise UsageError(f"{p}: {where}: field 'values' must be a non-empty list of numbers")
    try:
        if not set(map(type, many)) <= {float, int}:
            raise ValueError
        arr = np.asarray(many, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        bad = next((v for v in many if type(v) not in (float, int)), many[0])
        raise UsageError(f"{p}: {where}: field 'values' holds {bad!r}, expected numbers") from None
    if not np.isfinite(arr).all():
        raise UsageError(f"{p}: {where}: field 'values' must hold finite numbers only")
    return arr
