"""What an MCP client sees of the server, in process with the SDK's own client: tool
titles, hints and schemas, results that conform to the output schemas, resources, the
prompt, completions, result caching hints and capabilities."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from agent_memory.contract.vocabulary import ARGUMENTS, MEMORY_TYPES
from agent_memory.mcp import catalog as mcp_catalog
from agent_memory.mcp import server as mcp_server
from agent_memory.mcp.tools import TOOLS
from tests.support.files import dump
from tests.support.mcp_surface import CALLS, HINTS, undeclared


def session(service: Any, steps, mode: str = "auto"):
    """Run ``steps(client)`` in one in-process session; return what it returns. Mode
    "auto" speaks protocol 2026-07-28, "legacy" the initialize handshake of the revisions
    before it (what MCP Inspector 2.12 and most clients of 2025 use)."""

    async def main():
        async with Client(mcp_server.build_server(service), mode=mode) as client:
            return await steps(client)

    return anyio.run(main)


def test_tools_are_listed_in_a_fixed_order_with_titles_and_hints(service):
    tools = session(service, lambda c: c.list_tools()).tools
    assert [t.name for t in tools] == [row[0] for row in HINTS]
    for tool, (_, title, read_only, destructive, idempotent) in zip(tools, HINTS, strict=True):
        hints = tool.annotations
        assert (tool.title, hints.title) == (title, title)
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            read_only,
            destructive,
            idempotent,
        )
        assert hints.open_world_hint is False


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_input_schemas_take_the_service_arguments_with_one_type_each(tool):
    schema = tool.input_schema
    operation = tool.name.removeprefix("memory_")
    assert list(schema["properties"]) == list(ARGUMENTS[operation])
    assert schema["additionalProperties"] is False
    for name, prop in schema["properties"].items():
        # One type, as a string: what MCP Inspector's CLI converts arguments by and what
        # single-type function-calling dialects (Gemini's) accept.
        assert isinstance(prop.get("type"), str), name
        assert not {"anyOf", "oneOf", "allOf"} & set(prop), name
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_output_schemas_are_json_schema(tool):
    jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    assert tool.output_schema["type"] == "object"  # required before protocol 2026-07-28
    # a nullable field is anyOf a type and null: a list of types is what the Inspector's
    # portability check warns about
    assert not list(listed_types(tool.output_schema))


def listed_types(schema: object, path: str = "") -> Iterator[str]:
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            yield path
        for key, value in schema.items():
            yield from listed_types(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from listed_types(value, f"{path}[{i}]")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_every_result_conforms_to_its_output_schema(service, mode):
    """The SDK's client validates structuredContent against the tool's outputSchema on
    every call; on top, no result carries a field the schema does not declare."""

    async def steps(client):
        return [await client.call_tool(name, args) for name, args in CALLS]

    results = session(service, steps, mode)
    schemas = {t.name: t.output_schema for t in TOOLS}
    for (name, _), result in zip(CALLS, results, strict=True):
        assert result.is_error is False, name
        jsonschema.validate(result.structured_content, schemas[name])
        assert undeclared(result.structured_content, schemas[name]) == [], name
    # the variants the schemas describe were all produced
    assert results[1].structured_content["redacted"] == ["password"]
    assert results[3].structured_content["missing_id"] == 99
    assert results[4].structured_content["results"][0]["related"]
    assert results[8].structured_content["redacted"] == ["password"]
    assert results[10].structured_content == {"id": 99, "updated": False, "reason": "not_found"}
    assert results[14].structured_content["deleted"] is False


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_listings_need_no_service(mode):
    """tools, resources, templates and prompts are static: listing them opens nothing."""

    class NoService:
        def __getattr__(self, name):
            raise AssertionError(f"the service was used: {name}")

    async def steps(client):
        return (
            await client.list_tools(),
            await client.list_resources(),
            await client.list_resource_templates(),
            await client.list_prompts(),
        )

    tools, resources, templates, prompts = session(NoService(), steps, mode)
    assert len(tools.tools) == 8
    assert [r.uri for r in resources.resources] == ["memory://recent", "memory://stats"]
    assert [t.uri_template for t in templates.resource_templates] == [
        "memory://{id}",
        "memory://scope/{scope}",
        "memory://type/{type}",
    ]
    assert [p.name for p in prompts.prompts] == ["memory_protocol"]


def test_static_listings_carry_a_public_cache_hint_and_reads_none(service):
    async def steps(client):
        return await client.list_tools(), await client.read_resource("memory://stats")

    tools, read = session(service, steps)
    assert (tools.ttl_ms, tools.cache_scope) == (mcp_server.LISTING_TTL_MS, "public")
    assert (read.ttl_ms, read.cache_scope) == (0, "private")


def test_identity_capabilities_and_instructions(service):
    async def steps(client):
        return client.server_info, client.server_capabilities, client.instructions

    info, capabilities, instructions = session(service, steps)
    assert (info.name, info.title, info.website_url) == (
        "agent-memory",
        "Agent Memory",
        "https://github.com/UnityInFlow/agent-memory",
    )
    assert capabilities.tools.list_changed is False
    assert capabilities.resources.list_changed is False
    assert capabilities.resources.subscribe is False
    assert capabilities.prompts.list_changed is False
    assert capabilities.completions is not None
    assert capabilities.logging is None  # deprecated in 2026-07-28: logs go to stderr
    assert "memory_protocol" in instructions


def test_the_server_uses_no_deprecated_feature(service):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MCPDeprecationWarning)
        mcp_server.build_server(service)


@pytest.fixture
def stored(service):
    service.store({"content": "We chose SQLite", "type": "DECISION", "scope": "kore/core"})
    service.store({"content": "Fix: pin sqlean", "type": "ERROR", "tags": ["build"]})
    service.link({"from_id": 2, "to_id": 1, "kind": "caused_by"})


@pytest.mark.parametrize(
    ("uri", "check"),
    [
        ("memory://recent", lambda v: [m["id"] for m in v] == [2, 1]),
        ("memory://stats", lambda v: v["memories"] == 2 and v["links"] == 1),
        (
            "memory://1",
            lambda v: v["content"] == "We chose SQLite" and v["related"][0]["kind"] == "caused",
        ),
        ("memory://scope/kore%2Fcore", lambda v: [m["id"] for m in v] == [1]),
        ("memory://type/ERROR", lambda v: [m["id"] for m in v] == [2]),
    ],
)
def test_resources_read_as_json_and_bump_nothing(service, stored, db_path, uri, check):
    import json

    before = dump(db_path)
    read = session(service, lambda c: c.read_resource(uri))
    (contents,) = read.contents
    assert (contents.uri, contents.mime_type) == (uri, "application/json")
    assert check(json.loads(contents.text))
    assert dump(db_path) == before


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("memory://42", "resource not found: no memory has id 42"),
        ("memory://abc", 'invalid argument: id must be an integer (got "abc")'),
        (
            "memory://type/todo",
            "invalid memory type 'todo' (expected one of DECISION, PATTERN, ERROR, TODO, ARCHITECTURE, CONSTRAINT)",
        ),
        (
            "memory://tags/x",
            'unknown resource "memory://tags/x": expected memory://recent, memory://stats, memory://{id}, memory://scope/{scope} or memory://type/{type}',
        ),
        (
            "file:///etc/passwd",
            'unknown resource "file:///etc/passwd": expected memory://recent, memory://stats, memory://{id}, memory://scope/{scope} or memory://type/{type}',
        ),
    ],
)
def test_a_resource_that_cannot_be_read_is_invalid_params(service, stored, uri, message):
    async def steps(client):
        try:
            await client.read_resource(uri)
        except MCPError as exc:
            return exc

    error = session(service, steps)
    assert (error.code, error.message) == (-32602, message)


def test_the_prompt_teaches_the_protocol(service):
    async def steps(client):
        return (
            await client.get_prompt("memory_protocol"),
            await client.get_prompt("memory_protocol", {"task": "fix CI", "scope": "kore"}),
        )

    plain, filled = session(service, steps)
    text = plain.messages[0].content.text
    assert plain.messages[0].role == "user"
    for phrase in (
        "memory_search",
        "memory_store",
        "DECISION",
        "CONSTRAINT",
        "ERROR",
        "PATTERN",
        '"supersedes"',
        "memory_link",
        "memory://recent",
    ):
        assert phrase in text
    filled_text = filled.messages[0].content.text
    assert "Before you start on: fix CI:" in filled_text
    assert 'scope "kore"' in filled_text and "memory://scope/kore" in filled_text


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("remember", None, "unknown prompt: remember"),
        (
            "memory_protocol",
            {"tasks": "x"},
            "failed to deserialize parameters: unknown field `tasks`, expected one of `task`, "
            "`scope` (did you mean `task`?)",
        ),
    ],
)
def test_a_prompt_request_that_cannot_be_served_is_invalid_params(
    service, name, arguments, message
):
    async def steps(client):
        try:
            await client.get_prompt(name, arguments)
        except MCPError as exc:
            return exc

    error = session(service, steps)
    assert (error.code, error.message) == (-32602, message)


def test_completions_offer_types_and_the_scopes_in_the_store(service, stored):
    service.store({"content": "x", "type": "TODO", "scope": "kiosk"})
    type_ref = ResourceTemplateReference(type="ref/resource", uri=mcp_catalog.TYPE_TEMPLATE)
    scope_ref = ResourceTemplateReference(type="ref/resource", uri=mcp_catalog.SCOPE_TEMPLATE)
    prompt_ref = PromptReference(type="ref/prompt", name="memory_protocol")
    id_ref = ResourceTemplateReference(type="ref/resource", uri=mcp_catalog.MEMORY_TEMPLATE)

    async def steps(client):
        return [
            (await client.complete(ref, {"name": name, "value": value})).completion.values
            for ref, name, value in [
                (type_ref, "type", ""),
                (type_ref, "type", "c"),
                (scope_ref, "scope", "k"),
                (prompt_ref, "scope", "KI"),
                (prompt_ref, "task", ""),
                (id_ref, "id", "1"),
            ]
        ]

    assert session(service, steps) == [
        list(MEMORY_TYPES),
        ["CONSTRAINT"],
        ["kiosk", "kore/core"],  # the largest scopes first, then by name
        ["kiosk"],
        [],
        [],
    ]


def test_prompt_arguments_are_written_back_as_valid_text():
    """A lone surrogate in an argument is shown as its escape: the answer stays UTF-8."""
    text = mcp_catalog.render_prompt("memory_protocol", {"task": "a\ud800b"}).messages[0]
    assert "Before you start on: a\\ud800b:" in text.content.text
    text.content.text.encode("utf-8")


def test_each_listed_tool_gives_its_input_schema_without_a_listing(service):
    """The SDK checks a 2026-07-28 call's Mcp-Param-* headers against the tool's input
    schema; the server hands it over by name instead of running tools/list per call."""
    server = mcp_server.build_server(service)
    for tool in TOOLS:
        assert server.get_tool_input_schema(tool.name) == tool.input_schema
    assert server.get_tool_input_schema("memory_nothing") is None
