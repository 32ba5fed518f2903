"""The MCP transport, in process: the SDK's own client against our low-level server."""

from __future__ import annotations

import io
import json

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from agent_memory.contract import wire
from agent_memory.mcp import server as mcp_server
from tests.support.files import dump
from tests.support.mcp_session import run

TOOL_NAMES = [
    "memory_store",
    "memory_search",
    "memory_list",
    "memory_update",
    "memory_link",
    "memory_unlink",
    "memory_forget",
    "memory_history",
]


def test_tools_are_listed_with_schemas_and_descriptions(service):
    async def main():
        async with Client(mcp_server.build_server(service)) as client:
            return await client.list_tools()

    tools = anyio.run(main).tools
    assert [t.name for t in tools] == TOOL_NAMES
    for tool in tools:
        assert len(tool.description) > 40
        assert tool.input_schema["type"] == "object"
    schemas = {t.name: t.input_schema for t in tools}
    assert schemas["memory_store"]["required"] == ["content", "type"]
    assert schemas["memory_search"]["properties"]["limit"]["maximum"] == 200
    assert schemas["memory_update"]["additionalProperties"] is False


def test_results_are_structured_and_text(service):
    store, search, listed, update, forget, again = run(
        service,
        ("memory_store", {"content": "We use sqlite-vec", "type": "DECISION", "tags": ["db"]}),
        ("memory_search", {"query": "sqlite-vec?"}),
        ("memory_list", {}),
        ("memory_update", {"id": 1, "scope": "kore"}),
        ("memory_forget", {"id": 1}),
        ("memory_forget", {"id": 1}),
    )
    for result in (store, search, listed, update, forget, again):
        assert not result.is_error
        assert json.loads(result.content[0].text) == result.structured_content
    assert store.structured_content == {"id": 1}
    assert search.structured_content["search_mode"] == "keyword"
    assert [r["id"] for r in search.structured_content["results"]] == [1]
    assert [m["id"] for m in listed.structured_content["memories"]] == [1]
    assert update.structured_content["scope"] == "kore"
    assert update.structured_content["embedding_status"] == 0
    assert forget.structured_content == {"id": 1, "deleted": True}
    assert again.structured_content == {"id": 1, "deleted": False, "reason": "not_found"}


def test_not_found_update_is_an_ordinary_result(service):
    (result,) = run(service, ("memory_update", {"id": 42, "content": "x"}))
    assert not result.is_error
    assert result.structured_content == {"id": 42, "updated": False, "reason": "not_found"}


@pytest.mark.parametrize(
    "name,args,message",
    [
        (
            "memory_search",
            {"query": "x", "limit": 0},
            "invalid argument: limit must be between 1 and 200 (got 0)",
        ),
        (
            "memory_search",
            {"query": "x", "limit": "5"},
            'invalid argument: limit must be an integer (got "5")',
        ),
        ("memory_list", {"limit": True}, "invalid argument: limit must be an integer (got true)"),
        (
            "memory_store",
            {"content": "x", "type": "TODO", "ttl_secs": 0},
            "invalid argument: ttl_secs must be between 1 and 3155760000 (got 0)",
        ),
        (
            "memory_store",
            {"content": "", "type": "TODO"},
            "invalid argument: content must be a non-empty string",
        ),
        (
            "memory_store",
            {"content": "x", "type": "todo"},
            "invalid memory type 'todo' (expected one of DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT)",
        ),
        (
            "memory_update",
            {"id": 1},
            "invalid argument: at least one of content, tags, scope, ttl_secs must be provided",
        ),
        (
            "memory_update",
            {"id": 1, "content": None},
            "invalid argument: content must be a non-empty string",
        ),
        ("memory_forget", {"id": "1"}, 'invalid argument: id must be an integer (got "1")'),
        ("memory_forget", {}, "invalid argument: id is required"),
        ("memory_nope", {}, "unknown tool: memory_nope"),
    ],
)
def test_invalid_arguments_are_json_rpc_invalid_params(service, db_path, name, args, message):
    service.store({"content": "existing", "type": "TODO"})
    before = dump(db_path)
    (error,) = run(service, (name, args))
    assert isinstance(error, MCPError)
    assert (error.code, error.message) == (-32602, message)
    assert dump(db_path) == before


def test_unknown_update_field_is_a_tool_error_result(service, db_path):
    service.store({"content": "existing", "type": "TODO"})
    before = dump(db_path)
    (result,) = run(service, ("memory_update", {"id": 1, "content": "new", "ttl_sec": 5}))
    assert result.is_error is True
    assert result.content[0].text == (
        "failed to deserialize parameters: unknown field `ttl_sec`, "
        "expected one of `id`, `content`, `tags`, `scope`, `ttl_secs` (did you mean `ttl_secs`?)"
    )
    assert dump(db_path) == before


def test_storage_fault_is_internal_error_with_generic_text(service, raw, caplog):
    raw.execute("ALTER TABLE memories RENAME TO elsewhere")
    raw.commit()
    (error,) = run(service, ("memory_store", {"content": "x", "type": "TODO"}))
    assert (error.code, error.message) == (
        -32603,
        "store failed due to a storage error (details are in the server log)",
    )
    assert "no such table" in caplog.text


def test_unexpected_failure_never_leaks_its_text(service, monkeypatch, caplog):
    def explode(_self, _args):
        raise TypeError("'<=' not supported between secret internals")

    monkeypatch.setitem(mcp_server.HANDLERS, "memory_list", mcp_server.Handler("list", explode))
    (error,) = run(service, ("memory_list", {}))
    assert error.code == -32603
    assert error.message == "list failed due to an internal error (details are in the server log)"
    assert "secret internals" in caplog.text


