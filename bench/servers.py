"""The servers bench/run.py drives: how each is started, loaded and called (tool calls are
(name, arguments)): the protocol floor and the two npm peers; agent-memory is bench/run.py's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from mcp import Client, StdioServerParameters

from bench._common import ROOT, clean_env, module_cmd

LIMIT = 10
LOAD_BATCH = 1_000
PEER_PACKAGES = ("@modelcontextprotocol/server-memory", "mcp-memory-keeper")
KEEPER_CATEGORY = {"DECISION": "decision", "ERROR": "error", "TODO": "task"}


class System:
    """How the bench starts, loads and calls one server. Tool calls are (name, arguments)."""

    name = ""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / self.name
        self.dir.mkdir(parents=True, exist_ok=True)

    def params(self) -> StdioServerParameters:
        raise NotImplementedError

    def load(self, memories: list[dict]) -> None:
        """Bring the store to len(memories) rows before anything is timed."""

    async def load_through(self, client: Client, memories: list[dict]) -> None:
        """Loading that needs the server running (peers)."""

    def store(self, memory: dict, i: int) -> tuple[str, dict] | None:
        raise NotImplementedError

    def search(self, query: str) -> tuple[str, dict] | None:
        raise NotImplementedError

    def list(self) -> tuple[str, dict] | None:
        return None

    def files(self) -> list[Path]:
        return [p for p in self.dir.rglob("*") if p.is_file()]


class Floor(System):
    name = "floor"

    def params(self) -> StdioServerParameters:
        command, *args = module_cmd("floors", "mcp", "bench-floor")
        return StdioServerParameters(command=command, args=args, cwd=str(ROOT))

    def store(self, memory: dict, i: int) -> tuple[str, dict]:
        return "memory_store", memory

    def search(self, query: str) -> tuple[str, dict]:
        return "memory_search", {"query": query, "limit": LIMIT}

    def list(self) -> tuple[str, dict]:
        return "memory_list", {"type": "DECISION", "scope": "billing", "limit": 20}

    def files(self) -> list[Path]:
        return []


class ServerMemory(System):
    name = "server-memory"

    def __init__(self, workdir: Path, prefix: Path) -> None:
        super().__init__(workdir)
        self.command = str(prefix / "node_modules" / ".bin" / "mcp-server-memory")

    def params(self) -> StdioServerParameters:
        path = str(self.dir / "memory.jsonl")
        return StdioServerParameters(command=self.command, env=clean_env(MEMORY_FILE_PATH=path))

    @staticmethod
    def entity(memory: dict, i: int) -> dict:
        return {
            "name": f"memory-{i}",
            "entityType": memory["type"],
            "observations": [memory["content"]],
        }

    async def load_through(self, client: Client, memories: list[dict]) -> None:
        for start in range(0, len(memories), LOAD_BATCH):
            batch = memories[start : start + LOAD_BATCH]
            entities = [self.entity(m, start + j) for j, m in enumerate(batch)]
            await client.call_tool("create_entities", {"entities": entities})

    def store(self, memory: dict, i: int) -> tuple[str, dict]:
        return "create_entities", {"entities": [self.entity(memory, i)]}

    def search(self, query: str) -> tuple[str, dict]:
        return "search_nodes", {"query": query}


class MemoryKeeper(System):
    name = "memory-keeper"

    def __init__(self, workdir: Path, prefix: Path) -> None:
        super().__init__(workdir)
        self.command = str(prefix / "node_modules" / ".bin" / "mcp-memory-keeper")

    def params(self) -> StdioServerParameters:
        env = clean_env(DATA_DIR=str(self.dir))  # else ~/mcp-data, shared by every run
        return StdioServerParameters(command=self.command, env=env, cwd=str(self.dir))

    @staticmethod
    def item(memory: dict, i: int) -> dict:
        category = KEEPER_CATEGORY.get(memory["type"], "note")
        return {"key": f"memory-{i}", "value": memory["content"], "category": category}

    async def load_through(self, client: Client, memories: list[dict]) -> None:
        for start in range(0, len(memories), LOAD_BATCH):
            batch = memories[start : start + LOAD_BATCH]
            items = [self.item(m, start + j) for j, m in enumerate(batch)]
            await client.call_tool("context_batch_save", {"items": items})

    def store(self, memory: dict, i: int) -> tuple[str, dict]:
        return "context_save", self.item(memory, i)

    def search(self, query: str) -> tuple[str, dict]:
        # context_search looks in the current session only, and every process starts one:
        # context_search_all is the search over everything stored.
        return "context_search_all", {"query": query, "limit": LIMIT}

    def list(self) -> tuple[str, dict]:  # the current session's decisions (no global list)
        return "context_get", {"category": "decision", "limit": 20}


def install_peers(prefix: Path) -> None:
    """npm install into ``prefix``; better-sqlite3's native build needs its script run."""
    npm = ["npm", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run([*npm, "install", *PEER_PACKAGES], check=True)
    subprocess.run([*npm, "rebuild", "better-sqlite3"], check=True, stdout=subprocess.DEVNULL)
