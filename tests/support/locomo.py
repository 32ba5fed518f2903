"""A tiny LoCoMo-shaped file (two conversations and their questions) for the retrieval bench's
tests: a fixture, taken with pytest_plugins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


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
