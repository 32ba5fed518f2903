"""bench/retrieval.py reads a LoCoMo-shaped file and scores keyword pages right: recall@k is
the share of a question's evidence turns in the first k, hit@k whether any is there. Through
the MCP tools too: the real ``serve`` spawned on a copy of the database (keyword, and with the
fake Ollama hybrid and model-only). The measurement fusion ``model`` ranks by cosine alone,
with nothing cut, over MCP through the bench's launcher (bench/fusion_serve.py)."""

from __future__ import annotations

import json
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


def session(*turns: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns]


SAMPLES = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": session(
                ("Ann", "D1:1", "I adopted a kitten named Pickles last week."),
                ("Bob", "D1:2", "Lovely! I started learning the violin."),
            ),
            "session_2_date_time": "2:00 pm on 8 May, 2023",
            "session_2": session(
                ("Ann", "D2:1", "Pickles knocked over my sourdough starter."),
                ("Bob", "D2:2", "My violin teacher says I practise too little."),
            ),
        },
        "qa": [
            # Both evidence turns say Pickles: recall 1, hit.
            {"question": "Pickles", "answer": "x", "evidence": ["D1:1", "D2:1"], "category": 1},
            # One evidence turn holds the word, the other ("D:1:2", written loosely) does not.
            {"question": "sourdough", "answer": "x", "evidence": ["D2:1; D:1:2"], "category": 4},
            # Adversarial: never asked.
            {"question": "violin", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "x"},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy",
            "speaker_b": "Di",
            "session_1_date_time": "3:00 pm on 2 June, 2023",
            "session_1": session(
                ("Cy", "D1:1", "The kitten Pickles is not mine, it is Ann's."),
                ("Di", "D1:2", "I hiked up Ben Nevis on Saturday."),
            ),
        },
        "qa": [
            # Scoped: conv-a's Pickles turns are not in this conversation's pages.
            {"question": "Ben Nevis", "answer": "x", "evidence": ["D1:2"], "category": 2},
            # Evidence names no turn the conversation holds: dropped.
            {"question": "Nevis", "answer": "x", "evidence": ["D9:9"], "category": 2},
        ],
    },
]


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    return path


def test_the_file_is_read_into_turns_and_questions(data):
    conversations = retrieval.load(data)
    assert [c.sample_id for c in conversations] == ["conv-a", "conv-b"]
    assert conversations[0].turns[2] == ("D2:1", "Ann: Pickles knocked over my sourdough starter.")
    assert conversations[0].scope == "locomo-conv-a"
    questions, dropped = retrieval.asked(conversations)
    assert [q.text for q in questions] == ["Pickles", "sourdough", "Ben Nevis"]
    assert questions[1].evidence == {"D2:1", "D1:2"}
    assert dropped == 1
    assert [q.text for q in retrieval.asked(conversations, every=2)[0]] == ["Pickles", "Ben Nevis"]
    assert len(retrieval.load(data, conversations=1)) == 1


def test_keyword_pages_are_scored(data, tmp_path):
    conversations = retrieval.load(data)
    questions, _ = retrieval.asked(conversations)
    svc = MemoryService(open_store(tmp_path / "m.db"), clock=lambda: retrieval.T0)
    try:
        assert retrieval.fill(svc, conversations) == 6
        pages = [[r["source"] for r in retrieval.search_service(svc, q)] for q in questions]
        assert sorted(pages[0]) == ["D1:1", "D2:1"]  # conv-b's Pickles turn is out of scope
        assert pages[1] == ["D2:1"]
        assert pages[2] == ["D1:2"]
        result = retrieval.run_mode("keyword", svc, questions)
    finally:
        svc.close()
    # recall: 1, 1/2, 1; hit: all three.
    assert result.recall == {5: pytest.approx(2.5 / 3), 10: pytest.approx(2.5 / 3)}
    assert result.hit == {5: 1.0, 10: 1.0}
    assert result.page == pytest.approx(4 / 3)
    assert result.by_category == {1: (1, 1.0, 1.0), 2: (1, 1.0, 1.0), 4: (1, 0.5, 1.0)}
    assert result.mrr == 1.0  # every page's first turn is an evidence turn
    assert "| keyword | 0.833 | 0.833 | 1.000 | 1.000 |" in retrieval.table([result])
    assert retrieval.table([result]).endswith("| none |")  # the embedder, named


def test_recall_and_hit_count_the_first_k_only():
    evidence = frozenset({"D1:1", "D1:2"})
    found = ["D3:1", "D1:2", "D3:2", "D3:3", "D3:4", "D1:1"]
    assert retrieval.score(found, evidence, 1) == (0.0, False)
    assert retrieval.score(found, evidence, 5) == (0.5, True)
    assert retrieval.score(found, evidence, 10) == (1.0, True)


def test_a_missing_file_is_named(tmp_path, capsys):
    assert retrieval.main(["--data", str(tmp_path / "absent.json")]) == 2
    assert "no LoCoMo file at" in capsys.readouterr().err


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


def test_no_floor_is_in_process_only(data):
    with pytest.raises(SystemExit):
        retrieval.main(["--data", str(data), "--modes", "no-floor"])
    with pytest.raises(ValueError, match="over MCP"):
        retrieval.run_mcp("no-floor", data, [])


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
