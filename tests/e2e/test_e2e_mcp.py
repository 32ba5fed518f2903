"""End to end: the real ``agent-memory serve`` executable over stdio, with the SDK's client."""

from __future__ import annotations

import json
import subprocess
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.storage.sqlite.database import head_revision
from tests.support.clock import Clock
from tests.support.spawned import executable, run_agent_memory, server_env

pytest_plugins = ["tests.support.pg_fixtures"]

DEADLINE_SECS = 60


def params(db_path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=executable(), args=["--db", str(db_path), *extra, "serve"], env=server_env()
    )


async def call(client, name, args):
    try:
        return await client.call_tool(name, args)
    except MCPError as exc:
        return exc


def test_full_session_over_stdio(location, tmp_path):
    errlog = (tmp_path / "stderr.log").open("w+")

    async def main():
        async with Client(stdio_client(params(location), errlog=errlog)) as client:
            tools = await client.list_tools()
            stored = await call(
                client,
                "memory_store",
                {"content": "Maven group is io.github", "type": "DECISION", "tags": ["maven"]},
            )
            found = await call(client, "memory_search", {"query": "maven group?", "tag": "maven"})
            listed = await call(client, "memory_list", {"type": "DECISION", "limit": 5})
            updated = await call(client, "memory_update", {"id": 1, "ttl_secs": 3600})
            unknown = await call(client, "memory_update", {"id": 1, "ttl_sec": 1})
            bad = await call(client, "memory_search", {"query": "x", "limit": 201})
            forgot = await call(client, "memory_forget", {"id": 1})
            return tools, stored, found, listed, updated, unknown, bad, forgot

    tools, stored, found, listed, updated, unknown, bad, forgot = anyio.run(main)
    assert len(tools.tools) == 8
    assert stored.structured_content == {"id": 1}
    assert [r["id"] for r in found.structured_content["results"]] == [1]
    assert [m["id"] for m in listed.structured_content["memories"]] == [1]
    assert updated.structured_content["expires_at"] is not None
    assert unknown.is_error and "unknown field `ttl_sec`" in unknown.content[0].text
    assert (bad.code, bad.message) == (
        -32602,
        "invalid argument: limit must be between 1 and 200 (got 201)",
    )
    assert forgot.structured_content == {"id": 1, "deleted": True}
    errlog.seek(0)
    assert "database" in errlog.read()  # logs went to stderr


def test_storage_fault_in_a_tool_call_is_generic_and_logged(db_path, tmp_path, raw):
    errlog = (tmp_path / "stderr.log").open("w+")

    async def main():
        async with Client(stdio_client(params(db_path), errlog=errlog)) as client:
            await call(client, "memory_store", {"content": "before", "type": "TODO"})
            raw.execute("ALTER TABLE memories RENAME TO moved_away")
            raw.commit()
            return await call(client, "memory_search", {"query": "before"})

    error = anyio.run(main)
    assert (error.code, error.message) == (
        -32603,
        "search failed due to a storage error (details are in the server log)",
    )
    errlog.seek(0)
    assert "no such table" in errlog.read()


def test_two_servers_share_one_file(location):
    async def main():
        async with Client(params(location)) as one, Client(params(location)) as two:
            await call(
                one, "memory_store", {"content": "shared across runtimes", "type": "PATTERN"}
            )
            seen = await call(two, "memory_search", {"query": "runtimes"})
            await call(two, "memory_forget", {"id": 1})
            gone = await call(one, "memory_list", {})
            return seen, gone

    seen, gone = anyio.run(main)
    assert [r["content"] for r in seen.structured_content["results"]] == ["shared across runtimes"]
    assert gone.structured_content == {"memories": []}


def test_sweep_runs_at_start(db_path):
    past = Clock(int(time.time()) - 3600)
    store = open_store(db_path)
    MemoryService(store, clock=past).store(
        {"content": "expired an hour ago", "type": "TODO", "ttl_secs": 60}
    )
    MemoryService(store).store({"content": "still here", "type": "TODO"})
    store.close()

    async def main():
        async with Client(params(db_path)) as client:
            deadline = time.monotonic() + DEADLINE_SECS
            while time.monotonic() < deadline:  # each turn is a real round trip, not a sleep
                listed = await call(client, "memory_list", {})
                if len(listed.structured_content["memories"]) == 1:
                    return listed
            raise AssertionError("the start-up sweep never removed the expired memory")

    listed = anyio.run(main)
    assert [m["content"] for m in listed.structured_content["memories"]] == ["still here"]


def _rpc(id_, method, params=None):
    msg = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg) + "\n"


