"""MCP over Streamable HTTP (the daemon's /mcp) against MCP over stdio (`serve`), side by side.

At --memories memories (keyword search: no embedder, so the transports are what differs):
store and search p50/p99 at one client (the transports connected at once, taking turns in
rounds, after a few untimed calls), and searches per second at 1, 4 and 16 clients, timed
once every client is connected and has made a few calls (HTTP: clients of one daemon;
stdio: one `serve` process per client, as runtimes do today). All on one SQLite file.
The daemon runs once per --workers count (`serve-rest --workers N`), all at once: with
several workers a client's connection is served by one of them, so clients spread over
the workers' processes (and cores) as they connect.

    python -m bench.http_mcp [--memories 10000] [--ops 200] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack, ExitStack
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
# The one-client latencies are taken in this many rounds, the transports taking turns.
ROUNDS = 4
# Searches each client makes, untimed, before a throughput run starts its clock.
WARM_UP = 3
DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - the stdio servers' stderr, for the run
Maker = Callable[[], Client]


def seed(db: Path, memories: int) -> None:
    service = MemoryService(open_store(db))
    try:
        for i in range(memories):
            words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
            service.store({"content": f"note {i}: {words}", "type": "TODO"})
    finally:
        service.close()


async def latencies(makers: dict[str, Maker], ops: int) -> dict[str, tuple[list, list]]:
    """Store and search latencies (ms) at one client per transport, all connected at once
    and taking turns: ROUNDS rounds, each transport's share of a round run back to back, the
    order rotated each round, so the machine's load falls on every transport alike."""
    out: dict[str, tuple[list, list]] = {name: ([], []) for name in makers}
    names = list(makers)
    async with AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(makers[name]()) for name in names}
        for mcp in clients.values():  # untimed: a new server's first calls import lazily
            for i in range(WARM_UP):
                await mcp.call_tool("memory_search", {"query": WORDS[i], "limit": 10})
        for round_ in range(ROUNDS):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for name in order:
                stores, searches = out[name]
                for i in range(round_ * ops // ROUNDS, (round_ + 1) * ops // ROUNDS):
                    content = {"content": f"bench {name} {i} deploy", "type": "TODO"}
                    began = time.perf_counter()
                    await clients[name].call_tool("memory_store", content)
                    stores.append((time.perf_counter() - began) * 1000)
                    query = {"query": WORDS[i % len(WORDS)], "limit": 10}
                    began = time.perf_counter()
                    await clients[name].call_tool("memory_search", query)
                    searches.append((time.perf_counter() - began) * 1000)
    return out


async def throughput(make: Maker, clients: int, ops: int) -> float:
    """Searches per second with ``clients`` clients each making ``ops`` searches, timed
    from when every client is connected (a stdio server's start is not counted)."""
    async with AsyncExitStack() as stack:
        connected = [await stack.enter_async_context(make()) for _ in range(clients)]

        async def one(mcp: Client) -> None:
            for i in range(ops):
                await mcp.call_tool("memory_search", {"query": WORDS[i % len(WORDS)], "limit": 10})

        for mcp in connected:  # a new server's first calls load what it imports lazily
            for i in range(WARM_UP):
                await mcp.call_tool("memory_search", {"query": WORDS[i], "limit": 10})

        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for mcp in connected:
                group.start_soon(one, mcp)
        return clients * ops / (time.perf_counter() - began)


def http_makers(url: str, workers: int) -> dict[str, Maker]:
    """The HTTP clients of one daemon: an era each (2025: a session, unless workers > 1)."""
    legacy = "2025 session" if workers == 1 else "2025"
    return {
        f"http {legacy} x{workers}": lambda: Client(streamable_http_client(url), mode="legacy"),
        f"http 2026-07-28 x{workers}": lambda: Client(
            streamable_http_client(url), mode="2026-07-28"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--workers", default="1,2", help="daemons' worker counts, comma-separated")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        log(f"seeding {args.memories} memories")
        seed(db, args.memories)
        params = StdioServerParameters(
            command=agent_memory_cmd(), args=["--db", str(db), "serve"], env=server_env()
        )
        with ExitStack() as daemons:
            makers: dict[str, Maker] = {}
            for count in counts:
                daemon = RestDaemon(db, "--workers", str(count), log_level="warning")
                daemons.enter_context(daemon)
                daemon.drain_stderr()
                makers.update(http_makers(daemon.url + "/mcp", count))
            makers["stdio"] = lambda: Client(stdio_client(params, errlog=DEVNULL))
            timed = anyio.run(latencies, makers, args.ops)
            rates: dict[str, list[float]] = {name: [] for name in makers}
            for n in CLIENT_COUNTS:  # each count: every transport, one after the other
                for name, make in makers.items():
                    rates[name].append(anyio.run(throughput, make, n, max(20, args.ops // n)))
    loads = os.getloadavg()
    rows = []
    for name, (stores, searches) in timed.items():
        rows.append(
            [
                name,
                f"{pct(stores, 0.5):.2f}",
                f"{pct(stores, 0.99):.2f}",
                f"{pct(searches, 0.5):.2f}",
                f"{pct(searches, 0.99):.2f}",
                *(f"{r:.0f}" for r in rates[name]),
            ]
        )
    print(f"{machine()} (1/5/15 min: {loads[0]:.1f} {loads[1]:.1f} {loads[2]:.1f})")
    print(f"{args.memories} memories, {args.ops} ops, keyword search; xN: serve-rest --workers N")
    head = ["transport", "store p50 ms", "store p99", "search p50", "search p99"]
    print(table([*head, *(f"search/s @{n}" for n in CLIENT_COUNTS)], rows))


if __name__ == "__main__":
    main()
