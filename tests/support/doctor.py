"""What the doctor tests share on both engines: a store with embedded memories, the command, its
FAIL lines and the embedding counts."""

from __future__ import annotations

from click.testing import CliRunner

from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from tests.support.fake_ollama import embedder_for


def fill(location, ollama, engine: str):
    """Three embedded memories (nomic-embed-text, 768 dimensions) and a relation."""
    svc = MemoryService(open_store(location), embedder=embedder_for(ollama.url))
    ids = [
        svc.store({"content": text, "type": "TODO"})["id"]
        for text in (f"the datastore is {engine}", "deploy on fridays", "cache the login")
    ]
    svc.link({"from_id": ids[0], "to_id": ids[1], "kind": "relates_to"})
    svc.close()
    return location


def doctor(location, ollama, *args, embedder="auto"):
    options = ["--db", str(location), "--embedder", embedder, "--ollama-url", ollama.url]
    return CliRunner().invoke(cli, [*options, "doctor", *args])


def failing(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("FAIL")]


def counts(location):
    store = open_store(location)
    try:
        return store.embedding_counts()
    finally:
        store.close()
