"""The pydantic models of the results directory's JSON files (docs/results-format.md).

``model/files.py`` validates a stored file against one of these the first time it reads those
bytes and records the outcome in the store's index; later reads of the same bytes skip pydantic
(its import alone is most of a two-run ``mmbench compare``).  Any change to this file (or to
``names.py``, which the label check uses) changes the validator's digest, so files are validated
again after an upgrade.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mmbench.model.store_format import MAX_ITERATION_INDEX, STORE_FORMAT
from mmbench.model.names import name_problem


class _Stored(BaseModel):
    # Unknown keys are kept (newer minor additions, the runner's own notes), never an error.  Strict:
    # a value of the wrong JSON type ("format": "2", "index": "3", "warmup": 0) is an error naming
    # it, never converted (a whole number is still a float where a float is meant).
    model_config = ConfigDict(extra="allow", strict=True)


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
            raise ValueError(
                f"written by a newer mmbench (store format {v}; this one reads up to "
                f"{STORE_FORMAT}): upgrade mmbench to read it"
            )
        return v


class MetricModel(_Stored):
    name: str
    unit: str
    better: Literal["higher", "lower"]
    kind: Literal["time", "rate", "latency", "count", "percent", "size"] = "time"
    mean: Literal["amean", "hmean", "gmean"] | None = None
    description: str = ""
    resolution: float | None = Field(None, ge=0, allow_inf_nan=False)


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
    index: int = Field(ge=0, le=MAX_ITERATION_INDEX)
    warmup: bool
    status: Literal["ok", "failed", "oom"]
    reason: str | None = None
    # a list, or for many samples where they are in the sidecar, {"file", "offset", "count"}
    # (format 1: {"f8": base64 float64}; model/files.py pack_iteration_samples)
    samples: dict[str, list[float | None] | dict[str, str | int]] = {}
    duration: dict[str, float] = {}
    vmstat_delta: dict[str, int] = {}
    memcg: dict[str, Any] = {}
    monitors: dict[str, dict[str, Any]] = {}
    imported: dict[str, Any] = {}
    started: float = 0.0
    finished: float = 0.0
    path: str = ""


class SummaryFile(_Stored):
    """A monitor's ``summary.json`` cache (mmbench/monitors/base.py)."""

    version: int
    monitor: str
    notes: list[str] = []
    metrics: list[tuple[MetricModel, list[float]]] = []


# The document kinds ``files.read_checked`` knows, by the name callers use.
MODELS: dict[str, type[_Stored]] = {
    "run": RunMeta,
    "workload": WorkloadFile,
    "result": ResultFile,
    "summary": SummaryFile,
}
