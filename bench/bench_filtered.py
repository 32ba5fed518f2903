"""The vector leg with type, tag and scope filters: recall of the filtered ten and latency,
through the in-memory index and the SQL leg, against the same leg cut before filtering.

    .venv/bin/python -m bench.bench_filtered [--sizes 100000,1000000] [--queries 100] [--keep DIR]

The corpus is drawn here (seeded): 384-d vectors shaped like a real model's (a shared
direction, one of TOPICS topic directions, noise spread unevenly over the dimensions;
renormalised), so that a query's nearest memories crowd together in every project. Ten
projects share the rows evenly as scopes, plus a small one (SMALL_SCOPE_SHARE of the rows);
types are drawn with TYPE_SHARES; the tag ``team`` is on COMMON_TAG_SHARE of the rows and
``db`` on RARE_TAG_SHARE. Each size is a database filled through the store
(``import_memories``, ``write_vectors``; on PostgreSQL the HNSW index is built after).

Per filter, each query's exact ten among the rows that pass it are computed by numpy; then
each query runs the vector leg as a hybrid search at limit 10 runs it (its 40 nearest,
``ranking.leg_size(10)``) inside a read snapshot, exact re-rank included. ``recall@10``: the
leg's first ten against the exact filtered ten; ``cut first`` is the same for the leg taken
unfiltered and then filtered (the filters applied after the cut instead of before it).
``hybrid`` times a whole wordless search (the vector leg, the rows, the fusion).
The SQL leg (which serves until the index is loaded) runs on SQL_QUERIES queries.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from agent_memory import ranking
from agent_memory.contract.models import Embedding, Filters, Pin
from agent_memory.query import read as read_query
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import vectors
from bench._common import recall_at

DIMENSION = 384
PIN = Pin("bench-filtered", DIMENSION, "none", "local")
LIMIT = 10
LEG = ranking.leg_size(LIMIT)
# The corpus's shape, set so that two memories' mean cosine and a query's first and tenth
# neighbours lie where a real model's do (docs/performance.md has both).
TOPICS = 100
TOPIC_WEIGHT = 0.25
NOISE_WEIGHT = 0.3
ANISOTROPY = 1.2
SCOPES = 10
SMALL_SCOPE_SHARE = 0.001
TYPES = ("PATTERN", "DECISION", "TODO", "ERROR", "ARCHITECTURE", "CONSTRAINT")
TYPE_SHARES = (0.40, 0.20, 0.15, 0.10, 0.10, 0.05)
COMMON_TAG_SHARE = 0.20
RARE_TAG_SHARE = 0.001
BATCH = 2_000
T0 = 1_767_225_600
SEED = 23
SQL_QUERIES = 20

CASES = {
    "none": Filters(),
    "scope (1 of 10)": Filters(scope="project-3"),
    "type PATTERN (40%)": Filters(memory_type="PATTERN"),
    "type CONSTRAINT (5%)": Filters(memory_type="CONSTRAINT"),
    "scope + type (0.5%)": Filters(scope="project-3", memory_type="CONSTRAINT"),
    "small scope (0.1%)": Filters(scope="side-project"),
    "tag team (20%)": Filters(tag="team"),
    "tag db (0.1%)": Filters(tag="db"),
}


def space() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shared direction, the topic directions and each dimension's noise scale (seeded)."""
    rng = np.random.default_rng(SEED)
    base = rng.normal(size=DIMENSION).astype(np.float32)
    topics = rng.normal(size=(TOPICS, DIMENSION)).astype(np.float32)
    scale = np.exp(ANISOTROPY * rng.normal(size=DIMENSION)).astype(np.float32)
    return base, topics, scale / np.sqrt(np.mean(scale**2))


