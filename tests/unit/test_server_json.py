"""server.json, the MCP registry's description of this server: its shape (the rules of the
registry's published schema that apply to a PyPI package) and its agreement with the
package it points at."""

from __future__ import annotations

import json
import re
import tomllib

from agent_memory import DISTRIBUTION, __version__
from agent_memory.mcp import server as mcp_server
from tests.support.paths import ROOT

NAME = "io.github.UnityInFlow/agent-memory"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def load(name: str):
    text = (ROOT / name).read_text("utf-8")
    return tomllib.loads(text) if name.endswith(".toml") else json.loads(text)


def test_server_json_names_the_pypi_package_at_this_version():
    server, project = load("server.json"), load("pyproject.toml")["project"]
    assert server["$schema"] == SCHEMA
    assert server["name"] == NAME
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"])
    assert 1 <= len(server["description"]) <= 100 and 1 <= len(server["title"]) <= 100
    assert server["version"] == __version__
    assert server["websiteUrl"] == server["repository"]["url"] == mcp_server.WEBSITE_URL
    (package,) = server["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"] == DISTRIBUTION == "typed-agent-memory"
    assert package["version"] == __version__  # an exact release, never a range or "latest"
    assert package["transport"] == {"type": "stdio"}
    assert package["packageArguments"] == [{"type": "positional", "value": "serve"}]
    for variable in package["environmentVariables"]:
        assert set(variable) <= {"name", "description", "format", "isRequired", "isSecret"}
        assert variable["name"].startswith("AGENT_MEMORY_")


def test_the_package_runs_under_its_own_name():
    """Registry clients start a PyPI package as `uvx typed-agent-memory==X serve`: uvx runs
    the executable named like the package, so the wheel has one besides agent-memory."""
    scripts = load("pyproject.toml")["project"]["scripts"]
    assert scripts[DISTRIBUTION] == scripts["agent-memory"] == "agent_memory.cli.main:main"
