"""The keyword signal's candidate bound on both engines, with words made common by filler
memories: the hints are the brute-force ones."""

from __future__ import annotations

import itertools

import pytest

from agent_memory.service.core import MemoryService
from agent_memory.service.hygiene import similar
from agent_memory.storage import open_store
from agent_memory.storage.hygiene import near

pytest_plugins = ["tests.support.pg_fixtures"]


COMMON = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
]
NEW = " ".join(COMMON) + " zephyrine"


@pytest.fixture(params=["sqlite", "postgres"])
def svc(request, db_path, monkeypatch):
    monkeypatch.setattr(near, "NEAR_RARE_ROWS", 5)  # the fillers make COMMON common
    location = str(db_path) if request.param == "sqlite" else request.getfixturevalue("pg_url")
    service = MemoryService(open_store(location))
    yield service
    service.close()


def test_hints_are_the_brute_force_ones_with_common_and_rare_words(svc):
    stored: list[tuple[int, str, str | None]] = []

    def keep(content: str, scope: str | None = "proj") -> None:
        answer = svc.store({"content": content, "type": "PATTERN", "scope": scope})
        stored.append((answer["id"], content, scope))

    for k, (a, b) in enumerate(itertools.combinations(COMMON, 2)):
        keep(f"{a} {b} kilo{k} lima{k} mike{k} oscar{k}")  # every common word in 9 rows
    keep(" ".join(COMMON) + " xylophone")  # longer, no rare word: by its rarest words
    keep(" ".join(COMMON) + " xylophone", "other")  # the same, in another scope
    keep(" ".join(COMMON[1:]) + " zephyrine quasar")  # as long: a word dropped, one added
    keep("charlie delta echo zephyrine")  # shorter, holds the rare word
    keep("charlie delta echo foxtrot golf zephyrine", None)  # shorter, without a scope
    keep(" ".join(COMMON[:9]) + " kilo0 lima0")  # longer but below the threshold
    for scope, count in (("proj", 3), ("other", 1), (None, 1), ("none", 0)):
        brute = [(i, t) for i, t, s in stored if s == scope]
        want = [h["id"] for h in similar.by_keywords(NEW, brute)]
        got = similar.find(svc.db, NEW, scope, None, svc.now())
        assert [h["id"] for h in got.get("similar", [])] == want
        assert len(want) == count


def test_a_run_of_a_script_written_without_spaces_is_a_word_like_any(svc):
    """The index holds such a run as bigrams: the run is asked as the index holds it."""
    for k in range(6):  # the other words common: only the run can lead to the first
        svc.store({"content": f"alpha bravo charlie kilo{k} lima{k} mike{k}", "type": "TODO"})
    first = svc.store({"content": "alpha bravo 数据库服务 charlie delta", "type": "PATTERN"})
    answer = svc.store({"content": "alpha bravo 数据库服务 charlie", "type": "PATTERN"})
    assert [h["id"] for h in answer["similar"]] == [first["id"]]
