"""Change points in a series of values: E-Divisive means with a permutation test.

The method is Matteson and James's E-Divisive (J. Am. Stat. Assoc. 109:505, 2014), with alpha = 1,
the one MongoDB's performance CI and Otava use: split the series where the energy statistic between
the part before and the part after is largest, keep the split when a permutation test says it is
significant, and repeat inside the pieces.  For a candidate split of a segment into ``X`` (m
values) and ``Y`` (k values) the statistic is

    Q = m k / (m + k) * (2 mean|x - y| - mean|x - x'| - mean|y - y'|)

``split_statistics`` computes it for every split point of a segment at once from the segment's
distance matrix (O(n^2); running sums of its rows and of its columns above the diagonal give every
split's three sums).  The permutation test shuffles the values inside each current segment, takes
the largest Q over all segments and split points, and counts how often that reaches the observed
one: p = (count + 1) / (permutations + 1).  With p <= 0.001 and 999 permutations one exceedance
already means "not significant", so the test stops at the first one (permutations go in blocks,
8 first: a series without a change costs a few, not 999).  A real change costs all 999, so the
permuted series' statistics come from ``edivisive.c`` (built on first use): the same sums from a
Fenwick tree over the values' ranks, O(n log n) a permutation (a 1,000-point series with a step:
about 50 ms, 6 s before); numpy's O(n^2) code is the fallback without a C compiler and gives the
same answers.  A segment keeps at least ``MIN_SIZE`` values on each side of a split.  The generator
is numpy's ``default_rng`` with a fixed seed, drawn one Fisher-Yates shuffle per segment and
permutation in order: the same series always gives the same answer, and no global random state is
touched.

Written for mmbench (formerly the ``signal-processing-algorithms`` package did this, but it
requires numpy < 2 and pinned every install to an old numpy).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Sequence

from mmbench.model.lazy import numpy as np

PVALUE = 0.001
PERMUTATIONS = 999
SEED = 20111
MIN_SIZE = 2     # values on each side of a split (a within-segment mean needs two)
FIRST_BLOCK = 8  # permutations in the first block (then 120, then 256 at a time)


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


def best_splits_numpy(z: Any, bounds: list[tuple[int, int]], arrangements: Any) -> tuple[Any, Any]:
    """For each row of ``arrangements`` (positions of ``z``, permuted inside each segment): the
    largest Q over the segments and splits of ``z[row]`` and where it splits; O(n^2) a row."""
    out = [_best_split(z[row], bounds) for row in arrangements]
    return np.array([q for q, _ in out], dtype=float), np.array([w for _, w in out], dtype=np.int64)


def best_splits_c(z: Any, bounds: list[tuple[int, int]], arrangements: Any) -> tuple[Any, Any]:
    """``best_splits_numpy`` in C (edivisive.c, built on first use): O(n log n) a row."""
    import os
    import subprocess
    from pathlib import Path
    from mmbench.run.build import binary_for   # built on first use, cached by the source's hash
    n = len(z)
    rank = np.empty(n, dtype=np.int32)
    ordered = np.empty(n, dtype=float)
    for a, b in bounds:
        order = np.argsort(z[a:b], kind="stable")
        rank[a + order] = np.arange(b - a, dtype=np.int32)
        ordered[a:b] = z[a:b][order]
    rows = np.ascontiguousarray(rank[arrangements], dtype=np.int32)
    head = np.array([n, len(bounds), len(rows), *[a for a, _ in bounds], bounds[-1][1]], dtype=np.int32)
    # the input through a memory file, not a pipe: subprocess writes a pipe 512 bytes at a time
    # (4 MB for 999 permutations of 1,000 values took longer than the C program itself)
    fd = os.memfd_create("edivisive-input")
    try:
        with open(fd, "wb", closefd=False) as f:
            f.write(head.tobytes())
            f.write(ordered.tobytes())
            f.write(rows.data)
        os.lseek(fd, 0, os.SEEK_SET)
        proc = subprocess.run([binary_for(Path(__file__).with_name("edivisive.c")), str(MIN_SIZE)],
                              stdin=fd, capture_output=True)
    finally:
        os.close(fd)
    if proc.returncode != 0 or len(proc.stdout) != 12 * len(rows):
        raise RuntimeError(f"edivisive failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
    best = np.frombuffer(proc.stdout, dtype=float, count=len(rows))
    where = np.frombuffer(proc.stdout, dtype=np.int32, offset=8 * len(rows)).astype(np.int64)
    return best, where


def _engine() -> Any:
    """The C statistics when a compiler is there, else numpy's (the same answers, slower)."""
    from mmbench.errors import EnvironmentUnsupported
    from mmbench.run.build import binary_for
    from pathlib import Path
    try:
        binary_for(Path(__file__).with_name("edivisive.c"))
        return best_splits_c
    except EnvironmentUnsupported:
        return best_splits_numpy


