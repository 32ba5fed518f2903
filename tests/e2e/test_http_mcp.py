"""End to end: MCP over Streamable HTTP at /mcp of the real daemon, with the SDK's client in
every protocol version it speaks (2025-06-18 and 2025-11-25 with initialize and a session,
2026-07-28 stateless, found by ``server/discover`` or pinned), clients of every era on one
daemon at once (on both engines), and the exchanges each era's wire promises (raw HTTP)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from unittest import mock

import anyio
import mcp.client.session
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.mcp_frames import INITIALIZE
from tests.support.rest_daemon import RestDaemon

pytest_plugins = ["tests.support.pg_fixtures"]

LEGACY = "legacy"  # initialize, Mcp-Session-Id (the client offers 2025-11-25)
MODERN = "2026-07-28"  # stateless: no initialize, no session
ACCEPT = "application/json, text/event-stream"
# How the SDK's client reaches each version: (its mode, the handshake version it offers).
# It offers only its latest handshake version, so 2025-06-18 is offered by changing that
# constant while it connects: the client's own code speaks it, as an older SDK's would.
# "discover" is mode auto: a server/discover probe, then the modern version it finds.
ERAS = {
    "2025-06-18": (LEGACY, "2025-06-18"),
    "2025-11-25": (LEGACY, None),
    "discover": ("auto", None),
    MODERN: (MODERN, None),
}


@pytest.fixture
def daemon(db_path):
    with RestDaemon(db_path) as running:
        running.drain_stderr()
        yield running


def client(daemon: RestDaemon, mode: str) -> Client:
    return Client(streamable_http_client(daemon.url + "/mcp"), mode=mode)


async def connect(stack: AsyncExitStack, daemon: RestDaemon, era: str) -> Client:
    """A connected client of ``era`` (a key of ERAS), closed with ``stack``."""
    mode, offered = ERAS[era]
    if offered is None:
        return await stack.enter_async_context(client(daemon, mode))
    with mock.patch.object(mcp.client.session, "LATEST_HANDSHAKE_VERSION", offered):
        return await stack.enter_async_context(client(daemon, mode))


def negotiated(mcp_client: Client) -> tuple[str, str]:
    """The version in use, and how the client came to it: ``initialize``, ``discover`` (the
    server's answer to server/discover, which names its tools) or ``pinned`` (the minimal
    result the client makes up when told the version)."""
    session = mcp_client.session
    if session.initialize_result is not None:
        return mcp_client.protocol_version, "initialize"
    learned = session.discover_result.capabilities.tools is not None
    return mcp_client.protocol_version, "discover" if learned else "pinned"


async def call(mcp: Client, name: str, args: dict):
    try:
        return await mcp.call_tool(name, args)
    except MCPError as exc:
        return exc


EXPECTED = {
    "2025-06-18": ("2025-06-18", "initialize"),
    "2025-11-25": ("2025-11-25", "initialize"),
    "discover": (MODERN, "discover"),
    MODERN: (MODERN, "pinned"),
}


@pytest.mark.parametrize("era", list(ERAS))
def test_a_whole_session_in_each_era(daemon, era):
    async def main():
        async with AsyncExitStack() as stack:
            mcp = await connect(stack, daemon, era)
            version = negotiated(mcp)
            tools = await mcp.list_tools()
            stored = await call(mcp, "memory_store", {"content": "Maven group", "type": "DECISION"})
            found = await call(mcp, "memory_search", {"query": "maven group?"})
            updated = await call(mcp, "memory_update", {"id": 1, "ttl_secs": 3600})
            unknown = await call(mcp, "memory_update", {"id": 1, "ttl_sec": 1})
            bad = await call(mcp, "memory_search", {"query": "x", "limit": 201})
            stats = await mcp.read_resource("memory://stats")
            prompt = await mcp.get_prompt("memory_protocol", {})
            forgot = await call(mcp, "memory_forget", {"id": 1})
            return version, tools, stored, found, updated, unknown, bad, stats, prompt, forgot

    version, tools, stored, found, updated, unknown, bad, stats, prompt, forgot = anyio.run(main)
    assert version == EXPECTED[era]
    names = [t.name for t in tools.tools]
    assert names[0] == "memory_store" and len(names) == 8
    search_tool = next(t for t in tools.tools if t.name == "memory_search")
    assert search_tool.annotations.read_only_hint is True and search_tool.output_schema
    assert stored.structured_content == {"id": 1}
    assert [r["id"] for r in found.structured_content["results"]] == [1]
    assert updated.structured_content["expires_at"] is not None
    assert unknown.is_error and "unknown field `ttl_sec`" in unknown.content[0].text
    assert (bad.code, bad.message) == (
        -32602,
        "invalid argument: limit must be between 1 and 200 (got 201)",
    )
    assert json.loads(stats.contents[0].text)["memories"] == 1
    assert prompt.messages
    assert forgot.structured_content == {"id": 1, "deleted": True}


def test_a_missing_memory_resource_is_the_same_error_as_over_stdio(daemon):
    async def main():
        async with client(daemon, MODERN) as mcp:
            with pytest.raises(MCPError) as raised:
                await mcp.read_resource("memory://42")
            return raised.value

    error = anyio.run(main)
    assert (error.code, error.message) == (-32602, "resource not found: no memory has id 42")


def test_clients_of_every_era_share_one_daemon_at_once(location):
    """Four clients, one per version, all connected before any of them acts, then acting at
    once: each stores, then each searches and lists what all stored, one updates what
    another stored, and one forgets another's memory. On SQLite and on PostgreSQL."""
    eras = list(ERAS)

    async def act(mcp: Client, n: int, out: dict) -> None:
        stored = await mcp.call_tool(
            "memory_store", {"content": f"shared note {n} from {eras[n]}", "type": "TODO"}
        )
        out[n] = stored.structured_content["id"]

    async def read(mcp: Client, n: int, seen: dict) -> None:
        found = await mcp.call_tool("memory_search", {"query": "shared note", "limit": 10})
        listed = await mcp.call_tool("memory_list", {})
        seen[n] = (
            {r["id"] for r in found.structured_content["results"]},
            {m["id"] for m in listed.structured_content["memories"]},
        )

    async def main():
        async with AsyncExitStack() as stack:
            clients = [await connect(stack, daemon, era) for era in eras]
            ids: dict[int, int] = {}
            seen: dict[int, tuple[set, set]] = {}
            async with anyio.create_task_group() as group:
                for n, mcp in enumerate(clients):
                    group.start_soon(act, mcp, n, ids)
            async with anyio.create_task_group() as group:
                for n, mcp in enumerate(clients):
                    group.start_soon(read, mcp, n, seen)
            updated = await clients[0].call_tool(
                "memory_update", {"id": ids[3], "content": "shared note 3, revised by 2025-06-18"}
            )
            forgot = await clients[2].call_tool("memory_forget", {"id": ids[1]})
            after = await clients[3].call_tool("memory_list", {})
            versions = [negotiated(mcp) for mcp in clients]
        return versions, ids, seen, updated, forgot, after

    with RestDaemon(location) as daemon:
        daemon.drain_stderr()
        versions, ids, seen, updated, forgot, after = anyio.run(main)
    assert versions == [EXPECTED[era] for era in eras]
    assert sorted(ids.values()) == [1, 2, 3, 4]
    assert all(found == listed == {1, 2, 3, 4} for found, listed in seen.values())
    assert updated.structured_content["content"] == "shared note 3, revised by 2025-06-18"
    assert forgot.structured_content == {"id": ids[1], "deleted": True}
    remaining = {m["id"]: m["content"] for m in after.structured_content["memories"]}
    assert set(remaining) == {1, 2, 3, 4} - {ids[1]}
    assert remaining[ids[3]] == "shared note 3, revised by 2025-06-18"


