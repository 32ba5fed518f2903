"""The vector index's codes: every vector of one pin as a compact code, scanned with numpy.

The code: each dimension, centred on the mean and scaled by its standard deviation, is cut
at CUTS (a thermometer code: one bit per cut, set when the value lies above it), so that the
Hamming distance between two codes is the L1 distance between their quantized values. The
cut at 0 is the sign bit of the centred vector: on a large index a first pass over that
plane alone keeps STAGE1_KEEP rows, which the whole code then orders; the SCORE_KEEP nearest
are scored once more against the query's float values (asymmetric: the query is not
quantized), and the best of those are re-ranked exactly. The codes are held
plane by plane, each 64-bit word of a plane in its own contiguous array (numpy's
bitwise_count is faster over a column of words than over rows).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from agent_memory.contract.models import Pin

try:  # numpy is a dependency; an install made without dependencies falls back to the SQL leg
    import numpy as np
except ImportError:  # pragma: no cover - exercised in a venv without numpy
    np = None  # type: ignore[assignment]

# Thermometer cuts, in standard deviations of each (centred) dimension: the quartiles of a
# normal distribution, and 0 (the sign plane).
CUTS = (-0.6745, 0.0, 0.6745)
SIGN_PLANE = CUTS.index(0.0)
# Past STAGE1_MIN_ROWS live rows, a first pass over the sign plane keeps the STAGE1_KEEP
# nearest, and only those are scored on the other planes. Below it the whole code over every
# row is cheaper than the first pass, its cut and gathering the kept rows' words, and misses
# nothing. STAGE1_KEEP is as many as keep nearly all of the exact ten on real-model vectors
# for the later steps to find.
STAGE1_MIN_ROWS = 300_000
STAGE1_KEEP = 80_000
# The SCORE_KEEP nearest on the whole code (its Hamming distance: the L1 distance between
# quantized values) are then scored again against the query's own float values (the dot
# product of the query with each row's quantized values, through per-byte lookup tables),
# which orders them far better than the symmetric distance: more of the exact ten reach the
# re-rank.
SCORE_KEEP = 4_000
# Once this share of the rows are dead (forgotten, or replaced by a new vector), the
# arrays are compacted.
COMPACT_DEAD_SHARE = 0.25
GROWTH = 1.5
# Rows allocated beyond those loaded (or kept by a compaction), so that the first writes a
# process sees do not grow the arrays: growing copies the planes into arrays GROWTH times
# larger beside the old ones, which would set the peak RSS of `serve` at its first store.
SPARE_SHARE = 0.02
SPARE_MIN = 1_024

# The near-duplicate check looks only for memories far nearer than any search's tenth: a
# cosine of 0.94 and more on the local model differs from the new memory in few sign bits,
# so the sign plane alone ranks it among the first few thousand on an index past
# NEAR_STAGE1_MIN_ROWS, and the whole code among the first hundreds. These keep the hints an
# exhaustive exact scan gives (tests/unit/test_vector_index.py holds it on small data).
NEAR_STAGE1_MIN_ROWS = 20_000
NEAR_STAGE1_KEEP = 4_000
NEAR_SCORE_KEEP = 800


def _level_steps() -> list[float]:
    """How much each set bit of the thermometer code adds to a quantized value, in standard
    deviations: the steps between the centroids of a normal distribution cut at CUTS."""
    bounds = [-math.inf, *CUTS, math.inf]

    def density(x: float) -> float:
        return 0.0 if math.isinf(x) else math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def mass(x: float) -> float:
        return 0.5 * (1 + math.erf(x / math.sqrt(2))) if not math.isinf(x) else float(x > 0)

    centroids = [
        (density(a) - density(b)) / (mass(b) - mass(a)) for a, b in itertools.pairwise(bounds)
    ]
    return [b - a for a, b in itertools.pairwise(centroids)]


LEVEL_STEPS = _level_steps()


class Codes:
    """The codes of one pin, their ids and which rows still count; mutated under the
    index's lock. Rows are found by id through a dense array (4 bytes per id, a small
    fraction of what a dict of the ids holds)."""

    def __init__(self, pin: Pin, mean: Any, scale: Any, capacity: int) -> None:
        self.pin = pin
        self.mean = mean
        self.scale = scale
        self.spread = (1.0 / scale).astype(np.float32)
        self.words = (pin.dimension + 63) // 64
        capacity = _with_spare(capacity)
        self.planes = np.zeros((len(CUTS) * self.words, capacity), dtype=np.uint64)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.row_of = np.full(capacity, -1, dtype=np.int32)  # memory id -> row
        self.rows = 0
        self.dead = 0
        self.watermark = 0

    def encode(self, matrix: Any) -> Any:
        """(n, planes x words) uint64 codes of float32 vectors (n, dimension)."""
        z = (matrix - self.mean) * self.scale
        bits = np.zeros((len(z), len(CUTS), self.words * 64), dtype=bool)
        for plane, cut in enumerate(CUTS):
            np.greater(z, cut, out=bits[:, plane, : self.pin.dimension])
        packed = np.packbits(bits, axis=2, bitorder="little")
        return packed.view(np.uint64).reshape(len(z), len(CUTS) * self.words)

    def add(self, ids: Any, matrix: Any) -> None:
        """Rows for these vectors; an id already there (a vector written again) is
        replaced."""
        self.remove(ids)
        end = self.rows + len(ids)
        if end > self.planes.shape[1]:
            self._grow(end)
        self.planes[:, self.rows : end] = self.encode(matrix).T
        self.ids[self.rows : end] = ids
        self.alive[self.rows : end] = True
        if ids.max(initial=0) >= len(self.row_of):
            grown = np.full(int(ids.max() * GROWTH) + 1, -1, dtype=np.int32)
            grown[: len(self.row_of)] = self.row_of
            self.row_of = grown
        self.row_of[ids] = np.arange(self.rows, end, dtype=np.int32)
        self.rows = end

    def remove(self, ids: Any) -> None:
        known = ids[ids < len(self.row_of)]
        rows = self.row_of[known]
        rows = rows[rows >= 0]
        self.alive[rows] = False
        self.row_of[known] = -1
        self.dead += len(rows)

    def _grow(self, needed: int) -> None:
        capacity = max(needed, int(self.planes.shape[1] * GROWTH))
        planes = np.zeros((self.planes.shape[0], capacity), dtype=np.uint64)
        planes[:, : self.rows] = self.planes[:, : self.rows]
        self.planes = planes
        for name in ("ids", "alive"):
            grown = np.zeros(capacity, dtype=getattr(self, name).dtype)
            grown[: self.rows] = getattr(self, name)[: self.rows]
            setattr(self, name, grown)

    def compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.rows])
        capacity = _with_spare(len(keep))
        planes = np.zeros((self.planes.shape[0], capacity), dtype=np.uint64)
        planes[:, : len(keep)] = self.planes[:, keep]
        ids = np.zeros(capacity, dtype=np.int64)
        ids[: len(keep)] = self.ids[keep]
        self.planes, self.ids = planes, ids
        self.alive = np.zeros(capacity, dtype=bool)
        self.alive[: len(keep)] = True
        self.rows, self.dead = len(keep), 0
        self.row_of[:] = -1
        self.row_of[self.ids[: self.rows]] = np.arange(self.rows, dtype=np.int32)

    def rows_of(self, ids: Any) -> Any:
        """The live rows of these memory ids (those with a vector here), in row order."""
        known = ids[(ids >= 0) & (ids < len(self.row_of))]
        rows = self.row_of[known]
        return np.sort(rows[rows >= 0])

    def candidates(self, query: Any, count: int, within: Any = None, near: bool = False) -> Any:
        """The ids of ``count`` live rows nearest ``query`` on the codes, in no order; only
        rows ``within`` (live rows, in row order) when given. ``near``: only the very nearest
        matter (the near-duplicate check), so each step keeps fewer rows."""
        if near:
            stage1_min, stage1_keep, score_keep = (
                NEAR_STAGE1_MIN_ROWS,
                NEAR_STAGE1_KEEP,
                NEAR_SCORE_KEEP,
            )
        else:
            stage1_min, stage1_keep, score_keep = STAGE1_MIN_ROWS, STAGE1_KEEP, SCORE_KEEP
        live = self.rows - self.dead if within is None else len(within)
        if live <= 0:
            return np.zeros(0, dtype=np.int64)
        if within is not None and live <= count:
            return self.ids[within]  # all of them: the re-rank is exact
        code = self.encode(query[None, :])[0]
        if live > max(stage1_min, stage1_keep):
            sign = range(SIGN_PLANE * self.words, (SIGN_PLANE + 1) * self.words)
            first = self._distance(code, sign, None)
            if within is not None:  # set aside: more than STAGE1_KEEP rows pass, all nearer
                outside = np.ones(self.rows, dtype=bool)
                outside[within] = False
                first[outside] = np.iinfo(np.uint16).max
            rows = nearest_rows(first, stage1_keep)
            # the sign plane's share is known already: only the other planes are gathered
            others = [w for w in range(len(code)) if w not in sign]
            distance = first[rows] + self._distance(code, others, rows)
            distance[~self.alive[rows]] = np.iinfo(np.uint16).max  # (the sum wrapped)
        else:
            rows = within
            distance = self._distance(code, range(len(code)), within)
        kept = nearest_rows(distance, max(count, score_keep))
        kept = kept if rows is None else rows[kept]
        kept = kept[self.alive[kept]]
        if len(kept) > count:
            score = self._score(query, kept)
            kept = kept[np.argpartition(-score, count - 1)[:count]]
        return self.ids[kept]

    def _score(self, query: Any, rows: Any) -> Any:
        """query . (each row's quantized vector - the mean), up to a constant: the dot
        product in raw units is sum_d query_d x spread_d x level_d, and a level is a sum of
        steps, one per set bit. Summed byte by byte through 256-entry tables."""
        weights = np.zeros(self.words * 64, dtype=np.float32)
        weights[: self.pin.dimension] = query * self.spread
        per_byte = weights.reshape(-1, 8) @ _BYTE_BITS.T  # (bytes of a plane, 256)
        steps = np.array(LEVEL_STEPS, dtype=np.float32)
        table = (steps[:, None, None] * per_byte[None]).reshape(-1)
        columns = len(CUTS) * self.words * 8
        # (indexing, not np.take: no faster warm, and slower from cold caches)
        data = np.ascontiguousarray(self.planes[:, rows].T).view(np.uint8)
        index = data.astype(np.int32)
        index += np.arange(0, columns * 256, 256, dtype=np.int32)
        return table[index].sum(axis=1)

    def _distance(self, code: Any, words: Sequence[int], rows: Any) -> Any:
        """Hamming distance to ``code`` over ``words``, for ``rows`` (None: every row);
        dead rows are as far as can be."""
        size = self.rows if rows is None else len(rows)
        total = np.zeros(size, dtype=np.uint16)
        scratch = np.empty(size, dtype=np.uint64)
        counts = np.empty(size, dtype=np.uint8)
        for word in words:
            if rows is None:
                column = self.planes[word, : self.rows]
            else:  # np.take into scratch: faster than indexing by the rows
                column = np.take(self.planes[word], rows, out=scratch)
            np.bitwise_xor(column, code[word], out=scratch)
            total += np.bitwise_count(scratch, out=counts)
        alive = self.alive[: self.rows] if rows is None else self.alive[rows]
        total[~alive] = np.iinfo(np.uint16).max
        return total


def _with_spare(rows: int) -> int:
    return max(rows + max(SPARE_MIN, int(rows * SPARE_SHARE)), 64)


# The bits of each byte value, least significant first (packbits' little bit order).
_BYTE_BITS = (
    ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float32) if np is not None else None
)


def nearest_rows(values: Any, count: int) -> Any:
    """Positions of the ``count`` smallest values (ties by position), in position order.

    The distances are small integers, so the cut is found from their histogram, cheaper than
    a partition, and the rows come out sorted, which makes gathering their words from the
    planes cheaper too."""
    if count >= len(values):
        return np.arange(len(values))
    cut = int(np.searchsorted(np.cumsum(np.bincount(values)), count))
    rows = np.flatnonzero(values <= cut)
    excess = len(rows) - count
    if excess > 0:  # the last rows that tie at the cut go
        tied = np.flatnonzero(values[rows] == cut)
        rows = np.delete(rows, tied[len(tied) - excess :])
    return rows