def _arrangements(rng: Any, bounds: list[tuple[int, int]], n: int, permutations: int) -> Iterator[Any]:
    """``permutations`` arrangements of positions 0..n-1, each permuted inside every segment, in
    blocks: a few first (a series without a change stops at once), then larger ones.  They are drawn
    in the order a loop drawing one permutation at a time would draw them (one Fisher-Yates shuffle
    per segment and permutation), so the answers do not depend on the block sizes."""
    done = 0
    for size in _block_sizes():
        size = min(size, permutations - done)
        if size <= 0:
            return
        if len(bounds) == 1:     # one Fisher-Yates a row, in row order: the same draws
            rows = rng.permuted(np.tile(np.arange(n, dtype=np.int32), (size, 1)), axis=1)
        else:
            rows = np.empty((size, n), dtype=np.int32)
            for r in range(size):
                for a, b in bounds:
                    rows[r, a:b] = a + rng.permutation(b - a)
        done += size
        yield rows


def _block_sizes() -> Iterator[int]:
    yield FIRST_BLOCK
    yield 128 - FIRST_BLOCK
    while True:
        yield 256


def change_points(values: Sequence[float], pvalue: float = PVALUE,
                  permutations: int = PERMUTATIONS, seed: int = SEED, engine: Any = None) -> list[int]:
    """Indices where a new segment starts (sorted); [] for a series too short or constant.
    ``engine``: ``best_splits_c`` or ``best_splits_numpy`` (default: C when it can be built)."""
    z = np.asarray(values, dtype=float)
    if len(z) < 2 * MIN_SIZE or not np.all(np.isfinite(z)) or np.ptp(z) == 0:
        return []
    engine = engine or _engine()
    rng = np.random.default_rng(seed)
    # most exceedances allowed for p <= pvalue: (count + 1) / (permutations + 1) <= pvalue
    allowed = int(pvalue * (permutations + 1) + 1e-9) - 1
    identity = np.arange(len(z))[None, :]
    found: list[int] = []
    while True:
        cuts = [0, *sorted(found), len(z)]
        bounds = list(zip(cuts, cuts[1:]))
        best, where = engine(z, bounds, identity)
        observed, where = float(best[0]), int(where[0])
        if where < 0 or allowed < 0:
            break
        # a permutation that only reorders each side of a split has the same Q: rounding must not
        # make it smaller (sums in another order), so "reaches" allows for the last few bits
        reach = observed - 1e-9 * abs(observed)
        exceed = 0
        chunks = _arrangements(rng, bounds, len(z), permutations)
        with ThreadPoolExecutor(1) as pool:
            # the engine works on one block of permutations while the next one is drawn
            first = next(chunks, None)
            pending = pool.submit(engine, z, bounds, first) if first is not None else None
            while pending is not None and exceed <= allowed:
                following = next(chunks, None)
                for q in pending.result()[0]:
                    exceed += q >= reach
                    if exceed > allowed:
                        break
                pending = pool.submit(engine, z, bounds, following) \
                    if following is not None and exceed <= allowed else None
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
