"""Each process's index of the vectors, in memory: the vector leg on large databases, exact
to within what re-ranking can see.

Why: a real model's vectors are anisotropic (they crowd into a cone), so sign bits of the raw
vectors, the SQL leg's guide, find few of the true ten nearest. Here every vector is kept as a
compact code built around the data's own mean and spread (vector_codes.py), the codes are scanned
with numpy, and the best candidates are re-ranked exactly by cosine over their float32 vectors, read
from the database in the search's own snapshot.

Filters: a filtered search ranks only the memories that pass its type, tag and scope
filters, read as ids in the search's snapshot (vectors.passing_ids) and taken to rows here.
When no more of them than the re-rank takes pass, they are all re-ranked exactly; a few more,
and the whole code is scored over those rows alone; past STAGE1_MIN_ROWS of them
(vector_codes), the sign plane's first pass runs over every row with the others set
aside. So the filters apply before every cut; what a filter adds to a search is the reading
of the ids.

Consistency across processes: the index is derived data. It is loaded from the vectors in
one snapshot, with the vector_changes log's position in that snapshot as its watermark; a
search then catches it up from the log inside the search's own snapshot (a vector written
by another process is found at this process's next search), and the exact re-rank reads
the candidates' vectors in that same snapshot, so a memory forgotten or expired meanwhile
drops out whatever the index still holds. A process that fell behind the log's pruning, or
sees another pin, loads again. Nothing is written: a crash leaves nothing to repair.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import sqlalchemy

from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.storage.sqlite import vector_codes, vectors

try:  # numpy is a dependency; an install made without dependencies falls back to the SQL leg
    import numpy as np
except ImportError:  # pragma: no cover - exercised in a venv without numpy
    np = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# Candidates re-ranked exactly by cosine over their float32 vectors: RERANK_FACTOR x the
# leg, at least RERANK_MIN. Reading them from SQLite is the costly step on a large index,
# so the codes' scoring is made good instead.
RERANK_FACTOR = 2
RERANK_MIN = 1_000
# The near-duplicate check re-ranks at least this many (vector_codes' NEAR_ constants).
NEAR_RERANK_MIN = 80
# The mean and spread of the dimensions are taken from the first SAMPLE_ROWS vectors.
SAMPLE_ROWS = 8_192
# Vectors read and encoded at a time while loading (RSS grows by about this many float32
# vectors, not by the whole table). The load's transient memory is a few times the chunk
# (the rows' bytes, the matrix, its scaled copy, a byte per bit before packing), and it sets
# the process's peak: LOAD_CHUNK_ROWS and SAMPLE_ROWS keep that near the loaded index's own
# size.
LOAD_CHUNK_ROWS = 4_096
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
        self._codes: vector_codes.Codes | None = None
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
        loaded (or numpy is missing): then the SQL leg. ``near``: the near-duplicate check's."""
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
            count = max(NEAR_RERANK_MIN if near else RERANK_MIN, RERANK_FACTOR * limit)
            if filters and passing is None:  # loaded meanwhile
                passing = _passing(conn, filters)
            within = None if passing is None else codes.rows_of(passing)
            candidates = codes.candidates(query, count, within, near)
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

    def _caught_up(self, conn: sqlalchemy.Connection, codes: vector_codes.Codes) -> bool:
        """Apply the log after the watermark as this snapshot sees it; False when the log
        no longer reaches back to it (pruned, or emptied by a re-pin). On the driver, in
        the snapshot: each ranking reads the highest seq, and SQLAlchemy's execution layer
        would cost more than the read."""
        driver = conn.connection.driver_connection
        (highest,) = driver.execute(_HIGHEST_SEQ).fetchone()
        if highest <= codes.watermark:
            return True
        (lowest,) = driver.execute(_LOWEST_SEQ).fetchone()
        if lowest is None or lowest > codes.watermark + 1:
            return False
        changed = dict.fromkeys(m for _, m in driver.execute(_CHANGES, (codes.watermark,)))
        present = dict(_floats_of(conn, sorted(changed)))
        gone = [memory_id for memory_id in changed if memory_id not in present]
        codes.remove(np.array(gone, dtype=np.int64))
        if present:
            ids = np.fromiter(present, dtype=np.int64, count=len(present))
            codes.add(ids, _matrix(list(present.values()), codes.pin.dimension))
        codes.watermark = highest
        if codes.dead > vector_codes.COMPACT_DEAD_SHARE * max(codes.rows, 1):
            codes.compact()
        return True


def _passing(conn: sqlalchemy.Connection, filters: Filters) -> Any:
    """The ids of the memories that pass ``filters`` in this snapshot."""
    text = vectors.passing_ids(conn, filters)
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)


def _floats_of(conn: sqlalchemy.Connection, ids: list[int]) -> list[Any]:
    """(id, float32 blob) of these ids, in id order: sorted ids read the table's pages in
    order, faster than a JSON list of them in any order."""
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


def _load(conn: sqlalchemy.Connection) -> vector_codes.Codes | None:
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
    codes = vector_codes.Codes(pin, mean.astype(np.float32), scale.astype(np.float32), count)
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
