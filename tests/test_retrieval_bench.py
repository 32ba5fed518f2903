"""bench/retrieval.py reads a LoCoMo-shaped file and scores keyword pages right: recall@k is
the share of a question's evidence turns in the first k, hit@k whether any is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.service import MemoryService
from agent_memory.storage import open_store
from bench import retrieval


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


def test_recall_and_hit_count_the_first_k_only():
    evidence = frozenset({"D1:1", "D1:2"})
    found = ["D3:1", "D1:2", "D3:2", "D3:3", "D3:4", "D1:1"]
    assert retrieval.score(found, evidence, 1) == (0.0, False)
    assert retrieval.score(found, evidence, 5) == (0.5, True)
    assert retrieval.score(found, evidence, 10) == (1.0, True)


def test_a_missing_file_is_named(tmp_path, capsys):
    assert retrieval.main(["--data", str(tmp_path / "absent.json")]) == 2
    assert "no LoCoMo file at" in capsys.readouterr().err
