"""Hybrid search benchmark: backfill rate, and hybrid search latency without the embedder.

    .venv/bin/python -m bench.bench_hybrid [--sizes 10000 100000] [--json out.json]

For each size: a fresh database is filled through the service with no Ollama (every row
pending), then the real backfill path embeds it all against the test suite's fake Ollama
(a real HTTP server on 127.0.0.1 with a deterministic 768-dimension embedder): that gives
the backfill rate. Then 200 searches (half single keywords, half questions, limit 10) run
in process with their query vectors made beforehand, so the figures are agent-memory's own
time; the embedder's round trip per query is reported apart. recall@10 compares the vector
leg's ten nearest with an exact brute-force KNN over the same vectors.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agent_memory.embedders.ollama import Ollama
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import vectors as sqlite_vectors
from agent_memory.storage.sqlite.database import create_engine
from bench import corpus
from bench._common import pct
from tests.support.fake_ollama import FakeOllama

SEARCHES = 200
LIMIT = 10
# Exact brute force over the float vectors (vec0's own KNN), and one stored vector's distance.
EXACT_KNN = (
    "SELECT memory_id, vec_distance_cosine(vector, ?1) AS d FROM memory_vector_floats"
    " ORDER BY d LIMIT ?2"
)
DISTANCE = "SELECT vec_distance_cosine(vector, ?) FROM memory_vector_floats WHERE memory_id = ?"
TIE_EPSILON = 1e-6
# Also reported: the share of the ten found that are within this cosine distance of the exact
# tenth (on a templated corpus hundreds of memories can sit that close to it).
NEAR_EPSILON = 0.01


class Precomputed(Ollama):
    """Answers queries from vectors made beforehand: searches are timed without Ollama."""

    def __init__(self, real: Ollama, vectors: dict) -> None:
        super().__init__(real.url, real.model)
        self._precomputed = vectors
        self._unrelated = real._unrelated  # the unrelated texts, embedded beforehand

    def embed_query(self, text: str):
        return self._precomputed[text]


def run(size: int, workdir: Path) -> dict:
    path = workdir / f"hybrid-{size}.db"
    out: dict = {"size": size}
    reused = path.exists()
    if not reused:
        loader = MemoryService(open_store(path))
        for memory in corpus.memories(size):
            loader.store(memory)
        loader.close()
    with FakeOllama() as ollama:
        embedder = Ollama(ollama.url, "nomic-embed-text")
        svc = MemoryService(open_store(path), embedder=embedder)
        if not reused:
            start = time.perf_counter()
            while svc.backfill():
                pass
            out["backfill_rows_per_s"] = size / (time.perf_counter() - start)
        queries = corpus.queries(SEARCHES)
        vectors, embed_ms = {}, []
        for q in queries:
            t = time.perf_counter()
            vectors[q] = embedder.embed_query(q)
            embed_ms.append((time.perf_counter() - t) * 1000)
        out["embed_query_p50_ms"] = statistics.median(embed_ms)
        embedder.unrelated(vectors[queries[0]])
        svc.close()

    svc = MemoryService(open_store(path), embedder=Precomputed(embedder, vectors))
    engine = create_engine(path)
    try:
        svc.search({"query": queries[0], "limit": LIMIT})  # warm the page cache
        out.update(search_times(svc, engine, queries, vectors))
        out.update(vector_recall(engine, queries[:40], vectors))
        out["db_mb"] = path.stat().st_size / 1e6
    finally:
        svc.close()
        engine.dispose()
    return out


def search_times(svc: MemoryService, engine, queries: list[str], vectors: dict) -> dict:
    """p50 / p99 of hybrid searches (keywords and questions alternate) and of the vector leg
    alone, each query's vector made beforehand."""
    timings: dict[str, list[float]] = {"keywords": [], "questions": [], "vector_leg": []}
    for i, q in enumerate(queries):
        t = time.perf_counter()
        answer = svc.search({"query": q, "limit": LIMIT})
        timings["keywords" if i % 2 == 0 else "questions"].append((time.perf_counter() - t) * 1000)
        assert answer["search_mode"] == "hybrid"
        with engine.connect() as conn, conn.begin():
            t = time.perf_counter()
            sqlite_vectors.ranking(conn, vectors[q], 4 * LIMIT)
            timings["vector_leg"].append((time.perf_counter() - t) * 1000)
    out = {}
    for name, values in timings.items():
        out[f"{name}_p50_ms"] = statistics.median(values)
        out[f"{name}_p99_ms"] = pct(values, 0.99)
    return out


def vector_recall(engine, sample: list[str], vectors: dict) -> dict:
    """The vector leg's ten against the exact ten: a hit is as near as the exact tenth (equal
    distances are interchangeable), a near one within NEAR_EPSILON of it."""
    hits = near = 0
    with engine.connect() as conn, conn.begin():
        raw = conn.connection.driver_connection
        for q in sample:
            vector = vectors[q].vector
            cut = max(d for _, d in raw.execute(EXACT_KNN, (vector, LIMIT)))
            approx = sqlite_vectors.ranking(conn, vectors[q], LIMIT)
            found = [raw.execute(DISTANCE, (vector, i)).fetchone()[0] for i, _ in approx]
            hits += sum(d <= cut + TIE_EPSILON for d in found)
            near += sum(d <= cut + NEAR_EPSILON for d in found)
    return {
        "recall_at_10": hits / (LIMIT * len(sample)),
        "recall_at_10_within_0.01": near / (LIMIT * len(sample)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the databases in DIR and reuse them on the next run (no backfill figure then)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results = [run(size, workdir) for size in args.sizes]
    keys = sorted({k for r in results for k in r if k != "size"})
    print("| figure | " + " | ".join(f"{r['size']:,}" for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{r.get(key, float('nan')):.2f}" for r in results) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
