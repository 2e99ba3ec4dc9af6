"""Correctly rounded sums of float64 arrays without a Python float per value: ``fsum(a)`` is
``math.fsum(a.tolist())`` and ``fsum_sqdev(a, m)`` is ``math.fsum([(v - m) * (v - m) for v in
a])``, bit for bit, computed by exactsum.c (built on first use, loaded with ctypes) in about a
quarter of the time of the tolist and math.fsum they replace.  Both return None where math.fsum is
the one to ask: the library cannot be built or loaded, a value is a NaN or an infinity, a partial
sum overflows (math.fsum raises), or the sum is zero (its sign is math.fsum's to give; it changed
in Python 3.12).  Callers then take their math.fsum path, so every result is the one it gives."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

_lib: Any = None  # the loaded library; False when it cannot be had


def _load() -> Any:
    global _lib
    if _lib is None:
        try:
            from mmbench.cbuild import library_for

            lib = ctypes.CDLL(library_for(Path(__file__).with_name("exactsum.c")))
            dbl_p = ctypes.POINTER(ctypes.c_double)
            lib.mmbench_fsum.argtypes = [ctypes.c_void_p, ctypes.c_size_t, dbl_p]
            lib.mmbench_fsum_sqdev.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double, dbl_p]
            _lib = lib
        except Exception:  # no compiler, a read-only cache: math.fsum gives the same sums
            _lib = False
    return _lib


def _contiguous(a: Any) -> Any:
    import numpy as np

    return np.ascontiguousarray(a, dtype=np.float64)


def fsum(a: Any) -> float | None:
    """math.fsum of a float64 array, or None (see the module's docstring)."""
    return _call("mmbench_fsum", a)


def fsum_sqdev(a: Any, m: float) -> float | None:
    """math.fsum of the squared deviations (v - m) * (v - m) of a float64 array, or None."""
    return _call("mmbench_fsum_sqdev", a, ctypes.c_double(m))


def _call(name: str, a: Any, *extra: Any) -> float | None:
    lib = _load()
    if not lib:
        return None
    arr = _contiguous(a)
    out = ctypes.c_double()
    if getattr(lib, name)(arr.ctypes.data, arr.size, *extra, ctypes.byref(out)) != 0 or out.value == 0.0:
        return None
    return out.value
