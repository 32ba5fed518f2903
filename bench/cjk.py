"""Scripts written without spaces: what their bigrams cost, and what the upgrade to them takes.

    .venv/bin/python -m bench.cjk [--size 100000] [--upgrade-only | --postgres]

Two files of --size memories are written at revision 0007 (plain SQL, indexed by that
revision's triggers), then opened at head, which backs each up and migrates it (0008:
keyword_text for the rows that need it, the keyword index made again from the view):

- "latin": the bench corpus (bench/corpus.py developer_memories);
- "chinese": synthetic Chinese sentences, words of one to four ideographs drawn by Zipf's law,
  a Latin name in one sentence of five.

For each: the upgrade's time and the file's size before and after (both vacuumed). With
--postgres, PostgreSQL's upgrade (0009) instead, on a throwaway server. On the
Chinese file, the store's searches in process (limit 10, no recency bump): words of one,
two and four characters, and pasted runs of 30 and 300 characters taken from a memory (a run
is a phrase of one bigram per character).
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from pathlib import Path

import sqlean
from alembic import command

from agent_memory.contract.errors import InvalidArgument
from agent_memory.contract.models import Filters, content_hash
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite import database as db
from agent_memory.storage.sqlite.migrate import alembic_config
from bench import corpus
from bench._common import pct, throwaway_postgres

IDEOGRAPHS = [chr(0x4E00 + i) for i in range(3_000)]
NAMES = ["PostgreSQL", "Redis", "Kafka", "SQLite", "nginx", "gRPC"]
QUERIES = 200


_CUMULATIVE: dict[tuple[int, float], list[float]] = {}


def zipf(rng: random.Random, items: list[str], s: float = 1.0, k: int = 1) -> list[str]:
    """``k`` items drawn by Zipf's law over their order (the first the commonest)."""
    cumulative = _CUMULATIVE.get((len(items), s))
    if cumulative is None:
        weights = [(rank + 1) ** -s for rank in range(len(items))]
        cumulative = _CUMULATIVE[(len(items), s)] = list(itertools.accumulate(weights))
    return rng.choices(items, cum_weights=cumulative, k=k)


def vocabulary(rng: random.Random, n: int = 20_000) -> list[str]:
    lengths = rng.choices((1, 2, 2, 2, 3, 4), k=n)
    return ["".join(zipf(rng, IDEOGRAPHS, 0.8, length)) for length in lengths]


def chinese_memories(n: int, words: list[str], seed: int = 7):
    rng = random.Random(seed)
    for i in range(n):
        sentence = "".join(zipf(rng, words, k=rng.randint(8, 30)))
        if i % 5 == 0:
            cut = rng.randint(1, len(sentence) - 1)
            sentence = sentence[:cut] + rng.choice(NAMES) + sentence[cut:]
        yield {"content": f"{sentence}。#{i}", "type": "DECISION", "tags": [], "scope": None}


def write_at_0007(path: Path, memories) -> None:
    engine = db.create_engine(path)
    with engine.connect().execution_options(sqlite_write=True) as conn, conn.begin():
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0007")
        raw = conn.connection.driver_connection
        raw.executemany(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, content_hash) VALUES (?, ?, '[]', 1.0, 1.0, 0, ?, ?, ?)",
            (
                (m["type"], m["content"], 1_767_225_600, 1_767_225_600, content_hash(m["content"]))
                for m in memories
            ),
        )
    engine.dispose()


def vacuumed_mb(path: Path) -> float:
    conn = sqlean.connect(str(path))
    conn.execute("VACUUM")
    conn.close()
    return path.stat().st_size / 1e6


def upgrade(path: Path) -> tuple[float, float, float]:
    """(seconds to open at head, MB before, MB after)."""
    before = vacuumed_mb(path)
    start = time.perf_counter()
    db.open_database(path).close()
    took = time.perf_counter() - start
    return took, before, vacuumed_mb(path)


def timed(service: MemoryService, queries: list[str]) -> tuple[float, float, float]:
    """(p50 ms, p99 ms, mean results)."""
    times, found = [], 0
    for text in queries:
        start = time.perf_counter()
        page = service.db.search(text, None, now=1_767_225_600, limit=10, filters=Filters())
        found += len(page.results)
        times.append(time.perf_counter() - start)
    return pct(times, 0.5) * 1e3, pct(times, 0.99) * 1e3, found / len(queries)


