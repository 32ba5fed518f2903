"""Each process's index of the vectors, in memory: the vector leg at 100,000 and 1,000,000
memories, exact to within what re-ranking can see.

Why: a real model's vectors are anisotropic (they crowd into a cone), so sign bits of the raw
vectors, the SQL leg's guide, find few of the true ten nearest (docs/performance.md,
section 18). Here
every vector is kept as a compact code built around the data's own mean and spread, the
codes are scanned with numpy, and the best candidates are re-ranked exactly by cosine over
their float32 vectors, read from the database in the search's own snapshot.

The code: each dimension, centred on the mean and scaled by its standard deviation, is cut
at CUTS (a thermometer code: one bit per cut, set when the value lies above it), so that the
Hamming distance between two codes is the L1 distance between their quantized values. The
cut at 0 is the sign bit of the centred vector: on a large index a first pass over that
plane alone keeps STAGE1_KEEP rows, which the whole code then orders; the SCORE_KEEP nearest
are scored once more against the query's float values (asymmetric: the query is not
quantized), and the best of those are re-ranked exactly. The codes are held
plane by plane, each 64-bit word of a plane in its own contiguous array (numpy's
bitwise_count runs several times faster over a column of words than over rows).

Filters: a filtered search ranks only the memories that pass its type, tag and scope
filters, read as ids in the search's snapshot (vectors.passing_ids) and taken to rows here.
When no more of them than the re-rank takes pass, they are all re-ranked exactly; a few more,
and the whole code is scored over those rows alone; past STAGE1_MIN_ROWS of them, the sign
plane's first pass runs over every row with the others set aside. So the filters apply
before every cut; what a filter adds to a search is the reading of the ids
(docs/performance.md, section 18, "Filters before the vector leg's cut").

Consistency across processes: the index is derived data. It is loaded from the vectors in
one snapshot, with the vector_changes log's position in that snapshot as its watermark; a
search then catches it up from the log inside the search's own snapshot (a vector written
by another process is found at this process's next search), and the exact re-rank reads
the candidates' vectors in that same snapshot, so a memory forgotten or expired meanwhile
drops out whatever the index still holds. A process that fell behind the log's pruning, or
sees another pin, loads again. Nothing is written: a crash leaves nothing to repair.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import sqlalchemy

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.storage.sqlite import vectors

try:  # numpy is a dependency; an install made without dependencies falls back to the SQL leg
    import numpy as np
except ImportError:  # pragma: no cover - exercised in a venv without numpy
    np = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# Thermometer cuts, in standard deviations of each (centred) dimension: the quartiles of a
# normal distribution, and 0 (the sign plane).
CUTS = (-0.6745, 0.0, 0.6745)
SIGN_PLANE = CUTS.index(0.0)
# Past STAGE1_MIN_ROWS live rows, a first pass over the sign plane keeps the STAGE1_KEEP
# nearest, and only those are scored on the other planes. Below it the whole code over every
# row is cheaper than the first pass, its cut and gathering the kept rows' words, and misses
# nothing. STAGE1_KEEP is as many as keep nearly all of the exact ten on real-model vectors
# for the later steps to find (docs/performance.md, section 18).
STAGE1_MIN_ROWS = 300_000
STAGE1_KEEP = 80_000
# The SCORE_KEEP nearest on the whole code (its Hamming distance: the L1 distance between
# quantized values) are then scored again against the query's own float values (the dot
# product of the query with each row's quantized values, through per-byte lookup tables),
# which orders them far better than the symmetric distance: more of the exact ten reach the
# re-rank (docs/performance.md, section 18).
SCORE_KEEP = 4_000
# Candidates re-ranked exactly by cosine over their float32 vectors: RERANK_FACTOR x the
# leg, at least RERANK_MIN. Reading them from SQLite is the costly step on a large index
# (docs/performance.md, section 18), so the scoring above is made good instead.
RERANK_FACTOR = 2
RERANK_MIN = 1_000
# The mean and spread of the dimensions are taken from the first SAMPLE_ROWS vectors.
SAMPLE_ROWS = 8_192
# Vectors read and encoded at a time while loading (RSS grows by about this many float32
# vectors, not by the whole table). The load's transient memory is a few times the chunk
# (the rows' bytes, the matrix, its scaled copy, a byte per bit before packing), and it sets
# the process's peak: LOAD_CHUNK_ROWS and SAMPLE_ROWS keep that near the loaded index's own
# size (docs/performance.md, section 18).
LOAD_CHUNK_ROWS = 4_096
# Once this share of the rows are dead (forgotten, or replaced by a new vector), the
# arrays are compacted.
COMPACT_DEAD_SHARE = 0.25
GROWTH = 1.5
# Rows allocated beyond those loaded (or kept by a compaction), so that the first writes a
# process sees do not grow the arrays: growing copies the planes into arrays GROWTH times
# larger beside the old ones, which would set the peak RSS of `serve` at its first store
# (docs/performance.md, section 19).
SPARE_SHARE = 0.02
SPARE_MIN = 1_024


@dataclass(frozen=True)
class Effort:
    """How many rows each step of a ranking keeps: a search's leg (SEARCH) must find the
    ten nearest wherever they lie; the near-duplicate check (NEAR) looks only for memories
    far nearer than any search's tenth, which the cheapest steps already put first."""

    stage1_min_rows: int
    stage1_keep: int
    score_keep: int
    rerank_min: int


