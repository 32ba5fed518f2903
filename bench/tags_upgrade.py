"""What the upgrade that indexes tags takes: SQLite's revision 0009, PostgreSQL's 0010.

    .venv/bin/python -m bench.tags_upgrade [--size 100000] [--postgres]

A file of --size bench memories (bench/corpus.py developer_memories, two tags each) is
written at revision 0008 (plain SQL, indexed by that revision's triggers), then opened at
head, which backs it up and migrates it (0009: keyword_tags for the rows whose tags hold a
script written without spaces, the keyword index made again from the view). Printed: the
upgrade's time and the file's size before and after (both vacuumed). With --postgres,
PostgreSQL's 0010 instead, on a throwaway server (tests/support/postgres_server.py): a database at
0009 holding the same memories, their keyword columns as 0009 wrote them (content only),
brought to 0010.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from alembic import command

from agent_memory.contract.models import content_hash
from agent_memory.storage.sqlite import database as db
from agent_memory.storage.sqlite.migrate import alembic_config
from bench import corpus
from bench._common import throwaway_postgres
from bench.cjk import vacuumed_mb

T0 = 1_767_225_600


def write_at_0008(path: Path, size: int) -> None:
    engine = db.create_engine(path)
    with engine.connect().execution_options(sqlite_write=True) as conn, conn.begin():
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")
        conn.connection.driver_connection.executemany(
            "INSERT INTO memories (type, content, tags, base_weight, decay_score, access_count,"
            " created_at, last_accessed, content_hash) VALUES (?, ?, ?, 1.0, 1.0, 0, ?, ?, ?)",
            (
                (m["type"], m["content"], json.dumps(m["tags"]), T0, T0, content_hash(m["content"]))
                for m in corpus.developer_memories(size)
            ),
        )
    engine.dispose()


def sqlite_upgrade(size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        write_at_0008(path, size)
        before = vacuumed_mb(path)
        start = time.perf_counter()
        db.open_database(path).close()
        took = time.perf_counter() - start
        print(
            f"SQLite 0009, {size:,} memories: {took:.1f} s (backup included),"
            f" {before:.1f} MB before, {vacuumed_mb(path):.1f} MB after"
        )


def postgres_upgrade(size: int) -> None:
    import psycopg

    from agent_memory.storage.postgres import database, keyword

    rows = [
        (m["type"], m["content"], json.dumps(m["tags"]), *keyword.document(m["content"])[:3])
        for m in corpus.developer_memories(size)
    ]
    with throwaway_postgres("bench") as url:
        engine = database.create_engine(url)
        with engine.connect() as conn, conn.begin():
            database._upgrade(conn, 9)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.cursor().executemany(
                "INSERT INTO memories (type, content, tags, base_weight, decay_score,"
                " access_count, created_at, last_accessed, embedding_status, content_hash,"
                " terms, doc_len, tf) VALUES (%s, %s, %s::jsonb, 1, 1, 0, 0, 0, 0, 0,"
                " %s::tsvector, %s, %s::jsonb)",
                rows,
            )
            conn.execute("VACUUM ANALYZE memories")
        start = time.perf_counter()
        with engine.connect() as conn, conn.begin():
            database._upgrade(conn, 10)
        took = time.perf_counter() - start
        engine.dispose()
        print(f"PostgreSQL 0010, {size:,} memories: {took:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL's upgrade")
    args = parser.parse_args()
    (postgres_upgrade if args.postgres else sqlite_upgrade)(args.size)


if __name__ == "__main__":
    main()