def postgres_upgrade(size: int, words: list[str]) -> None:
    """PostgreSQL's 0009 on a database at 0008 holding ``size`` bench memories and one Chinese
    memory per hundred, each row's lexemes as 0008 wrote them (no bigrams), on a throwaway
    server (tests/support/postgres_server.py)."""
    from unittest import mock

    import psycopg

    from agent_memory import search as query
    from agent_memory.storage.postgres import database, keyword

    latin = [m["content"] for m in corpus.developer_memories(size)]
    chinese = [m["content"] for m in chinese_memories(size // 100, words)]
    with mock.patch.object(query, "indexed_text", lambda text: None):  # as 0008 indexed
        rows = [(content, *keyword.document(content)[:3]) for content in latin + chinese]
    with throwaway_postgres("bench", ("vector",)) as url:
        engine = database.create_engine(url)
        with engine.connect() as conn, conn.begin():
            database._upgrade(conn, 8)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.cursor().executemany(
                "INSERT INTO memories (type, content, tags, base_weight, decay_score,"
                " access_count, created_at, last_accessed, embedding_status, content_hash,"
                " doc_len, terms, tf) VALUES ('TODO', %s, '[]', 1, 1, 0, 0, 0, 0, 0, %s,"
                " %s::tsvector, %s::jsonb)",
                [(content, length, terms, tf) for content, terms, length, tf in rows],
            )
            conn.execute("VACUUM ANALYZE memories")
        start = time.perf_counter()
        with engine.connect() as conn, conn.begin():
            database._upgrade(conn, 9)
        took = time.perf_counter() - start
        engine.dispose()
        print(f"PostgreSQL 0009, {size:,} + {len(chinese):,} Chinese memories: {took:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--upgrade-only", action="store_true", help="the Latin file's upgrade")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL's upgrade only")
    args = parser.parse_args()
    rng = random.Random(3)
    words = vocabulary(rng)
    if args.postgres:
        postgres_upgrade(args.size, words)
        return
    with tempfile.TemporaryDirectory() as tmp:
        latin, chinese = Path(tmp) / "latin.db", Path(tmp) / "chinese.db"
        write_at_0007(latin, corpus.developer_memories(args.size))
        files = [("latin", latin)]
        if not args.upgrade_only:
            write_at_0007(chinese, chinese_memories(args.size, words))
            files.append(("chinese", chinese))
        print(f"{args.size:,} memories | upgrade to head (s) | MB before | MB after")
        for name, path in files:
            took, before, after = upgrade(path)
            print(f"{name} | {took:.1f} | {before:.1f} | {after:.1f}")
        if args.upgrade_only:
            return
        service = MemoryService(open_store(chinese))
        stored = [m["content"] for m in chinese_memories(QUERIES, words)]
        shapes = {
            "one character": zipf(rng, IDEOGRAPHS, 0.8, QUERIES),
            "two-character word": [w for w in words if len(w) == 2][:QUERIES],
            "four-character word": [w for w in words if len(w) == 4][:QUERIES],
            "a pasted run of 30": [text[:30] for text in stored],
            "a pasted run of 300": ["".join(stored[i : i + 20])[:300] for i in range(QUERIES)],
        }
        common = IDEOGRAPHS[0]  # the commonest character; its bigram is in most memories
        attacks = {
            "2,000 of the commonest character": common * 2_000,
            "the two commonest, 1,000 times": (common + IDEOGRAPHS[1]) * 1_000,
            "the commonest and 200 others, each once": common + "".join(IDEOGRAPHS[1:201]),
        }
        print("\nChinese query | p50 ms | p99 ms | results (mean, limit 10)")
        for name, queries in shapes.items():
            p50, p99, mean = timed(service, queries)
            print(f"{name} | {p50:.1f} | {p99:.1f} | {mean:.1f}")
        print("\nChinese attack (one run) | ms | results")
        for name, text in attacks.items():
            start = time.perf_counter()
            try:
                found = len(service.search({"query": text, "limit": 10})["results"])
            except InvalidArgument as exc:
                found = str(exc)[:60]
            print(f"{name} | {(time.perf_counter() - start) * 1e3:.0f} | {found}")
        service.close()


if __name__ == "__main__":
    main()
