"""The OpenAPI document matches the blueprint, and the live daemon honours it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from openapi_spec_validator import validate

from agent_memory.contract.vocabulary import REST_ARGUMENTS
from agent_memory.http import openapi
from agent_memory.http.rest import create_app
from agent_memory.mcp.tools import TOOLS
from tests.support.rest_daemon import RestDaemon

SCHEMATHESIS_EXAMPLES = 30


def document() -> dict:
    """The document as the daemon serves it (built in code: agent_memory.http.openapi)."""
    return json.loads(openapi.text())


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


def test_the_daemon_serves_the_document(db_path):
    with RestDaemon(db_path) as daemon:
        response = daemon.request("GET", "/openapi.json")
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json() == document()
        assert daemon.stop() == 0


def test_property_based_run_finds_no_500_and_no_violation(db_path, tmp_path):
    st = Path(sys.executable).with_name("schemathesis")
    command = [str(st)] if st.exists() else [shutil.which("schemathesis") or "schemathesis"]
    with RestDaemon(db_path) as daemon:
        daemon.request("POST", "/api/memories", json={"content": "seed memory", "type": "TODO"})
        proc = subprocess.run(
            [
                *command,
                "run",
                f"{daemon.url}/openapi.json",
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--max-examples",
                str(SCHEMATHESIS_EXAMPLES),
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                "1",
                "--generation-deterministic",
                "--request-timeout",
                "30",
                "--report-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        daemon.stop()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "500" not in "".join(daemon.stderr_lines)
