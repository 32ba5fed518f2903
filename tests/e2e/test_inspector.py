"""MCP Inspector's CLI (from npm, a pinned release) drives every argument of every tool
against the real ``agent-memory serve``, finds nothing to warn about in the schemas, and
works the daemon's ``/mcp`` with ``--transport http`` and a bearer token.

The Inspector is installed once per session into a temp directory (npm's cache there
too). Without npm the tests are skipped, loudly, except in CI (``CI`` set), where they must
run: .ci/run installs Node.js and npm, and a missing npm or a failed install fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings

import pytest

from agent_memory.mcp.tools import TOOLS
from agent_memory.service.core import MemoryService
from agent_memory.service.tokens import Tokens
from agent_memory.storage import open_store
from tests.support.rest_daemon import RestDaemon
from tests.support.spawned import NO_OLLAMA_URL, executable

pytestmark = pytest.mark.slow  # an npm install, and a node process per call

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
        if os.environ.get("CI"):
            pytest.fail(f"the Inspector tests must run in CI: {message}")
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


def over_http(inspector, url: str, token: str, *args: str) -> dict:
    """One Inspector CLI run against the daemon's /mcp; its JSON answer."""
    header = f"Authorization: Bearer {token}"
    done = subprocess.run(
        [str(inspector), "--cli", url, "--transport", "http", "--header", header, *args],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_SECS,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_works_the_daemon_over_http_with_a_token(inspector, db_path):
    """List tools, store, search, update and forget, each a run of its own (a session each),
    through the daemon's /mcp behind a token; the memory records the token's name."""
    service = MemoryService(open_store(db_path))
    token = Tokens(service).create("inspector")
    service.close()
    with RestDaemon(db_path) as daemon:
        daemon.drain_stderr()
        url = daemon.url + "/mcp"

        def call(tool: str, *pairs: str) -> dict:
            args = ["--method", "tools/call", "--tool-name", tool]
            args += ["--tool-arg", *pairs] if pairs else []
            result = over_http(inspector, url, token, *args)
            assert result["isError"] is False, result
            return result["structuredContent"]

        listed = over_http(inspector, url, token, "--method", "tools/list")
        stored = call(
            "memory_store", "content=Caddy terminates TLS", "type=DECISION", 'tags=["tls"]'
        )
        found = call("memory_search", "query=caddy tls")
        updated = call("memory_update", f"id={stored['id']}", "content=Caddy terminates TLS here")
        forgot = call("memory_forget", f"id={stored['id']}")
        after = call("memory_list")
        assert daemon.stop() == 0
    assert [t["name"] for t in listed["tools"]] == [tool.name for tool in TOOLS]
    assert [r["id"] for r in found["results"]] == [stored["id"]]
    assert (updated["content"], updated["created_by"], updated["updated_by"]) == (
        "Caddy terminates TLS here",
        "inspector",
        "inspector",
    )
    assert forgot == {"id": stored["id"], "deleted": True}
    assert after == {"memories": []}
