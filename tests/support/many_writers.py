"""A seeded mix of store, update, link and forget that several real processes run at once,
over MCP or REST, each worker keeping a ledger of what it was told succeeded."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import anyio
from mcp import Client, StdioServerParameters

from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import executable, server_env

MCP_WORKERS = 5
OPS_PER_WORKER = 80
KINDS = ("relates_to", "supersedes", "caused_by")


@dataclass
class Ledger:
    """What one worker was told succeeded."""

    contents: dict[int, str] = field(default_factory=dict)  # live id -> last content
    forgotten: set[int] = field(default_factory=set)
    links: set[tuple[int, int, str]] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    ops: int = 0


async def run_worker(name: str, call, rng: random.Random, ledger: Ledger) -> None:
    """``call(tool, args) -> (ok, result)``; the same plan over MCP and over REST."""
    for n in range(OPS_PER_WORKER):
        live = sorted(ledger.contents)
        roll = rng.random()
        if roll < 0.55 or len(live) < 2:
            content = f"{name} note {n} about shared memory"
            ok, result = await call("memory_store", {"content": content, "type": "PATTERN"})
            if ok:
                ledger.contents[result["id"]] = content
        elif roll < 0.7:
            target = rng.choice(live)
            content = f"{name} edit {n} of {target}"
            ok, result = await call("memory_update", {"id": target, "content": content})
            if ok:
                ledger.contents[target] = content
        elif roll < 0.85:
            a, b = rng.sample(live, 2)
            kind = rng.choice(KINDS)
            ok, result = await call("memory_link", {"from_id": a, "to_id": b, "kind": kind})
            if ok:  # relates_to is symmetric: stored once, lower id first
                ledger.links.add(
                    (min(a, b), max(a, b), kind) if kind == "relates_to" else (a, b, kind)
                )
        else:
            target = rng.choice(live)
            ok, result = await call("memory_forget", {"id": target})
            if ok:
                del ledger.contents[target]
                ledger.forgotten.add(target)
                ledger.links = {e for e in ledger.links if target not in e[:2]}
        ledger.ops += 1
        if not ok:
            ledger.errors.append(f"{name}: {result}")


def mcp_caller(client: Client):
    async def call(tool: str, args: dict):
        try:
            result = await client.call_tool(tool, args)
        except Exception as exc:
            return False, repr(exc)
        if result.is_error:
            return False, str(result.content)
        return True, result.structured_content

    return call


def rest_caller(daemon: RestDaemon):
    routes = {
        "memory_store": lambda a: ("POST", "/api/memories", a),
        "memory_update": lambda a: ("PATCH", f"/api/memories/{a['id']}", {"content": a["content"]}),
        "memory_link": lambda a: ("POST", "/api/links", a),
        "memory_forget": lambda a: ("DELETE", f"/api/memories/{a['id']}", None),
    }

    async def call(tool: str, args: dict):
        method, path, body = routes[tool](args)
        response = await anyio.to_thread.run_sync(lambda: daemon.request(method, path, json=body))
        if response.status_code >= 300:
            return False, f"{response.status_code} {response.text}"
        return True, response.json()

    return call


def write_at_once(location: str) -> Ledger:
    """MCP_WORKERS ``serve`` processes (the official MCP client) and one ``serve-rest``, all
    sweeping every second, run their workers on ``location`` at once; every client saw no
    error and ran every operation. What they were told succeeded, merged into one ledger."""
    params = StdioServerParameters(
        command=executable(),
        args=["--db", location, "--sweep-interval", "1", "--log-level", "warning", "serve"],
        env=server_env(),
    )
    daemon = RestDaemon(location, log_level="warning", env={"AGENT_MEMORY_SWEEP_INTERVAL": "1"})
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
    merged = Ledger(
        contents={i: c for ledger in ledgers for i, c in ledger.contents.items()},
        forgotten=set().union(*(ledger.forgotten for ledger in ledgers)),
        links=set().union(*(ledger.links for ledger in ledgers)),
    )
    assert len(merged.contents) == sum(len(ledger.contents) for ledger in ledgers)  # ids unshared
    return merged