def draw(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors: the shared direction, a topic's, and noise spread unevenly over the
    dimensions."""
    base, topics, scale = space()
    out = np.empty((n, DIMENSION), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        x = base + TOPIC_WEIGHT * topics[rng.integers(0, TOPICS, m)]
        x += NOISE_WEIGHT * scale * rng.normal(size=(m, DIMENSION)).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def corpus(size: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Vectors and, per row, its scope (-1: the small scope), type index and tags."""
    rng = np.random.default_rng(SEED + 1)
    matrix = draw(rng, size)
    scope = rng.integers(0, SCOPES, size)
    scope[rng.random(size) < SMALL_SCOPE_SHARE] = -1
    attributes = {
        "scope": scope,
        "type": rng.choice(len(TYPES), size=size, p=TYPE_SHARES),
        "team": rng.random(size) < COMMON_TAG_SHARE,
        "db": rng.random(size) < RARE_TAG_SHARE,
    }
    return matrix, attributes


def queries_of(count: int) -> np.ndarray:
    """Queries drawn as memories are, with a seed of their own."""
    return draw(np.random.default_rng(SEED + 2), count)


def passes(attributes: dict[str, np.ndarray], filters: Filters) -> np.ndarray:
    keep = np.ones(len(attributes["scope"]), dtype=bool)
    if filters.scope is not None:
        wanted = -1 if filters.scope == "side-project" else int(filters.scope.split("-")[1])
        keep &= attributes["scope"] == wanted
    if filters.memory_type is not None:
        keep &= attributes["type"] == TYPES.index(filters.memory_type)
    if filters.tag is not None:
        keep &= attributes[filters.tag]
    return keep


def fill(path: str, matrix: np.ndarray, attributes: dict[str, np.ndarray]) -> None:
    store = open_store(path)
    scope, kind = attributes["scope"], attributes["type"]
    try:
        with store.bulk():
            for start in range(0, len(matrix), BATCH):
                records = [
                    {
                        "type": TYPES[kind[i]],
                        "content": f"note {i} of topic work",
                        "tags": [t for t in ("team", "db") if attributes[t][i]],
                        "source": None,
                        "scope": "side-project" if scope[i] < 0 else f"project-{scope[i]}",
                        "created_at": T0,
                        "access_count": 0,
                        "expires_at": None,
                    }
                    for i in range(start, min(start + BATCH, len(matrix)))
                ]
                outcomes = store.import_memories(records, T0)
                store.write_vectors(
                    [
                        (memory_id, record["content"], Embedding(PIN, matrix[start + k].tobytes()))
                        for k, ((_, memory_id), record) in enumerate(
                            zip(outcomes, records, strict=True)
                        )
                    ]
                )
                if start == 0 and path.startswith("postgresql"):
                    hnsw(path, build=False)
        store.after_import()
    finally:
        store.close()
    if path.startswith("postgresql"):
        hnsw(path, build=True)


def hnsw(url: str, *, build: bool) -> None:
    """PostgreSQL: the HNSW index dropped while the rows go in, and built once after (as
    pgvector advises for a bulk load: inserting into the index row by row is far slower)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if not build:
            conn.execute("DROP INDEX memory_vectors_hnsw")
            return
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute(
            "CREATE INDEX memory_vectors_hnsw ON memory_vectors"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE memory_vectors")


def exact_top(matrix: np.ndarray, keep: np.ndarray, queries: np.ndarray, k: int) -> list[list]:
    """Each query's k nearest ids (from 1) among the rows kept, by exact cosine."""
    rows = np.flatnonzero(keep)
    sims = queries @ matrix[rows].T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return [(rows[t] + 1).tolist() for t in top]


def timed_leg(read, queries: np.ndarray, leg) -> tuple[list, list[float]]:
    """Each query's vector leg (``leg(conn, embedding)``) inside a read snapshot, timed:
    the ids it found, best first."""
    found, ms = [], []
    for q in queries:
        embedding = Embedding(PIN, q.astype("<f4").tobytes())
        with read() as conn:
            started = time.perf_counter()
            nearest = leg(conn, embedding)
            ms.append((time.perf_counter() - started) * 1e3)
        found.append([memory_id for memory_id, _ in nearest])
    return found, ms


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def postgres_database(server: str, size: int) -> tuple[str, bool]:
    """The URL of this size's database on ``server``, and whether it was there already."""
    import psycopg
    from psycopg import sql

    name = f"bench_filtered_{size}"
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, "")), bool(found)


