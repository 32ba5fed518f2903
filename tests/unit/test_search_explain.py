"""``agent-memory search --explain``: a line under each result saying why it is there, and
one after them saying how the page was made; --json carries the same answer the tool gives."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from agent_memory.service.core import MemoryService
from agent_memory.transports.cli import display
from agent_memory.transports.cli.main import cli
from tests.support.clock import START

# keyword #1 bm25 1.9e-06 + decay 1.00 = 1.00
KEYWORD_WHY = re.compile(r"  why: keyword #\d+ bm25 \S+ \+ decay \d\.\d\d = \S+")
LEG = r"(keyword #\d+ bm25 \S+ \(share \d\.\d\d\)|no keyword match)"
MEANING = r"(meaning #\d+ sim -?\d\.\d{3} \((-?\d+\.\dσ|share \d\.\d\d)\)|not near in meaning)"
HYBRID_WHY = re.compile(rf"  why: {LEG} · {MEANING} · fused \S+ × decay \d\.\d\d = \S+")


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
    assert lines[-1] == "explain: score = decay + bm25"
    assert result.stderr == "2 found (keyword search: search by meaning is off (--embedder none))\n"


def test_a_keyword_question_names_the_words_it_was_searched_as(service, db_path):
    service.store({"content": "We chose SQLite with WAL", "type": "DECISION"})
    result = am(db_path, "search", "which database did we choose?", "--explain")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "explain: score = decay + bm25 · words which, database, did, we, choose"
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
    assert "PostgreSQL" in lines[1] and "meaning #1 sim" in lines[2]  # the model's best match
    assert re.fullmatch(
        r"explain: (convex|rrf) fusion · floor (bm25 ≥ \S+ or )?sim ≥ -?\d\.\d{3} · \d+ below "
        r"the floor",
        lines[-1],
    ), lines[-1]
    assert result.stderr.startswith(f"{len(whys)} found (hybrid search")
    # the lines say what the tool's answer holds
    assert whys == [f"  why: {display.why(r['why'])}" for r in expected["results"]]
    assert lines[-1] == f"explain: {display.explanation(expected['explain'])}"
    assert lines[-1].endswith(f"· {expected['explain']['below_floor']} below the floor")

    # --json: the tool's answer, why and explain included
    answer = json.loads(am(db_path, *query, "--json", ollama=ollama).stdout)
    assert answer["search_mode"] == "hybrid"
    assert [r["id"] for r in answer["results"]] == [r["id"] for r in expected["results"]]
    assert all(set(r["why"]) >= {"keyword", "vector", "fused", "decay"} for r in answer["results"])
    assert answer["explain"]["floor"] == expected["explain"]["floor"]
