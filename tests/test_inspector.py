"""MCP Inspector's CLI (from npm, a pinned release) drives every argument of every tool
against the real ``agent-memory serve``, and finds nothing to warn about in the schemas.

The Inspector is installed once per session into a temp directory (npm's cache there
too). Without npm the test is skipped, loudly; with npm, a failed install fails it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from agent_memory.transports.mcp.tools import TOOLS
from tests.support.spawned import NO_OLLAMA_URL, executable

# The release `npx @modelcontextprotocol/inspector` ran when this was written. It declares
# node >= 22.19 but its CLI runs on node 20 (CI's), which npm only warns about.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSTALL_TIMEOUT_SECS = 600
CALL_TIMEOUT_SECS = 120


@pytest.fixture(scope="session")
def inspector(tmp_path_factory):
    npm = shutil.which("npm")
    if npm is None:
        message = (
            "npm is not installed: the MCP Inspector CLI test did NOT run; install Node.js "
            "and npm to check that every client argument reaches agent-memory"
        )
        warnings.warn(message, pytest.PytestWarning, stacklevel=1)
        pytest.skip(message)
    prefix = tmp_path_factory.mktemp("inspector")
    cache = prefix / "npm-cache"
    options = ["--no-audit", "--no-fund", "--ignore-scripts", "--loglevel", "error"]
    done = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--cache", str(cache), *options, INSPECTOR],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECS,
    )
    assert done.returncode == 0, f"npm install {INSPECTOR} failed:\n{done.stderr}"
    return prefix / "node_modules" / ".bin" / "mcp-inspector"


def run(inspector, db_path, *args: str) -> subprocess.CompletedProcess:
    """One Inspector CLI run against a fresh ``agent-memory serve`` on ``db_path``. The
    Inspector passes the server no environment of ours: the options say everything."""
    server = [executable(), "serve", "--db", str(db_path), "--ollama-url", NO_OLLAMA_URL]
    return subprocess.run(
        [str(inspector), "--cli", *server, *args],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_SECS,
    )


def call(inspector, db_path, tool: str, *pairs: str) -> dict:
    done = run(
        inspector, db_path, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is False, result
    return result["structuredContent"]


def test_the_tool_schemas_pass_the_inspectors_portability_check(inspector, db_path):
    done = run(inspector, db_path, "--method", "tools/list", "--strict")
    assert done.returncode == 0, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert names == [tool.name for tool in TOOLS]
    assert "Schema portability" not in done.stderr
    assert "Warning: tool" not in done.stderr and "Error: tool" not in done.stderr


def test_the_inspector_sends_every_argument_of_every_tool(inspector, db_path):
    """Integers written "+60" and the boolean "True" are no JSON: the Inspector converts
    them only by the property's schema type, which is what older Inspector CLIs did for
    every value (and why a list of types made ttl_secs impossible to send)."""
    service = MemoryService(open_store(db_path))
    older = service.store({"content": "We chose Postgres", "type": "DECISION"})["id"]
    service.close()

    stored = call(
        inspector,
        db_path,
        "memory_store",
        "content=We chose SQLite with WAL",
        "type=DECISION",
        'tags=["db", "sqlite"]',
        "source=inspector",
        "scope=kore",
        "ttl_secs=+3600",
    )
    new = stored["id"]
    found = call(
        inspector,
        db_path,
        "memory_search",
        "query=sqlite",
        "type=DECISION",
        "tag=db",
        "scope=kore",
        "limit=+5",
        "expand_links=True",
    )
    assert [(r["id"], r["related"]) for r in found["results"]] == [(new, [])]
    listed = call(
        inspector,
        db_path,
        "memory_list",
        "type=DECISION",
        "tag=sqlite",
        "scope=kore",
        "limit=+5",
        "expand_links=false",
    )
    assert [(m["id"], m["source"]) for m in listed["memories"]] == [(new, "inspector")]
    updated = call(
        inspector,
        db_path,
        "memory_update",
        f"id={new}",
        "content=We chose SQLite, WAL mode",
        'tags=["db"]',
        "scope=kore-runtime",
        "ttl_secs=+60",
    )
    assert (updated["tags"], updated["scope"]) == (["db"], "kore-runtime")
    assert updated["expires_at"] == updated["last_accessed"] + 60
    cleared = call(
        inspector, db_path, "memory_update", f"id={new}", "tags=null", "scope=null", "ttl_secs=null"
    )
    assert (cleared["tags"], cleared["scope"], cleared["expires_at"]) == ([], None, None)
    edge = {"from_id": new, "to_id": older, "kind": "supersedes"}
    pairs = (f"from_id={new}", f"to_id={older}", "kind=supersedes")
    assert call(inspector, db_path, "memory_link", *pairs) == {**edge, "linked": True}
    assert call(inspector, db_path, "memory_unlink", *pairs) == {**edge, "unlinked": True}
    assert call(inspector, db_path, "memory_forget", f"id={new}") == {"id": new, "deleted": True}