def run(size: int, workdir: Path, count: int, server: str | None) -> list[dict]:
    matrix, attributes = corpus(size)
    if server is None:
        location = str(workdir / f"filtered-{size}.db")
        there = Path(location).exists()
    else:
        location, there = postgres_database(server, size)
    if not there:
        started = time.perf_counter()
        fill(location, matrix, attributes)
        print(f"[{size}] filled in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    queries = queries_of(count)
    keeps = {name: passes(attributes, f) for name, f in CASES.items()}
    truths = {name: exact_top(matrix, keeps[name], queries, LIMIT) for name in CASES}
    del matrix
    store = open_store(location)
    try:
        if server is None:
            started = time.perf_counter()
            index = store._vector_index()  # loaded now, not at the first search
            if index is not None:
                index.load()
            print(
                f"[{size}] index loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr
            )
            return measure_sqlite(store, size, queries, keeps, truths)
        return measure_postgres(store, size, queries, keeps, truths)
    finally:
        store.close()


def wordless(store, queries: np.ndarray, filters: Filters) -> float:
    """p50 ms of a whole hybrid search with no words (its keyword leg is empty)."""
    ms = []
    for q in queries:
        embedding = Embedding(PIN, q.astype("<f4").tobytes())
        started = time.perf_counter()
        store.search(read_query(""), embedding, now=T0, limit=LIMIT, filters=filters)
        ms.append((time.perf_counter() - started) * 1e3)
    return statistics.median(ms)


def measure_sqlite(store, size, queries, keeps, truths) -> list[dict]:
    read = store._connections.read
    unfiltered, _ = timed_leg(read, queries, lambda c, e: store._vector_leg(c, e, LEG, Filters()))
    out = []
    for name, filters in CASES.items():
        keep, truth = keeps[name], truths[name]
        found, ms = timed_leg(
            read, queries, lambda c, e, f=filters: store._vector_leg(c, e, LEG, f)
        )
        sql_found, sql_ms = timed_leg(
            read, queries[:SQL_QUERIES], lambda c, e, f=filters: vectors.ranking(c, e, LEG, f)
        )
        row = {
            "size": size,
            "filter": name,
            "rows": int(keep.sum()),
            "index p50": statistics.median(ms),
            "index p99": p(ms, 0.99),
            "recall@10": recall_at(found, truth, LIMIT),
            "cut first": recall_at(
                [[i for i in u if keep[i - 1]] for u in unfiltered], truth, LIMIT
            ),
            "hybrid p50": wordless(store, queries, filters),
            "sql p50": statistics.median(sql_ms),
            "sql recall@10": recall_at(sql_found, truth, LIMIT),
        }
        print(row, file=sys.stderr, flush=True)
        out.append(row)
    return out


def measure_postgres(store, size, queries, keeps, truths) -> list[dict]:
    from agent_memory.storage.postgres import vectors as pg_vectors

    def leg(filters: Filters):
        return lambda c, e: pg_vectors.nearest(c, e, LEG, filters)

    unfiltered, _ = timed_leg(store._read, queries, leg(Filters()))
    out = []
    for name, filters in CASES.items():
        keep, truth = keeps[name], truths[name]
        found, ms = timed_leg(store._read, queries, leg(filters))
        row = {
            "size": size,
            "filter": name,
            "rows": int(keep.sum()),
            "leg p50": statistics.median(ms),
            "leg p99": p(ms, 0.99),
            "recall@10": recall_at(found, truth, LIMIT),
            "cut first": recall_at(
                [[i for i in u if keep[i - 1]] for u in unfiltered], truth, LIMIT
            ),
            "hybrid p50": wordless(store, queries, filters),
        }
        print(row, file=sys.stderr, flush=True)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="keep the databases here (reused when present)")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="a PostgreSQL server (its maintenance database's URL): measure there instead",
    )
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-filtered-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [r for s in sizes for r in run(s, workdir, args.queries, args.postgres)]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * 2 + "---:|" * (len(keys) - 2))
    for r in rows:
        cells = [f"{v:,}" if isinstance(v, int) else f"{v:.3g}" if isinstance(v, float) else v
                 for v in r.values()]  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
