"""MCP over Streamable HTTP (the daemon's /mcp) against MCP over stdio (`serve`), side by side.

At --memories memories (keyword search: no embedder, so the transports are what differs):
store and search p50/p99 at one client, and searches per second at 1, 4 and 16 clients
(HTTP: clients of one daemon; stdio: one `serve` process per client, as runtimes do today).

    python -m bench.http_mcp [--memories 10000] [--ops 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import agent_memory_cmd, log, machine, pct, table
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import server_env

WORDS = ["deploy", "cache", "index", "schema", "token", "retry", "queue", "build", "release"]
CLIENT_COUNTS = (1, 4, 16)


def seed(db: Path, memories: int) -> None:
    service = MemoryService(open_store(db))
    try:
        for i in range(memories):
            words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
            service.store({"content": f"note {i}: {words}", "type": "TODO"})
    finally:
        service.close()


async def latencies(make: Callable[[], Client], ops: int) -> tuple[list[float], list[float]]:
    stores, searches = [], []
    async with make() as mcp:
        for i in range(ops):
            began = time.perf_counter()
            await mcp.call_tool("memory_store", {"content": f"bench {i} deploy", "type": "TODO"})
            stores.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            await mcp.call_tool("memory_search", {"query": WORDS[i % len(WORDS)], "limit": 10})
            searches.append((time.perf_counter() - began) * 1000)
    return stores, searches


async def throughput(make: Callable[[], Client], clients: int, ops: int) -> float:
    """Searches per second with ``clients`` clients each making ``ops`` searches."""
    done = 0

    async def one() -> None:
        nonlocal done
        async with make() as mcp:
            for i in range(ops):
                await mcp.call_tool("memory_search", {"query": WORDS[i % len(WORDS)], "limit": 10})
                done += 1

    began = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(one)
    return done / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        log(f"seeding {args.memories} memories")
        seed(db, args.memories)
        params = StdioServerParameters(
            command=agent_memory_cmd(), args=["--db", str(db), "serve"], env=server_env()
        )
        with RestDaemon(db, log_level="warning") as daemon:
            daemon.drain_stderr()
            url = daemon.url + "/mcp"
            makers = {
                "http (2025 session)": lambda: Client(streamable_http_client(url), mode="legacy"),
                "http (2026-07-28)": lambda: Client(streamable_http_client(url), mode="2026-07-28"),
                "stdio": lambda: Client(stdio_client(params)),
            }
            rows = []
            for name, make in makers.items():
                stores, searches = anyio.run(latencies, make, args.ops)
                rates = [
                    anyio.run(throughput, make, n, max(20, args.ops // n)) for n in CLIENT_COUNTS
                ]
                rows.append(
                    [
                        name,
                        f"{pct(stores, 0.5):.2f}",
                        f"{pct(stores, 0.99):.2f}",
                        f"{pct(searches, 0.5):.2f}",
                        f"{pct(searches, 0.99):.2f}",
                        *(f"{r:.0f}" for r in rates),
                    ]
                )
    print(f"{machine()}; {args.memories} memories, {args.ops} ops, keyword search")
    head = ["transport", "store p50 ms", "store p99", "search p50", "search p99"]
    print(table([*head, *(f"search/s @{n}" for n in CLIENT_COUNTS)], rows))


if __name__ == "__main__":
    main()