SEARCH = Effort(STAGE1_MIN_ROWS, STAGE1_KEEP, SCORE_KEEP, RERANK_MIN)
# A near duplicate (a cosine of 0.94 and more on the local model) differs from the new
# memory in few sign bits, so the sign plane alone ranks it among a few thousand on any
# index past NEAR_STAGE1_MIN_ROWS, and the whole code then among the first hundreds. How
# many of the full ranking's hints this keeps: docs/performance.md, section 26.
NEAR = Effort(stage1_min_rows=20_000, stage1_keep=4_000, score_keep=800, rerank_min=80)

_FLOATS = (
    "SELECT memory_id, vector FROM memory_vector_floats WHERE memory_id > ?"
    " ORDER BY memory_id LIMIT ?"
)
_FLOATS_IN = "SELECT memory_id, vector FROM memory_vector_floats WHERE memory_id IN ({marks})"
# SQLite takes at most 32,766 bound values in one statement.
MAX_BOUND_IDS = 30_000
_HIGHEST_SEQ = "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'), 0)"
_CHANGES = "SELECT seq, memory_id FROM vector_changes WHERE seq > ? ORDER BY seq"
_LOWEST_SEQ = "SELECT min(seq) FROM vector_changes"


def available() -> bool:
    return np is not None


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


class _Codes:
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

    def candidates(
        self, query: Any, count: int, within: Any = None, effort: Effort = SEARCH
    ) -> Any:
        """The ids of ``count`` live rows nearest ``query`` on the codes, in no order; only
        rows ``within`` (live rows, in row order) when given."""
        live = self.rows - self.dead if within is None else len(within)
        if live <= 0:
            return np.zeros(0, dtype=np.int64)
        if within is not None and live <= count:
            return self.ids[within]  # all of them: the re-rank is exact
        code = self.encode(query[None, :])[0]
        if live > max(effort.stage1_min_rows, effort.stage1_keep):
            sign = range(SIGN_PLANE * self.words, (SIGN_PLANE + 1) * self.words)
            first = self._distance(code, sign, None)
            if within is not None:  # set aside: more than STAGE1_KEEP rows pass, all nearer
                outside = np.ones(self.rows, dtype=bool)
                outside[within] = False
                first[outside] = np.iinfo(np.uint16).max
            rows = _nearest_rows(first, effort.stage1_keep)
            # the sign plane's share is known already: only the other planes are gathered
            others = [w for w in range(len(code)) if w not in sign]
            distance = first[rows] + self._distance(code, others, rows)
            distance[~self.alive[rows]] = np.iinfo(np.uint16).max  # (the sum wrapped)
        else:
            rows = within
            distance = self._distance(code, range(len(code)), within)
        kept = _nearest_rows(distance, max(count, effort.score_keep))
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
            column = self.planes[word, : self.rows] if rows is None else self.planes[word, rows]
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


