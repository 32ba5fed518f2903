"""The OpenAPI document matches the blueprint and the MCP tools' shapes, and is valid
OpenAPI 3.1."""

from __future__ import annotations

import re

from openapi_spec_validator import validate

from agent_memory.contract.vocabulary import REST_ARGUMENTS
from agent_memory.http.rest import create_app
from agent_memory.mcp.tools import TOOLS
from tests.support.openapi import document


def served_routes(app) -> set[tuple[str, str]]:
    out = set()
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        out |= {(method.lower(), path) for method in rule.methods - {"HEAD", "OPTIONS"}}
    return out


def documented_routes(doc: dict) -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in doc["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_every_route_is_documented_and_every_documented_route_exists(service):
    doc = document()
    assert doc["openapi"].startswith("3.1")
    assert served_routes(create_app(service)) == documented_routes(doc)


def test_the_document_is_valid_openapi_3_1():
    validate(document())


def test_the_memory_shapes_are_the_mcp_tools_own():
    """One source: the REST bodies state what the MCP tools state, in the OpenAPI dialect."""
    schemas = document()["components"]["schemas"]
    tools = {tool.name: tool for tool in TOOLS}
    stored = tools["memory_store"].input_schema["properties"]
    assert list(schemas["StoreRequest"]["properties"]) == list(stored)
    listed = tools["memory_list"].output_schema["properties"]["memories"]["items"]
    assert list(schemas["Memory"]["properties"]) == list(listed["properties"])
    assert schemas["Memory"]["required"] == listed["required"]
    assert schemas["Memory"]["properties"]["scope"]["type"] == ["string", "null"]


def test_the_search_body_names_what_a_rest_search_takes():
    search = document()["components"]["schemas"]["SearchRequest"]
    assert list(search["properties"]) == list(REST_ARGUMENTS["search"])
    record_use = search["properties"]["record_use"]
    assert (record_use["type"], record_use["default"]) == ("boolean", True)
