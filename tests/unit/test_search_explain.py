"""``agent-memory search --explain``: a line under each result saying why it is there, and
one after them saying how the page was made; --json carries the same answer the tool gives."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from agent_memory.cli import display
from agent_memory.cli.main import cli
from agent_memory.service.core import MemoryService
from tests.support.clock import START

# holds 43% of the question's information (sqlite); in because its keyword share is close
# to the best · score 1.00
HELD = r"holds \d+% of the question's information \([^)]*\)"
SIGMAS = r"-?\d+\.\dσ above unrelated text"
WHY = rf"({HELD}( and {SIGMAS})?|{SIGMAS}); in because [a-z ]+ · score \S+"
KEYWORD_WHY = re.compile(
    rf"  why: {HELD}; in because its keyword share is close to the best · score \S+"
)
HYBRID_WHY = re.compile(rf"  why: {WHY}")
CUT = r"\d+ of \d+ candidates kept: .+"


def am(db_path, *args: str, ollama=None):
    embedder = ["--embedder", "none"] if ollama is None else ["--ollama-url", ollama.url]
    result = CliRunner().invoke(cli, ["--db", str(db_path), *embedder, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_keyword_search_explains_bm25_and_decay(service, db_path):
    service.store({"content": "We chose SQLite with WAL", "type": "DECISION"})
    service.store({"content": "Open one SQLite writer connection", "type": "PATTERN"})
    service.store({"content": "Write the restore runbook", "type": "TODO"})
    result = am(db_path, "search", "sqlite", "--explain")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ID ")
    rows = lines[1:-1]
    assert len(rows) == 4  # two results, each with its why line under it
    assert [KEYWORD_WHY.fullmatch(line) is not None for line in rows] == [False, True] * 2
    assert re.fullmatch(
        r"explain: score = decay \+ bm25 · 2 of 2 candidates kept: a keyword share of at least"
        r" \d+%",
        lines[-1],
    )
    assert result.stderr == "2 found (keyword search: search by meaning is off (--embedder none))\n"


def test_a_keyword_question_names_the_words_its_results_hold(service, db_path):
    service.store({"content": "We choose the database by its WAL support", "type": "DECISION"})
    service.store({"content": "Write the restore runbook", "type": "TODO"})
    result = am(db_path, "search", "which database did we choose?", "--explain")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "(database, we, choose), 'we choose' as typed" in lines[-2]
    assert re.fullmatch(
        r"explain: score = decay \+ bm25 \+ words typed together · 1 of 1 candidates kept:"
        r" a keyword share of at least \d+%",
        lines[-1],
    )


def test_without_explain_there_is_no_why(service, db_path):
    service.store({"content": "We chose SQLite with WAL", "type": "DECISION"})
    result = am(db_path, "search", "sqlite")
    assert result.exit_code == 0, result.output
    assert "why:" not in result.stdout and "explain:" not in result.stdout
    plain = json.loads(am(db_path, "search", "sqlite", "--json").stdout)
    assert "explain" not in plain and "why" not in plain["results"][0]


def test_hybrid_search_explains_both_legs_the_fusion_and_the_floor(
    hybrid, db_path, ollama, monkeypatch
):
    hybrid.store({"content": "We chose PostgreSQL as our datastore", "type": "DECISION"})
    hybrid.store({"content": "The login page crashed on a bad password", "type": "ERROR"})
    hybrid.store({"content": "Cache the embeddings in redis", "type": "PATTERN"})
    hybrid.store({"content": "Ship the release on Friday", "type": "TODO"})
    # the test's service and the command's read the time alike: the same decay
    monkeypatch.setattr(MemoryService, "now", lambda self: START + 86_400)
    args = {"query": "which database did we pick", "explain": True}
    expected = hybrid.search(args, record_use=False)
    query = ["search", args["query"], "--explain"]
    result = am(db_path, *query, ollama=ollama)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    whys = [line for line in lines if line.startswith("  why: ")]
    assert whys and all(HYBRID_WHY.fullmatch(line) for line in whys), whys
    assert "PostgreSQL" in lines[1]  # the model's best match
    assert re.fullmatch(rf"explain: calibrated fusion · {CUT}", lines[-1]), lines[-1]
    assert result.stderr.startswith(f"{len(whys)} found (hybrid search")
    # the lines say what the tool's answer holds
    assert whys == [f"  why: {display.why(r['why'])}" for r in expected["results"]]
    assert lines[-1] == f"explain: {display.explanation(expected['explain'])}"

    # --json: the tool's answer, why and explain included
    answer = json.loads(am(db_path, *query, "--json", ollama=ollama).stdout)
    assert answer["search_mode"] == "hybrid"
    assert [r["id"] for r in answer["results"]] == [r["id"] for r in expected["results"]]
    assert all(set(r["why"]) >= {"keyword", "vector", "fused", "decay"} for r in answer["results"])
    assert answer["explain"]["cut"] == expected["explain"]["cut"]
