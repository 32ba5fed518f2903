"""Fuzzing the doors in process: MCP tool arguments, the JSONL reader, the import command and
REST bodies.

A client's mistake is never a -32603 (internal error), never a traceback, and never a
write. (The REST API is fuzzed by schemathesis in tests/e2e/test_openapi.py.)"""

from __future__ import annotations

import json
import re

import anyio
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_memory.cli.main import cli
from agent_memory.contract.errors import AgentMemoryError
from agent_memory.mcp import server as mcp_server
from agent_memory.transfer.portable import jsonl_reader
from tests.support.files import dump
from tests.support.fuzz import FIELDS, VALUES, arguments
from tests.support.tiers import examples

SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck)
)


CALLS = st.sampled_from(sorted(FIELDS)).flatmap(
    lambda tool: st.tuples(st.just(tool), arguments(tool))
)


@given(call=CALLS)
@SETTINGS
def test_tool_arguments_never_make_an_internal_error_or_a_rejected_write(service, db_path, call):
    tool, args = call
    seeded = dump(db_path)

    async def main():
        async with Client(mcp_server.build_server(service)) as client:
            try:
                return await client.call_tool(tool, args)
            except MCPError as exc:
                return exc

    result = anyio.run(main)
    if isinstance(result, MCPError):
        assert result.error.code == -32602, result.error
        assert dump(db_path) == seeded
    elif result.is_error:  # the unknown-field answer of memory_update
        assert "unknown field" in result.content[0].text, result.content
        assert dump(db_path) == seeded


LINES = st.lists(
    st.one_of(
        st.text(max_size=60),
        VALUES.map(json.dumps),
        st.fixed_dictionaries({"record": st.sampled_from(["memory", "link", "header", "x"])}).map(
            json.dumps
        ),
    ),
    max_size=6,
)


@given(lines=LINES)
@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
def test_the_jsonl_reader_refuses_garbage_with_a_line_number(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fuzz") / "in.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    reader = jsonl_reader(path)
    try:
        reader.check()
    except AgentMemoryError as exc:  # the only way a bad file may fail: naming its line
        assert re.search(r"line \d+", str(exc)), str(exc)
    else:  # only a file that really is an export passes
        assert reader.header is not None


@pytest.mark.parametrize(
    "blob",
    [b"\xff\xfe", b"{\x00}", b"\n\n\n", b"[" * 100_000, b'{"record": ' * 50_000],
    ids=["not-utf8", "nul", "blank-lines", "deep-array", "deep-object"],
)
def test_the_import_command_refuses_binary_and_deep_input_in_one_line(db_path, tmp_path, blob):
    path = tmp_path / "in.jsonl"
    path.write_bytes(blob)
    result = CliRunner().invoke(cli, ["--db", str(db_path), "import", "--from", "jsonl", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not db_path.exists()  # refused before the database was opened


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/memories"),
        ("POST", "/api/search"),
        ("POST", "/api/links"),
        ("PATCH", "/api/memories/1"),
    ],
)
def test_rest_refuses_deeply_nested_bodies_with_400(service, db_path, method, path):
    from agent_memory.http.rest import create_app

    before = dump(db_path)
    body = '{"content": "x", "type": "TODO", "tags": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = (
        create_app(service)
        .test_client()
        .open(
            path,
            method=method,
            data=body,
            content_type="application/json",
            base_url="http://127.0.0.1:7437",
        )
    )
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("malformed JSON body")
    assert dump(db_path) == before
