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
8 first: a series without a change costs a few, not 999).  A real change costs all 999, so
``edivisive.c`` (built on first use) draws them and computes their statistics: the same sums from
a Fenwick tree over the values' ranks, O(n log n) a permutation (tens of ms for a 1,000-point
series with a step).  It shuffles as numpy's ``Generator.permutation`` does, from the
generator's raw words, so the permutations, the generator's state after them and the answers are
numpy's; numpy's O(n^2) code is the fallback without a C compiler.  A segment keeps at least
``MIN_SIZE`` values on each side of a split.  The generator is numpy's ``default_rng`` with a fixed
seed, one shuffle per segment and permutation in order: the same series always gives the same
answer, and no global random state is touched.  Why mmbench has its own: docs/fleet.md.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator, Sequence

from mmbench.model.lazy import numpy as np

PVALUE = 0.001
PERMUTATIONS = 999
SEED = 20111
MIN_SIZE = 2  # values on each side of a split (a within-segment mean needs two)
SMALL_WORK = 200_000  # permutations x n^2 that numpy does faster than starting edivisive.c
FIRST_BLOCK = 8  # permutations in the first block (then 120, then 512 at a time)


def split_statistics(z: Any) -> Any:
    """Q for every split of ``z`` into z[:t] and z[t:], as an array indexed by t - MIN_SIZE
    (t from MIN_SIZE to len(z) - MIN_SIZE); empty when the series is too short."""
    n = len(z)
    if n < 2 * MIN_SIZE:
        return np.empty(0)
    d = z[:, None] - z[None, :]
    np.abs(d, out=d)
    rows = d.sum(axis=1).cumsum()  # rows[i] = sum of d[:i+1, :]
    # pairs within z[:t], both orders: twice the running sum of each column above the diagonal
    within = 2 * np.triu(d).sum(axis=0).cumsum()
    t = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    left = within[t - 1]
    lead = rows[t - 1]
    cross = lead - left  # pairs with one value each side
    right = rows[-1] - 2 * lead + left  # both orders of each pair from t on
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


def best_splits_numpy(z: Any, bounds: list[tuple[int, int]], rng: Any, count: int, observed: bool) -> tuple[Any, Any]:
    """The largest Q over the segments and splits and where it splits: of ``z`` itself when
    ``observed``, then of ``count`` permutations of it drawn from ``rng`` (each segment shuffled in
    turn by ``rng.permutation``); O(n^2) each."""
    rows = [np.arange(len(z))] if observed else []
    for _ in range(count):
        row = np.empty(len(z), dtype=np.int64)
        for a, b in bounds:
            row[a:b] = a + rng.permutation(b - a)
        rows.append(row)
    out = [_best_split(z[row], bounds) for row in rows]
    return np.array([q for q, _ in out], dtype=float), np.array([w for _, w in out], dtype=np.int64)


