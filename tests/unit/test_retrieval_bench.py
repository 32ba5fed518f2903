"""bench/retrieval.py reads a LoCoMo-shaped file and scores keyword pages right: recall@k is
the share of a question's evidence turns in the first k, hit@k whether any is there."""

from __future__ import annotations

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.storage import open_store
from bench import retrieval

pytest_plugins = ["tests.support.locomo"]


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


def test_no_cut_is_in_process_only(data):
    with pytest.raises(SystemExit):
        retrieval.main(["--data", str(data), "--modes", "no-cut"])
    with pytest.raises(ValueError, match="over MCP"):
        retrieval.run_mcp(retrieval.NO_CUT, data, [])
