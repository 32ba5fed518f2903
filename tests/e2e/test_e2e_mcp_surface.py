"""End to end: the real ``agent-memory serve --db FILE`` (the options after the subcommand,
as MCP configs write them) with the official SDK client over stdio: titles, hints, every
tool's result validated against its output schema, resources, the prompt."""

from __future__ import annotations

import json

import anyio
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ResourceTemplateReference

from agent_memory.mcp.catalog import TYPE_TEMPLATE
from tests.support.mcp_surface import CALLS, HINTS, undeclared
from tests.support.spawned import NO_OLLAMA_URL, executable, server_env


def test_the_whole_surface_over_stdio(db_path, tmp_path):
    errlog = (tmp_path / "stderr.log").open("w+")
    params = StdioServerParameters(
        command=executable(),
        args=["serve", "--db", str(db_path), "--ollama-url", NO_OLLAMA_URL],
        env=server_env(),
    )

    async def main():
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = (await client.list_tools()).tools
            # call_tool validates each structuredContent against the tool's outputSchema
            results = [await client.call_tool(name, args) for name, args in CALLS]
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            reads = [
                json.loads((await client.read_resource(uri)).contents[0].text)
                for uri in (
                    "memory://recent",
                    "memory://stats",
                    "memory://1",
                    "memory://type/DECISION",
                )
            ]
            prompts = (await client.list_prompts()).prompts
            prompt = await client.get_prompt("memory_protocol", {"scope": "kore"})
            ref = ResourceTemplateReference(type="ref/resource", uri=TYPE_TEMPLATE)
            completed = await client.complete(ref, {"name": "type", "value": "a"})
            return (
                client.protocol_version,
                tools,
                results,
                resources,
                templates,
                reads,
                prompts,
                prompt,
                completed,
            )

    version, tools, results, resources, templates, reads, prompts, prompt, completed = anyio.run(
        main
    )
    assert version == "2026-07-28"
    assert [(t.name, t.title) for t in tools] == [row[:2] for row in HINTS]
    for tool, (_, _, read_only, destructive, idempotent) in zip(tools, HINTS, strict=True):
        hints = tool.annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            read_only,
            destructive,
            idempotent,
        )
        assert hints.open_world_hint is False
    schemas = {t.name: t.output_schema for t in tools}
    for (name, _), result in zip(CALLS, results, strict=True):
        assert not result.is_error, name
        assert json.loads(result.content[0].text) == result.structured_content
        jsonschema.validate(result.structured_content, schemas[name])
        assert undeclared(result.structured_content, schemas[name]) == [], name
    assert [r.uri for r in resources] == ["memory://recent", "memory://stats"]
    assert len(templates) == 3
    recent, stats, first, decisions = reads
    assert [m["id"] for m in recent] == [1]  # 2 was forgotten by the last calls
    assert stats["memories"] == 1
    assert first["id"] == 1 and first["related"] == []
    assert [m["id"] for m in decisions] == [1]
    assert [p.name for p in prompts] == ["memory_protocol"]
    assert "memory://scope/kore" in prompt.messages[0].content.text
    assert completed.completion.values == ["ARCHITECTURE"]
    assert db_path.exists()  # --db after the subcommand chose the file
