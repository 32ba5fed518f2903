"""End to end: MCP over Streamable HTTP at /mcp of the real daemon, with the SDK's client in
both protocol eras, and the exchanges each era's wire promises (raw HTTP)."""

from __future__ import annotations

import json

import anyio
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.rest_daemon import RestDaemon

LEGACY = "legacy"  # initialize, Mcp-Session-Id (the client offers 2025-11-25)
MODERN = "2026-07-28"  # stateless: no initialize, no session
ACCEPT = "application/json, text/event-stream"


@pytest.fixture
def daemon(db_path):
    with RestDaemon(db_path) as running:
        running.drain_stderr()
        yield running


def client(daemon: RestDaemon, mode: str) -> Client:
    return Client(streamable_http_client(daemon.url + "/mcp"), mode=mode)


async def call(mcp: Client, name: str, args: dict):
    try:
        return await mcp.call_tool(name, args)
    except MCPError as exc:
        return exc


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
def test_a_whole_session_in_each_era(daemon, mode):
    async def main():
        async with client(daemon, mode) as mcp:
            version = mcp.protocol_version
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
    assert version == ("2025-11-25" if mode == LEGACY else MODERN)
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


def test_clients_of_both_eras_share_one_daemon_at_once(daemon):
    async def main():
        async with client(daemon, LEGACY) as old, client(daemon, MODERN) as new:
            await old.call_tool(
                "memory_store", {"content": "written by the old era", "type": "TODO"}
            )
            await new.call_tool(
                "memory_store", {"content": "written by the new era", "type": "TODO"}
            )
            seen_by_old = await old.call_tool("memory_list", {})
            seen_by_new = await new.call_tool("memory_search", {"query": "written era"})
            return old.protocol_version, new.protocol_version, seen_by_old, seen_by_new

    old_version, new_version, seen_by_old, seen_by_new = anyio.run(main)
    assert (old_version, new_version) == ("2025-11-25", MODERN)
    assert {m["id"] for m in seen_by_old.structured_content["memories"]} == {1, 2}
    assert {r["id"] for r in seen_by_new.structured_content["results"]} == {1, 2}


def post(daemon: RestDaemon, body: dict, **headers: str) -> requests.Response:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    return daemon.request("POST", "/mcp", data=json.dumps(body), headers=sent)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


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
