"""How a test or a bench run spawns the real ``agent-memory``: the console script next to this
interpreter, in an environment of its own (no AGENT_MEMORY_* of the caller's, no Ollama)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Port 9 (discard) on loopback: nothing listens, so a spawned server finds no Ollama, even
# on a machine where a real one runs on the default port.
NO_OLLAMA_URL = "http://127.0.0.1:9"


def executable() -> str:
    """The console script installed next to this interpreter."""
    found = Path(sys.executable).with_name("agent-memory")
    return str(found) if found.exists() else shutil.which("agent-memory") or "agent-memory"


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a spawned agent-memory: no Ollama, and Ollama as the embedder (so
    searches are keyword-only unless a test points it at the fake Ollama or asks for the
    local model with AGENT_MEMORY_EMBEDDER=local)."""
    # No inherited terminal size: tables are as wide as when the output is not a terminal.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_MEMORY_") and k not in ("COLUMNS", "LINES")
    }
    env["AGENT_MEMORY_OLLAMA_URL"] = NO_OLLAMA_URL
    env["AGENT_MEMORY_EMBEDDER"] = "ollama"
    env.update(extra)
    return env


def run_agent_memory(
    *args: str, timeout: int = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the real executable to completion with no stdin (``serve`` then exits at EOF)."""
    return subprocess.run(
        [executable(), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env or server_env(),
        timeout=timeout,
    )
