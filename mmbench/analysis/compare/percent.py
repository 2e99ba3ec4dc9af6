"""The percentage difference of a value against the baseline, positive = better, with the
reason when it is undefined (docs/statistics.md §3)."""

from __future__ import annotations

import math

from mmbench.analysis.compare.model import Better
from mmbench.analysis.significance import close

# pct edge-case reasons (also listed in docs/statistics.md)
PCT_NO_BASE = "baseline value missing or undefined"
PCT_BASE_ZERO = "baseline is 0: a percentage of 0 is undefined"
PCT_BASE_NEG = "baseline is negative: the percentage's sign would be meaningless"
PCT_NO_VALUE = "value missing or undefined"


def pct_diff(base: float | None, new: float | None, better: Better) -> tuple[float | None, str | None]:
    """Percentage difference of ``new`` against ``base``, positive = better.

    higher-is-better: 100·(new/base − 1); lower-is-better: 100·(1 − new/base).  Equal values (within
    ``significance.REL_TOL``) are 0 % (also 0 against 0: nothing changed).  None (with the reason)
    when the base is missing, NaN, 0 (and new is not) or negative, or new is missing.  new = 0
    against a non-zero base is a real value (e.g. −100 % for a throughput), never "0 %"."""
    if base is None or not math.isfinite(base):
        return None, PCT_NO_BASE
    if new is None or not math.isfinite(new):
        return None, PCT_NO_VALUE
    if close(new, base):  # 7 vs 7.00000001: the same value, not "-0.00%"
        return 0.0, None
    if base == 0:
        return None, PCT_BASE_ZERO
    if base < 0:
        return None, PCT_BASE_NEG
    r = new / base
    return (100.0 * (r - 1.0) if better == "higher" else 100.0 * (1.0 - r)), None