def test_stdout_carries_only_json_rpc(db_path):
    requests = [
        _rpc(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        ),
        _rpc(None, "notifications/initialized"),
        _rpc(2, "tools/list"),
        _rpc(
            3,
            "tools/call",
            {"name": "memory_store", "arguments": {"content": "purity", "type": "TODO"}},
        ),
        _rpc(4, "tools/call", {"name": "memory_search", "arguments": {"query": "purity"}}),
        _rpc(5, "tools/call", {"name": "memory_search", "arguments": {"query": "x", "limit": 0}}),
        _rpc(6, "tools/call", {"name": "memory_update", "arguments": {"id": 1, "bogus": 1}}),
        _rpc(7, "tools/call", {"name": "memory_list", "arguments": {}}),
    ]
    proc = subprocess.Popen(
        [executable(), "--db", str(db_path), "--log-level", "debug", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    lines = []
    for request in requests:  # one answer read per request, so none is cut off at EOF
        proc.stdin.write(request)
        proc.stdin.flush()
        if '"id"' in request:
            lines.append(proc.stdout.readline())
    proc.stdin.close()
    lines += proc.stdout.read().splitlines()  # nothing else may follow
    stderr = proc.stderr.read()
    assert proc.wait(timeout=DEADLINE_SECS) == 0, stderr
    messages = [json.loads(line) for line in lines if line.strip()]  # every stdout line is JSON
    assert len(messages) == len([line for line in lines if line.strip()]) == 7
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages}
    assert set(by_id) == {1, 2, 3, 4, 5, 6, 7}
    assert by_id[3]["result"]["structuredContent"] == {"id": 1}
    assert by_id[4]["result"]["structuredContent"]["results"][0]["content"] == "purity"
    assert by_id[5]["error"]["code"] == -32602
    assert by_id[6]["result"]["isError"] is True
    assert "DEBUG" in stderr and not any("DEBUG" in line for line in lines)


NEWER = head_revision() + 1  # a schema no release of this binary knows


@pytest.mark.parametrize(
    "setup,expected",
    [
        ("garbage", "file is not a database"),
        ("newer", f"database schema is version {NEWER} but this binary supports up to version"),
        ("directory", "is a directory"),
    ],
)
def test_unusable_database_is_one_line_and_exit_1(db_path, setup, expected):
    if setup == "garbage":
        db_path.write_bytes(b"not a database " * 200)
    elif setup == "newer":
        open_store(db_path).close()
        import sqlean

        conn = sqlean.connect(str(db_path))
        conn.execute(f"UPDATE alembic_version SET version_num = '{NEWER:04d}'")
        conn.commit()
        conn.close()
    else:
        db_path.mkdir()
    proc = run_agent_memory("--db", str(db_path), "serve")
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_relations_end_to_end(db_path, raw):
    async def main():
        async with Client(params(db_path)) as client:
            await call(client, "memory_store", {"content": "use Maven Central", "type": "DECISION"})
            await call(
                client, "memory_store", {"content": "use the Sonatype portal", "type": "DECISION"}
            )
            linked = await call(
                client, "memory_link", {"from_id": 2, "to_id": 1, "kind": "supersedes"}
            )
            listed = {"limit": 10, "expand_links": True, "include_superseded": True}
            expanded = await call(client, "memory_list", listed)
            refused = await call(
                client, "memory_link", {"from_id": 1, "to_id": 1, "kind": "supersedes"}
            )
            forgot = await call(client, "memory_forget", {"id": 1})
            return linked, expanded, refused, forgot

    linked, expanded, refused, forgot = anyio.run(main)
    assert linked.structured_content["linked"] is True
    related = {m["id"]: m["related"] for m in expanded.structured_content["memories"]}
    assert [(r["id"], r["kind"]) for r in related[1]] == [(2, "superseded_by")]
    assert (refused.code, refused.message) == (
        -32602,
        "invalid argument: from_id and to_id must differ (got 1)",
    )
    assert forgot.structured_content["deleted"] is True
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


def test_a_list_longer_than_a_wire_slice_arrives_whole(db_path):
    """One JSON-RPC line of several MiB with multi-byte text, written a slice at a time."""
    svc = MemoryService(open_store(db_path))
    contents = [f"{i} é\u2603\U0001f600 " * 80_000 for i in range(3)]  # 960 kB of UTF-8 each
    for content in contents:
        svc.store({"content": content, "type": "TODO"})
    svc.close()

    async def main():
        async with Client(stdio_client(params(db_path))) as client:
            return await client.call_tool("memory_list", {})

    listed = anyio.run(main)
    memories = listed.structured_content["memories"]
    assert [m["content"] for m in memories] == contents[::-1]
    assert json.loads(listed.content[0].text) == listed.structured_content
