"""Declared parameters of workloads and monitors, and their validation.

Each plugin declares ``params: dict[str, Param]``.  ``resolve_params`` checks what a suite (or a
``--set``) gave against the declarations: unknown names are rejected with a close-match hint,
sizes may be relative to the memory budget, and every error names where it came from.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from mmbench.model.sizes import parse_duration, parse_size
from mmbench.errors import UsageError

ParamKind = Literal["int", "float", "bool", "str", "size", "duration", "int_list", "str_list"]


@dataclass(frozen=True)
class Param:
    """One declared parameter.  ``size`` values resolve to bytes, ``duration`` to seconds."""

    kind: ParamKind
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None


def check_name_list(field: str, names: list[str], wanted: str, noun: str) -> None:
    """A list parameter of names (``field``, e.g. "workload.fio.params.jobs") names at least one
    (else "name at least ``wanted``") and none twice (else "a ``noun`` is named twice")."""
    if not names:
        raise UsageError(f"{field}: name at least {wanted}")
    if len(set(names)) != len(names):
        raise UsageError(f"{field}: a {noun} is named twice")


def close_match(name: str, options: list[str]) -> str:
    m = difflib.get_close_matches(name, options, n=1)
    return f" (did you mean {m[0]!r}?)" if m else ""


def _convert(kind: ParamKind, value: Any, budget: int | None) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value
    if kind == "size":
        return parse_size(value, budget)
    if kind == "duration":
        return parse_duration(value)
    if kind == "int_list":
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ValueError(f"expected a list of integers, got {value!r}")
        return list(value)
    if kind == "str_list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"expected a list of strings, got {value!r}")
        return list(value)
    raise ValueError(f"unknown parameter kind {kind}")


def resolve_params(declared: dict[str, Param], given: dict[str, Any], budget: int | None, where: str) -> dict[str, Any]:
    """Validate ``given`` against ``declared`` and fill defaults.

    ``where`` prefixes every error, e.g. "suite.toml: workload.faultin.params".
    """
    out: dict[str, Any] = {}
    for key in given:
        if key not in declared:
            raise UsageError(
                f"{where}.{key}: unknown parameter{close_match(key, list(declared))}; "
                f"known: {', '.join(sorted(declared)) or 'none'}"
            )
    for key, p in declared.items():
        raw = given.get(key, p.default)
        if raw is None:
            out[key] = None
            continue
        try:
            val = _convert(p.kind, raw, budget)
        except ValueError as e:
            raise UsageError(f"{where}.{key}: {e}") from None
        if p.choices is not None:
            vals = val if isinstance(val, list) else [val]
            bad = [v for v in vals if v not in p.choices]
            if bad:
                raise UsageError(f"{where}.{key}: {bad[0]!r} is not one of {list(p.choices)}")
        for v in val if isinstance(val, list) else [val]:
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if p.minimum is not None and v < p.minimum:
                    raise UsageError(f"{where}.{key}: {raw!r} is below the minimum {p.minimum:g}")
                if p.maximum is not None and v > p.maximum:
                    raise UsageError(f"{where}.{key}: {raw!r} is above the maximum {p.maximum:g}")
        out[key] = val
    return out
