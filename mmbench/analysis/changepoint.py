"""Change points in a series of values: E-Divisive means with a permutation test, on numpy alone.

The method is Matteson and James's E-Divisive (J. Am. Stat. Assoc. 109:505, 2014), with alpha = 1,
the one MongoDB's performance CI and Otava use: split the series where the energy statistic between
the part before and the part after is largest, keep the split when a permutation test says it is
significant, and repeat inside the pieces.  For a candidate split of a segment into ``X`` (m
values) and ``Y`` (k values) the statistic is

    Q = m k / (m + k) * (2 mean|x - y| - mean|x - x'| - mean|y - y'|)

computed for every split point of a segment at once from the segment's distance matrix (running
sums of its rows and of its columns above the diagonal give every split's three sums).  The permutation test shuffles the values
inside each current segment, takes the largest Q over all segments and split points, and counts how
often that reaches the observed one: p = (count + 1) / (permutations + 1).  With p <= 0.001 and 999
permutations one exceedance already means "not significant", so the test stops at the first one
(a series without a change costs a few permutations, not 999).  A segment keeps at least
``MIN_SIZE`` values on each side of a split.  The generator is numpy's ``default_rng`` with a fixed
seed: the same series always gives the same answer, and no global random state is touched.

Written for mmbench (formerly the ``signal-processing-algorithms`` package did this, but it
requires numpy < 2 and pinned every install to an old numpy).
"""

from __future__ import annotations

from typing import Any, Sequence

from mmbench.model.lazy import numpy as np

PVALUE = 0.001
PERMUTATIONS = 999
SEED = 20111
MIN_SIZE = 2     # values on each side of a split (a within-segment mean needs two)


def split_statistics(z: Any) -> Any:
    """Q for every split of ``z`` into z[:t] and z[t:], as an array indexed by t - MIN_SIZE
    (t from MIN_SIZE to len(z) - MIN_SIZE); empty when the series is too short."""
    n = len(z)
    if n < 2 * MIN_SIZE:
        return np.empty(0)
    d = z[:, None] - z[None, :]
    np.abs(d, out=d)
    rows = d.sum(axis=1).cumsum()                     # rows[i] = sum of d[:i+1, :]
    # pairs within z[:t], both orders: twice the running sum of each column above the diagonal
    within = 2 * np.triu(d).sum(axis=0).cumsum()
    t = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    left = within[t - 1]
    lead = rows[t - 1]
    cross = lead - left                               # pairs with one value each side
    right = rows[-1] - 2 * lead + left                # both orders of each pair from t on
    m = t.astype(float)
    k = n - m
    energy = 2 * cross / (m * k) - left / (m * (m - 1)) - right / (k * (k - 1))
    return m * k / (m + k) * energy


def _best_split(z: Any, bounds: list[tuple[int, int]]) -> tuple[float, int]:
    """The largest Q over the segments ``bounds`` of ``z`` and where it splits (absolute index)."""
    best, where = -np.inf, -1
    for a, b in bounds:
        q = split_statistics(z[a:b])
        if q.size:
            i = int(np.argmax(q))
            if q[i] > best:
                best, where = float(q[i]), a + MIN_SIZE + i
    return best, where


def change_points(values: Sequence[float], pvalue: float = PVALUE,
                  permutations: int = PERMUTATIONS, seed: int = SEED) -> list[int]:
    """Indices where a new segment starts (sorted); [] for a series too short or constant."""
    z = np.asarray(values, dtype=float)
    if len(z) < 2 * MIN_SIZE or not np.all(np.isfinite(z)) or np.ptp(z) == 0:
        return []
    rng = np.random.default_rng(seed)
    # most exceedances allowed for p <= pvalue: (count + 1) / (permutations + 1) <= pvalue
    allowed = int(pvalue * (permutations + 1) + 1e-9) - 1
    found: list[int] = []
    while True:
        cuts = [0, *sorted(found), len(z)]
        bounds = list(zip(cuts, cuts[1:]))
        observed, where = _best_split(z, bounds)
        if where < 0 or allowed < 0:
            break
        exceed = 0
        for _ in range(permutations):
            shuffled = z.copy()
            for a, b in bounds:
                shuffled[a:b] = rng.permutation(z[a:b])
            if _best_split(shuffled, bounds)[0] >= observed:
                exceed += 1
                if exceed > allowed:
                    break
        if exceed > allowed:
            break
        found.append(where)
    return sorted(found)


def shortest_detectable(pvalue: float = PVALUE, permutations: int = PERMUTATIONS) -> int:
    """The fewest values in which even a perfect step (every value after it beyond every value
    before, in the middle) is found 9 times in 10: only 2 of the C(n, n/2) arrangements of such a
    series match it, and the test allows ``pvalue * (permutations + 1) - 1`` permutations that do."""
    from math import comb
    allowed = int(pvalue * (permutations + 1) + 1e-9) - 1
    n = 2 * MIN_SIZE
    while True:
        hit = 2 / comb(n, n // 2)
        # chance that at most `allowed` of the permutations match or beat the observed split
        found = sum(comb(permutations, j) * hit ** j * (1 - hit) ** (permutations - j) for j in range(allowed + 1))
        if found >= 0.9:
            return n
        n += 1