def best_splits_c(z: Any, bounds: list[tuple[int, int]], rng: Any, count: int, observed: bool) -> tuple[Any, Any]:
    """``best_splits_numpy`` in C (edivisive.c, built on first use), O(n log n) a permutation: the
    same permutations (the C program shuffles as numpy does, from the generator's raw words) and
    the generator left where numpy's shuffles leave it."""
    import os
    import subprocess

    n = len(z)
    rank = np.empty(n, dtype=np.int32)
    ordered = np.empty(n, dtype=float)
    for a, b in bounds:
        order = np.argsort(z[a:b], kind="stable")
        rank[a + order] = np.arange(b - a, dtype=np.int32)
        ordered[a:b] = z[a:b][order]
    gen = rng.bit_generator
    if gen.state["bit_generator"] != "PCG64":
        raise ValueError("best_splits_c follows numpy's PCG64 generator only")
    before = gen.state
    # a draw takes 1 to 2 32-bit halves on average (about 1.4 over a segment): a word a position
    # nearly always suffices; a shortage is drawn again with twice as many
    nwords = count * n + 64 if count else 0
    total = count + observed
    while True:
        words = gen.random_raw(nwords) if nwords else np.empty(0, dtype=np.uint64)
        head = np.array(
            [
                n,
                len(bounds),
                count,
                int(observed),
                nwords,
                before["has_uint32"],
                np.uint32(before["uinteger"]).view(np.int32),
                *[a for a, _ in bounds],
                bounds[-1][1],
            ],
            dtype=np.int32,
        )
        # the input through a memory file, not a pipe: subprocess writes a pipe 512 bytes at a time
        fd = os.memfd_create("edivisive-input")
        try:
            with open(fd, "wb", closefd=False) as f:
                for part in (head, ordered, rank, np.ascontiguousarray(words, dtype=np.uint64)):
                    f.write(part.data)
            os.lseek(fd, 0, os.SEEK_SET)
            proc = subprocess.run([_program(), str(MIN_SIZE)], stdin=fd, capture_output=True)
        finally:
            os.close(fd)
        if proc.returncode != 0 or len(proc.stdout) != 12 * total + 16:
            raise RuntimeError(f"edivisive failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
        used, pending, pending_value, enough = np.frombuffer(proc.stdout, dtype=np.int32, offset=12 * total)
        gen.state = before
        if enough:
            break
        nwords *= 2  # unlucky rejections: draw again with more words
    # the generator as numpy's own shuffles would have left it
    gen.advance(int(used))
    after = gen.state
    after["has_uint32"], after["uinteger"] = int(pending), int(np.int32(pending_value).view(np.uint32))
    gen.state = after
    best = np.frombuffer(proc.stdout, dtype=float, count=total)
    where = np.frombuffer(proc.stdout, dtype=np.int32, count=total, offset=8 * total).astype(np.int64)
    return best, where


def best_splits(z: Any, bounds: list[tuple[int, int]], rng: Any, count: int, observed: bool) -> tuple[Any, Any]:
    """``best_splits_numpy`` in this process for little work (starting the C program costs a few
    ms), else ``best_splits_c`` when a compiler is there; the same permutations either way."""
    if (count + observed) * len(z) ** 2 <= SMALL_WORK or not _have_c():
        return best_splits_numpy(z, bounds, rng, count, observed)
    return best_splits_c(z, bounds, rng, count, observed)


@functools.cache
def _program() -> str:
    """edivisive.c's program, built on first use (cached by the source's hash)."""
    from pathlib import Path
    from mmbench.cbuild import binary_for

    return binary_for(Path(__file__).with_name("edivisive.c"))


@functools.cache
def _have_c() -> bool:
    from mmbench.errors import EnvironmentUnsupported

    try:
        _program()
        return True
    except EnvironmentUnsupported:
        return False


def _block_sizes() -> Iterator[int]:
    """Permutations in blocks: a few first (a series without a change stops at once), then more."""
    yield FIRST_BLOCK
    yield 128 - FIRST_BLOCK
    while True:
        yield 512


def change_points(
    values: Sequence[float],
    pvalue: float = PVALUE,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
    engine: Any = None,
) -> list[int]:
    """Indices where a new segment starts (sorted); [] for a series too short or constant.
    ``engine``: ``best_splits_c`` or ``best_splits_numpy`` (default: ``best_splits``)."""
    z = np.asarray(values, dtype=float)
    if len(z) < 2 * MIN_SIZE or not np.all(np.isfinite(z)) or np.ptp(z) == 0:
        return []
    engine = engine or best_splits
    rng = np.random.default_rng(seed)
    # most exceedances allowed for p <= pvalue: (count + 1) / (permutations + 1) <= pvalue
    allowed = int(pvalue * (permutations + 1) + 1e-9) - 1
    found: list[int] = []
    while True:
        cuts = [0, *sorted(found), len(z)]
        bounds = list(zip(cuts, cuts[1:]))
        best, where = engine(z, bounds, rng, 0, True)
        observed, where = float(best[0]), int(where[0])
        if where < 0 or allowed < 0:
            break
        # a permutation that only reorders each side of a split has the same Q: rounding must not
        # make it smaller (sums in another order), so "reaches" allows for the last few bits
        reach = observed - 1e-9 * abs(observed)
        exceed, done = 0, 0
        for size in _block_sizes():
            size = min(size, permutations - done)
            if size <= 0 or exceed > allowed:
                break
            # drawn in order, one shuffle per segment and permutation: the answers do not depend on
            # the block sizes, nor on the engine
            for q in engine(z, bounds, rng, size, False)[0]:
                exceed += q >= reach
                if exceed > allowed:
                    break
            done += size
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
        found = sum(comb(permutations, j) * hit**j * (1 - hit) ** (permutations - j) for j in range(allowed + 1))
        if found >= 0.9:
            return n
        n += 1