def post(daemon: RestDaemon, body: dict, **headers: str) -> requests.Response:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    return daemon.request("POST", "/mcp", data=json.dumps(body), headers=sent)


def test_the_2025_wire_a_session_and_202_for_a_notification(daemon):
    opened = post(daemon, INITIALIZE)
    session = opened.headers["Mcp-Session-Id"]
    assert opened.status_code == 200 and opened.json()["result"]["protocolVersion"] == "2025-06-18"
    in_session = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    note = post(daemon, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **in_session)
    assert (note.status_code, note.content) == (202, b"")
    listed = post(daemon, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **in_session)
    assert len(listed.json()["result"]["tools"]) == 8
    stranger = {**in_session, "Mcp-Session-Id": "0" * 32}
    assert (
        post(daemon, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, **stranger).status_code
        == 404
    )
    ended = daemon.request("DELETE", "/mcp", headers=in_session)
    assert ended.status_code == 200
    after = post(daemon, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, **in_session)
    assert after.status_code == 404


def test_the_2026_wire_is_stateless(daemon):
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    found = post(daemon, body, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})
    assert found.status_code == 200 and "Mcp-Session-Id" not in found.headers
    assert MODERN in found.json()["result"]["supportedVersions"]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "memory_list", "arguments": {}, "_meta": meta},
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "memory_list",
    }
    listed = post(daemon, call, **headers)
    assert listed.status_code == 200, listed.text
    assert listed.json()["result"]["structuredContent"] == {"memories": []}


def test_no_open_ended_stream_and_the_address_rule_holds(daemon):
    get = daemon.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    assert (get.status_code, get.headers["Allow"]) == (405, "DELETE, POST")
    rebound = post(daemon, INITIALIZE, Host=f"attacker.example:{daemon.port}")
    assert rebound.status_code == 403 and "not this daemon's address" in rebound.json()["error"]
    foreign = post(daemon, INITIALIZE, Origin="https://attacker.example")
    assert foreign.status_code == 403 and "cross-site request" in foreign.json()["error"]
    assert post(daemon, INITIALIZE, Origin=daemon.url).status_code == 200


def test_a_public_name_is_accepted_when_configured(db_path):
    with RestDaemon(db_path, "--public-host", "memory.example.com") as daemon:
        daemon.drain_stderr()
        named = post(daemon, INITIALIZE, Host="memory.example.com")
        origin = post(daemon, INITIALIZE, Origin="https://memory.example.com")
        other = post(daemon, INITIALIZE, Host="other.example.com")
    assert (named.status_code, origin.status_code, other.status_code) == (200, 200, 403)
