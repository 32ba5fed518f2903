"""Many real processes write one file at once, and nothing is lost or doubled.

Five ``agent-memory serve`` processes (each driven by the official MCP client) and one
``agent-memory serve-rest`` daemon, all with a sweep every second, run a seeded mix of
store, update, link and forget at the same time. Every acknowledged write must then be in
the file exactly once with its last acknowledged content, every acknowledged forget gone,
no client may have seen an error, and SQLite's and FTS5's integrity checks must pass.
"""

from __future__ import annotations

import random

import anyio
import sqlean
from mcp import Client, StdioServerParameters

from tests.support.many_writers import (
    MCP_WORKERS,
    OPS_PER_WORKER,
    Ledger,
    mcp_caller,
    rest_caller,
    run_worker,
)
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, server_env


def test_six_processes_write_at_once_and_nothing_is_lost(db_path):
    params = StdioServerParameters(
        command=executable(),
        args=["--db", str(db_path), "--sweep-interval", "1", "--log-level", "warning", "serve"],
        env=server_env(),
    )
    daemon = RestDaemon(db_path, log_level="warning", env={"AGENT_MEMORY_SWEEP_INTERVAL": "1"})
    ledgers = [Ledger() for _ in range(MCP_WORKERS + 1)]

    async def main() -> None:
        clients = [Client(params) for _ in range(MCP_WORKERS)]
        for client in clients:
            await client.__aenter__()
        try:
            async with anyio.create_task_group() as group:
                for i, client in enumerate(clients):
                    group.start_soon(
                        run_worker, f"mcp{i}", mcp_caller(client), random.Random(i), ledgers[i]
                    )
                group.start_soon(
                    run_worker, "rest", rest_caller(daemon), random.Random(99), ledgers[-1]
                )
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)

    try:
        anyio.run(main)
    finally:
        assert daemon.stop() == 0

    assert [e for ledger in ledgers for e in ledger.errors] == []
    assert sum(ledger.ops for ledger in ledgers) == (MCP_WORKERS + 1) * OPS_PER_WORKER
    expected = {i: c for ledger in ledgers for i, c in ledger.contents.items()}
    forgotten = set().union(*(ledger.forgotten for ledger in ledgers))
    links = set().union(*(ledger.links for ledger in ledgers))
    assert len(expected) == sum(len(ledger.contents) for ledger in ledgers)  # ids never shared

    conn = sqlean.connect(str(db_path))
    try:
        rows = dict(conn.execute("SELECT id, content FROM memories").fetchall())
        assert rows == expected  # every acknowledged write once, with its last content
        assert not forgotten & set(rows)
        stored_links = set(conn.execute("SELECT from_id, to_id, kind FROM memory_links"))
        assert links <= stored_links
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        for memory_id, content in list(expected.items())[:: max(1, len(expected) // 40)]:
            word = content.split()[0]  # the worker's name: found through the index
            hits = conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)
            ).fetchall()
            assert (memory_id,) in hits
    finally:
        conn.close()