def test_relations_over_mcp(service, raw):
    service.store({"content": "older decision", "type": "DECISION"})
    service.store({"content": "newer decision", "type": "DECISION"})
    linked, again, missing, searched, listed, unlinked, gone = run(
        service,
        ("memory_link", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
        ("memory_link", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
        ("memory_link", {"from_id": 2, "to_id": 9, "kind": "caused_by"}),
        ("memory_search", {"query": "older", "expand_links": True, "include_superseded": True}),
        ("memory_list", {"limit": 5, "expand_links": True, "include_superseded": True}),
        ("memory_unlink", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
        ("memory_unlink", {"from_id": 2, "to_id": 1, "kind": "supersedes"}),
    )
    assert linked.structured_content == {
        "from_id": 2,
        "to_id": 1,
        "kind": "supersedes",
        "linked": True,
    }
    assert again.structured_content == linked.structured_content
    assert missing.structured_content == {
        "from_id": 2,
        "to_id": 9,
        "kind": "caused_by",
        "linked": False,
        "reason": "not_found",
        "missing_id": 9,
    }
    (result,) = searched.structured_content["results"]
    assert result["related"] == [
        {
            "id": 2,
            "kind": "superseded_by",
            "direction": "in",
            "type": "DECISION",
            "snippet": "newer decision",
            "tags": [],
        }
    ]
    assert [len(m["related"]) for m in listed.structured_content["memories"]] == [1, 1]
    assert unlinked.structured_content["unlinked"] is True
    assert gone.structured_content == {
        "from_id": 2,
        "to_id": 1,
        "kind": "supersedes",
        "unlinked": False,
        "reason": "not_found",
    }
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


@pytest.mark.parametrize(
    "name,args,message",
    [
        (
            "memory_link",
            {"from_id": 57, "to_id": 57, "kind": "supersedes"},
            "invalid argument: from_id and to_id must differ (got 57)",
        ),
        (
            "memory_link",
            {"from_id": 1, "to_id": 2, "kind": "blocks"},
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "memory_unlink",
            {"from_id": 1, "to_id": 2, "kind": "blocks"},
            "invalid argument: kind must be one of relates_to, supersedes, caused_by (got 'blocks')",
        ),
        (
            "memory_list",
            {"expand_links": True},
            "invalid argument: limit is required when expand_links is true; pass a limit between 1 and 200",
        ),
        (
            "memory_search",
            {"query": "x", "expand_links": "yes"},
            'invalid argument: expand_links must be a boolean (got "yes")',
        ),
    ],
)
def test_relation_errors_are_invalid_params(service, raw, name, args, message):
    service.store({"content": "a", "type": "TODO"})
    service.store({"content": "b", "type": "TODO"})
    (error,) = run(service, (name, args))
    assert (error.code, error.message) == (-32602, message)
    assert raw.execute("SELECT count(*) FROM memory_links").fetchone() == (0,)


TOOL_OF = {
    "store": "memory_store",
    "search": "memory_search",
    "list": "memory_list",
    "update": "memory_update",
    "forget": "memory_forget",
    "link": "memory_link",
    "unlink": "memory_unlink",
    "history": "memory_history",
}


def _every_validation_case():
    from tests.support.validation_cases import (
        FORGET_CASES,
        LINK_CASES,
        LIST_CASES,
        SEARCH_CASES,
        STORE_CASES,
        UPDATE_CASES,
    )

    for operation, cases in (
        ("store", STORE_CASES),
        ("search", SEARCH_CASES),
        ("list", LIST_CASES),
        ("update", UPDATE_CASES),
        ("forget", FORGET_CASES),
        ("history", FORGET_CASES),
        ("link", LINK_CASES),
        ("unlink", LINK_CASES),
    ):
        for args, message in cases:
            if not _parsed_only(args):
                yield TOOL_OF[operation], args, message


def _parsed_only(args):
    """A LongInteger exists only as a transport's parse of JSON text; the SDK's client cannot
    send one (the raw stdio tests in test_fuzz.py send its text)."""
    values = list(args.values())
    values += [item for value in values if isinstance(value, list) for item in value]
    return any(isinstance(v, wire.LongInteger) for v in values)


@pytest.mark.parametrize("name,args,message", list(_every_validation_case()))
def test_every_service_rejection_is_the_same_invalid_params_over_mcp(
    service, db_path, name, args, message
):
    service.store({"content": "existing", "type": "DECISION"})
    before = dump(db_path)
    (error,) = run(service, (name, args))
    assert isinstance(error, MCPError), error
    assert (error.code, error.message) == (-32602, message)
    assert dump(db_path) == before


@pytest.mark.parametrize("slice_chars", [1, 3, 7, 1024 * 1024])
def test_outgoing_lines_are_written_in_slices_of_the_same_bytes(monkeypatch, slice_chars):
    monkeypatch.setattr(mcp_server, "WIRE_SLICE_CHARS", slice_chars)
    raw = io.BytesIO()
    text = '{"text":"ascii, é, \u2603 and \U0001f600 across slice ends"}\n' * 3
    wire = mcp_server._SlicedWire(raw)
    assert wire.write(text) == len(text)
    wire.flush()
    assert raw.getvalue() == text.encode("utf-8")


def test_unlimited_list_content_is_unchanged(service):
    for i in range(120):
        service.store({"content": f"é{i} " * 50, "type": "TODO", "tags": [f"t{i % 3}"]})
    (listed,) = run(service, ("memory_list", {}))
    assert listed.structured_content == {"memories": service.list({})}
    assert [json.loads(item.text) for item in listed.content] == [listed.structured_content]
