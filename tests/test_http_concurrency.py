"""Sixteen MCP clients over HTTP (both eras) and four REST clients on one real daemon at
once: every write lands exactly once, every answer is a success (no 5xx)."""

from __future__ import annotations

import threading

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.rest_daemon import RestDaemon

MCP_CLIENTS = 16
REST_CLIENTS = 4
WRITES_EACH = 6


def test_sixteen_mcp_and_four_rest_clients_lose_and_double_nothing(db_path):
    with RestDaemon(db_path) as daemon:
        daemon.drain_stderr()
        statuses: list[int] = []
        errors: list[str] = []

        def rest_writer(n: int) -> None:
            for i in range(WRITES_EACH):
                body = {"content": f"rest {n} write {i}", "type": "TODO"}
                statuses.append(daemon.request("POST", "/api/memories", json=body).status_code)
                found = daemon.request("POST", "/api/search", json={"query": f"rest {n}"})
                statuses.append(found.status_code)

        async def mcp_writer(n: int) -> None:
            mode = "legacy" if n % 2 else "2026-07-28"
            async with Client(streamable_http_client(daemon.url + "/mcp"), mode=mode) as mcp:
                for i in range(WRITES_EACH):
                    content = {"content": f"mcp {n} write {i}", "type": "TODO"}
                    stored = await mcp.call_tool("memory_store", content)
                    found = await mcp.call_tool("memory_search", {"query": f"mcp {n}"})
                    for result in (stored, found):
                        if result.is_error:
                            errors.append(result.content[0].text)

        async def all_mcp() -> None:
            async with anyio.create_task_group() as group:
                for n in range(MCP_CLIENTS):
                    group.start_soon(mcp_writer, n)

        threads = [threading.Thread(target=rest_writer, args=(n,)) for n in range(REST_CLIENTS)]
        for thread in threads:
            thread.start()
        anyio.run(all_mcp)
        for thread in threads:
            thread.join()
        listed = daemon.request("GET", "/api/memories").json()
        assert daemon.stop() == 0
    assert errors == []
    assert set(statuses) <= {200, 201}
    contents = [m["content"] for m in listed]
    expected = {f"mcp {n} write {i}" for n in range(MCP_CLIENTS) for i in range(WRITES_EACH)}
    expected |= {f"rest {n} write {i}" for n in range(REST_CLIENTS) for i in range(WRITES_EACH)}
    assert len(contents) == len(expected) and set(contents) == expected
    assert not any("Traceback" in line for line in daemon.stderr_lines)
