"""bench/retrieval.py through the MCP tools: the real ``serve`` spawned on a copy of the
database (keyword, and with the fake Ollama hybrid and model-only), scoring as in process. The
measurement fusion ``model`` ranks by cosine alone, with nothing cut, over MCP through the
bench's launcher (bench/fusion_serve.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_memory import ranking
from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import retrieval
from tests.support.fake_ollama import embedder_for
from tests.support.files import file_hashes
from tests.support.spawned import executable, server_env

pytest_plugins = ["tests.support.locomo"]


def built(data: Path, path: Path, embedder=None) -> list[retrieval.Question]:
    """The file's database at ``path`` (with vectors when ``embedder``), and its questions."""
    conversations = retrieval.load(data)
    retrieval.build(path, conversations, embedder)
    return retrieval.asked(conversations)[0]


def test_over_mcp_keyword_pages_score_as_in_process_and_the_database_is_left_alone(data, tmp_path):
    questions = built(data, tmp_path / "keyword.db")
    before = file_hashes(tmp_path / "keyword.db")
    result = retrieval.run_mcp("keyword", tmp_path / "keyword.db", questions, env=server_env())
    assert sorted(result.pages[0]) == ["D1:1", "D2:1"]
    assert result.pages[1:] == [["D2:1"], ["D1:2"]]
    assert result.recall == {5: pytest.approx(2.5 / 3), 10: pytest.approx(2.5 / 3)}
    assert result.mrr == 1.0
    assert result.embedder == "none"
    assert result.p95_ms >= result.p50_ms > 0
    assert file_hashes(tmp_path / "keyword.db") == before  # the searches' uses hit a copy


def test_over_mcp_hybrid_and_model_only_run_with_the_test_embedder(data, tmp_path, ollama):
    questions = built(data, tmp_path / "fake.db", embedder_for(ollama.url))
    env = server_env(AGENT_MEMORY_OLLAMA_URL=ollama.url)
    hybrid = retrieval.run_mcp("hybrid", tmp_path / "fake.db", questions, "ollama", env)
    model = retrieval.run_mcp("model", tmp_path / "fake.db", questions, "ollama", env)
    assert hybrid.embedder == model.embedder == f"nomic-embed-text at {ollama.url}"
    assert hybrid.hit[10] == 1.0  # every question's words are in an evidence turn
    # The model alone, no floor: every turn of the question's conversation (4, 4, 2).
    assert [len(page) for page in model.pages] == [4, 4, 2]


def test_the_command_runs_through_mcp_by_default(data, tmp_path, capsys):
    cache = tmp_path / "cache"
    assert retrieval.main(["--data", str(data), "--modes", "keyword", "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "via=mcp" in out
    assert "| keyword | 0.833 | 0.833 | 1.000 | 1.000 | 1.000 | 1.3 |" in out
    assert len(list(cache.glob("locomo-*-c2-keyword.db"))) == 1


def test_over_mcp_the_model_setting_ranks_by_cosine_alone(db_path, ollama):
    svc = MemoryService(open_store(db_path), embedder=embedder_for(ollama.url))
    for content in (
        "We chose PostgreSQL as our datastore.",
        "The login page crashed on an empty password.",
        "Deploys go out on Tuesdays after the tests pass.",
        "Which database? Which database? We never wrote it down.",
    ):
        svc.store({"content": content, "type": "DECISION"})
    svc.close()
    # The product reads no setting for its fusion: the bench's launcher sets it in the
    # spawned server (an environment variable of the old name changes nothing).
    command, args = retrieval.server_command(
        ranking.MODEL_ONLY, ["--db", str(db_path), "--embedder", "ollama", "serve"]
    )
    env = server_env(AGENT_MEMORY_OLLAMA_URL=ollama.url, AGENT_MEMORY_FUSION="rrf")
    params = StdioServerParameters(command=command, args=args, env=env, cwd=retrieval.REPO)
    plain = StdioServerParameters(
        command=executable(), args=args[args.index("--db") :], env=env, cwd=retrieval.REPO
    )

    async def main(server):
        async with Client(stdio_client(server)) as client:
            args = {"query": "which database did we pick", "explain": True, "limit": 10}
            return (await client.call_tool("memory_search", args)).structured_content

    assert anyio.run(main, plain)["explain"]["fusion"] == ranking.FUSION
    found = anyio.run(main, params)
    assert found["search_mode"] == "hybrid"
    assert found["explain"]["fusion"] == "model"
    whys = [r["why"] for r in found["results"]]
    assert len(whys) == 4  # nothing cut: every memory with a vector
    assert all(why["keyword"] is None for why in whys)
    similarities = [why["vector"]["similarity"] for why in whys]
    assert similarities == sorted(similarities, reverse=True)
    assert [why["fused"] for why in whys] == similarities
