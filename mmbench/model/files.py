"""The results directory's JSON files read through typed, validated models.

Every stored file goes through ``read_model``: a file that cannot be read, is not JSON, is JSON
of the wrong shape (a foreign file, a truncated write, a hand edit) or was written by a newer
mmbench becomes a ``StoreError`` — a ``UsageError`` whose one line names the file and what is
wrong — instead of a traceback or, worse, a silent misreading.  ``run.json`` carries the store
format (``format``); a store written before the field existed is format 1 and is read as such.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mmbench.errors import UsageError
from mmbench.model.names import name_problem

STORE_FORMAT = 1          # bump when a stored file changes meaning; readers refuse newer formats
MAX_FILE_BYTES = 256 << 20   # no stored JSON file is this large; a bigger one is not ours


class StoreError(UsageError):
    """A damaged, truncated or foreign file in the results directory (one line, exit 2)."""


class _Stored(BaseModel):
    # Unknown keys are kept (newer minor additions, the runner's own notes), never an error.
    model_config = ConfigDict(extra="allow")


class RunMeta(_Stored):
    name: str
    status: Literal["running", "complete", "incomplete", "failed", "imported"] = "incomplete"
    created: float = 0.0
    finished: float | None = None
    format: int = Field(default=1, ge=1)
    pid: int | None = None
    pid_start: str | None = None
    boot_id: str | None = None
    suite_hash: str = ""
    suite: str = ""
    settings: dict[str, Any] = {}
    mmbench_version: str = ""
    description: str = ""
    workload_order: list[str] | None = None
    note: str | None = None

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: int) -> int:
        if v > STORE_FORMAT:
            raise ValueError(f"written by a newer mmbench (store format {v}; this one reads up to "
                             f"{STORE_FORMAT}): upgrade mmbench to read it")
        return v


class MetricModel(_Stored):
    name: str
    unit: str
    better: Literal["higher", "lower"]
    kind: Literal["time", "rate", "latency", "count", "percent", "size"] = "time"
    mean: Literal["amean", "hmean", "gmean"] | None = None
    description: str = ""


class WorkloadFile(_Stored):
    label: str
    plugin: str
    params: dict[str, Any] = {}
    metrics: list[MetricModel] = []

    @field_validator("label")
    @classmethod
    def _label_is_a_name(cls, v: str) -> str:
        problem = name_problem(v)
        if problem:
            raise ValueError(f"label {problem}")
        return v


class ResultFile(_Stored):
    workload: str
    index: int = Field(ge=0)
    warmup: bool
    status: Literal["ok", "failed", "oom"]
    reason: str | None = None
    samples: dict[str, list[float | None]] = {}
    duration: dict[str, float] = {}
    vmstat_delta: dict[str, int] = {}
    memcg: dict[str, Any] = {}
    monitors: dict[str, dict[str, Any]] = {}
    started: float = 0.0
    finished: float = 0.0
    path: str = ""


class SummaryFile(_Stored):
    """A monitor's ``summary.json`` cache (mmbench/monitors/base.py)."""
    version: int
    monitor: str
    notes: list[str] = []
    metrics: list[tuple[MetricModel, list[float]]] = []


M = TypeVar("M", bound=BaseModel)


def read_json(path: Path) -> Any:
    """A stored JSON document, or a StoreError naming the file and what is wrong with it."""
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


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def read_model(path: Path, model: type[M]) -> M:
    """``path`` parsed and validated as ``model``; any problem is one StoreError line."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: expected a JSON object, found {type(data).__name__} (a foreign file?)")
    try:
        return model.model_validate(data)
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


def samples_from_json(samples: dict[str, list[float | None]]) -> dict[str, list[float]]:
    """Stored samples back to floats: ``null`` (a non-finite value when written) is NaN."""
    return {k: [math.nan if v is None else float(v) for v in vals] for k, vals in samples.items()}


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