def _nearest_rows(values: Any, count: int) -> Any:
    """Positions of the ``count`` smallest values (ties by position), in position order.

    The distances are small integers, so the cut is found from their histogram instead of
    by a partition (about three times faster), and the rows come out sorted,
    which makes gathering their words from the planes several times faster."""
    if count >= len(values):
        return np.arange(len(values))
    cut = int(np.searchsorted(np.cumsum(np.bincount(values)), count))
    rows = np.flatnonzero(values <= cut)
    excess = len(rows) - count
    if excess > 0:  # the last rows that tie at the cut go
        tied = np.flatnonzero(values[rows] == cut)
        rows = np.delete(rows, tied[len(tied) - excess :])
    return rows


@dataclass
class IndexStats:
    rows: int
    dead: int
    watermark: int
    loaded_secs: float


class VectorIndex:
    """The index of one store in this process: loaded in the background on first use."""

    def __init__(self, read: Callable[[], AbstractContextManager[sqlalchemy.Connection]]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._codes: _Codes | None = None
        self._loading: threading.Thread | None = None
        self.loaded_secs = 0.0

    def ranking(
        self,
        conn: sqlalchemy.Connection,
        embedding: Embedding,
        pin: Pin,
        limit: int,
        filters: Filters,
        *,
        near: bool = False,
    ) -> list[tuple[int, float]] | None:
        """The ``limit`` nearest (id, cosine similarity) among the memories that pass
        ``filters``, from the index caught up in ``conn``'s snapshot; None while it is not
        loaded (or numpy is missing): then the SQL leg. ``near``: the NEAR effort."""
        if np is None:
            return None
        passing = None
        if filters and self._codes is not None:  # read outside the lock, as a rule
            passing = _passing(conn, filters)
        with self._lock:
            codes = self._codes
            if codes is None or codes.pin != pin or not self._caught_up(conn, codes):
                self._codes = None
                self._start_loading()
                return None
            query = np.frombuffer(embedding.vector, dtype="<f4")
            effort = NEAR if near else SEARCH
            count = max(effort.rerank_min, RERANK_FACTOR * limit)
            if filters and passing is None:  # loaded meanwhile
                passing = _passing(conn, filters)
            within = None if passing is None else codes.rows_of(passing)
            candidates = codes.candidates(query, count, within, effort)
        return _reranked(conn, query, candidates, limit)

    def _start_loading(self) -> None:
        if self._loading is None or not self._loading.is_alive():
            self._loading = threading.Thread(
                target=self.load, name="agent-memory-index", daemon=True
            )
            self._loading.start()

    def load(self) -> IndexStats | None:
        """Build the index from the vectors in one snapshot (RSS grows by one chunk of
        float32 vectors beside the codes); None when there is nothing to index."""
        started = time.perf_counter()
        try:
            with self._read() as conn:
                codes = _load(conn)
        except Exception:  # the SQL leg serves meanwhile; the next search tries again
            log.exception("vector index: loading failed")
            return None
        if codes is None:
            return None
        self.loaded_secs = time.perf_counter() - started
        with self._lock:
            self._codes = codes
        log.info(
            "vector index: %d vectors of %s loaded in %.1f s",
            codes.rows,
            codes.pin.describe(),
            self.loaded_secs,
        )
        return IndexStats(codes.rows, codes.dead, codes.watermark, self.loaded_secs)

    def wait(self) -> None:
        """Wait for a load in progress (tests and benches)."""
        loading = self._loading
        if loading is not None:
            loading.join()

    def _caught_up(self, conn: sqlalchemy.Connection, codes: _Codes) -> bool:
        """Apply the log after the watermark as this snapshot sees it; False when the log
        no longer reaches back to it (pruned, or emptied by a re-pin)."""
        highest = conn.exec_driver_sql(_HIGHEST_SEQ).scalar_one()
        if highest <= codes.watermark:
            return True
        lowest = conn.exec_driver_sql(_LOWEST_SEQ).scalar()
        if lowest is None or lowest > codes.watermark + 1:
            return False
        changed = dict.fromkeys(m for _, m in conn.exec_driver_sql(_CHANGES, (codes.watermark,)))
        present = dict(_floats_of(conn, sorted(changed)))
        gone = [memory_id for memory_id in changed if memory_id not in present]
        codes.remove(np.array(gone, dtype=np.int64))
        if present:
            ids = np.fromiter(present, dtype=np.int64, count=len(present))
            codes.add(ids, _matrix(list(present.values()), codes.pin.dimension))
        codes.watermark = highest
        if codes.dead > COMPACT_DEAD_SHARE * max(codes.rows, 1):
            codes.compact()
        return True


def _passing(conn: sqlalchemy.Connection, filters: Filters) -> Any:
    """The ids of the memories that pass ``filters`` in this snapshot."""
    text = vectors.passing_ids(conn, filters)
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


def _floats_of(conn: sqlalchemy.Connection, ids: list[int]) -> list[Any]:
    """(id, float32 blob) of these ids, in id order: sorted ids read the table's pages in
    order, about three times faster than a JSON list of them in any order."""
    found: list[Any] = []
    driver = conn.connection.driver_connection
    for start in range(0, len(ids), MAX_BOUND_IDS):
        chunk = ids[start : start + MAX_BOUND_IDS]
        marks = ",".join("?" * len(chunk))
        found += driver.execute(_FLOATS_IN.format(marks=marks), chunk).fetchall()
    return found


def _matrix(blobs: list[bytes], dimension: int) -> Any:
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dimension)


