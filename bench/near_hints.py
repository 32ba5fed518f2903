"""Whether the near-duplicate check gives, at 100,000 memories with the local model, the hints
an exhaustive exact scan gives.

The database is bench/store_similar.py's (built by its ``build``; ``--keep DIR`` shares it).
For PROBES new developer memories (bench/corpus.py, the texts store_similar stores), the
hints of the check as a store runs it (service/similar.find: the vector index's cheaper
near ranking, then the threshold) are compared with those of an exact cosine over every
stored float32 vector, with the same threshold, the same scope rule (only memories of the
probe's scope; None: those without one), the same order (the nearest first, ties by id) and
at most MAX_SIMILAR. Two hint lists are identical when they name the same memories in the
same order with the same rounded similarity.

    python -m bench.near_hints [--size 100000] [--probes 820] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.embedders.local import Local
from agent_memory.service import similar
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import corpus
from bench._common import machine, table
from bench.store_similar import database

# The probes' seed: store_similar's stores are these texts.
SEED = 99
BATCH = 64
_STORED = (
    "SELECT v.memory_id, v.vector, m.scope FROM memory_vector_floats AS v"
    " JOIN memories AS m ON m.id = v.memory_id ORDER BY v.memory_id"
)


def stored(path: Path) -> tuple[Any, Any, list[str | None]]:
    """Every stored vector: ids, a float32 matrix, and each memory's scope."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        found = conn.execute(_STORED).fetchall()
    ids = np.array([r[0] for r in found], dtype=np.int64)
    matrix = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4").reshape(len(found), -1)
    return ids, matrix, [r[2] for r in found]


def exhaustive(
    ids: Any, matrix: Any, norms: Any, in_scope: Any, query: Any, threshold: float
) -> list[tuple[int, float]]:
    """(id, rounded similarity) of the hints an exact scan of every vector of the scope
    (``in_scope``) gives, the cosine computed as the check's re-rank computes it
    (vector_index._reranked)."""
    norm = norms * np.linalg.norm(query)
    keep = in_scope & (norm > 0)  # a zero vector has no cosine
    with np.errstate(divide="ignore", invalid="ignore"):
        distance = 1.0 - (matrix @ query) / norm
    distance[~keep] = np.inf
    order = np.lexsort((ids, distance))
    hints = []
    for k in order[: similar.MAX_SIMILAR]:
        similarity = float(1.0 - distance[k])
        if similarity < threshold:
            break
        hints.append((int(ids[k]), round(similarity, 3)))
    return hints


def of_scope(scopes: list[str | None], scope: str | None) -> Any:
    """Which stored memories a probe of ``scope`` may be hinted at: those of its scope."""
    return np.array([s == scope for s in scopes], dtype=bool)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=820)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    texts = [m["content"] for m in corpus.developer_memories(args.probes, seed=SEED)]
    with database(args.size, args.keep) as path:
        ids, matrix, scopes = stored(path)
        norms = np.linalg.norm(matrix, axis=1)
        scope = None  # as store_similar stores (no memory of the database has one)
        in_scope = of_scope(scopes, scope)
        svc = MemoryService(open_store(path), embedder=Local())
        try:
            svc.db._vector_index().load()
            embeddings = []
            for start in range(0, len(texts), BATCH):
                embeddings += svc.embedder.embed_documents(texts[start : start + BATCH])
            pin = embeddings[0].pin
            threshold = similar.COSINE_THRESHOLDS[similar.model_key(pin.model)]
            rows = {"probes": 0, "with hints": 0, "identical": 0, "differing": 0}
            hints = {"check": 0, "exact": 0}
            differing = []
            for text, embedding in zip(texts, embeddings, strict=True):
                found = similar.find(svc.db, text, scope, embedding, svc.now())
                mine = [(h["id"], h["similarity"]) for h in found.get("similar", [])]
                query = np.frombuffer(embedding.vector, dtype="<f4")
                exact = exhaustive(ids, matrix, norms, in_scope, query, threshold)
                rows["probes"] += 1
                rows["with hints"] += bool(mine or exact)
                hints["check"] += len(mine)
                hints["exact"] += len(exact)
                if mine == exact:
                    rows["identical"] += 1
                else:
                    rows["differing"] += 1
                    differing.append((text, mine, exact))
        finally:
            svc.close()
    print(f"{machine()}; {len(ids):,} stored vectors, local model, threshold {threshold}")
    print(
        table(
            ("probes", "probes with hints", "identical hint lists", "differing"),
            [tuple(rows.values())],
        )
    )
    print(f"\nhints: {hints['check']:,} by the check, {hints['exact']:,} by the exact scan")
    for text, mine, exact in differing[:10]:
        print(f"differs: {text[:60]!r}: check {mine}, exact {exact}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