def _chunks(conn: sqlalchemy.Connection) -> Iterator[tuple[Any, list[bytes]]]:
    after = 0
    while True:
        found = conn.exec_driver_sql(_FLOATS, (after, LOAD_CHUNK_ROWS)).all()
        if not found:
            return
        after = found[-1][0]
        yield np.array([r[0] for r in found], dtype=np.int64), [r[1] for r in found]


def _load(conn: sqlalchemy.Connection) -> _Codes | None:
    pin = vectors.stored_pin(conn)
    if pin is None:
        return None
    watermark = conn.exec_driver_sql(_HIGHEST_SEQ).scalar_one()
    count = conn.exec_driver_sql(vectors.COUNT).scalar_one()
    chunks = _chunks(conn)
    sample_ids, sample_blobs = [], []
    for ids, blobs in chunks:
        sample_ids.append(ids)
        sample_blobs.extend(blobs)
        if len(sample_blobs) >= SAMPLE_ROWS:
            break
    if sample_blobs:
        sample = _matrix(sample_blobs, pin.dimension)
        mean = sample.mean(axis=0)
        scale = 1.0 / np.maximum(sample.std(axis=0), 1e-6)
    else:
        mean = np.zeros(pin.dimension, dtype=np.float32)
        scale = np.ones(pin.dimension, dtype=np.float32)
    codes = _Codes(pin, mean.astype(np.float32), scale.astype(np.float32), count)
    codes.watermark = watermark
    if sample_blobs:
        codes.add(np.concatenate(sample_ids), sample)
    del sample_blobs
    for ids, blobs in chunks:
        codes.add(ids, _matrix(blobs, pin.dimension))
    return codes


def _reranked(
    conn: sqlalchemy.Connection, query: Any, candidates: Any, limit: int
) -> list[tuple[int, float]]:
    """Candidates by exact cosine distance to ``query`` (ties by id), as this snapshot
    holds their vectors: one forgotten meanwhile is gone."""
    found = _floats_of(conn, np.sort(candidates).tolist())
    if not found:
        return []
    ids = np.array([r[0] for r in found], dtype=np.int64)
    matrix = _matrix([r[1] for r in found], len(query))
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    # A zero vector has no cosine (as vec_distance_cosine's NULL): nobody's neighbour.
    ids, matrix, norms = ids[norms > 0], matrix[norms > 0], norms[norms > 0]
    distance = 1.0 - (matrix @ query) / norms
    order = np.lexsort((ids, distance))[:limit]
    return list(zip(ids[order].tolist(), (1.0 - distance[order]).tolist(), strict=True))
